/*
 * Sizes chosen at launch (ts_gemm.runtime): a loop's trip count, a global
 * operand's dimension or stride, a grid dimension, each either a number
 * compiled in or an expression of the values the kernel takes (VAR_PARAM
 * variables: M, N, K, the leading dimensions).  The readers here give
 * either as an expression, so a pass that builds a guard or an index from
 * a size writes it once for both; the evaluator gives the value at given
 * launch values (the executor's, the nominal shape's); and a size becomes
 * a formula (base/formula.h) that a compiled kernel keeps and the
 * launcher evaluates, with no IR.
 */
#include "ir.h"

#include "analysis.h"
#include "eval.h"
#include "visit.h"

ir_expr *ir_loop_size(ts_arena *a, const ts_loop *l) {
  return l->size ? l->size : ir_int(a, l->extent);
}

ir_expr *ir_buffer_dim(ts_arena *a, const ir_buffer *b, int d) {
  return b->shape_expr[d] ? b->shape_expr[d] : ir_int(a, b->shape[d]);
}

ir_expr *ir_buffer_stride(ts_arena *a, const ir_buffer *b, int d) {
  return b->stride_expr[d] ? b->stride_expr[d] : ir_int(a, b->strides[d]);
}

bool ir_buffer_symbolic(const ir_buffer *b) {
  for (int d = 0; d < b->ndim; d++)
    if (b->shape_expr[d] || b->stride_expr[d])
      return true;
  return false;
}

bool ir_eval_size(const ir_expr *e, const int64_t *values, int64_t *out) {
  ir_point p = {.values = values};
  return ir_eval_int(e, &p, out);
}

/* The most a size may be: its upper bound over every launch. */
static int64_t most(const ir_expr *e) {
  int64_t lo, hi;
  return ir_bounds(e, &lo, &hi) ? hi : INT64_MAX;
}

ts_loop *ir_loop_sized(ts_loop *l, ir_expr *size) {
  if (l && size && size->kind != E_INT) {
    l->size = size;
    l->var->extent = most(size);
  }
  return l;
}

/* ---- Formulas ------------------------------------------------------------ */

static bool emit(ts_formula *f, ts_formula_op op, int64_t v) {
  if (f->n >= TS_FORMULA_LEN)
    return false;
  f->op[f->n] = (uint8_t)op;
  f->arg[f->n++] = v;
  return true;
}

static bool postfix(const ir_expr *e, ts_formula *f) {
  switch (e->kind) {
  case E_INT: return emit(f, TS_FORMULA_CONST, e->ival);
  case E_VAR:
    return e->var->kind == VAR_PARAM && emit(f, TS_FORMULA_VALUE, e->var->value);
  case E_ADD: case E_SUB: case E_MUL: case E_DIV: case E_MOD: case E_MIN:
  case E_MAX: {
    static const ts_formula_op ops[] = {
        [E_ADD] = TS_FORMULA_ADD, [E_SUB] = TS_FORMULA_SUB,
        [E_MUL] = TS_FORMULA_MUL, [E_DIV] = TS_FORMULA_DIV,
        [E_MOD] = TS_FORMULA_MOD, [E_MIN] = TS_FORMULA_MIN,
        [E_MAX] = TS_FORMULA_MAX};
    return postfix(e->op.a, f) && postfix(e->op.b, f) &&
           emit(f, ops[e->kind], 0);
  }
  default:
    return false;
  }
}

bool ir_formula_of(const ir_expr *e, ts_formula *out) {
  *out = (ts_formula){0};
  return postfix(e, out);
}

/* ---- A kernel at given launch values -------------------------------------- */

typedef struct {
  const int64_t *values;
  const ir_buffer *from[3];
  ir_buffer *to[3];
  bool failed; /* a size that did not evaluate */
} resolver;

static int64_t value_of(resolver *r, const ir_expr *e) {
  int64_t v = 0;
  if (e && !ir_eval_size(e, r->values, &v))
    r->failed = true;
  return v;
}

static ir_buffer *resolved_buffer(resolver *r, const ir_buffer *b) {
  for (int i = 0; i < 3; i++)
    if (b && b == r->from[i])
      return r->to[i];
  return (ir_buffer *)b;
}

