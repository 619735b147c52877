/*
 * coalesced: one thread per element of C with threadIdx.x on the columns,
 * the naive kernels of seeds 001 and 004 (row = blockIdx.y * 32 +
 * threadIdx.y, col = blockIdx.x * 32 + threadIdx.x).  A warp now reads one
 * element of A (a broadcast) and 32 consecutive elements of B and writes 32
 * consecutive elements of C: every global access coalesces.
 */
#include "builtins_impl.h"

ts_status example_coalesced(ts_sched *s) {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  return ts_sched_status(s);
}
