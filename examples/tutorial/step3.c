/*
 * Tutorial step 3 (docs/tutorial.md): shared-memory tiles.  Step 2's
 * blocks, with k walked in tiles of 32: for each tile the block's 1024
 * threads copy a 32 x 32 tile of A and one of B into shared memory
 * (ts_cache_read), wait at a barrier, and each thread reads its row of the
 * A tile and its column of the B tile from there, 32 times each.  Global
 * memory is read 32 times less.
 *
 *   tessel show examples/tutorial/step3.c --ir
 *   tessel check examples/tutorial/step3.c --shape 37x53x29
 *   tessel bench examples/tutorial/step3.c --shape 4096x4096x4096
 */
#include <tessel.h>

TS_SCHEDULE(shared32, "32 x 32 tiles of A and B in shared memory") {
  ts_loop *io, *ii, *jo, *ji, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_split(s, ts_get_loop(s, "k"), 32, &ko, &ki);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ii, ji, ko, ki});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_unroll(s, ki);
  return ts_sched_status(s);
}