static ir_expr *resolve_expr(ir_mutator *m, ir_expr *e) {
  resolver *r = m->ctx;
  if (e->kind == E_VAR && e->var->kind == VAR_PARAM)
    return ir_int(m->a, r->values[e->var->value]);
  ir_expr *c = ir_mutate_expr_children(m, e);
  ir_buffer *to = c && c->kind == E_LOAD ? resolved_buffer(r, c->load.buf)
                                         : NULL;
  if (to && to != c->load.buf) {
    ir_expr *copy = ts_arena_alloc(m->a, sizeof(*copy));
    if (!copy)
      return NULL;
    *copy = *c;
    copy->load.buf = to;
    c = copy;
  }
  return c;
}

static ir_stmt *resolve_stmt(ir_mutator *m, ir_stmt *s) {
  resolver *r = m->ctx;
  ir_stmt *c = ir_mutate_stmt_children(m, s);
  if (!c)
    return NULL;
  bool sized = c->kind == S_FOR && c->for_.loop->size;
  /* A store's buffer; a TMA copy's or store's global one. */
  bool piped = c->kind == S_TMA || c->kind == S_TMA_STORE;
  ir_buffer *from = c->kind == S_STORE ? c->store.buf
                    : piped            ? c->pipe.src
                                       : NULL;
  ir_buffer *to = resolved_buffer(r, from);
  if (!sized && to == from)
    return c;
  ir_stmt *copy = ts_arena_alloc(m->a, sizeof(*copy));
  if (!copy)
    return NULL;
  *copy = *c;
  if (c->kind == S_STORE)
    copy->store.buf = to;
  else if (piped)
    copy->pipe.src = to;
  if (sized) { /* the loop at these values: its trip count a number */
    ts_loop *l = ts_arena_alloc(m->a, sizeof(*l));
    if (!l)
      return NULL;
    *l = *c->for_.loop;
    l->extent = value_of(r, l->size);
    l->size = NULL;
    copy->for_.loop = l;
  }
  return copy;
}

/* b with its dimensions and strides at the values. */
static ir_buffer *resolve_buffer(ts_arena *a, resolver *r, const ir_buffer *b) {
  if (!b || !ir_buffer_symbolic(b))
    return (ir_buffer *)b;
  ir_buffer *c = ts_arena_alloc(a, sizeof(*c));
  if (!c)
    return NULL;
  *c = *b;
  for (int d = 0; d < b->ndim; d++) {
    if (b->shape_expr[d])
      c->shape[d] = value_of(r, b->shape_expr[d]);
    if (b->stride_expr[d])
      c->strides[d] = value_of(r, b->stride_expr[d]);
    c->shape_expr[d] = c->stride_expr[d] = NULL;
  }
  return c;
}

bool ir_kernel_resolve(ts_arena *a, const ir_kernel *k, const int64_t *values,
                       ir_kernel *out) {
  resolver r = {.values = values ? values : k->values,
                .from = {k->A, k->B, k->C}};
  for (int i = 0; i < 3; i++)
    r.to[i] = resolve_buffer(a, &r, r.from[i]);
  *out = *k;
  ir_mutator m = {.a = a, .expr = resolve_expr, .stmt = resolve_stmt,
                  .ctx = &r};
  out->body = ir_mutate_stmt(&m, k->body);
  out->A = r.to[0];
  out->B = r.to[1];
  out->C = r.to[2];
  for (int d = 0; d < 3; d++) {
    if (k->grid_size[d])
      out->grid[d] = value_of(&r, k->grid_size[d]);
    out->grid_size[d] = NULL;
  }
  ir_param *ps = ts_arena_alloc(a, sizeof(*ps) * (size_t)(k->nparams + 1));
  for (int i = 0; ps && i < k->nparams; i++) {
    ps[i] = k->params[i];
    ps[i].buf = resolved_buffer(&r, ps[i].buf);
    if (ps[i].buf != k->params[i].buf)
      ir_param_remap(&ps[i]);
  }
  out->params = ps;
  for (int v = 0; v < TS_VALUE_COUNT; v++)
    out->values[v] = r.values[v];
  return out->body && ps && !r.failed && !a->failed;
}

bool ir_kernel_symbolic(const ir_kernel *k) {
  const ir_buffer *bufs[3] = {k->A, k->B, k->C};
  for (int i = 0; i < 3; i++)
    if (bufs[i] && ir_buffer_symbolic(bufs[i]))
      return true;
  for (int d = 0; d < 3; d++)
    if (k->grid_size[d])
      return true;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].p.kind == TS_PARAM_INT)
      return true;
  return false;
}
