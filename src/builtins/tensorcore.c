/*
 * Tensor-core schedules: a block tile of C split over warps, each warp
 * tile a grid of 16 x 8 instruction tiles (ts_tensorize, mma.sync), the
 * operands staged in shared memory by cp.async (ts_pipeline) and read
 * into fragments by ldmatrix, which lowering chooses wherever a cache's
 * rows are 16-byte aligned: padding each row by 16 bytes keeps them
 * aligned and moves consecutive rows to different banks; so does an XOR
 * swizzle of the rows' 16-byte chunks (the knob `xor`), without padding.
 *
 * For fp16 and bf16 A and B the instruction is m16n8k16; for fp32 A and B
 * multiplied in tf32 (--dtype tf32) m16n8k8, its fragments filled by
 * plain loads (ldmatrix moves 16-bit elements).  C is fp32, fp16 or bf16.
 *
 * Built in as tc128, tc64 and the space tensorcore:
 *
 *   tessel bench tc128 --dtype f16 --shape 4096x4096x4096
 *   tessel tune tensorcore --dtype f16 --shape 4096x4096x4096
 *
 * With fp32 A and B and exact products (the default definition) they are
 * refused: tensor cores round fp32 to tf32, which --dtype tf32 allows.
 */
#include "builtins_impl.h"
#include "../base/limits.h"

typedef struct tc_tiling {
  int64_t bm, bn; /* the block's tile of C */
  int64_t wm, wn; /* a warp's: (bm / wm) x (bn / wn) warps */
  int64_t bk;     /* k a shared tile holds */
  int64_t stages; /* cp.async copies of the shared tiles; 1: none */
  int64_t swizzle; /* ts_swizzle's rows per group; 0: none */
  int64_t xor;     /* shared rows swizzled (ts_storage_swizzle), else padded */
} tc_tiling;

/* The contiguous copy loop of a cache, 16 bytes an access. */
static void vector_copy(ts_sched *s, ts_stage *st, int64_t lanes) {
  ts_loop *o, *in;
  ts_split(s, ts_stage_axis(st, ts_stage_contiguous(st)), lanes, &o, &in);
  ts_vectorize(s, in);
}

static ts_stage *shared_tile(ts_sched *s, const char *operand, ts_loop *at,
                             int64_t lanes, int64_t stages, int64_t xor) {
  ts_stage *st;
  ts_cache_read(s, operand, TS_SHARED, at, &st);
  if (xor)
    ts_storage_swizzle(s, st);
  else
    ts_storage_pad(s, st, lanes);
  vector_copy(s, st, lanes);
  if (stages > 1)
    ts_pipeline(s, st, (int)stages);
  return st;
}

static ts_status tensor_tiles(ts_sched *s, const tc_tiling *t) {
  const ts_gemm *g = ts_sched_gemm(s);
  int64_t kstep = g->a_type == TS_F32 ? 8 : 16; /* m16n8k8 or m16n8k16 */
  int64_t lanes = g->a_type == TS_F32 ? 4 : 8;  /* 16 bytes */
  ts_loop *io, *ir, *wy, *r, *mi, *ii, *jo, *jr, *wx, *c, *nj, *jj, *ko, *ki,
      *kq, *kk, *warp;
  /* i = block * bm + warp row * wm + tile * 16 + ii; j likewise by 8. */
  ts_split(s, ts_get_loop(s, "i"), t->bm, &io, &ir);
  ts_split(s, ir, t->wm, &wy, &r);
  ts_split(s, r, 16, &mi, &ii);
  ts_split(s, ts_get_loop(s, "j"), t->bn, &jo, &jr);
  ts_split(s, jr, t->wn, &wx, &c);
  ts_split(s, c, 8, &nj, &jj);
  ts_split(s, ts_get_loop(s, "k"), t->bk, &ko, &ki);
  ts_split(s, ki, kstep, &kq, &kk);
  ts_reorder(s, 11,
             (ts_loop *[]){io, jo, wy, wx, ko, kq, mi, nj, ii, jj, kk});
  ts_fuse(s, wy, wx, &warp);
  ts_rename(s, warp, "warp");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, warp, TS_THREAD_Y);
  if (t->swizzle)
    ts_swizzle(s, io, jo, t->swizzle);
  shared_tile(s, "A", ko, lanes, t->stages, t->xor);
  shared_tile(s, "B", ko, lanes, t->stages, t->xor);
  ts_unroll(s, kq);
  ts_unroll(s, mi);
  ts_unroll(s, nj);
  ts_tensorize(s, ii, jj, kk);
  return ts_sched_status(s);
}

