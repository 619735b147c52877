/*
 * stmatrix for C's shared stage of 16-bit elements (lower_tma_store.c).
 * A chunk of the epilogue,
 *
 *   for reg.pair in 0..n unrolled:
 *     for reg.half in 0..2 vectorized:
 *       if guard: C.shared[r, c] = value
 *
 * becomes a warp's stmatrix of 4 (or 2, or 1) 8 x 8 matrices for each
 * group of as many register pairs,
 *
 *   for reg.group in 0..n / 4 unrolled:
 *     stmatrix.x4 &C.shared[r, c of the row this lane addresses] =
 *       {value at each pair of the group and each half}
 *
 * one instruction of 16 bytes a lane where there were four of 4 bytes.
 * It fits where each register pair's stores by a warp are an 8 x 8 matrix
 * of the stage whose rows lie 16 bytes each, contiguous and aligned, in
 * stmatrix's order (lane l holds row l / 4 at columns 2 (l % 4) and the
 * next): wgmma's and mma.sync's accumulators, in a stage swizzled by
 * 16-byte chunks.  That is checked, not assumed, over every lane, pair,
 * half and value of the thread loops around, and no element is written
 * twice.  A warp's instruction takes every lane, so the guard goes: the
 * stage's elements past C's edges are written too, and the TMA's store
 * clips them; a value that reads memory (C, for beta) reads it only
 * where the guard holds.
 */
#include "lower.h"

#include <string.h>

#include "../base/dtype.h"
#include "../ir/analysis.h"
#include "../ir/eval.h"
#include "../ir/visit.h"

enum { WARP_LANES = 32, MAX_OTHER_POINTS = 1024 };

/* The chunk's parts: its loops' variables, the store and its guard. */
typedef struct {
  const ts_loop *pair, *half;
  const ir_stmt *store;
  ir_expr *guard; /* NULL: none */
} chunk_parts;

static bool match_chunk(const ir_stmt *loop, const ir_buffer *stage,
                        chunk_parts *c) {
  if (loop->kind != S_FOR || loop->for_.body->kind != S_FOR)
    return false;
  const ir_stmt *inner = loop->for_.body, *body = inner->for_.body;
  *c = (chunk_parts){.pair = loop->for_.loop, .half = inner->for_.loop};
  if (body->kind == S_IF && !body->if_.else_) {
    c->guard = body->if_.cond;
    body = body->if_.then_;
  }
  c->store = body;
  return c->half->extent == 2 && body->kind == S_STORE &&
         body->store.buf == stage && !body->store.atomic &&
         !body->store.async && body->store.lanes <= 1;
}

/* ---- Whether it fits ------------------------------------------------------ */

typedef struct {
  const ir_var *vars[8];
  int n;
  bool ok;
} var_set;

/* The loop variables of the stage's index other than the lane's, the
 * pair's and the half's: thread loops, whose values are enumerated. */
static bool note_var(ir_visitor *v, const ir_expr *e) {
  var_set *vs = v->ctx;
  if (e->kind != E_VAR)
    return true;
  for (int i = 0; i < vs->n; i++)
    if (vs->vars[i] == e->var)
      return true;
  if (e->var->kind != VAR_LOOP || vs->n == 8) {
    vs->ok = false;
    v->stop = true;
  } else {
    vs->vars[vs->n++] = e->var;
  }
  return true;
}

typedef struct {
  const ir_buffer *stage;
  ir_expr *const *idx;
  const ir_var *lane, *pair, *half;
  int64_t *vals;    /* by variable id */
  uint8_t *written; /* by element of the stage */
} fit_check;

/* The storage offset the store writes at (lane, pair, half), the other
 * variables as vals holds them; -1 outside the stage. */
static int64_t element(const fit_check *f, int64_t lane, int64_t pair,
                       int64_t half) {
  f->vals[f->lane->id] = lane;
  f->vals[f->pair->id] = pair;
  f->vals[f->half->id] = half;
  ir_point p = {.vars = f->vals};
  int64_t r, c;
  const ir_buffer *b = f->stage;
  if (!ir_eval_int(f->idx[0], &p, &r) || !ir_eval_int(f->idx[1], &p, &c) ||
      r < 0 || r >= b->shape[0] || c < 0 || c >= b->shape[1])
    return -1;
  return ir_swizzle_offset(b, r * b->strides[0] + c * b->strides[1]);
}

/* One warp's matrix of pair `pair` in stmatrix's order, each element
 * written once. */
static bool matrix_fits(const fit_check *f, int64_t w0, int64_t pair) {
  for (int l = 0; l < WARP_LANES; l++) {
    int64_t row = element(f, w0 + l / 4 * 4, pair, 0);
    if (row < 0 || row % 8)
      return false;
    for (int e = 0; e < 2; e++) {
      int64_t at = element(f, w0 + l, pair, e);
      if (at != row + 2 * (l % 4) + e || f->written[at])
        return false;
      f->written[at] = 1;
    }
  }
  return true;
}

/* Every warp's matrices at every value of the other variables. */
static bool all_fit(const fit_check *f, const var_set *others,
                    int64_t lanes, int64_t pairs) {
  int64_t points = 1;
  for (int i = 0; i < others->n; i++) {
    int64_t e = others->vars[i]->extent;
    if (e < 1 || e > MAX_OTHER_POINTS || points * e > MAX_OTHER_POINTS)
      return false;
    points *= e;
  }
  for (int64_t pt = 0; pt < points; pt++) {
    for (int64_t i = 0, rest = pt; i < others->n; i++) {
      f->vals[others->vars[i]->id] = rest % others->vars[i]->extent;
      rest /= others->vars[i]->extent;
    }
    for (int64_t w0 = 0; w0 < lanes; w0 += WARP_LANES)
      for (int64_t p = 0; p < pairs; p++)
        if (!matrix_fits(f, w0, p))
          return false;
  }
  return true;
}

