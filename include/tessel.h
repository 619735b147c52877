/*
 * tessel: a loop-transformation compiler for matrix multiplication.
 *
 * A user defines a GEMM, C = alpha * op(A) * op(B) + beta * C, rewrites its
 * i/j/k loop nest with schedule primitives, and gets a CUDA kernel:
 *
 *     ts_gemm def = ts_gemm_make(1024, 1024, 1024);
 *     ts_sched *s = ts_matmul(&def);
 *     ts_loop *io, *ii, *jo, *ji;
 *     ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
 *     ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
 *     ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
 *     ts_bind(s, io, TS_BLOCK_Y);  ts_bind(s, jo, TS_BLOCK_X);
 *     ts_bind(s, ii, TS_THREAD_Y); ts_bind(s, ji, TS_THREAD_X);
 *     char *cu = ts_cuda_source(s);
 *
 * Errors are sticky (as in cairo): the first failing primitive records a
 * status and a message on the schedule, leaves the loop nest as it was, and
 * every later primitive returns that status without doing anything.
 * Objects are never NULL on failure; each carries its own status.
 */
#ifndef TESSEL_H
#define TESSEL_H

#include "tessel/types.h"
#include "tessel/schedule.h"
#include "tessel/program_read.h"
#include "tessel/program.h"
#include "tessel/exec.h"
#include "tessel/explain.h"
#include "tessel/space.h"
#include "tessel/builtins.h"
#include "tessel/compile.h"
#include "tessel/launch.h"
#include "tessel/gpu.h"
#include "tessel/facade.h"
#include "tessel/tune.h"

#endif
