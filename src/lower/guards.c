/*
 * Guard hoisting.  A guard is split into its conjuncts, each conjunct moves
 * out of every loop whose variable it does not use, neighbouring guards with
 * the same condition merge, and nested guards join again with &&; a guard
 * with an else branch that is the same for every lane of a vectorized loop
 * moves out of it, each branch taking a copy of the loop.  So
 * "if i < 37 && j < 53" ends above the k loop instead of being tested on
 * every iteration of it.
 */
#include "lower.h"

#include "../ir/visit.h"

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

/* for v: if (c) s else t  ->  if (c) for v: s else for v: t, for a
 * vectorized loop v and a condition c the same for every lane: each loop's
 * body is then one store, which the vector pass can make one access (a
 * tile's copy with zeros past the edge). */
static ir_stmt *unswitch_lanes(ts_arena *a, ts_loop *loop, ir_stmt *body) {
  if (loop->kind != TS_VECTORIZED || body->kind != S_IF || !body->if_.else_ ||
      ir_expr_uses_var(body->if_.cond, loop->var))
    return NULL;
  return ir_new_if(a, body->if_.cond, ir_new_for(a, loop, body->if_.then_),
                   ir_new_for(a, loop, body->if_.else_));
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

/* Bottom up: a node's children are hoisted before the node. */
static ir_stmt *hoist(ir_mutator *m, ir_stmt *s) {
  ts_arena *a = m->a;
  s = ir_mutate_stmt_children(m, s);
  if (!s)
    return NULL;
  switch (s->kind) {
  case S_FOR: {
    ir_stmt *split = unswitch_lanes(a, s->for_.loop, s->for_.body);
    return split ? split : hoist_out_of_loop(a, s->for_.loop, s->for_.body);
  }
  case S_SEQ: {
    ir_stmt *merged = merge_seq(a, s->seq.items, s->seq.n);
    return merged ? lift_common_guard(a, merged) : NULL;
  }
  case S_IF:
    return s->if_.else_ ? s : split_conjuncts(a, s->if_.cond, s->if_.then_);
  case S_ALLOC: {
    /* Guards never read the buffer, so they may leave its scope. */
    ir_stmt *body = s->alloc.body;
    if (!is_plain_if(body))
      return s;
    ir_stmt *inner = ir_new_alloc(a, s->alloc.buf, body->if_.then_);
    return ir_new_if(a, body->if_.cond, ir_mutate_stmt(m, inner), NULL);
  }
  default:
    return s;
  }
}

/* if (x) if (y) s  ->  if (x && y) s, bottom up. */
static ir_stmt *join(ir_mutator *m, ir_stmt *s) {
  s = ir_mutate_stmt_children(m, s);
  if (!s || s->kind != S_IF || s->if_.else_ || !is_plain_if(s->if_.then_))
    return s;
  ir_stmt *t = s->if_.then_;
  return ir_new_if(m->a, ir_binary(m->a, E_AND, s->if_.cond, t->if_.cond),
                   t->if_.then_, NULL);
}

ir_stmt *lower_guards(ts_arena *a, ir_stmt *root) {
  ir_mutator hoister = {.a = a, .stmt = hoist};
  ir_mutator joiner = {.a = a, .stmt = join};
  return ir_mutate_stmt(&joiner, ir_mutate_stmt(&hoister, root));
}