/* 128 x 128 block tiles of 4 warps of 64 x 64, k in 32s, 3 stages. */
ts_status example_tc128(ts_sched *s) {
  return tensor_tiles(s, &(tc_tiling){128, 128, 64, 64, 32, 3, 0, 0});
}

/* 64 x 64 block tiles of 4 warps of 32 x 32: 16 times the blocks, for
 * small and skinny shapes. */
ts_status example_tc64(ts_sched *s) {
  return tensor_tiles(s, &(tc_tiling){64, 64, 32, 32, 32, 3, 0, 0});
}

/* ---- A warpgroup's instruction: wgmma (sm_90a) ------------------------------
 *
 * Each warpgroup (4 warps, 128 lanes on threadIdx.x) takes 64 rows of the
 * block's tile across all its bn columns: one m64n<bn>k16 instruction a
 * k step, reading both operands from shared memory, which must be
 * swizzled in 128-byte rows (k tiles of 64 halves for A, and B's rows cut
 * into 128-byte panels). */

typedef struct wg_tiling {
  int64_t bm, bn, stages, swizzle;
  int64_t in_flight; /* wgmma batches left running into the next k tile */
  int64_t tma;       /* the tiles copied by the TMA (ts_tma) where it can */
  int64_t ws;        /* and by a producer warpgroup (ts_warp_specialize) */
  int64_t persistent; /* a persistent grid of `blocks` a multiprocessor */
  int64_t blocks;     /* blocks a multiprocessor (ts_min_blocks_per_sm);
                       * 0 or 1: one, not asked */
  int64_t pack;      /* A and B packed first (ts_pack) even where the TMA
                      * could copy them as they lie: in tf32, rounded to
                      * nearest where the tensor cores would truncate */
  int64_t store;     /* C's tile written to shared memory and stored by the
                      * TMA (ts_cache_write(C, TS_SHARED), ts_tma) where C's
                      * rows are 16-byte aligned */
  int64_t cluster;   /* blocks a cluster (ts_cluster) multicasting the
                      * operand a cluster's tiles share; 0 or 1: none */
  int64_t pingpong;  /* two consumer warpgroups taking the persistent
                      * grid's tiles in turn (ts_pingpong), each a whole
                      * tile of one warpgroup's (bm 64) */
} wg_tiling;

/* Whether operand `role`'s stored rows start 16-byte aligned: its
 * leading dimension (K, M or N elements as the layout stores it, packed)
 * in bytes a multiple of 16. */
static bool operand_rows_aligned(const ts_gemm *g, ts_operand_role role) {
  ts_operand op = ts_gemm_operand(g, role);
  return op.ld * ts_dtype_size(op.type) % 16 == 0;
}

/* Whether the TMA can copy operand A (else B) as it lies in memory: each
 * stored row 16-byte aligned.  A packed row is padded to 16 bytes, so a
 * packed operand always fits. */
static bool rows_aligned(const ts_gemm *g, bool a) {
  return operand_rows_aligned(g, a ? TS_OPERAND_A : TS_OPERAND_B);
}

/* Whether op(A) (else op(B)) lies k-major in memory: A as stored in NN
 * and NT (M x K), B as stored in NT and TT (N x K). */
static bool k_major(const ts_gemm *g, bool a) {
  return a ? g->layout == TS_NN || g->layout == TS_NT
           : g->layout == TS_NT || g->layout == TS_TT;
}

/* Whether operand A (else B) is packed first: where the tiling asks
 * (`pack`: both, rounded to nearest in tf32), where the TMA is to copy it
 * but its rows are not 16-byte aligned (cp.async, the other way, copies
 * such rows an element at a time, under guards), and in tf32 B where
 * both lie m- or n-major (TN): wgmma reads tf32 from shared memory
 * k-major only, and takes one operand, its a, from registers in any
 * layout (A in TT, B on C's transpose in NN).  Otherwise it is copied as
 * it lies; a tf32 operand so read is truncated to tf32 by the tensor
 * cores, as CUTLASS's Hopper kernels read fp32, where a packed one is
 * rounded to nearest (TS_MATH_TF32; docs/design.md, "tf32"). */
