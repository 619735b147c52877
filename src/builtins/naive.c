/*
 * naive: one thread per element of C, threadIdx.x walking down the rows of
 * C (the first kernel of the article seed 000 builds on).  Consecutive
 * threads of a warp read A from consecutive rows, K floats apart, and write
 * C a row apart: nothing coalesces, and every thread streams its own row of
 * A and column of B from global memory.
 *
 * The "naive" kernels of seeds 001 and 004 already put threadIdx.x on the
 * columns of C; as schedules they are `coalesced`.
 */
#include "builtins_impl.h"

ts_status example_naive(ts_sched *s) {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, jo, TS_BLOCK_Y);
  ts_bind(s, ii, TS_THREAD_X);
  ts_bind(s, ji, TS_THREAD_Y);
  return ts_sched_status(s);
}
