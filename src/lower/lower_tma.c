/*
 * The TMA's copies of a pipelined cache (ts_tma): where a stage's tile
 * lies in the operand and how it is cut into boxes.  A cache's copy nest,
 * before it is spread over the threads, stores cache[ax0, ax1] = src[origin
 * + ax]; with every copy loop at 0 its load names the tile's origin in
 * the operand, and with the innermost copy loop (the contiguous one) at 1
 * the one index of each buffer that moves says which dimension the copy
 * walks: it must be the operand's contiguous dimension and the cache's
 * stored rows, so that a box's rows land as the cache's rows.  A row of
 * more than 128 bytes is stored as 128-byte panels (ts_storage_swizzle),
 * one box each, since the TMA swizzles 128 bytes at most.  A packed
 * operand (ts_pack) is copied from its view of the workspace, whose rows
 * are k and 16-byte aligned by construction; its tensor map
 * (ir_kernel_set_params) points into the workspace.
 */
#include "lower.h"

#include "../ir/analysis.h"
#include "../ir/visit.h"

typedef struct {
  const ir_buffer *src;
  const ir_var *vars[NEST_MAX_DEPTH];
  int nvars;
  const ir_expr *load;  /* the first load of src */
  const ir_stmt *store; /* the store into the cache */
} nest_scan;

static bool scan_stmt(ir_visitor *v, const ir_stmt *s) {
  nest_scan *n = v->ctx;
  if (s->kind == S_FOR && n->nvars < NEST_MAX_DEPTH)
    n->vars[n->nvars++] = s->for_.loop->var;
  if (s->kind == S_STORE && !n->store)
    n->store = s;
  return true;
}

static bool scan_expr(ir_visitor *v, const ir_expr *e) {
  nest_scan *n = v->ctx;
  if (e->kind == E_LOAD && e->load.buf == n->src && !n->load)
    n->load = e;
  return true;
}

/* idx (ndim of them) with the copy loops at 0, the innermost at `inner`. */
static void indices_at(ts_arena *a, const nest_scan *n, ir_expr *const *idx,
                       int ndim, int64_t inner, ir_expr **out) {
  for (int d = 0; d < ndim; d++) {
    ir_expr *x = idx[d];
    for (int i = 0; i < n->nvars; i++)
      x = ir_subst_expr(a, x, n->vars[i],
                        ir_int(a, i == n->nvars - 1 ? inner : 0));
    out[d] = ir_simplify_expr(a, x);
  }
}

/* The one dimension whose index differs between at0 and at1, else -1. */
static int moved_dim(ir_expr *const *at0, ir_expr *const *at1, int ndim) {
  int moved = -1;
  for (int d = 0; d < ndim; d++) {
    ir_expr *diff = at1[d]->kind == E_INT && at0[d]->kind == E_INT
                        ? NULL : at1[d];
    bool same = diff ? ir_expr_equal(at0[d], at1[d])
                     : at0[d]->ival == at1[d]->ival;
    if (!same)
      moved = moved < 0 ? d : -2;
  }
  return moved < 0 ? -1 : moved;
}

bool lower_rows_aligned(lower_ctx *cx, const char *stage, const char *verb,
                        const ir_buffer *b, int outer) {
  const ir_expr *pitch = b->stride_expr[outer];
  int64_t size = ts_dtype_size(b->dtype), q = ir_divisor(pitch);
  if (q * size % 16 == 0)
    return true;
  /* The pitch is a leading dimension, or an extent where packed. */
  bool ld = pitch->kind == E_VAR && pitch->var->kind == VAR_PARAM &&
            pitch->var->value >= TS_VALUE_LDA;
  return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is %s by the "
                    "TMA (ts_tma), which needs the rows of %s 16-byte "
                    "aligned; they lie %s elements of %lld bytes apart, "
                    "chosen at launch as any multiple of %lld: set "
                    "def->%s to a multiple of %lld, or leave the TMA out",
                    stage, verb, b->name,
                    pitch->kind == E_VAR ? pitch->var->name : "a value",
                    (long long)size, (long long)q,
                    ld ? "runtime_ld_multiple" : "runtime_multiple",
                    (long long)(16 / size));
}

