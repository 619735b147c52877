/*
 * The fuzzer's Hopper cases: a warpgroup schedule (wgmma, docs/primitives.md
 * "A warpgroup's instruction") written with primitives as the built-ins
 * wg128, wgtma and wgws write it (src/builtins/tensorcore.c), its choices
 * drawn: the block's tile, the pipeline's stages, the tensor memory
 * accelerator on both operands' caches (ts_tma), a producer warpgroup
 * (ts_warp_specialize), batches of wgmma left in flight
 * (ts_wgmma_in_flight), the blocks' order, C's transpose (ts_tensorize
 * with the loop over j first: wgmma's a from op(B), which in tf32 is then
 * read as it lies, into registers where it lies n-major, and op(A)
 * packed), and C's tile stored through shared memory by the TMA
 * (ts_cache_write(C, TS_SHARED) and ts_tma on it: a ring of panels in a
 * persistent grid, stmatrix's writes with a 16-bit C; lowering refuses it
 * where C's rows are not 16-byte aligned), and 2-block clusters
 * multicasting the operand the pair shares (ts_cluster: B's cache in the
 * swizzle's groups, A's in launch order; broken, the other one, which
 * lowering refuses), and ping-pong consumers (ts_pingpong on both caches;
 * broken, on one, which lowering refuses).  The
 * definition is fp16 or bf16
 * (one case in ten tf32, whose packed operands the TMA copies from the
 * workspace at any size), any layout, each dimension a multiple of 8 in
 * most cases, so that the rows the TMA copies are 16-byte aligned, and odd
 * in the others, where lowering refuses ts_tma in fp16 and bf16.  In HOSTILE_PERCENT of the cases one of the
 * primitives' requirements is broken on purpose (the cache not swizzled
 * or not pipelined, stored across the operand's rows, the TMA or the
 * producer on one operand only, a producer of 2 warps or without the TMA,
 * a call made twice, batches out of range, C's shared stage without
 * ts_tma or attached outside a block loop).  Every refusal must be clean,
 * as gen_check.c checks any call's, and an accepted schedule correct on the
 * executor.
 */
#include <stdio.h>

#include "case.h"
#include "fuzz_knobs.h"

enum { HOSTILE_PERCENT = 25 };

/* The ways a hostile case breaks the Hopper primitives' requirements. */
typedef enum {
  BREAK_NONE,
  BREAK_NO_SWIZZLE,    /* one cache padded instead of swizzled */
  BREAK_NO_PIPELINE,   /* one cache not pipelined */
  BREAK_ACROSS_ROWS,   /* one cache stored across the operand's rows */
  BREAK_TMA_ONE,       /* the TMA on one operand only */
  BREAK_WS_ONE,        /* the producer on one operand only */
  BREAK_WS_WARPS,      /* a producer of 2 or 8 warps */
  BREAK_WS_NO_TMA,     /* a producer without the TMA */
  BREAK_TWICE,         /* ts_tma or ts_warp_specialize twice */
  BREAK_BATCHES,       /* ts_wgmma_in_flight of -1 or 7 batches */
  BREAK_STORE,         /* C's shared stage without ts_tma, or at i.outer */
  BREAK_CLUSTER,       /* ts_cluster multicasting the cache not shared */
  BREAK_PINGPONG,      /* ts_pingpong on one operand's cache only */
  BREAK_COUNT
} breakage;

typedef struct hopper {
  int64_t bm, bn, stages, swizzle, in_flight;
  int64_t persistent; /* ts_persistent's blocks a multiprocessor; 0: none */
  bool tma, ws, vector;
  bool transposed; /* ts_tensorize(s, jj, ii, kk): C's transpose */
  bool store;      /* C's tile stored by the TMA through shared memory */
  bool cluster;    /* ts_cluster: 2-block clusters */
  bool pingpong;   /* ts_pingpong: two consumer warpgroups in turn */
  breakage broken;
  int victim; /* the operand (0: A, 1: B) a breakage touches */
} hopper;

/* ---- The definition -------------------------------------------------------- */

