/*
 * vectorized: seed 000's matmul4, register tiling with vector accesses.
 * blocktile2d's 128 x 128 tiles and 8 x 8 results per thread, with:
 *   - the tiles of A and B loaded from global memory as float4
 *     (LDG.E.128), four consecutive k (for A) or j (for B) per thread;
 *   - the A tile stored transposed in shared memory, so a thread's 8 values
 *     of A for one k are contiguous and its register copy reads them as two
 *     float4 (LDS.128), as the seed stores sA[k][i];
 *   - the register copies of B and the final stores of C as float4.
 */
#include "builtins_impl.h"

void vectorize4(ts_sched *s, ts_loop *loop) {
  ts_loop *outer, *lanes;
  ts_split(s, loop, 4, &outer, &lanes);
  ts_vectorize(s, lanes);
}

void vectorize_copy(ts_sched *s, ts_stage *stage) {
  vectorize4(s, ts_stage_axis(stage, ts_stage_contiguous(stage)));
}

void thread_tile_registers(ts_sched *s, ts_loop *ki, ts_loop *b_at,
                           ts_loop *tm, ts_loop *tno, ts_loop *tni) {
  /* Register copies for one k, read from shared memory as float4. */
  ts_stage *ra, *rb;
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  vectorize_copy(s, ra);
  ts_cache_read(s, "B.shared", TS_LOCAL, b_at, &rb);
  vectorize_copy(s, rb);
  ts_unroll(s, ki);
  ts_unroll(s, tm);
  ts_unroll(s, tno);
  ts_vectorize(s, tni); /* C written as float4 */
}

ts_status vectorized_tiles(ts_sched *s, int64_t block, int64_t depth,
                           ts_stage **as, ts_stage **bs) {
  ts_loop *io, *ir, *ty, *tm, *jo, *jr, *tx, *tn, *ko, *ki, *tno, *tni;
  ts_split(s, ts_get_loop(s, "i"), block, &io, &ir);
  ts_split(s, ir, 8, &ty, &tm);
  ts_split(s, ts_get_loop(s, "j"), block, &jo, &jr);
  ts_split(s, jr, 8, &tx, &tn);
  ts_split(s, tn, 4, &tno, &tni);
  ts_split(s, ts_get_loop(s, "k"), depth, &ko, &ki);
  ts_reorder(s, 9, (ts_loop *[]){io, jo, ty, tx, ko, ki, tm, tno, tni});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  /* Shared tiles, loaded as float4; A's stored transposed. */
  ts_cache_read(s, "A", TS_SHARED, ko, as);
  ts_storage_transpose(s, *as);
  vectorize_copy(s, *as);
  ts_cache_read(s, "B", TS_SHARED, ko, bs);
  vectorize_copy(s, *bs);
  thread_tile_registers(s, ki, ki, tm, tno, tni);
  return ts_sched_status(s);
}

ts_status example_vectorized(ts_sched *s) {
  ts_stage *as, *bs;
  return vectorized_tiles(s, 128, 8, &as, &bs);
}
