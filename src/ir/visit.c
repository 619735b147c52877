/*
 * The visitor and the mutator (see visit.h).  Both switch on a node's form,
 * taken from the kind lists, never on its kind.  The mutator rewrites the
 * children into a copy of the node on the stack and allocates the node (and
 * a new index or item array) only when a child changed.
 */
#include "visit.h"

#include <string.h>

static const ir_form expr_forms[] = {
#define IR_FORM(k, s, form) form,
    IR_EXPR_KINDS(IR_FORM)
#undef IR_FORM
};

static const ir_form stmt_forms[] = {
#define IR_FORM(k, s, form) form,
    IR_STMT_KINDS(IR_FORM)
#undef IR_FORM
};

ir_form ir_expr_form(ir_expr_kind k) { return expr_forms[k]; }
ir_form ir_stmt_form(ir_stmt_kind k) { return stmt_forms[k]; }

/* ---- Visitor ------------------------------------------------------------- */

void ir_visit_expr(ir_visitor *v, const ir_expr *e) {
  if (!e || v->stop || (!v->expr && !v->expr_post))
    return;
  if (v->expr && !v->expr(v, e))
    return;
  switch (ir_expr_form(e->kind)) {
  case FORM_UNARY:
    ir_visit_expr(v, e->op.a);
    break;
  case FORM_BINARY:
    ir_visit_expr(v, e->op.a);
    ir_visit_expr(v, e->op.b);
    break;
  case FORM_SELECT:
    ir_visit_expr(v, e->op.c);
    ir_visit_expr(v, e->op.a);
    ir_visit_expr(v, e->op.b);
    break;
  case FORM_LOAD:
    for (int d = 0; d < e->load.buf->ndim; d++)
      ir_visit_expr(v, e->load.idx[d]);
    break;
  case FORM_VECTOR:
    for (int i = 0; i < e->vector.n; i++)
      ir_visit_expr(v, e->vector.lane[i]);
    break;
  default: /* a leaf */
    break;
  }
  if (v->expr_post && !v->stop)
    v->expr_post(v, e);
}

void ir_visit_stmt(ir_visitor *v, const ir_stmt *s) {
  if (!s || v->stop)
    return;
  if (v->stmt && !v->stmt(v, s))
    return;
  switch (ir_stmt_form(s->kind)) {
  case FORM_FOR:
    ir_visit_expr(v, s->for_.index);
    ir_visit_stmt(v, s->for_.body);
    break;
  case FORM_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      ir_visit_stmt(v, s->seq.items[i]);
    break;
  case FORM_STORE:
    for (int d = 0; d < s->store.buf->ndim; d++)
      ir_visit_expr(v, s->store.idx[d]);
    ir_visit_expr(v, s->store.value);
    break;
  case FORM_IF:
    ir_visit_expr(v, s->if_.cond);
    ir_visit_stmt(v, s->if_.then_);
    ir_visit_stmt(v, s->if_.else_);
    break;
  case FORM_ALLOC:
    ir_visit_expr(v, s->alloc.init);
    ir_visit_stmt(v, s->alloc.body);
    break;
  case FORM_LANES:
    ir_visit_stmt(v, s->lanes.body);
    ir_visit_stmt(v, s->lanes.expanded);
    break;
  case FORM_COMPUTE:
    ir_visit_expr(v, s->compute.i);
    ir_visit_expr(v, s->compute.j);
    ir_visit_expr(v, s->compute.k);
    ir_visit_expr(v, s->compute.pred);
    for (int w = 0; w < 2; w++)
      for (int d = 0; d < 2; d++)
        ir_visit_expr(v, s->compute.origin[w][d]);
    break;
  case FORM_MMA:
    for (int w = 0; w < 3; w++)
      for (int d = 0; d < s->mma.buf[w]->ndim; d++)
        ir_visit_expr(v, s->mma.idx[w][d]);
    break;
  case FORM_LDMATRIX:
    for (int d = 0; d < s->ldsm.frag->ndim; d++)
      ir_visit_expr(v, s->ldsm.idx[d]);
    ir_visit_expr(v, s->ldsm.src);
    break;
  case FORM_STMATRIX:
    ir_visit_expr(v, s->stsm.dst);
    for (int i = 0; i < 2 * s->stsm.matrices; i++)
      ir_visit_expr(v, s->stsm.value[i]);
    break;
  case FORM_WGMMA:
    for (int d = 0; d < s->wgmma.acc->ndim; d++)
      ir_visit_expr(v, s->wgmma.idx[d]);
    ir_visit_expr(v, s->wgmma.src[0]);
    ir_visit_expr(v, s->wgmma.src[1]);
    break;
  case FORM_PIPE:
    ir_visit_expr(v, s->pipe.stage);
    ir_visit_expr(v, s->pipe.parity);
    ir_visit_expr(v, s->pipe.dst);
    ir_visit_expr(v, s->pipe.coord[0]);
    ir_visit_expr(v, s->pipe.coord[1]);
    ir_visit_stmt(v, s->pipe.body);
    break;
  default: /* a leaf */
    break;
  }
  if (v->stmt_post && !v->stop)
    v->stmt_post(v, s);
}

