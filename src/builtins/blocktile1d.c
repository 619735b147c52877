/*
 * blocktile1d: 1D register tiling, the step of seed 000 between shared
 * tiling and matmul3.  A block computes a 64 x 64 tile of C with 512
 * threads; each thread keeps a column of 8 results in registers, so one
 * value of the B tile read from shared memory serves 8 multiply-adds.
 */
#include "builtins_impl.h"

ts_status example_blocktile1d(ts_sched *s) {
  ts_loop *io, *ir, *ty, *tm, *jo, *tx, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 64, &io, &ir);
  ts_split(s, ir, 8, &ty, &tm);
  ts_split(s, ts_get_loop(s, "j"), 64, &jo, &tx);
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &ki);
  ts_reorder(s, 7, (ts_loop *[]){io, jo, ty, tx, ko, ki, tm});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_unroll(s, ki);
  ts_unroll(s, tm);
  return ts_sched_status(s);
}
