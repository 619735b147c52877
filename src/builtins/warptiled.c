/*
 * warptiled: seed 002's block / warp / thread tiling with outer products,
 * and the space of its tile sizes.
 *
 * A block computes a bm x bn tile of C with (bm / wm) x (bn / wn) warps,
 * each a wm x wn warp tile; the 32 threads of a warp split that 8 x 4 into
 * (wm / 8) x (wn / 4) thread tiles.  Per step of k, a thread copies its
 * values of A and B from shared memory (float4) and accumulates their outer
 * product in registers; the threads of a warp read neighbouring shared
 * addresses.  Tiles of k are bk deep, loaded as float4, A stored transposed
 * and padded.  `cols` lays a thread's columns out `blocked` (wn/4
 * columns a thread, seed 002's layout, whose float4 reads of B.shared
 * conflict 2-way where wn is 64) or `strided` (4 lanes' float4s side by
 * side, free of conflicts: faster with cp.async stages, slower without;
 * docs/performance.md).  `buffers` says how the shared tiles are filled:
 * 2 copies, the next tile staged in registers (ts_double_buffer), each
 * copy holding `bar_tiles` k tiles where K is 256 or more, so that the
 * block meets at one barrier per `bar_tiles` tiles
 * (ts_double_buffer_tiles); 1 copy; or 3 or 4 copies filled by cp.async
 * (ts_pipeline, sm_80 and newer; see pipelined.c).  Where the grid has
 * 16 block rows and columns or more, `swizzle` may group them by 8
 * (ts_swizzle) so that the blocks running at once share their tiles of A and B in L2.  Where the grid has fewer than
 * 256 blocks and K is 512 or more, `splitk` may split the reduction
 * across 2 or 4 blocks (ts_split_k, a workspace summed in order by a
 * second kernel), so that a skinny C still fills the GPU.  Where K is not
 * a multiple of 16, `partition` may split the last, partial k tile off the
 * k loop (ts_partition), so the loop before it loads without bounds tests
 * on k.
 *
 * The built-in is the space's first configuration, chosen for 4096^3: 128 x
 * 128 block tiles of 4 warps of 64 x 64, 8 x 16 per thread, k in 16s.  The
 * other tiles are for the shapes where 64 tiles of 128 x 128 leave most of
 * a large GPU idle: small, skinny and odd ones.
 */
#include "builtins_impl.h"

static const char *const warps[] = {"64x64", "32x64", "64x32", "32x32"};
static const char *const col_layouts[] = {"blocked", "strided"};
static const int64_t warp_dims[][2] = {{64, 64}, {32, 64}, {64, 32},
                                       {32, 32}};
enum { NWARPS = 4, LANE_ROWS = 8, LANE_COLS = 4, MAX_WARPS = 16,
       SWIZZLE_ROWS = 16, SPLIT_K_BLOCKS = 256, SPLIT_K_DEPTH = 512,
       DEEPEST_BK = 16 /* the largest bk: K a multiple leaves no k tail */,
       BAR_TILES_DEPTH = 256 /* 16 tiles of 16 or more (before split-K's
                              * parts): room for groups of 4 */ };

/* Registers a thread needs, roughly: its accumulators, one k step of A and
 * B, and addresses.  Past 255 ptxas spills; past 64K a block cannot run. */
static int64_t registers_estimate(int64_t tm, int64_t tn) {
  return tm * tn + tm + tn + 40;
}

/* The shared tiles filled as `buffers` says. */
static void fill_tiles(ts_sched *s, ts_stage *as, ts_stage *bs,
                       int64_t buffers, int64_t bar_tiles) {
  if (buffers == 2 && bar_tiles > 1) {
    ts_double_buffer_tiles(s, as, (int)bar_tiles);
    ts_double_buffer_tiles(s, bs, (int)bar_tiles);
  } else if (buffers == 2) {
    ts_double_buffer(s, as);
    ts_double_buffer(s, bs);
  } else if (buffers > 2) {
    ts_pipeline(s, as, (int)buffers);
    ts_pipeline(s, bs, (int)buffers);
  }
}

