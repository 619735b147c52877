/*
 * tvm_step2: seed 003's TVM schedule, "tiling + loop reordering".  Blocks
 * of 32 x 32 (i on blockIdx.x, j on blockIdx.y), 4 x 8 threads each
 * computing an 8 x 4 tile of C (i on threadIdx.x, j on threadIdx.y), k in
 * steps of 32 with k innermost so the 8 x 4 results stay in registers.  As
 * in the seed, no shared memory: A and B come through the caches.
 */
#include "examples.h"

ts_status example_tvm_step2(ts_sched *s) {
  ts_loop *ib, *ir, *it, *ie, *jb, *jr, *jt, *je, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 32, &ib, &ir);
  ts_split(s, ts_get_loop(s, "j"), 32, &jb, &jr);
  ts_split(s, ts_get_loop(s, "k"), 32, &ko, &ki);
  ts_split(s, ir, 8, &it, &ie);
  ts_split(s, jr, 4, &jt, &je);
  ts_reorder(s, 8, (ts_loop *[]){ib, jb, it, jt, ko, ie, je, ki});
  ts_bind(s, ib, TS_BLOCK_X);
  ts_bind(s, jb, TS_BLOCK_Y);
  ts_bind(s, it, TS_THREAD_X);
  ts_bind(s, jt, TS_THREAD_Y);
  ts_unroll(s, ie);
  ts_unroll(s, je);
  return ts_sched_status(s);
}
