/*
 * double_buffered: seed 000's prefetching.  The bank-free vectorized
 * schedule with two copies of each shared tile: while the block computes
 * on one, each thread loads its part of the next tile from global memory
 * into registers, then stores it into the other copy.  One barrier per
 * step of k instead of two, and the global loads' latency hides behind
 * the multiply-adds.  The registers that hold the next tile take the
 * kernel one past 128 a thread, which would leave one block of 256
 * threads per multiprocessor; asking for two keeps ptxas within 128.
 */
#include "builtins_impl.h"

ts_status example_double_buffered(ts_sched *s) {
  ts_stage *as, *bs;
  vectorized_tiles(s, 128, 8, &as, &bs);
  ts_storage_pad(s, as, 4);
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  ts_min_blocks_per_sm(s, 2);
  return ts_sched_status(s);
}