/* ---- Mutator ------------------------------------------------------------- */

ir_expr *ir_mutate_expr(ir_mutator *m, ir_expr *e) {
  if (!e || !m->expr)
    return e;
  return m->expr(m, e);
}

ir_stmt *ir_mutate_stmt(ir_mutator *m, ir_stmt *s) {
  if (!s)
    return NULL;
  return m->stmt ? m->stmt(m, s) : ir_mutate_stmt_children(m, s);
}

/* expr_at and stmt_at: *x rewritten in place, NULL left alone; false when
 * out of memory. */
#define CHILD_AT(name, type, mutate)                                          \
  static bool name(ir_mutator *m, type **x, bool *changed) {                  \
    if (!*x)                                                                  \
      return true;                                                            \
    type *y = mutate(m, *x);                                                  \
    if (!y)                                                                   \
      return false;                                                           \
    *changed |= y != *x;                                                      \
    *x = y;                                                                   \
    return true;                                                              \
  }
CHILD_AT(expr_at, ir_expr, ir_mutate_expr)
CHILD_AT(stmt_at, ir_stmt, ir_mutate_stmt)
#undef CHILD_AT

/* exprs_at and items_at: an array of n children rewritten, copied at the
 * first child that changed; false when out of memory. */
#define ARRAY_AT(name, type, mutate)                                          \
  static bool name(ir_mutator *m, type ***xs, int n, bool *changed) {         \
    type **in = *xs, **out = in;                                              \
    for (int i = 0; i < n; i++) {                                             \
      type *y = mutate(m, in[i]);                                             \
      if (!y)                                                                 \
        return false;                                                         \
      if (y != in[i] && out == in) {                                          \
        out = ts_arena_alloc(m->a, sizeof(*out) * (size_t)n);                 \
        if (!out)                                                             \
          return false;                                                       \
        memcpy(out, in, sizeof(*out) * (size_t)i);                            \
      }                                                                       \
      if (out != in)                                                          \
        out[i] = y;                                                           \
    }                                                                         \
    *changed |= out != in;                                                    \
    *xs = out;                                                                \
    return true;                                                              \
  }
ARRAY_AT(exprs_at, ir_expr, ir_mutate_expr)
ARRAY_AT(items_at, ir_stmt, ir_mutate_stmt)
#undef ARRAY_AT

/* The rewrite of `node`, whose children were rewritten into `n` (size
 * bytes): NULL when that ran out of memory, the node itself when no child
 * changed, else n copied into the arena. */
static void *rebuilt(ts_arena *a, bool ok, bool changed, void *node,
                     const void *n, size_t size) {
  if (!ok)
    return NULL;
  if (!changed)
    return node;
  void *c = ts_arena_alloc(a, size);
  if (c)
    memcpy(c, n, size);
  return c;
}

