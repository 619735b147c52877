/*
 * smem32 and smem16: shared-memory tiling, seed 001 (32x32 tiles) and seed
 * 004 (16x16 tiles).  A block computes a T x T tile of C with one thread
 * per element; for each T-wide step of k, the block's threads load a T x T
 * tile of A and of B into shared memory together (one element each, its
 * copy loops bound to the thread indices as the seeds index the tiles,
 * threadIdx.x along the source's contiguous dimension so that a warp's
 * loads are coalesced), wait at a barrier, and each thread reads its row of the A
 * tile and its column of the B tile T times from shared memory instead of
 * global memory.
 */
#include "builtins_impl.h"

static void one_element_per_thread(ts_sched *s, ts_stage *tile) {
  int contiguous = ts_stage_contiguous(tile);
  ts_bind(s, ts_stage_axis(tile, contiguous), TS_THREAD_X);
  ts_bind(s, ts_stage_axis(tile, 1 - contiguous), TS_THREAD_Y);
}

static ts_status shared_tiles(ts_sched *s, int64_t tile) {
  ts_loop *io, *ii, *jo, *ji, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), tile, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), tile, &jo, &ji);
  ts_split(s, ts_get_loop(s, "k"), tile, &ko, &ki);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ii, ji, ko, ki});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  one_element_per_thread(s, as);
  one_element_per_thread(s, bs);
  ts_unroll(s, ki);
  return ts_sched_status(s);
}

ts_status example_smem32(ts_sched *s) { return shared_tiles(s, 32); }

ts_status example_smem16(ts_sched *s) { return shared_tiles(s, 16); }