static bool packs(const ts_gemm *g, const wg_tiling *t, bool a) {
  return t->pack || (t->tma && !rows_aligned(g, a)) ||
         (!a && g->a_type == TS_F32 && !k_major(g, true) &&
          !k_major(g, false));
}

/* Whether wgmma computes C's transpose: tf32 B read as it lies n-major
 * (NN), which the instruction then takes as its a, from registers. */
static bool transposes(const ts_gemm *g, const wg_tiling *t) {
  return g->a_type == TS_F32 && !packs(g, t, false) && !k_major(g, false);
}

/* Whether wgmma takes its a from registers: tf32 read as it lies m- or
 * n-major.  Its batches then wait before the next k tile (lowering keeps
 * one set of registers). */
static bool a_in_registers(const ts_gemm *g, const wg_tiling *t) {
  return transposes(g, t) ||
         (g->a_type == TS_F32 && !packs(g, t, true) && !k_major(g, true));
}

/* Whether C's tile goes out through shared memory and the TMA: where the
 * tiling asks and C's rows are 16-byte aligned (the TMA's tensor map
 * needs them). */
static bool tma_stores(const ts_gemm *g, const wg_tiling *t) {
  return t->store && operand_rows_aligned(g, TS_OPERAND_C);
}

/* A wgmma operand's shared tile: swizzled in 128-byte rows, copied 16
 * bytes an access in stages; `transposed`: stored the other way from the
 * cache's default (op(A) m x k, op(B) k x n, each row-major), so that its
 * rows run as the operand's rows run in memory and each copy is 16
 * contiguous bytes at both ends (wgmma reads a 16-bit tile either way). */
static ts_stage *warpgroup_tile(ts_sched *s, const char *operand,
                                ts_loop *at, const wg_tiling *t,
                                bool transposed) {
  ts_stage *st;
  ts_cache_read(s, operand, TS_SHARED, at, &st);
  if (transposed)
    ts_storage_transpose(s, st);
  ts_storage_swizzle(s, st);
  vector_copy(s, st, 16 / ts_dtype_size(ts_sched_gemm(s)->a_type));
  ts_pipeline(s, st, (int)t->stages);
  if (t->tma) {
    ts_tma(s, st);
    if (t->ws)
      ts_warp_specialize(s, st, 4);
  }
  return st;
}

/* The block's tile, of bm / 64 warpgroups each on 64 rows of it by all
 * bn columns; on C's transpose (transposes), bn rows by bm columns, each
 * warpgroup on 64 of the columns by all the rows: the same instruction,
 * m64n<bn>. */
static void split_block(ts_sched *s, const wg_tiling *t, bool transposed,
                        ts_loop **io, ts_loop **jo, ts_loop **wg,
                        ts_loop **ii, ts_loop **jj) {
  ts_loop *r;
  if (!transposed) {
    ts_split(s, ts_get_loop(s, "i"), t->bm, io, &r);
    ts_split(s, r, 64, wg, ii);
    ts_split(s, ts_get_loop(s, "j"), t->bn, jo, jj);
    return;
  }
  ts_split(s, ts_get_loop(s, "i"), t->bn, io, ii);
  ts_split(s, ts_get_loop(s, "j"), t->bm, jo, &r);
  ts_split(s, r, 64, wg, jj);
}