/* 1..most, a multiple of 8 where `aligned`. */
static int64_t dimension(fz_case *c, bool aligned, int64_t most) {
  if (aligned)
    return 8 * (1 + (int64_t)fz_pick(c->src, (uint32_t)(most / 8)));
  return 1 + (int64_t)fz_pick(c->src, (uint32_t)most);
}

/* The element types and the shape; the layout, alpha and beta stay as
 * drawn.  K reaches 5 k tiles of 64 halves, so that a pipeline of 2 to 5
 * stages refills its stages; m and n one tile more than the largest. */
void fz_hopper_definition(fz_case *c) {
  static const ts_dtype halves[] = {TS_F16, TS_BF16};
  bool tf32 = fz_chance(c, 10);
  ts_dtype t = tf32 ? TS_F32 : halves[fz_pick(c->src, 2)];
  c->def.a_type = c->def.b_type = t;
  c->def.c_type = fz_chance(c, 50) ? t : TS_F32;
  c->def.math = tf32 ? TS_MATH_TF32 : TS_MATH_F32;
  bool aligned = fz_chance(c, 75);
  c->def.m = dimension(c, aligned || fz_chance(c, 50), 192);
  c->def.n = dimension(c, aligned || fz_chance(c, 50), 320);
  c->def.k = dimension(c, aligned || fz_chance(c, 50), 320);
}

/* ---- Drawing the schedule's choices ---------------------------------------- */

/* The choices, one statement each: the order of the draws (and so what a
 * seed gives) must not be left to the compiler, as an initializer list's
 * would be. */
static hopper draw_hopper(fz_case *c) {
  static const int64_t bns[] = {256, 128, 64, 32, 16};
  hopper h = {0};
  h.bm = 64 * (1 + (int64_t)fz_pick(c->src, 2));
  h.bn = bns[fz_pick(c->src, 5)];
  h.stages = 2 + (int64_t)fz_pick(c->src, 4);
  h.swizzle = fz_chance(c, 15) ? 2 + 6 * fz_pick(c->src, 2) : 0;
  h.in_flight = fz_pick(c->src, 5) / 2; /* 0, 0, 1, 1, 2 */
  h.tma = fz_chance(c, 85);
  h.vector = fz_chance(c, 80);
  h.victim = (int)fz_pick(c->src, 2);
  h.ws = h.tma && fz_chance(c, 50);
  if (fz_chance(c, HOSTILE_PERCENT))
    h.broken = (breakage)(1 + fz_pick(c->src, BREAK_COUNT - 1));
  h.persistent = fz_chance(c, 30) ? 1 + (int64_t)fz_pick(c->src, 2) : 0;
  h.transposed = fz_chance(c, 25);
  h.store = fz_chance(c, 30) || h.broken == BREAK_STORE;
  h.cluster = fz_chance(c, 25) || h.broken == BREAK_CLUSTER;
  /* Ping-pong consumers mostly with what they need (a producer
   * warpgroup's persistent grid, a team of one warpgroup, no cluster, C
   * from the registers), so that some run; else as drawn, refused. */
  h.pingpong = fz_chance(c, 15) || h.broken == BREAK_PINGPONG;
  if (h.pingpong && fz_chance(c, 80)) {
    h.bm = 64;
    h.ws = h.tma;
    h.persistent = h.persistent ? h.persistent : 1;
    h.cluster = h.broken == BREAK_CLUSTER;
    h.store = h.broken == BREAK_STORE;
  }
  return h;
}

/* ---- The calls ------------------------------------------------------------- */

/* A call on stage slot `slot`: written down and checked. */
static void stage_call(fz_case *c, ts_status st, const char *fn, int slot,
                       const char *more) {
  ts_buf_printf(&c->prog, "  %s(s, S[%d]%s);\n", fn, slot, more);
  fz_after_call(c, st, fn);
}

/* L[index] split by `factor` into the next two slots; returns the outer's
 * slot (the inner's is one more). */
static int split_at(fz_case *c, int index, int64_t factor) {
  char text[32];
  snprintf(text, sizeof(text), "L[%d]", index);
  int outer = c->nloops;
  fz_op_split(c, c->loops[index], text, index, factor);
  return outer;
}

