/*
 * Loop partitioning: each loop ts_partition marked becomes a steady loop
 * over its first iterations and a tail over the rest.  The split point is
 * the most iterations on which the guards in the body that use the loop's
 * variable are all proven by interval analysis; the steady body is the
 * body with the variable ranging over those iterations, simplified, so the
 * proven guards disappear; the tail's variable is offset by the split
 * point and keeps them.  Runs after the guard pass, which has hoisted the
 * guards that do not use the variable out of the loop, and before the
 * vector pass, which can then make the steady loop's unguarded accesses
 * vectors.
 */
#include "lower.h"

#include "../ir/analysis.h"
#include "../ir/visit.h"

typedef struct {
  lower_ctx *cx;
  const ir_var *v;  /* the partitioned loop's variable */
  ir_var *probe;    /* stands for v over a shorter range */
  int64_t extent;   /* v's */
  int64_t split;    /* the fewest proven iterations so far; extent: none */
} finder;

/* Whether cond is proven while v ranges over [0, n). */
static bool holds_below(finder *f, ir_expr *cond, int64_t n) {
  ts_arena *a = f->cx->arena;
  f->probe->extent = n;
  ir_expr *e = ir_subst_expr(a, cond, f->v, ir_varref(a, f->probe));
  e = e ? ir_simplify_expr(a, e) : NULL;
  return e && ir_is_true(e);
}

/* The leading iterations on which cond is proven: the largest n with
 * holds_below(n), by bisection (a proof over a range holds over every
 * range inside it). */
static int64_t proven_prefix(finder *f, ir_expr *cond) {
  if (!holds_below(f, cond, 1))
    return 0;
  int64_t lo = 1, hi = f->extent; /* holds at lo; not at hi, or the
                                   * simplifier had dropped the guard */
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (holds_below(f, cond, mid))
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* A guard that holds on fewer than half the iterations stays in the steady
 * loop rather than shrinking it: the split serves the guards that fail
 * only near the end. */
static void consider(finder *f, ir_expr *cond) {
  if (cond->kind == E_AND) {
    consider(f, cond->op.a);
    consider(f, cond->op.b);
    return;
  }
  if (!ir_expr_uses_var(cond, f->v))
    return;
  int64_t n = proven_prefix(f, cond);
  if (2 * n >= f->extent && n < f->split)
    f->split = n;
}

static bool visit_guard(ir_visitor *vis, const ir_stmt *s) {
  if (s->kind == S_IF)
    consider(vis->ctx, s->if_.cond);
  return true;
}

/* Iterations [first, first + count) of loop l with body `body`, as a loop
 * of their own named `name`, simplified over that range. */
static ir_stmt *part(lower_ctx *cx, const ts_loop *l, ir_stmt *body,
                     const char *name, int64_t first, int64_t count) {
  ts_arena *a = cx->arena;
  ts_loop *p = lower_new_loop(cx, name, count, TS_SERIAL);
  if (!p)
    return NULL;
  p->reduce = l->reduce;
  ir_expr *at = ir_add(a, ir_varref(a, p->var), ir_int(a, first));
  ir_stmt *moved = ir_subst_stmt(a, body, l->var, at);
  /* Kept a loop even for one iteration (the simplifier would make it its
   * body): the loop is the C scope of the register caches the body
   * declares, which the other part declares too. */
  ir_stmt *simple = moved ? ir_simplify_stmt(a, moved) : NULL;
  return simple ? ir_new_for(a, p, simple) : NULL;
}

/* for v in 0..n: body  ->  for v in 0..s: body'; for v.tail in 0..n-s:
 * body[v := v.tail + s], where s is the split point (the loop as it is
 * when no guard has one). */
static ir_stmt *partition_loop(lower_ctx *cx, ir_stmt *loop) {
  const ts_loop *l = loop->for_.loop;
  ir_stmt *body = loop->for_.body;
  finder f = {.cx = cx, .v = l->var, .extent = l->extent, .split = l->extent};
  f.probe = ir_new_var(cx->arena, cx->next_var++, l->name, VAR_LOOP, 1);
  if (!f.probe)
    return NULL;
  ir_visitor vis = {.stmt = visit_guard, .ctx = &f};
  ir_visit_stmt(&vis, body);
  if (f.split >= l->extent)
    return loop;
  const char *tail = ts_arena_printf(cx->arena, "%s.tail", l->name);
  ir_stmt *parts[2] = {
      part(cx, l, body, l->name, 0, f.split),
      tail ? part(cx, l, body, tail, f.split, l->extent - f.split) : NULL};
  return parts[0] && parts[1] ? ir_new_seq(cx->arena, parts, 2) : NULL;
}

/* Bottom up, so that a partitioned loop inside another is split first. */
static ir_stmt *partition(ir_mutator *m, ir_stmt *s) {
  s = ir_mutate_stmt_children(m, s);
  if (!s || s->kind != S_FOR || !s->for_.loop->partitioned)
    return s; /* a partitioned loop stays serial: ts_partition saw to it */
  /* A trip count chosen at launch has no steady part known here: the loop
   * keeps its guards, as an unpartitioned one does. */
  if (s->for_.loop->size)
    return s;
  return partition_loop(m->ctx, s);
}

ir_stmt *lower_partition(lower_ctx *cx, ir_stmt *root) {
  ir_mutator m = {.a = cx->arena, .stmt = partition, .ctx = cx};
  return ir_mutate_stmt(&m, root);
}
