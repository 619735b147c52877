/*
 * Navigating the schedule's loop tree: finding the path to a loop,
 * rebuilding the ancestors of a replaced node, adding guards to the compute
 * statement, and the nesting rule that block loops lie outside thread loops.
 */
#include "../ir/analysis.h"
#include "sched.h"

static bool find(ir_stmt *s, const ts_loop *loop, nest_path *path) {
  if (path->depth == NEST_MAX_DEPTH)
    return false;
  path->node[path->depth++] = s;
  switch (s->kind) {
  case S_COMPUTE:
    if (!loop)
      return true;
    break;
  case S_FOR:
    if (s->for_.loop == loop || find(s->for_.body, loop, path))
      return true;
    break;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (find(s->seq.items[i], loop, path))
        return true;
    break;
  case S_IF:
    if (find(s->if_.then_, loop, path) ||
        (s->if_.else_ && find(s->if_.else_, loop, path)))
      return true;
    break;
  case S_ALLOC:
    if (find(s->alloc.body, loop, path))
      return true;
    break;
  default:
    break;
  }
  path->depth--;
  return false;
}

bool nest_find(ir_stmt *root, const ts_loop *loop, nest_path *path) {
  path->depth = 0;
  return find(root, loop, path);
}

bool nest_find_compute(ir_stmt *root, nest_path *path) {
  path->depth = 0;
  return find(root, NULL, path);
}

bool nest_path_has(const nest_path *path, const ts_loop *loop) {
  for (int d = 0; d < path->depth; d++)
    if (path->node[d]->kind == S_FOR && path->node[d]->for_.loop == loop)
      return true;
  return false;
}

ts_stage *nest_copy_stage(const ir_stmt *s) {
  return s->kind == S_FOR ? s->for_.loop->stage : NULL;
}

static bool has_conjunct(ts_arena *a, const ir_expr *cond, const ir_expr *want) {
  if (cond->kind == E_AND)
    return has_conjunct(a, cond->op.a, want) || has_conjunct(a, cond->op.b, want);
  return ir_expr_equal(ir_simplify_expr(a, (ir_expr *)cond), want);
}

/* In a copy nest (`in_copy`), any guard with the conjunct. */
static bool guarded_by(ts_arena *a, const ir_stmt *s, const ts_stage *stage,
                       bool in_copy, const ir_expr *want) {
  switch (s->kind) {
  case S_FOR: {
    const ts_stage *st = s->for_.loop->stage;
    in_copy |= st && (!stage || st == stage);
    return guarded_by(a, s->for_.body, stage, in_copy, want);
  }
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (guarded_by(a, s->seq.items[i], stage, in_copy, want))
        return true;
    return false;
  case S_IF:
    return (in_copy && has_conjunct(a, s->if_.cond, want)) ||
           guarded_by(a, s->if_.then_, stage, in_copy, want) ||
           (s->if_.else_ && guarded_by(a, s->if_.else_, stage, in_copy, want));
  case S_ALLOC:
    return guarded_by(a, s->alloc.body, stage, in_copy, want);
  default:
    return false;
  }
}

bool nest_copy_guarded_by(ts_arena *a, const ir_stmt *root,
                          const ts_stage *stage, const ir_expr *conjunct) {
  ir_expr *want = ir_simplify_expr(a, (ir_expr *)conjunct);
  return want && guarded_by(a, root, stage, false, want);
}

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

ir_stmt *nest_replace(ts_arena *a, const nest_path *path, ir_stmt *with) {
  for (int d = path->depth - 2; d >= 0 && with; d--)
    with = replace_child(a, path->node[d], path->node[d + 1], with);
  return with;
}

ir_stmt *nest_add_guard(ts_arena *a, ir_stmt *s, ir_expr *cond) {
  switch (s->kind) {
  case S_COMPUTE: {
    ir_stmt *c = ir_compute_with_src(a, s, 0, s->compute.src[0],
                                     s->compute.origin[0][0],
                                     s->compute.origin[0][1]);
    if (c)
      c->compute.pred = ir_and(a, s->compute.pred, cond);
    return c;
  }
  case S_FOR:
    return ir_new_for(a, s->for_.loop, nest_add_guard(a, s->for_.body, cond));
  case S_SEQ: {
    ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)s->seq.n);
    if (!items)
      return NULL;
    for (int i = 0; i < s->seq.n; i++)
      items[i] = nest_add_guard(a, s->seq.items[i], cond);
    return ir_new_seq(a, items, s->seq.n);
  }
  case S_ALLOC:
    return ir_new_alloc(a, s->alloc.buf, nest_add_guard(a, s->alloc.body, cond));
  case S_STORE: case S_IF: /* a cache's copy */
    return ir_new_if(a, cond, s, NULL);
  default:
    return s;
  }
}

static ts_loop_kind kind_of(const ts_loop *l, const ts_loop *over,
                            ts_loop_kind kind) {
  return l == over ? kind : l->kind;
}

typedef struct {
  const ts_loop *over;
  ts_loop_kind kind;
  const ts_loop *outer, *inner;
} binding_check;

static ts_status check_binding(const ir_stmt *s, binding_check *c,
                               const ts_loop *thread, const ts_loop *reduce) {
  ts_status st = TS_OK;
  switch (s->kind) {
  case S_FOR: {
    const ts_loop *l = s->for_.loop;
    /* A copy loop bound to a thread index shares the block's (ts_bind
     * checks it); the copy nest holds no loop of the computation. */
    if (l->stage)
      return TS_OK;
    ts_loop_kind k = kind_of(l, c->over, c->kind);
    if (ir_kind_is_block(k) && thread) {
      c->outer = thread;
      c->inner = l;
      return TS_ERR_THREAD_OUTSIDE_BLOCK;
    }
    if (ir_kind_is_launch(k) && reduce) {
      c->outer = reduce;
      c->inner = l;
      return TS_ERR_BOUND_INSIDE_REDUCTION;
    }
    if (ir_kind_is_thread(k) && !thread)
      thread = l;
    if (l->reduce && !reduce)
      reduce = l;
    return check_binding(s->for_.body, c, thread, reduce);
  }
  case S_SEQ:
    for (int i = 0; i < s->seq.n && st == TS_OK; i++)
      st = check_binding(s->seq.items[i], c, thread, reduce);
    return st;
  case S_IF:
    st = check_binding(s->if_.then_, c, thread, reduce);
    if (st == TS_OK && s->if_.else_)
      st = check_binding(s->if_.else_, c, thread, reduce);
    return st;
  case S_ALLOC:
    return check_binding(s->alloc.body, c, thread, reduce);
  default:
    return TS_OK;
  }
}

ts_status nest_check_binding(const ir_stmt *root, const ts_loop *loop,
                             ts_loop_kind kind, const ts_loop **outer,
                             const ts_loop **inner) {
  binding_check c = {.over = loop, .kind = kind};
  ts_status st = check_binding(root, &c, NULL, NULL);
  *outer = c.outer;
  *inner = c.inner;
  return st;
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
