/*
 * warptiled: seed 002's block / warp / thread tiling with outer products.
 * A block of 4 warps computes a 128 x 128 tile of C; the warps split it
 * 2 x 2 into 64 x 64 warp tiles; the 32 threads of a warp split that 8 x 4
 * into 8 x 16 thread tiles.  Per step of k, a thread copies its 8 values of
 * A and 16 of B from shared memory (float4) and accumulates their outer
 * product in 128 registers; the threads of a warp read neighbouring
 * shared addresses.  Tiles of k are 16 deep, loaded as float4, A stored
 * transposed and padded, both double-buffered.
 */
#include "examples.h"

void warp_tiles(ts_sched *s, ts_stage **as, ts_stage **bs, ts_loop *tile[4]) {
  ts_loop *io, *ir, *wy, *r, *ly, *tm, *jo, *jr, *wx, *c, *lx, *tn, *tno,
      *tni, *ko, *ki, *warp, *lane;
  /* i = block * 128 + warp row * 64 + lane row * 8 + tm */
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 64, &wy, &r);
  ts_split(s, r, 8, &ly, &tm);
  /* j = block * 128 + warp column * 64 + lane column * 16 + tn */
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 64, &wx, &c);
  ts_split(s, c, 16, &lx, &tn);
  ts_split(s, tn, 4, &tno, &tni);
  ts_split(s, ts_get_loop(s, "k"), 16, &ko, &ki);
  ts_reorder(s, 11, (ts_loop *[]){io, jo, wy, wx, ly, lx, ko, ki, tm, tno,
                                   tni});
  ts_fuse(s, wy, wx, &warp);
  ts_fuse(s, ly, lx, &lane);
  ts_rename(s, warp, "warp");
  ts_rename(s, lane, "lane");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, warp, TS_THREAD_Y);
  ts_bind(s, lane, TS_THREAD_X);
  ts_cache_read(s, "A", TS_SHARED, ko, as);
  ts_storage_transpose(s, *as);
  ts_storage_pad(s, *as, 4);
  vectorize_copy(s, *as);
  ts_cache_read(s, "B", TS_SHARED, ko, bs);
  vectorize_copy(s, *bs);
  tile[0] = ki;
  tile[1] = tm;
  tile[2] = tno;
  tile[3] = tni;
}

ts_status example_warptiled(ts_sched *s) {
  ts_stage *as, *bs;
  ts_loop *tile[4];
  warp_tiles(s, &as, &bs, tile);
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  thread_tile_registers(s, tile[0], tile[1], tile[2], tile[3]);
  return ts_sched_status(s);
}