static bool fits(lower_ctx *cx, const tma_store_plan *p,
                 const chunk_parts *c) {
  const ir_buffer *b = p->buf;
  const ir_var *lane = p->lane;
  if (!lane || ts_dtype_size(b->dtype) != 2 || b->ndim != 2 ||
      lane->extent % WARP_LANES)
    return false;
  var_set others = {.ok = true};
  ir_visitor v = {.expr = note_var, .ctx = &others};
  for (int d = 0; d < 2; d++)
    ir_visit_expr(&v, c->store->store.idx[d]);
  int kept = 0;
  for (int i = 0; i < others.n; i++)
    if (others.vars[i] != lane && others.vars[i] != c->pair->var &&
        others.vars[i] != c->half->var)
      others.vars[kept++] = others.vars[i];
  others.n = kept;
  size_t elems = (size_t)ir_buffer_size(b);
  fit_check f = {.stage = b, .idx = c->store->store.idx, .lane = lane,
                 .pair = c->pair->var, .half = c->half->var,
                 .vals = ts_arena_alloc(cx->arena, sizeof(int64_t) *
                                                       (size_t)cx->next_var),
                 .written = ts_arena_alloc(cx->arena, elems)};
  if (!others.ok || !f.vals || !f.written)
    return false;
  memset(f.vals, 0, sizeof(int64_t) * (size_t)cx->next_var);
  memset(f.written, 0, elems);
  return all_fit(&f, &others, lane->extent, c->pair->extent);
}

/* ---- The rewrite ------------------------------------------------------------ */

static bool reads_memory(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_LOAD && e->load.buf->scope != SCOPE_LOCAL) {
    *(bool *)v->ctx = true;
    v->stop = true;
  }
  return true;
}

/* The store's value, where the guard holds if it reads memory: every lane
 * stores, past C's edges too. */
static ir_expr *guarded_value(ts_arena *a, const chunk_parts *c) {
  ir_expr *value = c->store->store.value;
  bool reads = false;
  ir_visitor v = {.expr = reads_memory, .ctx = &reads};
  ir_visit_expr(&v, value);
  if (!c->guard || !reads)
    return value;
  ts_dtype type = c->store->store.buf->dtype;
  ir_expr *wide = value->kind == E_CAST ? value->op.a : value;
  return ir_cast(a, type, ir_select(a, c->guard, wide, ir_float(a, 0)));
}

/* x / 32 * 32 + x % 8 * 4: the lane of this one's warp that holds the
 * row this one addresses (row x % 8 of its matrix). */
static ir_expr *row_lane(ts_arena *a, const ir_var *lane) {
  ir_expr *x = ir_varref(a, (ir_var *)lane);
  ir_expr *warp = ir_binary(a, E_DIV, x, ir_int(a, WARP_LANES));
  return ir_add(a, ir_mul(a, warp, ir_int(a, WARP_LANES)),
                ir_mul(a, ir_binary(a, E_MOD, x, ir_int(a, 8)),
                       ir_int(a, 4)));
}

/* The stmatrix of group g (a variable): matrix m is pair g * n + m. */
static ir_stmt *group_store(lower_ctx *cx, const tma_store_plan *p,
                            const chunk_parts *c, ir_expr *g, int n) {
  ts_arena *a = cx->arena;
  ir_expr *first = ir_mul(a, g, ir_int(a, n));
  ir_expr *which = ir_binary(a, E_DIV,
                             ir_binary(a, E_MOD,
                                       ir_varref(a, (ir_var *)p->lane),
                                       ir_int(a, WARP_LANES)),
                             ir_int(a, 8));
  if (n < 4) /* lanes past the matrices' rows give an address unused */
    which = ir_binary(a, E_MOD, which, ir_int(a, n));
  ir_expr *idx[2];
  for (int d = 0; d < 2; d++) {
    ir_expr *e = c->store->store.idx[d];
    e = ir_subst_expr(a, e, c->half->var, ir_int(a, 0));
    e = ir_subst_expr(a, e, p->lane, row_lane(a, p->lane));
    e = ir_subst_expr(a, e, c->pair->var, ir_add(a, first, which));
    idx[d] = ir_simplify_expr(a, e);
  }
  ir_expr *value = guarded_value(a, c), *values[8];
  for (int m = 0; m < n; m++)
    for (int e = 0; e < 2; e++) {
      ir_expr *v = ir_subst_expr(a, value, c->half->var, ir_int(a, e));
      v = ir_subst_expr(a, v, c->pair->var, ir_add(a, first, ir_int(a, m)));
      values[2 * m + e] = ir_simplify_expr(a, v);
    }
  return ir_new_stmatrix(a, ir_load(a, p->buf, idx), values, n);
}

ir_stmt *lower_stmatrix(lower_ctx *cx, const tma_store_plan *p,
                        const ir_stmt *chunk) {
  chunk_parts c;
  if (!match_chunk(chunk, p->buf, &c) || !fits(cx, p, &c))
    return NULL;
  int n = c.pair->extent % 4 == 0 ? 4 : c.pair->extent % 2 == 0 ? 2 : 1;
  ts_loop *g = lower_new_loop(cx, "reg.group", c.pair->extent / n,
                              c.pair->kind);
  if (!g)
    return NULL;
  g->made_by = c.pair->made_by;
  ir_stmt *body = group_store(cx, p, &c, ir_varref(cx->arena, g->var), n);
  return body ? ir_new_for(cx->arena, g, body) : NULL;
}