static void bind_at(fz_case *c, int index, ts_loop_kind kind) {
  char text[32];
  snprintf(text, sizeof(text), "L[%d]", index);
  fz_op_bind_to(c, c->loops[index], text, index, kind);
}

/* Whether operand `op` (0: A, 1: B) lies in memory as its cache's default
 * transposed: A m-major (TN, TT), B k-major (NT, TT); packed tf32 operands
 * are k-major, which B's cache stores transposed (in tf32 on C's
 * transpose only A is packed). */
static bool stored_transposed(const fz_case *c, const hopper *h, int op) {
  ts_layout l = c->def.layout;
  if (c->def.a_type == TS_F32 && (op == 0 || !h->transposed))
    return op == 1;
  return op == 0 ? l == TS_TN || l == TS_TT : l == TS_NT || l == TS_TT;
}

/* The cache of operand `op` at L[ko], laid out for wgmma and the TMA;
 * returns its stage slot. */
static int operand_cache(fz_case *c, const hopper *h, int op, int ko) {
  const char *name = op ? "B" : "A";
  bool victim = op == h->victim;
  int slot = fz_new_stage_slot(c);
  ts_stage **st = &c->stages[slot];
  ts_buf_printf(&c->prog, "  ts_cache_read(s, \"%s\", TS_SHARED, L[%d], "
                "&S[%d]);\n", name, ko, slot);
  fz_after_call(c, ts_cache_read(c->s, name, TS_SHARED, c->loops[ko], st),
                "ts_cache_read");
  if (stored_transposed(c, h, op) !=
      (victim && h->broken == BREAK_ACROSS_ROWS))
    stage_call(c, ts_storage_transpose(c->s, *st), "ts_storage_transpose",
               slot, "");
  if (victim && h->broken == BREAK_NO_SWIZZLE)
    stage_call(c, ts_storage_pad(c->s, *st, 8), "ts_storage_pad", slot, ", 8");
  else
    stage_call(c, ts_storage_swizzle(c->s, *st), "ts_storage_swizzle", slot,
               "");
  if (h->vector) {
    int axis = c->nloops;
    c->loops[fz_new_loop_slot(c)] =
        ts_stage_axis(*st, ts_stage_contiguous(*st));
    ts_buf_printf(&c->prog, "  L[%d] = ts_stage_axis(S[%d], "
                  "ts_stage_contiguous(S[%d]));\n", axis, slot, slot);
    int lanes = c->nloops + 1;
    split_at(c, axis, 16 / ts_dtype_size(c->def.a_type));
    char text[32];
    snprintf(text, sizeof(text), "L[%d]", lanes);
    ts_buf_printf(&c->prog, "  ts_vectorize(s, %s);\n", text);
    fz_after_call(c, ts_vectorize(c->s, c->loops[lanes]), "ts_vectorize");
  }
  if (!(victim && h->broken == BREAK_NO_PIPELINE)) {
    char more[16];
    snprintf(more, sizeof(more), ", %d", (int)h->stages);
    stage_call(c, ts_pipeline(c->s, *st, (int)h->stages), "ts_pipeline", slot,
               more);
  }
  return slot;
}

/* ts_tma and ts_warp_specialize on operand `op`'s cache, as drawn and
 * broken. */
static void tma_calls(fz_case *c, const hopper *h, int op, int slot) {
  ts_stage *st = c->stages[slot];
  bool victim = op == h->victim;
  bool tma = h->tma && !(victim && (h->broken == BREAK_TMA_ONE ||
                                    h->broken == BREAK_WS_NO_TMA));
  int tmas = tma ? 1 + (victim && h->broken == BREAK_TWICE) : 0;
  for (int i = 0; i < tmas; i++)
    stage_call(c, ts_tma(c->s, st), "ts_tma", slot, "");
  bool ws = (h->ws && !(victim && h->broken == BREAK_WS_ONE)) ||
            (victim && h->broken == BREAK_WS_NO_TMA);
  if (!ws && !(victim && h->broken == BREAK_WS_WARPS))
    return;
  int warps = victim && h->broken == BREAK_WS_WARPS
                  ? (fz_chance(c, 50) ? 2 : 8) : 4;
  char more[16];
  snprintf(more, sizeof(more), ", %d", warps);
  stage_call(c, ts_warp_specialize(c->s, st, warps), "ts_warp_specialize",
             slot, more);
  if (victim && h->broken == BREAK_TWICE && warps == 4)
    stage_call(c, ts_warp_specialize(c->s, st, warps), "ts_warp_specialize",
               slot, more);
}

