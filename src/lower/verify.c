/*
 * The verifier of lowered kernels: every variable is defined by an
 * enclosing loop, every buffer is accessed inside its allocation with as
 * many indices as it has dimensions, the inputs are never stored to, and no
 * schedule-level node survived lowering.  A failure is a bug in tessel, not
 * in the user's schedule, and the message says which node.
 */
#include "lower.h"

#include <stdio.h>

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

static void fail(verifier *v, const char *what, const char *name) {
  if (!v->error)
    v->error = ts_arena_printf(v->a, "%s \"%s\"", what, name);
}

static void check_expr(verifier *v, const ir_expr *e) {
  if (!e || v->error)
    return;
  switch (e->kind) {
  case E_INT: case E_FLOAT:
    return;
  case E_VAR:
    if (!var_defined(v, e->var))
      fail(v, "variable used outside its loop:", e->var->name);
    return;
  case E_LOAD:
    if (!buffer_visible(v, e->load.buf))
      fail(v, "load from a buffer outside its allocation:", e->load.buf->name);
    for (int d = 0; d < e->load.buf->ndim; d++)
      check_expr(v, e->load.idx[d]);
    return;
  default:
    check_expr(v, e->op.a);
    check_expr(v, e->op.b);
    check_expr(v, e->op.c);
    return;
  }
}

static void check_stmt(verifier *v, const ir_stmt *s) {
  if (v->error)
    return;
  switch (s->kind) {
  case S_FOR:
    if (v->nvars == MAX_SCOPE) {
      fail(v, "loops nested too deep at", s->for_.loop->name);
      return;
    }
    if (s->for_.loop->extent < 1)
      fail(v, "loop with no iterations:", s->for_.loop->name);
    v->vars[v->nvars++] = s->for_.loop->var;
    check_stmt(v, s->for_.body);
    v->nvars--;
    return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      check_stmt(v, s->seq.items[i]);
    return;
  case S_STORE:
    if (s->store.buf == v->k->A || s->store.buf == v->k->B)
      fail(v, "store to input buffer", s->store.buf->name);
    if (!buffer_visible(v, s->store.buf))
      fail(v, "store to a buffer outside its allocation:", s->store.buf->name);
    for (int d = 0; d < s->store.buf->ndim; d++)
      check_expr(v, s->store.idx[d]);
    check_expr(v, s->store.value);
    return;
  case S_IF:
    check_expr(v, s->if_.cond);
    check_stmt(v, s->if_.then_);
    if (s->if_.else_)
      check_stmt(v, s->if_.else_);
    return;
  case S_ALLOC:
    if (v->nbufs == MAX_SCOPE) {
      fail(v, "allocations nested too deep at", s->alloc.buf->name);
      return;
    }
    v->bufs[v->nbufs++] = s->alloc.buf;
    check_stmt(v, s->alloc.body);
    v->nbufs--;
    return;
  case S_BARRIER:
    return;
  case S_COMPUTE:
    fail(v, "compute statement left after lowering", "C");
    return;
  }
}

const char *lower_verify(ts_arena *a, const ir_kernel *k) {
  verifier v = {.a = a, .k = k};
  check_stmt(&v, k->body);
  return v.error;
}
