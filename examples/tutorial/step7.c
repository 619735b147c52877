/*
 * Tutorial step 7 (docs/tutorial.md): tuning.  Step 6's warp tiling with
 * its numbers as knobs (a TS_SPACE): the block tile, the warp tile, the k
 * tile, how the shared tiles are filled (2: double-buffered through
 * registers; 3: cp.async stages) and the block order (ts_swizzle groups
 * of 8 block rows, or none).  Each knob's first value is step 6's warps,
 * so the space without a configuration is that schedule.  tessel tune
 * times every configuration on the GPU and records the best for the GPU
 * and shape, which --tuned then uses.
 *
 *   tessel list examples/tutorial/step7.c
 *   tessel check examples/tutorial/step7.c:warp_space:bm=64,bn=256,warp=32x64
 *   tessel tune examples/tutorial/step7.c --shape 4096x4096x4096
 *   tessel bench examples/tutorial/step7.c:warp_space --tuned \
 *       --shape 4096x4096x4096
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

typedef struct tiling {
  int64_t bm, bn; /* the block's tile of C */
  int64_t wm, wn; /* a warp's; its 8 x 4 threads each (wm/8) x (wn/4) */
  int64_t bk;     /* the k tile */
  int64_t stages; /* 2: ts_double_buffer; 3..8: ts_pipeline */
  int64_t swizzle; /* ts_swizzle's group of block rows; 0: none */
} tiling;

/* Step 6's warp_tiles, every number from t. */
static ts_status warp_tiles(ts_sched *s, const tiling *t) {
  ts_loop *io, *ir, *wy, *r, *ly, *ti, *jo, *jr, *wx, *c, *lx, *tj, *tjo,
      *tji, *ko, *ki, *warp, *lane;
  ts_split(s, ts_get_loop(s, "i"), t->bm, &io, &ir);
  ts_split(s, ir, t->wm, &wy, &r);
  ts_split(s, r, t->wm / 8, &ly, &ti);
  ts_split(s, ts_get_loop(s, "j"), t->bn, &jo, &jr);
  ts_split(s, jr, t->wn, &wx, &c);
  ts_split(s, c, t->wn / 4, &lx, &tj);
  ts_split(s, tj, 4, &tjo, &tji);
  ts_split(s, ts_get_loop(s, "k"), t->bk, &ko, &ki);
  ts_reorder(s, 11,
             (ts_loop *[]){io, jo, wy, wx, ly, lx, ko, ki, ti, tjo, tji});
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
  ts_stage *as, *bs, *ra, *rb;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_transpose(s, as);
  ts_storage_pad(s, as, 4);
  float4_copy(s, as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  float4_copy(s, bs);
  if (t->stages == 2) {
    ts_double_buffer(s, as);
    ts_double_buffer(s, bs);
  } else {
    ts_pipeline(s, as, (int)t->stages);
    ts_pipeline(s, bs, (int)t->stages);
  }
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  float4_copy(s, ra);
  ts_cache_read(s, "B.shared", TS_LOCAL, ki, &rb);
  float4_copy(s, rb);
  ts_unroll(s, ki);
  ts_unroll(s, ti);
  ts_unroll(s, tjo);
  ts_vectorize(s, tji);
  return ts_sched_status(s);
}

static const int64_t warp_dims[][2] = {{64, 64}, {32, 64}, {64, 32},
                                       {32, 32}};

TS_SPACE(warp_space, "step 6's block, warp and k tiles, stages and block "
         "order as knobs") {
  tiling t = {.bm = ts_knob(c, "bm", 3, (int64_t[]){128, 64, 256}),
              .bn = ts_knob(c, "bn", 3, (int64_t[]){128, 64, 256})};
  int w = ts_knob_choice(c, "warp", 4,
                         (const char *[]){"64x64", "32x64", "64x32",
                                          "32x32"});
  t.wm = warp_dims[w][0];
  t.wn = warp_dims[w][1];
  t.bk = ts_knob(c, "bk", 2, (int64_t[]){16, 8});
  t.stages = ts_knob(c, "stages", 2, (int64_t[]){2, 3});
  t.swizzle = ts_knob(c, "swizzle", 2, (int64_t[]){0, 8});
  /* Registers a thread: its (wm/8) x (wn/4) accumulators, one k step of
   * A and B, about 40 more; 65536 a block at most. */
  int64_t warps = (t.bm / t.wm) * (t.bn / t.wn);
  int64_t regs = t.wm / 8 * (t.wn / 4) + t.wm / 8 + t.wn / 4 + 40;
  if (!ts_knob_require(c, t.bm % t.wm == 0 && t.bn % t.wn == 0,
                       "%lldx%lld warp tiles do not divide the block tile",
                       (long long)t.wm, (long long)t.wn) ||
      !ts_knob_require(c, warps <= 16, "%lld warps a block",
                       (long long)warps) ||
      !ts_knob_require(c, regs * warps * 32 <= 65536,
                       "about %lld registers a thread for %lld threads",
                       (long long)regs, (long long)warps * 32))
    return ts_sched_status(s);
  return warp_tiles(s, &t);
}
