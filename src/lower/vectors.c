/*
 * Vector accesses.  In a vectorized loop v of width W whose body is one
 * store, an access to global or shared memory becomes one W-wide access
 * when its flat offset is v + r with r a multiple of W for every value of
 * the other variables: contiguous lanes, aligned start (global buffers and
 * shared arrays are 16-byte aligned).  The proof is on the canonical
 * linear form: the coefficient of v is 1 and every other term and the
 * constant are multiples of W.  An access is at most 16 bytes (4 floats,
 * 8 halves).  Anything else stays scalar lanes, as do register arrays,
 * which have no memory to load from.  The lanes pass (lanes.c) then
 * expands the loop.
 */
#include "lower.h"

#include "../ir/analysis.h"
#include "../ir/visit.h"

enum { MAX_VECTOR_BYTES = 16 }; /* the widest load or store there is */

/* The coefficient of v in e, when e is linear in v. */
static bool coefficient(const ir_expr *e, const ir_var *v, int64_t *c) {
  int64_t x, y;
  if (!ir_expr_uses_var(e, v)) {
    *c = 0;
    return true;
  }
  switch (e->kind) {
  case E_VAR:
    *c = 1;
    return true;
  case E_ADD: case E_SUB:
    if (!coefficient(e->op.a, v, &x) || !coefficient(e->op.b, v, &y))
      return false;
    *c = e->kind == E_ADD ? x + y : x - y;
    return true;
  case E_MUL:
    if (e->op.b->kind == E_INT && coefficient(e->op.a, v, &x)) {
      *c = x * e->op.b->ival;
      return true;
    }
    if (e->op.a->kind == E_INT && coefficient(e->op.b, v, &y)) {
      *c = y * e->op.a->ival;
      return true;
    }
    return false;
  default:
    return false;
  }
}

static bool is_vector(ts_arena *a, const ir_buffer *buf, ir_expr *const *idx,
                      const ts_loop *l) {
  if (buf->scope == SCOPE_LOCAL ||
      l->extent * ts_dtype_size(buf->dtype) > MAX_VECTOR_BYTES)
    return false;
  ir_expr *off = ir_int(a, 0);
  for (int d = 0; d < buf->ndim; d++)
    off = ir_add(a, off, ir_mul(a, idx[d], ir_int(a, buf->strides[d])));
  off = ir_simplify_expr(a, off);
  int64_t c;
  if (!off || !coefficient(off, l->var, &c) || c != 1)
    return false;
  ir_expr *rest = ir_simplify_expr(a, ir_subst_expr(a, off, l->var, ir_int(a, 0)));
  return rest && ir_divisor(rest) % l->extent == 0;
}

/* The value's loads, made vector loads where they are.  Only floats are
 * entered: indices and conditions stay scalar, as the lanes pass
 * (lanes.c) evaluates them lane by lane. */
static ir_expr *mark_load(ir_mutator *m, ir_expr *e) {
  const ts_loop *l = m->ctx;
  if (e->type != TY_FLOAT)
    return e;
  if (e->kind != E_LOAD)
    return ir_mutate_expr_children(m, e);
  if (!is_vector(m->a, e->load.buf, e->load.idx, l))
    return e;
  ir_expr *v = ir_load(m->a, e->load.buf, e->load.idx);
  if (v)
    v->load.lanes = (int)l->extent;
  return v;
}

static ir_stmt *mark_store(ts_arena *a, ir_stmt *st, const ts_loop *l) {
  ir_mutator loads = {.a = a, .expr = mark_load, .ctx = (void *)l};
  ir_stmt *out = ir_new_store(a, st->store.buf, st->store.idx,
                              ir_mutate_expr(&loads, st->store.value));
  if (out && is_vector(a, st->store.buf, st->store.idx, l))
    out->store.lanes = (int)l->extent;
  return out;
}

static ir_stmt *vector_loop(ir_mutator *m, ir_stmt *s) {
  if (s->kind == S_FOR) {
    const ts_loop *l = s->for_.loop;
    ir_stmt *body = s->for_.body;
    /* An atomic add is scalar: each lane adds on its own. */
    if (l->kind == TS_VECTORIZED && l->extent > 1 && body->kind == S_STORE &&
        !body->store.atomic)
      return ir_new_for(m->a, s->for_.loop, mark_store(m->a, body, l));
  }
  return ir_mutate_stmt_children(m, s);
}

ir_stmt *lower_vectors(ts_arena *a, ir_stmt *root) {
  ir_mutator m = {.a = a, .stmt = vector_loop};
  return ir_mutate_stmt(&m, root);
}