static ts_status warpgroup_tiles(ts_sched *s, const wg_tiling *t) {
  ts_loop *io, *wg, *ii, *jo, *jj, *ko, *ki, *kq, *kk;
  /* A packed operand lies k-major, so a packed B's tile is stored
   * k-major; tf32's k steps are 8.  A k tile is one 128-byte row of the
   * swizzle: 64 halves, 32 tf32.  Unpacked: each tile lies as its operand
   * lies in memory, A m-major where it is stored transposed (TN, TT), B
   * k-major where it is (NT, TT). */
  const ts_gemm *g = ts_sched_gemm(s);
  bool tf32 = g->a_type == TS_F32;
  bool pack_a = packs(g, t, true), pack_b = packs(g, t, false);
  bool transposed = transposes(g, t);
  bool a_stored_t = g->layout == TS_TN || g->layout == TS_TT;
  bool b_stored_t = g->layout == TS_NT || g->layout == TS_TT;
  int64_t size = ts_dtype_size(g->a_type);
  if (pack_a)
    ts_pack(s, "A");
  if (pack_b)
    ts_pack(s, "B");
  split_block(s, t, transposed, &io, &jo, &wg, &ii, &jj);
  ts_split(s, ts_get_loop(s, "k"), 128 / size, &ko, &ki);
  ts_split(s, ki, tf32 ? 8 : 16, &kq, &kk);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, wg, ko, kq, ii, jj, kk});
  ts_rename(s, wg, "warpgroup");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  /* Groups of block rows keep the tiles the running blocks share in L2
   * for 128-row blocks; on C's transpose, whose blocks are 256 rows (an
   * A panel every column block reads), launch order without groups ran
   * 2-5% faster in tf32 NN at 2048^3 to 8192^3 (docs/performance.md, "C's
   * transpose in launch order"). */
  if (t->swizzle && !transposed)
    ts_swizzle(s, io, jo, t->swizzle);
  if (t->persistent)
    ts_persistent(s, io, jo, t->blocks > 1 ? (int)t->blocks : 1);
  ts_stage *as = warpgroup_tile(s, "A", ko, t, !pack_a && a_stored_t);
  ts_stage *bs = warpgroup_tile(s, "B", ko, t, pack_b || b_stored_t);
  /* The swizzle's groups pair block rows, which share B's tile; launch
   * order pairs neighbours on blockIdx.x, jo, which share A's. */
  if (t->cluster > 1)
    ts_cluster(s, io, jo, t->swizzle && !transposed ? bs : as,
               (int)t->cluster);
  if (t->pingpong) {
    ts_pingpong(s, as);
    ts_pingpong(s, bs);
  }
  if (tma_stores(g, t)) {
    ts_stage *cs;
    ts_cache_write(s, "C", TS_SHARED, jo, &cs);
    ts_tma(s, cs);
  }
  ts_unroll(s, kq);
  if (transposed)
    ts_tensorize(s, jj, ii, kk);
  else
    ts_tensorize(s, ii, jj, kk);
  /* A batch left in flight would read registers the next k tile's fill
   * overwrites: none where wgmma takes a from registers. */
  if (t->in_flight && !a_in_registers(g, t))
    ts_wgmma_in_flight(s, ko, (int)t->in_flight);
  if (t->blocks > 1)
    ts_min_blocks_per_sm(s, (int)t->blocks);
  return ts_sched_status(s);
}

/* 128 x 256 block tiles of 2 warpgroups of 64 x 256, k tiles of 128
 * bytes, 4 stages, each k tile's batch of wgmma running on while the next
 * is issued: fp16, bf16, or tf32 (an operand that lies m- or n-major
 * packed k-major and rounded, a k-major one read as it lies), on sm_90. */
ts_status example_wg128(ts_sched *s) {
  return warpgroup_tiles(s, &(wg_tiling){128, 256, 4, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0});
}

/* wg128 with the tiles copied by the TMA: one thread fills a stage, an
 * mbarrier per stage says it landed and another that every warp is done
 * with it, so the k loop has no __syncthreads; from the packed copies in
 * the workspace of an operand whose rows are not 16-byte aligned (the TMA
 * cannot copy them as they lie) and of a tf32 one that lies m- or
 * n-major. */
ts_status example_wgtma(ts_sched *s) {
  return warpgroup_tiles(s, &(wg_tiling){128, 256, 4, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0});
}

/* wgtma warp-specialized: a third warpgroup, the producer, issues the
 * copies and waits for stages to be released; the two consumer
 * warpgroups only wait for tiles, run wgmma and release them, with the
 * producer's registers (setmaxnreg).  The blocks go in groups of 8 block
 * rows (ts_swizzle): at 8192^3 a row of 32 blocks in launch order reads
 * all of B, more than L2 keeps, and the groups keep the tiles the
 * running blocks share there (docs/performance.md). */