ir_expr *ir_mutate_expr_children(ir_mutator *m, ir_expr *e) {
  ir_expr n = *e; /* e with its children rewritten */
  bool changed = false, ok = true;
  switch (ir_expr_form(e->kind)) {
  case FORM_UNARY:
    ok = expr_at(m, &n.op.a, &changed);
    break;
  case FORM_BINARY:
    ok = expr_at(m, &n.op.a, &changed) && expr_at(m, &n.op.b, &changed);
    break;
  case FORM_SELECT:
    ok = expr_at(m, &n.op.c, &changed) && expr_at(m, &n.op.a, &changed) &&
         expr_at(m, &n.op.b, &changed);
    break;
  case FORM_LOAD:
    ok = exprs_at(m, &n.load.idx, e->load.buf->ndim, &changed);
    break;
  case FORM_VECTOR:
    ok = exprs_at(m, &n.vector.lane, e->vector.n, &changed);
    break;
  default: /* a leaf */
    break;
  }
  return rebuilt(m->a, ok, changed, e, &n, sizeof(n));
}

ir_stmt *ir_mutate_stmt_children(ir_mutator *m, ir_stmt *s) {
  ir_stmt n = *s; /* s with its children rewritten */
  bool changed = false, ok = true;
  switch (ir_stmt_form(s->kind)) {
  case FORM_FOR:
    ok = expr_at(m, &n.for_.index, &changed) &&
         stmt_at(m, &n.for_.body, &changed);
    break;
  case FORM_SEQ:
    ok = items_at(m, &n.seq.items, n.seq.n, &changed);
    break;
  case FORM_STORE:
    ok = exprs_at(m, &n.store.idx, s->store.buf->ndim, &changed) &&
         expr_at(m, &n.store.value, &changed);
    break;
  case FORM_IF:
    ok = expr_at(m, &n.if_.cond, &changed) &&
         stmt_at(m, &n.if_.then_, &changed) &&
         stmt_at(m, &n.if_.else_, &changed);
    break;
  case FORM_ALLOC:
    ok = expr_at(m, &n.alloc.init, &changed) &&
         stmt_at(m, &n.alloc.body, &changed);
    break;
  case FORM_LANES:
    ok = stmt_at(m, &n.lanes.body, &changed) &&
         stmt_at(m, &n.lanes.expanded, &changed);
    break;
  case FORM_COMPUTE:
    ok = expr_at(m, &n.compute.i, &changed) &&
         expr_at(m, &n.compute.j, &changed) &&
         expr_at(m, &n.compute.k, &changed) &&
         expr_at(m, &n.compute.pred, &changed);
    for (int w = 0; w < 2 && ok; w++)
      for (int d = 0; d < 2 && ok; d++)
        ok = expr_at(m, &n.compute.origin[w][d], &changed);
    break;
  case FORM_MMA:
    for (int w = 0; w < 3 && ok; w++)
      ok = exprs_at(m, &n.mma.idx[w], s->mma.buf[w]->ndim, &changed);
    break;
  case FORM_LDMATRIX:
    ok = exprs_at(m, &n.ldsm.idx, s->ldsm.frag->ndim, &changed) &&
         expr_at(m, &n.ldsm.src, &changed);
    break;
  case FORM_STMATRIX:
    ok = expr_at(m, &n.stsm.dst, &changed) &&
         exprs_at(m, &n.stsm.value, 2 * s->stsm.matrices, &changed);
    break;
  case FORM_WGMMA:
    ok = exprs_at(m, &n.wgmma.idx, s->wgmma.acc->ndim, &changed) &&
         expr_at(m, &n.wgmma.src[0], &changed) &&
         expr_at(m, &n.wgmma.src[1], &changed);
    break;
  case FORM_PIPE:
    ok = expr_at(m, &n.pipe.stage, &changed) &&
         expr_at(m, &n.pipe.parity, &changed) &&
         expr_at(m, &n.pipe.dst, &changed) &&
         expr_at(m, &n.pipe.coord[0], &changed) &&
         expr_at(m, &n.pipe.coord[1], &changed) &&
         stmt_at(m, &n.pipe.body, &changed);
    break;
  default: /* a leaf */
    break;
  }
  return rebuilt(m->a, ok, changed, s, &n, sizeof(n));
}
