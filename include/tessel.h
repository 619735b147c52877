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
#include "tessel/program.h"
#include "tessel/exec.h"
#include "tessel/explain.h"
#include "tessel/space.h"
#include "tessel/builtins.h"
#include "tessel/compile.h"
#include "tessel/gpu.h"
#include "tessel/facade.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tuning records -----------------------------------------------------
 *
 * tessel tune keeps the best configuration of each space and definition in
 * the cache directory (beside the kernel cache), keyed by the GPU's name and
 * driver version, tessel's version, the space and the whole definition
 * (shape, layout, alpha, beta, element types). */

/* Records config (ts_config_text's form) with its speed; TS_ERR_NULL_ARG,
 * or TS_ERR_BAD_ARG when the cache is off (TESSEL_NO_CACHE) or cannot be
 * written. */
ts_status ts_tune_record_save(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *config,
                              double tflops);
/* The recorded configuration (malloc'd) and its speed, or NULL when there
 * is none for this GPU, space and definition. */
char *ts_tune_record_load(const ts_gpu *g, const char *space,
                          const ts_gemm *def, double *tflops);

/* The journal of a tuning run in progress for this GPU, space and
 * definition: lines appended as configurations are timed (one line, no
 * newline in it; TS_ERR_IO when the cache is off or not writable), read
 * back by a later run to resume (the lines, malloc'd, or NULL when there
 * is no journal), and removed when the run is finished. */
ts_status ts_tune_journal_add(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *line);
char *ts_tune_journal_load(const ts_gpu *g, const char *space,
                           const ts_gemm *def);
void ts_tune_journal_remove(const ts_gpu *g, const char *space,
                            const ts_gemm *def);

#ifdef __cplusplus
}
#endif
#endif
