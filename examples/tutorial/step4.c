/*
 * Tutorial step 4 (docs/tutorial.md): register tiles.  A thread computes
 * more than one element of C and keeps them in registers, so that a value
 * read from shared memory serves several multiply-adds.
 *
 * column8: 64 x 64 block tiles of 512 threads, each thread a column of 8
 * results (1D tiling): a value of the B tile serves 8 multiply-adds.
 *
 * tile8x8: 128 x 128 block tiles of 256 threads, each thread an 8 x 8
 * tile of C (2D tiling).  Per step of k it copies 8 values of the A tile
 * and 8 of the B tile into registers (a register cache of the shared one)
 * and accumulates their outer product: 16 shared loads for 64
 * multiply-adds.  ts_cache_write names the 8 x 8 accumulators C.local.
 *
 *   tessel show examples/tutorial/step4.c:tile8x8 --ir
 *   tessel check examples/tutorial/step4.c --shape 37x53x29
 *   tessel bench examples/tutorial/step4.c --shape 4096x4096x4096
 */
#include <tessel.h>

TS_SCHEDULE(column8, "64 x 64 tiles, a column of 8 results a thread") {
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

TS_SCHEDULE(tile8x8, "128 x 128 tiles, 8 x 8 results a thread, register "
            "copies of A and B") {
  ts_loop *io, *ir, *ty, *tm, *jo, *jr, *tx, *tn, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 8, &ty, &tm);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 8, &tx, &tn);
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &ki);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, ty, tx, ko, ki, tm, tn});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  ts_stage *cl, *as, *bs, *ra, *rb;
  ts_cache_write(s, "C", TS_LOCAL, tx, &cl);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  ts_cache_read(s, "B.shared", TS_LOCAL, ki, &rb);
  ts_unroll(s, ki);
  ts_unroll(s, tm);
  ts_unroll(s, tn);
  return ts_sched_status(s);
}
