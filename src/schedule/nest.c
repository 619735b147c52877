/*
 * Navigating the schedule's loop tree: finding the path to a loop,
 * rebuilding the ancestors of a replaced node, adding guards to the compute
 * statement, and the nesting rule that block loops lie outside thread loops.
 * The searches are visitors and adding a guard is a mutator
 * (src/ir/visit.h); rebuilding along a path is not (see nest_replace).
 */
#include "../ir/analysis.h"
#include "../ir/visit.h"
#include "sched.h"

typedef struct {
  const ts_loop *loop; /* the loop sought; NULL: the compute statement */
  nest_path *path;     /* the nodes entered and not yet left */
} finder;

/* Each node goes on the path when entered and off when left, unless the
 * walk ends at it: then the path leads to it. */
static bool enter_path(ir_visitor *v, const ir_stmt *s) {
  finder *f = v->ctx;
  if (f->path->depth == NEST_MAX_DEPTH)
    return false;
  f->path->node[f->path->depth++] = (ir_stmt *)s;
  v->stop = f->loop ? s->kind == S_FOR && s->for_.loop == f->loop
                    : s->kind == S_COMPUTE;
  return true;
}

static void leave_path(ir_visitor *v, const ir_stmt *s) {
  (void)s;
  ((finder *)v->ctx)->path->depth--;
}

static bool find(ir_stmt *root, const ts_loop *loop, nest_path *path) {
  finder f = {loop, path};
  ir_visitor v = {.stmt = enter_path, .stmt_post = leave_path, .ctx = &f};
  path->depth = 0;
  ir_visit_stmt(&v, root);
  return v.stop;
}

bool nest_find(ir_stmt *root, const ts_loop *loop, nest_path *path) {
  return find(root, loop, path);
}

bool nest_find_compute(ir_stmt *root, nest_path *path) {
  return find(root, NULL, path);
}

bool nest_path_has(const nest_path *path, const ts_loop *loop) {
  return nest_path_index(path, loop) >= 0;
}

int nest_path_index(const nest_path *path, const ts_loop *loop) {
  for (int d = 0; d < path->depth; d++)
    if (path->node[d]->kind == S_FOR && path->node[d]->for_.loop == loop)
      return d;
  return -1;
}

bool nest_inside_attach(const ir_var *v, void *ctx) {
  const nest_region *r = ctx;
  for (int d = 0; d < r->path->depth; d++) {
    const ir_stmt *n = r->path->node[d];
    if (n->kind == S_FOR && n->for_.loop->var == v)
      return d > r->at || (r->threads && ir_kind_is_thread(n->for_.loop->kind));
  }
  return false;
}

const ts_loop *nest_sized_inside(const nest_region *r, const ir_expr *e) {
  for (int d = 0; d < r->path->depth; d++) {
    const ir_stmt *n = r->path->node[d];
    if (n->kind == S_FOR && n->for_.loop->size &&
        nest_inside_attach(n->for_.loop->var, (void *)r) &&
        ir_expr_uses_var(e, n->for_.loop->var))
      return n->for_.loop;
  }
  return NULL;
}

ts_stage *nest_copy_stage(const ir_stmt *s) {
  return s->kind == S_FOR ? s->for_.loop->stage : NULL;
}

static bool has_conjunct(ts_arena *a, const ir_expr *cond, const ir_expr *want) {
  if (cond->kind == E_AND)
    return has_conjunct(a, cond->op.a, want) || has_conjunct(a, cond->op.b, want);
  return ir_expr_equal(ir_simplify_expr(a, (ir_expr *)cond), want);
}

typedef struct {
  ts_arena *a;
  const ts_stage *stage; /* whose copy nests count; NULL: every cache's */
  const ir_expr *want;   /* the conjunct, simplified */
  const ir_stmt *copy;   /* the copy loop the walk is inside, or NULL */
} guard_search;

/* Inside a copy nest, a guard with the conjunct ends the walk. */
static bool enter_guard(ir_visitor *v, const ir_stmt *s) {
  guard_search *g = v->ctx;
  if (s->kind == S_FOR && !g->copy) {
    const ts_stage *st = s->for_.loop->stage;
    if (st && (!g->stage || st == g->stage))
      g->copy = s;
  }
  v->stop = s->kind == S_IF && g->copy && has_conjunct(g->a, s->if_.cond,
                                                        g->want);
  return true;
}

static void leave_guard(ir_visitor *v, const ir_stmt *s) {
  guard_search *g = v->ctx;
  if (s == g->copy)
    g->copy = NULL;
}

bool nest_copy_guarded_by(ts_arena *a, const ir_stmt *root,
                          const ts_stage *stage, const ir_expr *conjunct) {
  guard_search g = {a, stage, ir_simplify_expr(a, (ir_expr *)conjunct), NULL};
  ir_visitor v = {.stmt = enter_guard, .stmt_post = leave_guard, .ctx = &g};
  if (g.want)
    ir_visit_stmt(&v, root);
  return v.stop;
}

