/*
 * bankfree: the vectorized schedule with padded shared memory.  Storing
 * the A tile transposed, the two threads that load the two halves of one
 * row of A write the same bank (the transposed rows are 128 floats, a
 * multiple of 32 banks).  Four unused floats after each transposed row
 * move the second half 4 x 4 = 16 banks away, and keep every row 16-byte
 * aligned for the float4 reads.
 */
#include "builtins_impl.h"

ts_status example_bankfree(ts_sched *s) {
  ts_stage *as, *bs;
  vectorized_tiles(s, 128, 8, &as, &bs);
  ts_storage_pad(s, as, 4);
  return ts_sched_status(s);
}
