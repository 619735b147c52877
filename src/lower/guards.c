/*
 * Guard hoisting.  A guard is split into its conjuncts, each conjunct moves
 * out of every loop whose variable it does not use, neighbouring guards with
 * the same condition merge, and nested guards join again with &&.  So
 * "if i < 37 && j < 53" ends above the k loop instead of being tested on
 * every iteration of it.
 */
#include "lower.h"

static ir_stmt *hoist(ts_arena *a, ir_stmt *s);

/* if (x && y) s  ->  if (x) if (y) s */
static ir_stmt *split_conjuncts(ts_arena *a, ir_expr *cond, ir_stmt *body) {
  if (cond->kind == E_AND)
    return split_conjuncts(a, cond->op.a, split_conjuncts(a, cond->op.b, body));
  return ir_new_if(a, cond, body, NULL);
}

static bool is_plain_if(const ir_stmt *s) {
  return s && s->kind == S_IF && !s->if_.else_;
}

/* for v: if (c) s  ->  if (c) for v: s, while c does not use v.  The loop
 * keeps the guards that use its variable, innermost. */
static ir_stmt *hoist_out_of_loop(ts_arena *a, ts_loop *loop, ir_stmt *body) {
  ir_expr *out[64];
  int nout = 0;
  ir_stmt *inner = body;
  ir_expr *kept[64];
  int nkept = 0;
  while (is_plain_if(inner) && nout < 64 && nkept < 64) {
    if (ir_expr_uses_var(inner->if_.cond, loop->var))
      kept[nkept++] = inner->if_.cond;
    else
      out[nout++] = inner->if_.cond;
    inner = inner->if_.then_;
  }
  if (nout == 0)
    return ir_new_for(a, loop, body);
  for (int i = nkept - 1; i >= 0; i--)
    inner = ir_new_if(a, kept[i], inner, NULL);
  ir_stmt *s = ir_new_for(a, loop, inner);
  for (int i = nout - 1; i >= 0; i--)
    s = ir_new_if(a, out[i], s, NULL);
  return s;
}

/* Neighbours guarded by the same condition share one guard. */
static ir_stmt *merge_seq(ts_arena *a, ir_stmt *const *items, int n) {
  ir_stmt **out = ts_arena_alloc(a, sizeof(*out) * (size_t)(n ? n : 1));
  if (!out)
    return NULL;
  int m = 0;
  for (int i = 0; i < n; i++) {
    ir_stmt *x = items[i];
    if (m > 0 && is_plain_if(x) && is_plain_if(out[m - 1]) &&
        ir_expr_equal(x->if_.cond, out[m - 1]->if_.cond)) {
      ir_stmt *pair[2] = {out[m - 1]->if_.then_, x->if_.then_};
      out[m - 1] = ir_new_if(a, x->if_.cond, ir_new_seq(a, pair, 2), NULL);
    } else {
      out[m++] = x;
    }
  }
  if (m == 1)
    return out[0];
  return ir_new_seq(a, out, m);
}

/* A sequence whose statements all share a leading guard becomes one guard
 * over the sequence, so the guard can keep moving outwards. */
static ir_stmt *lift_common_guard(ts_arena *a, ir_stmt *seq) {
  if (seq->kind != S_SEQ || seq->seq.n < 2 || !is_plain_if(seq->seq.items[0]))
    return seq;
  ir_expr *c = seq->seq.items[0]->if_.cond;
  for (int i = 1; i < seq->seq.n; i++)
    if (!is_plain_if(seq->seq.items[i]) ||
        !ir_expr_equal(seq->seq.items[i]->if_.cond, c))
      return seq;
  ir_stmt **inner = ts_arena_alloc(a, sizeof(*inner) * (size_t)seq->seq.n);
  if (!inner)
    return NULL;
  for (int i = 0; i < seq->seq.n; i++)
    inner[i] = seq->seq.items[i]->if_.then_;
  return ir_new_if(a, c, ir_new_seq(a, inner, seq->seq.n), NULL);
}

static ir_stmt *hoist(ts_arena *a, ir_stmt *s) {
  if (!s)
    return NULL;
  switch (s->kind) {
  case S_FOR:
    return hoist_out_of_loop(a, s->for_.loop, hoist(a, s->for_.body));
  case S_SEQ: {
    ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)(s->seq.n + 1));
    if (!items)
      return NULL;
    for (int i = 0; i < s->seq.n; i++)
      items[i] = hoist(a, s->seq.items[i]);
    ir_stmt *m = merge_seq(a, items, s->seq.n);
    return m ? lift_common_guard(a, m) : NULL;
  }
  case S_IF: {
    ir_stmt *t = hoist(a, s->if_.then_);
    if (s->if_.else_)
      return ir_new_if(a, s->if_.cond, t, hoist(a, s->if_.else_));
    return split_conjuncts(a, s->if_.cond, t);
  }
  case S_ALLOC: {
    /* Guards never read the buffer, so they may leave its scope. */
    ir_stmt *body = hoist(a, s->alloc.body);
    if (is_plain_if(body))
      return ir_new_if(a, body->if_.cond,
                       hoist(a, ir_new_alloc(a, s->alloc.buf, body->if_.then_)),
                       NULL);
    return ir_new_alloc(a, s->alloc.buf, body);
  }
  default:
    return s;
  }
}

/* if (x) if (y) s  ->  if (x && y) s */
static ir_stmt *join(ts_arena *a, ir_stmt *s) {
  if (!s)
    return NULL;
  switch (s->kind) {
  case S_FOR:
    return ir_new_for(a, s->for_.loop, join(a, s->for_.body));
  case S_SEQ: {
    ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)(s->seq.n + 1));
    if (!items)
      return NULL;
    for (int i = 0; i < s->seq.n; i++)
      items[i] = join(a, s->seq.items[i]);
    return ir_new_seq(a, items, s->seq.n);
  }
  case S_IF: {
    ir_stmt *t = join(a, s->if_.then_);
    if (!s->if_.else_ && is_plain_if(t))
      return ir_new_if(a, ir_binary(a, E_AND, s->if_.cond, t->if_.cond),
                       t->if_.then_, NULL);
    return ir_new_if(a, s->if_.cond, t, join(a, s->if_.else_));
  }
  case S_ALLOC:
    return ir_new_alloc(a, s->alloc.buf, join(a, s->alloc.body));
  default:
    return s;
  }
}

ir_stmt *lower_guards(ts_arena *a, ir_stmt *root) {
  return join(a, hoist(a, root));
}