/* parent rebuilt with `with` in place of its child `old`. */
static ir_stmt *replace_child(ts_arena *a, ir_stmt *parent, ir_stmt *old,
                              ir_stmt *with) {
  switch (parent->kind) {
  case S_FOR:
    return ir_new_for(a, parent->for_.loop, with);
  case S_SEQ: {
    ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)parent->seq.n);
    if (!items)
      return NULL;
    for (int i = 0; i < parent->seq.n; i++)
      items[i] = parent->seq.items[i] == old ? with : parent->seq.items[i];
    return ir_new_seq(a, items, parent->seq.n);
  }
  case S_IF:
    return ir_new_if(a, parent->if_.cond,
                     parent->if_.then_ == old ? with : parent->if_.then_,
                     parent->if_.else_ == old ? with : parent->if_.else_);
  case S_ALLOC:
    return ir_new_alloc(a, parent->alloc.buf, with);
  default:
    return NULL;
  }
}

/* Not a mutator: the path names one occurrence of a node, where a subtree
 * may be shared by several places of the tree, and only the ancestors on
 * the path are rebuilt, not every node the mutator would walk to find it. */
ir_stmt *nest_replace(ts_arena *a, const nest_path *path, ir_stmt *with) {
  for (int d = path->depth - 2; d >= 0 && with; d--)
    with = replace_child(a, path->node[d], path->node[d + 1], with);
  return with;
}

/* The compute statement gets the condition in its predicate; a cache's
 * copy (a store, or a store already guarded) a guard around it. */
static ir_stmt *add_guard(ir_mutator *m, ir_stmt *s) {
  ir_expr *cond = m->ctx;
  switch (s->kind) {
  case S_COMPUTE: {
    ir_stmt *c = ir_compute_with_src(m->a, s, 0, s->compute.src[0],
                                     s->compute.origin[0][0],
                                     s->compute.origin[0][1]);
    if (c)
      c->compute.pred = ir_and(m->a, s->compute.pred, cond);
    return c;
  }
  case S_STORE: case S_IF:
    return ir_new_if(m->a, cond, s, NULL);
  default:
    return ir_mutate_stmt_children(m, s);
  }
}

ir_stmt *nest_add_guard(ts_arena *a, ir_stmt *s, ir_expr *cond) {
  ir_mutator m = {.a = a, .stmt = add_guard, .ctx = cond};
  return ir_mutate_stmt(&m, s);
}

static ts_loop_kind kind_of(const ts_loop *l, const ts_loop *over,
                            ts_loop_kind kind) {
  return l == over ? kind : l->kind;
}

typedef struct {
  const ts_loop *over; /* taken as bound to `kind` */
  ts_loop_kind kind;
  /* The outermost thread loop and reduction loop around the walk, and the
   * nodes that brought them, whose leaving ends them. */
  const ts_loop *thread, *reduce;
  const ir_stmt *thread_at, *reduce_at;
  ts_status status;
  const ts_loop *outer, *inner; /* the pair that breaks the rule */
} binding_check;

static bool broken(ir_visitor *v, ts_status status, const ts_loop *outer,
                   const ts_loop *inner) {
  binding_check *c = v->ctx;
  c->status = status;
  c->outer = outer;
  c->inner = inner;
  v->stop = true;
  return false;
}

static bool enter_binding(ir_visitor *v, const ir_stmt *s) {
  binding_check *c = v->ctx;
  if (s->kind != S_FOR)
    return true;
  const ts_loop *l = s->for_.loop;
  /* A copy loop bound to a thread index shares the block's (ts_bind
   * checks it); the copy nest holds no loop of the computation. */
  if (l->stage)
    return false;
  ts_loop_kind k = kind_of(l, c->over, c->kind);
  if (ir_kind_is_block(k) && c->thread)
    return broken(v, TS_ERR_THREAD_OUTSIDE_BLOCK, c->thread, l);
  if (ir_kind_is_launch(k) && c->reduce)
    return broken(v, TS_ERR_BOUND_INSIDE_REDUCTION, c->reduce, l);
  if (ir_kind_is_thread(k) && !c->thread) {
    c->thread = l;
    c->thread_at = s;
  }
  /* Split-K's loop is the one reduction loop bound loops may lie in. */
  if (l->reduce && !ir_loop_is_split_k(l) && !c->reduce) {
    c->reduce = l;
    c->reduce_at = s;
  }
  return true;
}

static void leave_binding(ir_visitor *v, const ir_stmt *s) {
  binding_check *c = v->ctx;
  if (s == c->thread_at) {
    c->thread = NULL;
    c->thread_at = NULL;
  }
  if (s == c->reduce_at) {
    c->reduce = NULL;
    c->reduce_at = NULL;
  }
}

ts_status nest_check_binding(const ir_stmt *root, const ts_loop *loop,
                             ts_loop_kind kind, const ts_loop **outer,
                             const ts_loop **inner) {
  binding_check c = {.over = loop, .kind = kind, .status = TS_OK};
  ir_visitor v = {.stmt = enter_binding, .stmt_post = leave_binding,
                  .ctx = &c};
  ir_visit_stmt(&v, root);
  *outer = c.outer;
  *inner = c.inner;
  return c.status;
}

ts_status nest_binding_error(ts_sched *s, const char *fn, ts_status code,
                             const ts_loop *outer, const ts_loop *inner) {
  if (code == TS_ERR_THREAD_OUTSIDE_BLOCK)
    return sched_fail(s, code, inner,
                      "%s: block loop \"%s\" would lie inside thread loop "
                      "\"%s\"; block loops go outside thread loops",
                      fn, inner->name, outer->name);
  return sched_fail(s, code, inner,
                    "%s: bound loop \"%s\" would lie inside reduction loop "
                    "\"%s\"; bound loops go outside every k loop",
                    fn, inner->name, outer->name);
}
