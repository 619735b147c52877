/*
 * double_buffered: seed 000's prefetching.  The bank-free vectorized
 * schedule with two copies of each shared tile: while the block computes
 * on one, each thread loads its part of the next tile from global memory
 * into registers, then stores it into the other copy.  One barrier per
 * step of k instead of two, and the global loads' latency hides behind
 * the multiply-adds.
 */
#include "examples.h"

ts_status example_double_buffered(ts_sched *s) {
  ts_stage *as, *bs;
  vectorized_tiles(s, 128, 8, &as, &bs);
  ts_storage_pad(s, as, 4);
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  return ts_sched_status(s);
}