ts_status example_wgws(ts_sched *s) {
  return warpgroup_tiles(s, &(wg_tiling){128, 256, 4, 8, 1, 1, 1, 0, 1, 0, 0, 0, 0});
}

/* wgws in a persistent grid: one block a multiprocessor loops over the
 * tiles in groups of 8 block rows (the swizzle), its producer warpgroup
 * filling the next tile's first stages while the consumers write the
 * last tile's C, the pipeline's phases running on across tiles. */
ts_status example_wgpers(ts_sched *s) {
  return warpgroup_tiles(s, &(wg_tiling){128, 256, 4, 8, 1, 1, 1, 1, 1, 0, 0, 0, 0});
}

/* wgws in 128 x 128 tiles of 2 consumer warpgroups of 64 x 128, 6
 * stages, no wgmma batch left in flight, for shapes where 128 x 256 tiles
 * fill few multiprocessors or lie half past C: 128 x 8192 x 8192 is 32
 * blocks of wgws on 132 multiprocessors and 64 of these; 8192 x 128 x 8192
 * is 64 blocks either way, but half of each wgws tile's columns lie past
 * N, and its tensor cores compute them all the same.  Two stages more than
 * wgws's 4, since a block's k loop is nearly all of its work.  Chosen
 * over 32 configurations of the `warpgroup` space with one and two
 * consumer warpgroups at small, medium and skinny shapes in every layout
 * (docs/performance.md, "A built-in for small and skinny shapes"). */
ts_status example_wgskinny(ts_sched *s) {
  return warpgroup_tiles(s, &(wg_tiling){128, 128, 6, 8, 0, 1, 1, 0, 1, 0, 0, 0, 0});
}

/* wgws with C's tile written into shared memory over the pipeline's
 * stages and stored by the TMA, one 128-byte panel a box, each panel
 * stored while the next is written (where C's rows are 16-byte aligned;
 * elsewhere wgws's stores): with a 16-bit C 1.2-2.0% faster than wgws at
 * 4096^3 on an H200, with an fp32 C within 1.2% (docs/performance.md). */
ts_status example_wgstore(ts_sched *s) {
  return warpgroup_tiles(s, &(wg_tiling){128, 256, 4, 8, 1, 1, 1, 0, 1, 0, 1, 0, 0});
}

/* Why ping-pong consumers do not fit the tiling (NULL: they do, or none
 * are asked): they take a producer warpgroup's persistent grid's tiles,
 * a team is one warpgroup, and each writes C from its registers. */
static const char *pingpong_alone(const wg_tiling *t) {
  if (!t->pingpong)
    return NULL;
  if (!t->ws || !t->persistent)
    return "without a producer warpgroup's persistent grid (warpspec=1, "
           "persistent=1), whose tiles the teams take in turn";
  if (t->bm != 64)
    return "with bm other than 64: a team is one warpgroup";
  if (t->cluster > 1)
    return "with cluster=2: not built for clusters";
  if (t->store)
    return "with store=1: both teams would write C's one shared stage";
  return NULL;
}

/* Each knob's first value is wgws's, so that the first configuration,
 * which tune times whatever its budget and --tuned takes where no shape
 * was tuned, is the fastest built-in at large shapes: block tiles of 1 to 4 warpgroups,
 * n of 64 to 256 (for small and skinny shapes, more blocks), 2 to 6
 * stages (a 64 x 256 tile of B and 128 x 64 of A take 48 KiB a stage; 5
 * and 6 fit smaller tiles), and 0 to 2 k tiles' batches of wgmma left in
 * flight (each one runs the copies a tile less ahead); the TMA, a
 * producer warpgroup, a persistent grid (a TMA pipeline in it needs the
 * producer warpgroup), and 1 or 2 blocks a multiprocessor, so that one
 * block's epilogue runs beside the other's main loop: both blocks'
 * shared tiles and registers must fit the multiprocessor, and a producer
 * warpgroup's consumers then take only what it released
 * (ts_register_split_of); and C's tile written into shared memory over
 * the stages and stored by the TMA (store, wgstore's epilogue), where C's
 * rows are 16-byte aligned; in a persistent grid into a ring of two
 * panels beside the stages. */
