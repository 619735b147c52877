/*
 * Tutorial step 6 (docs/tutorial.md): warp tiles, and cp.async stages.
 *
 * A block of 4 warps computes a 128 x 128 tile of C, each warp a 64 x 64
 * warp tile; a warp's 32 threads, 8 x 4, split it into 8 x 16 thread
 * tiles (8 rows, 16 columns, four float4 of C a row).  The 32 threads of
 * a warp now read neighbouring addresses of the shared tiles, a thread
 * does 128 multiply-adds for 24 shared loads (16 for 64 in step 5), and k
 * goes in tiles of 16.  The shared tiles are filled as in step 5: A
 * transposed and padded, float4 copies.
 *
 * warps: two copies of each shared tile, the next staged in registers
 * (ts_double_buffer), as step 5's prefetched.
 *
 * stages3: three copies filled by cp.async (ts_pipeline), global memory
 * straight into shared memory without registers: tiles ko + 1 and ko + 2
 * travel while the block computes on tile ko.  Needs sm_80 or newer.
 *
 *   tessel show examples/tutorial/step6.c:warps --ir
 *   tessel check examples/tutorial/step6.c --shape 37x53x29
 *   tessel bench examples/tutorial/step6.c --shape 4096x4096x4096
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

/* 128 x 128 block tiles, 64 x 64 warp tiles, k tiles of 16; the shared
 * tiles double-buffered (stages 2) or filled by cp.async (stages 3..8). */
static ts_status warp_tiles(ts_sched *s, int stages) {
  ts_loop *io, *ir, *wy, *r, *ly, *ti, *jo, *jr, *wx, *c, *lx, *tj, *tjo,
      *tji, *ko, *ki, *warp, *lane;
  /* i = block * 128 + warp row * 64 + lane row * 8 + ti */
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 64, &wy, &r);
  ts_split(s, r, 8, &ly, &ti);
  /* j = block * 128 + warp column * 64 + lane column * 16 + tj */
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 64, &wx, &c);
  ts_split(s, c, 16, &lx, &tj);
  ts_split(s, tj, 4, &tjo, &tji);
  ts_split(s, ts_get_loop(s, "k"), 16, &ko, &ki);
  ts_reorder(s, 11,
             (ts_loop *[]){io, jo, wy, wx, ly, lx, ko, ki, ti, tjo, tji});
  ts_fuse(s, wy, wx, &warp); /* 2 x 2 warps: threadIdx.y */
  ts_fuse(s, ly, lx, &lane); /* 8 x 4 lanes: threadIdx.x */
  ts_rename(s, warp, "warp");
  ts_rename(s, lane, "lane");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, warp, TS_THREAD_Y);
  ts_bind(s, lane, TS_THREAD_X);
  ts_stage *as, *bs, *ra, *rb;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_transpose(s, as);
  ts_storage_pad(s, as, 4);
  float4_copy(s, as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  float4_copy(s, bs);
  if (stages == 2) {
    ts_double_buffer(s, as);
    ts_double_buffer(s, bs);
  } else {
    ts_pipeline(s, as, stages);
    ts_pipeline(s, bs, stages);
  }
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  float4_copy(s, ra);
  ts_cache_read(s, "B.shared", TS_LOCAL, ki, &rb);
  float4_copy(s, rb);
  ts_unroll(s, ki);
  ts_unroll(s, ti);
  ts_unroll(s, tjo);
  ts_vectorize(s, tji); /* C stored as float4 */
  return ts_sched_status(s);
}

TS_SCHEDULE(warps, "128 x 128 tiles of 4 warps of 64 x 64, 8 x 16 a "
            "thread, double-buffered") {
  return warp_tiles(s, 2);
}

TS_SCHEDULE(stages3, "warps with its shared tiles filled by cp.async in 3 "
            "stages (sm_80)") {
  return warp_tiles(s, 3);
}
