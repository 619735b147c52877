/*
 * wgmma's operands, for a tensorized nest whose instruction is a
 * warpgroup's (lower_tensorize.c calls here for the update): the shared
 * tiles its descriptors read, and its a from registers where no
 * descriptor can read it.
 */
#include "lower.h"

#include "../ir/analysis.h"

/* ---- wgmma -------------------------------------------------------------------
 *
 * The instruction reads its a and b tiles from shared memory itself, by
 * descriptors: each operand must be an unguarded load from a shared cache
 * swizzled in 128-byte rows (ts_storage_swizzle with rows of 64 or more
 * 16-bit elements, stored in 128-byte panels), the tile loops stepping its
 * two dimensions.  Which of the two is contiguous makes the operand
 * k-major or mn-major (mma.h), and the descriptors' byte offsets follow
 * from the cache's shape.  A tf32 a that lies mn-major is the exception:
 * the lanes load it into registers. */

/* Operand w of the instruction (0: a, 1: b) read from op(A) (op 0) or
 * op(B) (op 1): the tile's first element and its layout in the cache. */
typedef struct {
  int w, op;
  const char *name; /* the cache's, for the refusals */
  ir_expr *src;     /* a load of the tile's first element */
  bool mn_major;
  int kdim;         /* the cache's dimension along k */
  int64_t rows;     /* the cache's stored rows */
} wg_tile;

static bool wgmma_refuse(lower_ctx *cx, const wg_tile *o, const char *why) {
  return lower_fail(cx, TS_ERR_BAD_TENSORIZE, "ts_lower: wgmma reads %s "
                    "(op(%c), its operand %s) from shared memory, and %s",
                    o->name, "AB"[o->op], o->w ? "b" : "a", why);
}

/* wgmma's tf32 operands: k-major only in shared memory (it has no
 * transposes for 4-byte elements); a may come from registers instead
 * (wgmma_a_in_registers), b may not.  The instruction reads each 32-bit
 * element as tf32, taking its sign, exponent and top 10 significand bits
 * and ignoring the low 13: a truncation toward zero, which CUTLASS's
 * Hopper kernels accept for fp32 read as it lies (and which an H200
 * showed, docs/performance.md "tf32 through wgmma: tried").  So an
 * operand packed by ts_pack, whose kernel rounds to nearest as
 * TS_MATH_TF32 says, is read exactly; one copied as it lies is truncated,
 * and the reference executor and check model each (exec_wgmma.c,
 * reference_check.c). */
static bool tf32_refuse(lower_ctx *cx, const wg_tile *o) {
  static const char transpose[] = "store its tile transposed "
      "(ts_storage_transpose, before ts_storage_swizzle)";
  char op = "AB"[o->op];
  const char *other = o->op == 1
      ? ", or tensorize C's transpose (ts_tensorize(s, jj, ii, kk), the "
        "loop over j first), which makes op(B) wgmma's a, read from "
        "registers in any layout"
      : ", or tensorize with the loop over i first (ts_tensorize(s, ii, jj, "
        "kk)), which makes op(A) wgmma's a, read from registers in any "
        "layout";
  const char *why = lower_packed(cx->s, o->op)
      ? ts_arena_printf(cx->arena, "its tile is stored with k across the "
                        "rows, and wgmma takes tf32 operands k-major only: "
                        "%s%s", transpose, other)
      : ts_arena_printf(cx->arena, "its tile is stored with k across the "
                        "rows, and wgmma takes tf32 operands k-major only: "
                        "pack op(%c) first (ts_pack(s, \"%c\"), before "
                        "ts_cache_read), which lays it k-major and rounds "
                        "it to tf32, or %s%s", op, op, transpose, other);
  return why ? wgmma_refuse(cx, o, why)
             : lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
}

/* The tile operand `operand` gives the instruction's operand o->w, or
 * false with the error: a shared cache swizzled in 128-byte rows, the
 * tensorized loops over the operand's m or n and over k stepping its two
 * dimensions one element each. */