static void in_flight_call(fz_case *c, const hopper *h, int ko) {
  int batches = (int)h->in_flight;
  if (h->broken == BREAK_BATCHES)
    batches = fz_chance(c, 50) ? -1 : 7;
  else if (!batches)
    return;
  ts_buf_printf(&c->prog, "  ts_wgmma_in_flight(s, L[%d], %d);\n", ko,
                batches);
  fz_after_call(c, ts_wgmma_in_flight(c->s, c->loops[ko], batches),
                "ts_wgmma_in_flight");
}

/* The tiles of src/builtins/tensorcore.c's warpgroup_tiles: i by bm and 64
 * (a warpgroup's rows), j by bn, k by 128 bytes and the instruction's k;
 * on C's transpose i by bn, j by bm and 64 (a warpgroup's columns); the
 * warpgroups on threadIdx.y. */
static void warpgroup_loops(fz_case *c, const hopper *h, int *ko, int *kq,
                            int tile[3], int blocks[2]) {
  bool tf32 = c->def.a_type == TS_F32;
  fz_op_get_loop(c, "i"); /* L0 */
  fz_op_get_loop(c, "j"); /* L1 */
  fz_op_get_loop(c, "k"); /* L2 */
  int io, jo, wg;
  if (h->transposed) {
    io = split_at(c, 0, h->bn);
    jo = split_at(c, 1, h->bm);
    wg = split_at(c, jo + 1, 64);
  } else {
    io = split_at(c, 0, h->bm);
    wg = split_at(c, io + 1, 64);
    jo = split_at(c, 1, h->bn);
  }
  *ko = split_at(c, 2, 128 / ts_dtype_size(c->def.a_type));
  *kq = split_at(c, *ko + 1, tf32 ? 8 : 16);
  int mn[2] = {h->transposed ? wg + 1 : io + 1,  /* the instruction's m */
               h->transposed ? io + 1 : jo + 1}; /* and n */
  int order[8] = {io, jo, wg, *ko, *kq, mn[0], mn[1], *kq + 1};
  ts_loop *loops[8];
  char text[8][32];
  for (int i = 0; i < 8; i++) {
    loops[i] = c->loops[order[i]];
    snprintf(text[i], sizeof(text[i]), "L[%d]", order[i]);
  }
  fz_op_reorder_of(c, 8, loops, text);
  bind_at(c, io, TS_BLOCK_Y);
  bind_at(c, jo, TS_BLOCK_X);
  bind_at(c, wg, TS_THREAD_Y);
  if (h->swizzle) {
    ts_buf_printf(&c->prog, "  ts_swizzle(s, L[%d], L[%d], %lld);\n", io, jo,
                  (long long)h->swizzle);
    fz_after_call(c, ts_swizzle(c->s, c->loops[io], c->loops[jo], h->swizzle),
                  "ts_swizzle");
  }
  if (h->persistent) {
    ts_buf_printf(&c->prog, "  ts_persistent(s, L[%d], L[%d], %lld);\n", io,
                  jo, (long long)h->persistent);
    fz_after_call(c, ts_persistent(c->s, c->loops[io], c->loops[jo],
                                   (int)h->persistent),
                  "ts_persistent");
  }
  tile[0] = mn[0];
  tile[1] = mn[1];
  tile[2] = *kq + 1;
  blocks[0] = io;
  blocks[1] = jo;
}

/* C's tile at the inner block loop (broken: at the outer one, which
 * holds the other block loop, or without ts_tma), stored by the TMA. */
