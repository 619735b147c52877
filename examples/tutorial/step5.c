/*
 * Tutorial step 5 (docs/tutorial.md): vector accesses, padding and
 * double buffering.  float4s is step 4's tile8x8 with every access 16
 * bytes wide where it can be (a float4: one LDG.128 or LDS.128 in place of
 * four):
 *   - the copies of the A and B tiles from global memory, split by 4 along
 *     the source's contiguous dimension and vectorized;
 *   - the A tile stored transposed in shared memory (ts_storage_transpose),
 *     so that a thread's 8 values of A for one k are contiguous and its
 *     register copy reads them as two float4;
 *   - the register copy of B and the stores of C as float4.
 * padded adds 4 unused floats after each transposed row of A
 * (ts_storage_pad): rows of 128 floats put the two halves of a row that
 * two threads store at once in the same bank; 132 floats do not.
 * prefetched keeps two copies of each shared tile (ts_double_buffer):
 * while the block computes on one, each thread loads its part of the next
 * tile into registers, then stores it into the other copy; one barrier a
 * k step instead of two.  ts_min_blocks_per_sm(s, 2) holds ptxas to 128
 * registers a thread, so that two blocks of 256 threads share an SM.
 *
 *   tessel show examples/tutorial/step5.c:prefetched --ir
 *   tessel check examples/tutorial/step5.c --shape 37x53x29
 *   tessel bench examples/tutorial/step5.c --shape 4096x4096x4096
 */
#include <tessel.h>

/* Splits off the innermost 4 iterations of loop and makes them a float4. */
static void float4_lanes(ts_sched *s, ts_loop *loop) {
  ts_loop *outer, *lanes;
  ts_split(s, loop, 4, &outer, &lanes);
  ts_vectorize(s, lanes);
}

/* A cache's copy as float4 along its source's contiguous dimension. */
static void float4_copy(ts_sched *s, ts_stage *stage) {
  float4_lanes(s, ts_stage_axis(stage, ts_stage_contiguous(stage)));
}

/* The shared caches of A and B come back in *as and *bs. */
static ts_status vector_tiles(ts_sched *s, int64_t pad, ts_stage **as,
                              ts_stage **bs) {
  ts_loop *io, *ir, *ty, *tm, *jo, *jr, *tx, *tn, *ko, *ki, *tno, *tni;
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 8, &ty, &tm);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 8, &tx, &tn);
  ts_split(s, tn, 4, &tno, &tni); /* a thread's 8 columns: 2 float4 */
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &ki);
  ts_reorder(s, 9, (ts_loop *[]){io, jo, ty, tx, ko, ki, tm, tno, tni});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  ts_stage *ra, *rb;
  ts_cache_read(s, "A", TS_SHARED, ko, as);
  ts_storage_transpose(s, *as);
  if (pad)
    ts_storage_pad(s, *as, pad);
  float4_copy(s, *as);
  ts_cache_read(s, "B", TS_SHARED, ko, bs);
  float4_copy(s, *bs);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  float4_copy(s, ra);
  ts_cache_read(s, "B.shared", TS_LOCAL, ki, &rb);
  float4_copy(s, rb);
  ts_unroll(s, ki);
  ts_unroll(s, tm);
  ts_unroll(s, tno);
  ts_vectorize(s, tni); /* C stored as float4 */
  return ts_sched_status(s);
}

TS_SCHEDULE(float4s, "tile8x8 with float4 loads, copies and stores") {
  ts_stage *as, *bs;
  return vector_tiles(s, 0, &as, &bs);
}

TS_SCHEDULE(padded, "float4s with A's transposed rows padded by 4") {
  ts_stage *as, *bs;
  return vector_tiles(s, 4, &as, &bs);
}

TS_SCHEDULE(prefetched, "padded with two copies of each shared tile, the "
            "next loaded while the block computes") {
  ts_stage *as, *bs;
  vector_tiles(s, 4, &as, &bs);
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  ts_min_blocks_per_sm(s, 2);
  return ts_sched_status(s);
}