ts_status space_warpgroup(ts_sched *s, ts_config *c) {
  wg_tiling t;
  t.bm = ts_knob(c, "bm", 4, (int64_t[]){128, 64, 192, 256});
  t.bn = ts_knob(c, "bn", 3, (int64_t[]){256, 128, 64});
  t.stages = ts_knob(c, "stages", 5, (int64_t[]){4, 3, 2, 5, 6});
  t.swizzle = ts_knob(c, "swizzle", 2, (int64_t[]){8, 0});
  t.in_flight = ts_knob(c, "inflight", 3, (int64_t[]){1, 0, 2});
  t.tma = ts_knob(c, "tma", 2, (int64_t[]){1, 0});
  t.ws = ts_knob(c, "warpspec", 2, (int64_t[]){1, 0});
  t.persistent = ts_knob(c, "persistent", 2, (int64_t[]){0, 1});
  t.blocks = ts_knob(c, "blocks", 2, (int64_t[]){1, 2});
  t.pack = ts_knob(c, "pack", 2, (int64_t[]){0, 1});
  t.store = ts_knob(c, "store", 2, (int64_t[]){0, 1});
  t.cluster = ts_knob(c, "cluster", 2, (int64_t[]){1, 2});
  t.pingpong = ts_knob(c, "pingpong", 2, (int64_t[]){0, 1});
  int64_t bytes = t.stages * (t.bm + t.bn) * 128; /* k tiles of 128 bytes */
  /* C's tile for the TMA's store lies over the stages: the larger; in a
   * persistent grid two 128-byte panels of it lie beside them. */
  int64_t c_tile = t.bm * t.bn * ts_dtype_size(ts_sched_gemm(s)->c_type);
  int64_t c_rows = transposes(ts_sched_gemm(s), &t) ? t.bn : t.bm;
  int64_t c_panels = c_tile / c_rows / 128;
  /* A cluster's blocks take their tiles through a persistent grid's tile
   * loop too (one tile a block), where C's stage is the ring. */
  bool tile_loop = t.persistent || t.cluster > 1;
  if (t.store && tile_loop)
    bytes += (c_panels < 2 ? c_panels : 2) * c_rows * 128;
  else if (t.store && c_tile > bytes)
    bytes = c_tile;
  /* A lane's bn / 2 accumulators and about 30 registers more (ptxas asks
   * 154 for 128), under the 65536 of an SM shared by its blocks.  With a
   * producer warpgroup the registers a thread has at launch count: ptxas
   * holds each wgmma to them, whatever setmaxnreg.inc gives later. */
  int64_t threads = t.bm / 64 * 128 * (t.pingpong ? 2 : 1);
  int64_t regs = t.bn / 2 + 30;
  ts_register_split split;
  bool split_fits = ts_register_split_of(threads, 128, (int)t.blocks, &split);
  const char *alone = pingpong_alone(&t);
  if (!ts_knob_require(c, !alone, "pingpong=1 %s", alone) ||
      !ts_knob_require(c, bytes <= TS_SHARED_BLOCK_MAX, "%lld KiB of shared memory "
                       "a block", (long long)(bytes / 1024)) ||
      !ts_knob_require(c, t.blocks * (bytes + TS_SHARED_RESERVED_BLOCK) <=
                       TS_SHARED_SM_MAX, "%lld blocks of %lld KiB of shared "
                       "memory a multiprocessor", (long long)t.blocks,
                       (long long)(bytes / 1024)) ||
      !ts_knob_require(c, t.stages >= t.in_flight + 2, "%lld stages for "
                       "%lld batches in flight", (long long)t.stages,
                       (long long)t.in_flight) ||
      !ts_knob_require(c, t.swizzle == 8 ||
                              !transposes(ts_sched_gemm(s), &t),
                       "swizzle=%lld on C's transpose (tf32 NN), whose "
                       "blocks go in launch order: the kernel of swizzle=8",
                       (long long)t.swizzle) ||
      !ts_knob_require(c, t.in_flight == 1 ||
                              !a_in_registers(ts_sched_gemm(s), &t),
                       "inflight=%lld where wgmma takes a from registers "
                       "(tf32 A in TN and TT, B in NN), which leaves no "
                       "batch in flight: the kernel of inflight=1",
                       (long long)t.in_flight) ||
      !ts_knob_require(c, t.tma || !t.ws, "a producer warpgroup without "
                       "the TMA") ||
      !ts_knob_require(c, !t.persistent || !t.tma || t.ws, "a persistent "
                       "grid's TMA pipeline without a producer warpgroup") ||
      !ts_knob_require(c, !t.ws || (split_fits && split.launch >= regs),
                       "%lld consumer warpgroups of about %lld registers a "
                       "thread beside a producer, %lld block%s a "
                       "multiprocessor: %s (%d)", (long long)(threads / 128),
                       (long long)regs, (long long)t.blocks,
                       t.blocks > 1 ? "s" : "",
                       split_fits ? "fewer registers a thread at launch"
                                  : "setmaxnreg's split does not fit",
                       split_fits ? split.launch : split.consumer) ||
      !ts_knob_require(c, !t.pack || !packs(ts_sched_gemm(s), &(wg_tiling){
                           .tma = t.tma}, true) || !packs(ts_sched_gemm(s),
                           &(wg_tiling){.tma = t.tma}, false),
                       "pack=1 where A and B are packed anyway (tf32 "
                       "operands stored m- or n-major, or the TMA on rows "
                       "not 16-byte aligned)") ||
      !ts_knob_require(c, !t.store || tma_stores(ts_sched_gemm(s), &t),
                       "store=1 where C's rows are not 16-byte aligned: the "
                       "kernel of store=0") ||
      !ts_knob_require(c, !t.store || !tile_loop || c_panels <= 2 ||
                              !transposes(ts_sched_gemm(s), &t),
                       "store=1 in a persistent grid or clusters on C's "
                       "transpose (tf32 NN) of %lld panels a tile, whose "
                       "epilogue writes "
                       "each warpgroup's 64 columns at once, not a panel of "
                       "the ring at a time", (long long)c_panels) ||
      !ts_knob_require(c, t.cluster == 1 || (t.tma && t.ws),
                       "cluster=%lld without a producer warpgroup's TMA "
                       "pipeline, whose boxes a cluster multicasts",
                       (long long)t.cluster) ||
      !ts_knob_require(c, t.blocks * threads * regs <= TS_REGISTERS_PER_BLOCK,
                       "%lld blocks of %lld threads of about %lld registers",
                       (long long)t.blocks, (long long)threads,
                       (long long)regs))
    return ts_sched_status(s);
  return warpgroup_tiles(s, &t);
}