static void store_calls(fz_case *c, const hopper *h, const int blocks[2]) {
  bool outer = h->broken == BREAK_STORE && fz_chance(c, 50);
  bool tma = h->broken != BREAK_STORE || outer;
  int at = blocks[outer ? 0 : 1];
  int slot = fz_new_stage_slot(c);
  ts_buf_printf(&c->prog, "  ts_cache_write(s, \"C\", TS_SHARED, L[%d], "
                "&S[%d]);\n", at, slot);
  fz_after_call(c, ts_cache_write(c->s, "C", TS_SHARED, c->loops[at],
                                  &c->stages[slot]),
                "ts_cache_write");
  if (tma)
    stage_call(c, ts_tma(c->s, c->stages[slot]), "ts_tma", slot, "");
}

/* Clusters of 2 multicasting the cache of the operand the pair shares:
 * B's where the swizzle's groups pair block rows, else A's (the pair is
 * neighbours on blockIdx.x, the block columns; on C's transpose too);
 * broken, the other's. */
static void cluster_call(fz_case *c, const hopper *h, const int blocks[2],
                         const int slots[2]) {
  int shared = h->swizzle ? 1 : 0;
  int slot = slots[h->broken == BREAK_CLUSTER ? 1 - shared : shared];
  ts_buf_printf(&c->prog, "  ts_cluster(s, L[%d], L[%d], S[%d], 2);\n",
                blocks[0], blocks[1], slot);
  fz_after_call(c, ts_cluster(c->s, c->loops[blocks[0]], c->loops[blocks[1]],
                              c->stages[slot], 2),
                "ts_cluster");
}

/* Ping-pong consumers on both operands' caches (broken: on one). */
static void pingpong_calls(fz_case *c, const hopper *h, const int slots[2]) {
  for (int op = 0; op < 2; op++)
    if (!(h->broken == BREAK_PINGPONG && op == h->victim))
      stage_call(c, ts_pingpong(c->s, c->stages[slots[op]]), "ts_pingpong",
                 slots[op], "");
}

void fz_hopper_case(fz_case *c) {
  /* Plausible calls (gen_args.c's hostile arguments would drop a split's outer
   * loop), with the breakage drawn instead. */
  c->hostile = false;
  hopper h = draw_hopper(c);
  c->transposed = h.transposed;
  /* The tiles are the instruction's, not drawn splits: the bound on the
   * nest's work (gen_loops.c) would undo them; the shape keeps it small. */
  c->work = 0;
  int ko, kq, tile[3], blocks[2];
  warpgroup_loops(c, &h, &ko, &kq, tile, blocks);
  if (c->def.a_type == TS_F32) {
    ts_buf_puts(&c->prog, "  ts_pack(s, \"A\");\n");
    fz_after_call(c, ts_pack(c->s, "A"), "ts_pack");
  }
  if (c->def.a_type == TS_F32 && !h.transposed) {
    ts_buf_puts(&c->prog, "  ts_pack(s, \"B\");\n");
    fz_after_call(c, ts_pack(c->s, "B"), "ts_pack");
  }
  int slots[2] = {operand_cache(c, &h, 0, ko), operand_cache(c, &h, 1, ko)};
  tma_calls(c, &h, 0, slots[0]);
  tma_calls(c, &h, 1, slots[1]);
  if (h.store)
    store_calls(c, &h, blocks);
  if (h.cluster)
    cluster_call(c, &h, blocks, slots);
  if (h.pingpong)
    pingpong_calls(c, &h, slots);
  ts_buf_printf(&c->prog, "  ts_unroll(s, L[%d]);\n", kq);
  fz_after_call(c, ts_unroll(c->s, c->loops[kq]), "ts_unroll");
  ts_buf_printf(&c->prog, "  ts_tensorize(s, L[%d], L[%d], L[%d]);\n",
                tile[0], tile[1], tile[2]);
  fz_after_call(c, ts_tensorize(c->s, c->loops[tile[0]], c->loops[tile[1]],
                                c->loops[tile[2]]),
                "ts_tensorize");
  in_flight_call(c, &h, ko);
}