static bool wgmma_tile(lower_ctx *cx, const lower_mma *t, ir_expr *operand,
                       wg_tile *o) {
  ts_arena *a = cx->arena;
  const ts_loop *loops[2] = {lower_mma_loop(t, o->w), t->loop[2]}; /* mn, k */
  o->name = o->op ? "op(B)" : "op(A)";
  if (operand->kind != E_LOAD || operand->load.lanes > 1)
    return wgmma_refuse(cx, o, "it is not read from a cache: cache it in "
                        "shared memory (ts_cache_read) above the k loop");
  ir_buffer *buf = operand->load.buf;
  o->name = buf->name;
  if (buf->scope != SCOPE_SHARED || buf->ndim != 2)
    return wgmma_refuse(cx, o, "it is not in shared memory: cache it with "
                        "TS_SHARED");
  if (buf->swizzle != 8 || buf->pad)
    return wgmma_refuse(cx, o, "it is not swizzled in 128-byte rows: call "
                        "ts_storage_swizzle on it, with a tile of 64 or more "
                        "elements along its contiguous dimension");
  ir_expr *base[2];
  int stepped[2] = {-1, -1}; /* by dimension: which of loops */
  for (int d = 0; d < 2; d++) {
    ir_expr *x = operand->load.idx[d];
    for (int q = 0; q < 2; q++)
      x = ir_subst_expr(a, x, loops[q]->var, ir_int(a, 0));
    base[d] = ir_simplify_expr(a, x);
    ir_expr *step = base[d] ? ir_simplify_expr(
        a, ir_sub(a, operand->load.idx[d], base[d])) : NULL;
    for (int q = 0; q < 2 && step && step->kind == E_VAR; q++)
      if (step->var == loops[q]->var)
        stepped[d] = q;
  }
  if (stepped[0] < 0 || stepped[1] < 0 || stepped[0] == stepped[1])
    return wgmma_refuse(cx, o, "the tensorized loops do not step its rows "
                        "and columns one element each");
  int contig = buf->strides[1] == 1 ? 1 : 0;
  o->kdim = stepped[1] == 1 ? 1 : 0;
  o->mn_major = contig != o->kdim;
  o->rows = buf->shape[1 - contig];
  o->src = ir_load(a, buf, base);
  return o->src != NULL ||
         lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
}

/* Whether the instruction takes tile o from registers: a tf32 a that lies
 * mn-major, which no descriptor reads. */
static bool wgmma_a_in_registers(const lower_mma *t, const wg_tile *o) {
  return o->w == 0 && o->mn_major && t->in->tf32;
}

/* Tile o read by a descriptor: its corner aligned to the layout's atoms;
 * the descriptor's fields into s.  False with the error. */
static bool wgmma_descriptor(lower_ctx *cx, const lower_mma *t,
                             const wg_tile *o, ir_stmt *s) {
  if (t->in->tf32 && o->mn_major)
    return tf32_refuse(cx, o);
  ir_expr *const *base = o->src->load.idx;
  int64_t need[2] = {8, t->in->k}; /* the corner: m or n, then k */
  if (o->mn_major)
    need[0] = 64, need[1] = 8;
  if (ir_divisor(base[1 - o->kdim]) % need[0] != 0 ||
      ir_divisor(base[o->kdim]) % need[1] != 0)
    return wgmma_refuse(cx, o, o->mn_major
                        ? "its tiles do not start at multiples of 64 "
                          "elements along its contiguous dimension and 8 "
                          "along k"
                        : t->in->tf32
                        ? "its tiles do not start at multiples of 8 rows "
                          "and 8 elements of k"
                        : "its tiles do not start at multiples of 8 rows "
                          "and 16 elements of k");
  /* An mn-major tile narrower than a 128-byte row needs no check of its
   * own: its cache's rows are either that narrow, and not swizzled in 8
   * chunks (refused above), or wider, and some tile then starts off a
   * multiple of 64 (refused just above). */
  int w = o->w;
  s->wgmma.src[w] = o->src;
  s->wgmma.mn_major[w] = o->mn_major;
  s->wgmma.kdim[w] = o->kdim;
  s->wgmma.sbo[w] = 8 * 128; /* 8 rows of 128 bytes */
  s->wgmma.lbo[w] = o->mn_major ? o->rows * 128 : 16; /* a panel; unused */
  return true;
}

/* ---- wgmma's a in registers ---------------------------------------------------
 *
 * Each lane fills its registers of a from the cache by ordinary loads
 * (fill, at mma_wgmma_a_coord's layout), and the instruction reads them
 * at its issue.  A batch's instructions may read their registers until
 * its wait, so no register is refilled inside a batch: the fragment gets
 * a dimension for each unrolled loop directly above the instruction that
 * a uses (a k tile's k steps), and each step fills its own registers just
 * before its instruction, which the batch pass fences from the fill
 * (lower_wgmma.c): the next step's loads then run beside the running
 * instruction (3% at 4096^3 in tf32 TT against filling every step's
 * first, docs/performance.md).  A batch left in flight into the next k
 * tile would need a second fragment, which this form does not make:
 * refused. */

/* False, with the refusal, where a loop on p keeps batches in flight. */
static bool no_batch_in_flight(lower_ctx *cx, const nest_path *p,
                               const wg_tile *o) {
  for (int d = 0; d < p->depth; d++) {
    const ir_stmt *n = p->node[d];
    if (n->kind == S_FOR && n->for_.loop->wgmma_in_flight > 0)
      return lower_fail(cx, TS_ERR_BAD_TENSORIZE, "ts_lower: wgmma takes %s "
                        "(op(%c), its operand a) from registers, since it "
                        "lies %s-major and wgmma reads tf32 from shared "
                        "memory k-major only; loop \"%s\" keeps batches in "
                        "flight (ts_wgmma_in_flight), whose registers the "
                        "next k tile's fill would overwrite: drop "
                        "ts_wgmma_in_flight", o->name, "AB"[o->op],
                        o->op ? "n" : "m", n->for_.loop->name);
  }
  return true;
}