/* Each knob's first value is tc128's. */
ts_status space_tensorcore(ts_sched *s, ts_config *c) {
  tc_tiling t;
  t.bm = ts_knob(c, "bm", 4, (int64_t[]){128, 64, 256, 32});
  t.bn = ts_knob(c, "bn", 4, (int64_t[]){128, 64, 256, 32});
  t.wm = ts_knob(c, "wm", 3, (int64_t[]){64, 32, 16});
  t.wn = ts_knob(c, "wn", 3, (int64_t[]){64, 32, 16});
  t.bk = ts_knob(c, "bk", 2, (int64_t[]){32, 64});
  t.stages = ts_knob(c, "stages", 3, (int64_t[]){3, 4, 2});
  t.swizzle = ts_knob(c, "swizzle", 2, (int64_t[]){0, 8});
  t.xor = ts_knob(c, "xor", 2, (int64_t[]){0, 1});
  int64_t warps = (t.bm / t.wm) * (t.bn / t.wn);
  int64_t acc = (t.wm / 16) * (t.wn / 8) * 4; /* accumulators a lane */
  if (!ts_knob_require(c, t.bm % t.wm == 0 && t.bn % t.wn == 0,
                       "warp tiles of %lldx%lld do not divide the block's",
                       (long long)t.wm, (long long)t.wn) ||
      !ts_knob_require(c, warps >= 2 && warps <= 16, "%lld warps a block",
                       (long long)warps) ||
      !ts_knob_require(c, acc <= 128, "%lld accumulators a lane",
                       (long long)acc))
    return ts_sched_status(s);
  return tensor_tiles(s, &t);
}
