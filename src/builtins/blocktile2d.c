/*
 * blocktile2d: 2D register tiling, seed 000's matmul3 (there 4 x 4 results
 * per thread; here 8 x 8, the size at which the technique pays most on
 * current GPUs).  A block of 16 x 16 threads computes a 128 x 128 tile of
 * C.  Per step of k, each thread copies a column of 8 values of the A tile
 * and a row of 8 values of the B tile from shared memory into registers
 * (rA, rB in the seed) and multiplies them as an outer product into its
 * 8 x 8 accumulators: 16 shared loads for 64 multiply-adds.
 */
#include "builtins_impl.h"

ts_status blocktile2d_over(ts_sched *s, ts_loop *k) {
  ts_loop *io, *ir, *ty, *tm, *jo, *jr, *tx, *tn, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 8, &ty, &tm);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 8, &tx, &tn);
  ts_split(s, k, 8, &ko, &ki);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, ty, tx, ko, ki, tm, tn});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  ts_stage *as, *bs, *ra, *rb;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  ts_cache_read(s, "B.shared", TS_LOCAL, ki, &rb);
  ts_unroll(s, ki);
  ts_unroll(s, tm);
  ts_unroll(s, tn);
  return ts_sched_status(s);
}

ts_status example_blocktile2d(ts_sched *s) {
  return blocktile2d_over(s, ts_get_loop(s, "k"));
}