ts_status warptiled_with(ts_sched *s, const warp_tiling *t) {
  const int64_t tm = t->wm / LANE_ROWS, tn = t->wn / LANE_COLS;
  ts_loop *io, *ir, *wy, *r, *ly, *ti, *jo, *jr, *wx, *col, *lx, *tj, *tjo,
      *tji, *kz, *k, *ko, *ki, *warp, *lane;
  /* Split-K first: it must come before the caches. */
  k = ts_get_loop(s, "k");
  if (t->parts > 1)
    ts_split_k(s, k, t->parts, TS_SPLIT_K_WORKSPACE, &kz, &k);
  /* i = block * bm + warp row * wm + lane row * tm + ti */
  ts_split(s, ts_get_loop(s, "i"), t->bm, &io, &ir);
  ts_split(s, ir, t->wm, &wy, &r);
  ts_split(s, r, tm, &ly, &ti);
  /* j = block * bn + warp column * wn + lane column * tn + tj */
  ts_split(s, ts_get_loop(s, "j"), t->bn, &jo, &jr);
  ts_split(s, jr, t->wn, &wx, &col);
  if (t->strided) { /* col = tjo * 16 + lx * 4 + tji */
    ts_split(s, col, LANE_COLS * 4, &tjo, &tj);
    ts_split(s, tj, 4, &lx, &tji);
  } else { /* col = lx * tn + tjo * 4 + tji */
    ts_split(s, col, tn, &lx, &tj);
    ts_split(s, tj, 4, &tjo, &tji);
  }
  ts_split(s, k, t->bk, &ko, &ki);
  /* Strided columns: a thread's float4 chunks of B are tjo's, so tjo goes
   * outside ti, where B's register copy of one chunk is made. */
  ts_reorder(s, 11, t->strided ? (ts_loop *[]){io, jo, wy, wx, ly, lx, ko,
                                                ki, tjo, ti, tji}
                               : (ts_loop *[]){io, jo, wy, wx, ly, lx, ko,
                                                ki, ti, tjo, tji});
  ts_fuse(s, wy, wx, &warp);
  ts_fuse(s, ly, lx, &lane);
  ts_rename(s, warp, "warp");
  ts_rename(s, lane, "lane");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, warp, TS_THREAD_Y);
  ts_bind(s, lane, TS_THREAD_X);
  if (t->swizzle)
    ts_swizzle(s, io, jo, t->swizzle);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_transpose(s, as);
  ts_storage_pad(s, as, 4);
  vectorize_copy(s, as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  vectorize_copy(s, bs);
  fill_tiles(s, as, bs, t->buffers, t->bar_tiles);
  /* Strided, B's register copy is one chunk's float4: a copy for the whole
   * k step would span the gaps between the chunks. */
  thread_tile_registers(s, ki, t->strided ? tjo : ki, ti, tjo, tji);
  if (t->partition)
    ts_partition(s, ko);
  return ts_sched_status(s);
}

ts_status space_warptiled(ts_sched *s, ts_config *c) {
  warp_tiling t = {
      .bm = ts_knob(c, "bm", 4, (int64_t[]){128, 64, 256, 32}),
      .bn = ts_knob(c, "bn", 4, (int64_t[]){128, 64, 256, 32})};
  const int64_t *w = warp_dims[ts_knob_choice(c, "warp", NWARPS, warps)];
  t.wm = w[0];
  t.wn = w[1];
  t.strided = ts_knob_choice(c, "cols", 2, col_layouts) == 1;
  t.bk = ts_knob(c, "bk", 2, (int64_t[]){16, 8});
  t.buffers = ts_knob(c, "buffers", 4, (int64_t[]){2, 1, 3, 4});
  const ts_gemm *g = ts_sched_gemm(s);
  t.bar_tiles = t.buffers == 2 && g->k >= BAR_TILES_DEPTH
                      ? ts_knob(c, "bar_tiles", 3, (int64_t[]){1, 2, 4})
                      : 1;
  int64_t rows = (g->m + t.bm - 1) / t.bm, cols = (g->n + t.bn - 1) / t.bn;
  t.swizzle = rows >= SWIZZLE_ROWS && cols >= SWIZZLE_ROWS
                  ? ts_knob(c, "swizzle", 2, (int64_t[]){0, 8})
                  : 0;
  t.parts = rows * cols < SPLIT_K_BLOCKS && g->k >= SPLIT_K_DEPTH
                ? ts_knob(c, "splitk", 3, (int64_t[]){1, 2, 4})
                : 1;
  t.partition = g->k % DEEPEST_BK != 0
                    ? ts_knob(c, "partition", 2, (int64_t[]){1, 0})
                    : 0;
  int64_t tm = t.wm / LANE_ROWS, tn = t.wn / LANE_COLS;
  int64_t nwarps = (t.bm / t.wm) * (t.bn / t.wn);
  if (!ts_knob_require(c, t.bm % t.wm == 0 && t.bn % t.wn == 0,
                       "warp tiles of %lldx%lld do not divide the block tile",
                       (long long)t.wm, (long long)t.wn) ||
      !ts_knob_require(c, nwarps <= MAX_WARPS, "%lld warps in a block",
                       (long long)nwarps) ||
      !ts_knob_require(c, registers_estimate(tm, tn) * nwarps * 32 <= 65536,
                       "about %lld registers a thread for %lld threads",
                       (long long)registers_estimate(tm, tn),
                       (long long)nwarps * 32))
    return ts_sched_status(s);
  return warptiled_with(s, &t);
}

ts_status example_warptiled(ts_sched *s) { return space_warptiled(s, NULL); }