/* The local buffer a_frag: a dimension for each of the loops `uses`,
 * then a lane's registers of a. */
static ir_buffer *register_fragment(ts_arena *a, const lower_mma *t,
                                    const ts_loop *const *uses, int n,
                                    ts_dtype type) {
  int64_t shape[IR_MAX_DIMS];
  if (n + 1 > IR_MAX_DIMS)
    return NULL;
  for (int d = 0; d < n; d++)
    shape[d] = uses[d]->extent;
  shape[n] = t->in->frag[MMA_A].regs;
  ir_buffer *frag = ir_new_buffer(a, "a_frag", SCOPE_LOCAL, type, n + 1,
                                  shape, NULL);
  if (frag)
    frag->async_read = true;
  return frag;
}

/* alloc a_frag { the loops from *at on, the fill right inside the
 * innermost one that a uses (before them all where it uses none) { s,
 * its a those registers } }, replacing the path from *at on: *at the
 * outermost of the unrolled loops directly above the instruction, inside
 * `top` (the k tile's loop, whose body waits for the tile). */
static ir_stmt *a_from_registers(lower_ctx *cx, const lower_mma *t,
                                 const nest_path *p, int top,
                                 const wg_tile *o, ir_expr *operand,
                                 ir_stmt *s, int *at) {
  ts_arena *a = cx->arena;
  if (!no_batch_in_flight(cx, p, o))
    return NULL;
  int first = t->depth, inner, n = 0;
  while (first - 1 > top && lower_unrolled_around(p, first - 1))
    first--;
  inner = first - 1;
  const ts_loop *uses[NEST_MAX_DEPTH];
  ir_expr *idx[IR_MAX_DIMS];
  for (int d = first; d < t->depth && n + 1 < IR_MAX_DIMS; d++)
    if (ir_expr_uses_var(operand, p->node[d]->for_.loop->var)) {
      uses[n] = p->node[d]->for_.loop;
      idx[n++] = ir_varref(a, p->node[d]->for_.loop->var);
      inner = d;
    }
  idx[n] = ir_int(a, 0);
  ir_buffer *frag = register_fragment(a, t, uses, n, operand->dtype);
  s->wgmma.src[0] = frag ? ir_load(a, frag, idx) : NULL;
  ir_stmt *body = s->wgmma.src[0] ? s : NULL;
  for (int d = t->depth - 1; d > inner && body; d--)
    body = ir_new_for(a, p->node[d]->for_.loop, body);
  ir_stmt *items[2] = {
      frag ? lower_mma_fill(cx, t, MMA_A, frag, idx, operand, NULL) : NULL,
      body};
  body = items[0] && items[1] ? ir_new_seq(a, items, 2) : NULL;
  for (int d = inner; d >= first && body; d--)
    body = ir_new_for(a, p->node[d]->for_.loop, body);
  *at = first;
  return body ? ir_new_alloc(a, frag, body) : NULL;
}

/* The instruction in place of the tensorized loops (and, with a in
 * registers, the unrolled loops around them): a from op(A) and b from
 * op(B), or on C's transpose a from op(B) and b from op(A). */
ir_stmt *lower_wgmma_update(lower_ctx *cx, const lower_mma *t,
                            const nest_path *path, int top,
                            ir_expr *const operand[2], ir_expr *pred,
                            ir_buffer *acc, ir_expr *const acc_idx[3],
                            int *at) {
  ts_arena *a = cx->arena;
  ir_expr *acc_at[3] = {acc_idx[0], acc_idx[1], ir_int(a, 0)};
  wg_tile o[2];
  /* The operands first: their refusals name the buffer to fix. */
  for (int w = 0; w < 2; w++) {
    o[w] = (wg_tile){.w = w, .op = t->transposed ? 1 - w : w};
    if (!wgmma_tile(cx, t, operand[o[w].op], &o[w]))
      return NULL;
  }
  ir_stmt *s = ir_new_wgmma(a, t->in, acc, acc_at, o[0].src, o[1].src);
  if (!s) {
    lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
    return NULL;
  }
  bool regs = wgmma_a_in_registers(t, &o[0]);
  if ((!regs && !wgmma_descriptor(cx, t, &o[0], s)) ||
      !wgmma_descriptor(cx, t, &o[1], s))
    return NULL;
  if (pred) {
    lower_fail(cx, TS_ERR_BAD_TENSORIZE, "ts_lower: wgmma multiplies whole "
               "tiles, and the computation is guarded; read A and B from "
               "shared caches, which hold zeros past the matrices' edges");
    return NULL;
  }
  *at = t->depth;
  return regs ? a_from_registers(cx, t, path, top, &o[0],
                                 operand[o[0].op], s, at)
              : s;
}