bool lower_tma_tile(lower_ctx *cx, const ts_stage *st, const ir_stmt *copy,
                    tma_tile *out) {
  ts_arena *a = cx->arena;
  const ir_buffer *src = st->src, *c = st->buf;
  nest_scan n = {.src = src};
  ir_visitor v = {.stmt = scan_stmt, .expr = scan_expr, .ctx = &n};
  ir_visit_stmt(&v, copy);
  if (src->scope != SCOPE_GLOBAL || src->ndim != 2 || !n.load || !n.store ||
      !n.nvars)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is filled by "
                      "the TMA (ts_tma), which copies from A or B as given "
                      "or packed (ts_pack); it copies from \"%s\"", st->name,
                      src->name);
  int64_t size = ts_dtype_size(src->dtype);
  int inner = src->strides[1] == 1 ? 1 : 0, outer = 1 - inner;
  int64_t row_bytes = src->strides[outer] * size;
  if (src->stride_expr[outer] &&
      !lower_rows_aligned(cx, st->name, "filled", src, outer))
    return false;
  if (src->stride_expr[outer])
    row_bytes = 16; /* proven aligned */
  const char *ld = lower_ld_field(cx, src);
  if (row_bytes % 16 && ld)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is filled by "
                      "the TMA (ts_tma), which needs the rows of %s 16-byte "
                      "aligned; def->%s puts them %lld elements of %lld bytes "
                      "apart: give %s a multiple of %lld, pack %s first "
                      "(ts_pack) or fill the cache with cp.async (no "
                      "ts_tma)", st->name, src->name, ld,
                      (long long)src->strides[outer], (long long)size, ld,
                      (long long)(16 / size), src->name);
  if (row_bytes % 16)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is filled by "
                      "the TMA (ts_tma), which needs the rows of %s 16-byte "
                      "aligned; they are %lld elements of %lld bytes apart: "
                      "pack %s first (ts_pack) or fill the cache with "
                      "cp.async (no ts_tma)", st->name, src->name,
                      (long long)src->strides[outer], (long long)size,
                      src->name);
  ir_expr *g0[2], *g1[2], *c0[IR_MAX_DIMS], *c1[IR_MAX_DIMS];
  indices_at(a, &n, n.load->load.idx, 2, 0, g0);
  indices_at(a, &n, n.load->load.idx, 2, 1, g1);
  indices_at(a, &n, n.store->store.idx, c->ndim, 0, c0);
  indices_at(a, &n, n.store->store.idx, c->ndim, 1, c1);
  int crow = c->order[c->ndim - 1]; /* the cache's stored rows run along */
  if (moved_dim(g0, g1, 2) != inner || moved_dim(c0, c1, c->ndim) != crow)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is filled by "
                      "the TMA (ts_tma), whose boxes land as rows along %s's "
                      "contiguous dimension; the cache's rows run the other "
                      "way: store it transposed (ts_storage_transpose)",
                      st->name, src->name);
  int64_t panel = ir_swizzle_panel(c);
  int64_t rows = c->shape[c->order[c->ndim - 2]];
  *out = (tma_tile){.src = (ir_buffer *)src, .inner = crow,
                    .outer = c->order[c->ndim - 2],
                    .box = {panel ? panel : c->shape[crow], rows},
                    .panels = panel ? c->shape[crow] / panel : 1,
                    .origin = {g0[inner], g0[outer]}};
  if (rows > 256 || out->box[0] * size != 128)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is filled by "
                      "the TMA (ts_tma) in boxes of %lld x %lld elements; a "
                      "box has 256 rows at most and rows of 128 bytes (the "
                      "swizzle's)", st->name, (long long)out->box[0],
                      (long long)rows);
  out->bytes = out->box[0] * rows * out->panels * size;
  return true;
}

ir_stmt *lower_tma_issue(ts_arena *a, const ir_pipeline *p,
                         const tma_tile *t, ir_buffer *staged,
                         const ts_loop *f, ir_expr *tile, ir_expr *stage) {
  ir_stmt *items[16];
  int n = 0;
  for (int64_t q = 0; q < t->panels && n < 16; q++) {
    ir_expr *idx[IR_MAX_DIMS];
    for (int d = 0; d < staged->ndim; d++)
      idx[d] = ir_int(a, 0);
    idx[0] = stage;
    idx[1 + t->inner] = ir_int(a, q * t->box[0]);
    ir_expr *coord[2] = {
        ir_simplify_expr(a, ir_add(a, ir_subst_expr(a, t->origin[0], f->var,
                                                    tile),
                                   ir_int(a, q * t->box[0]))),
        ir_simplify_expr(a, ir_subst_expr(a, t->origin[1], f->var, tile))};
    items[n++] = ir_new_tma(a, p, stage, ir_load(a, staged, idx), t->src,
                            coord, t->box);
  }
  return ir_new_seq(a, items, n);
}
