/*
 * Loop primitives: split, fuse, reorder, bind, unroll and rename.
 *
 * Each reads as its checks, then numbered steps.  Every check runs before
 * the one rewrite, which builds a new tree beside the old one; the schedule
 * takes the new tree only at the end, so a failed call leaves it exactly as
 * it was.
 */
#include "sched.h"

#include <stdio.h>
#include <string.h>

/* ---- split ---------------------------------------------------------------- */

/* The most iterations a split makes: the kernel computes a loop's index,
 * outer * factor + inner, in int. */
enum { MAX_INDEX = 0x7fffffff };

ts_status (ts_split)(ts_sched *s, ts_loop *loop, int64_t factor,
                     ts_loop **outer, ts_loop **inner) {
  if (outer)
    *outer = NULL;
  if (inner)
    *inner = NULL;
  CHECK_SCHED(s);
  /* Check: a live serial loop of this schedule, a positive factor whose
   * iterations an int holds, places for both results. */
  if (!sched_check_loop(s, "ts_split", 2, "loop", loop))
    return s->status;
  if (factor < 1)
    return sched_fail(s, TS_ERR_BAD_FACTOR, loop,
                      "ts_split: argument 3 'factor' must be >= 1 (got %lld) "
                      "for loop \"%s\"", (long long)factor, loop->name);
  int64_t e = loop->extent;
  int64_t nouter = e / factor + (e % factor != 0);
  if (nouter > MAX_INDEX / factor)
    return sched_fail(s, TS_ERR_INDEX_OVERFLOW, loop,
                      "ts_split: argument 3 'factor' %lld makes loop \"%s\" "
                      "of %lld iterations %lld x %lld, past the %d a kernel's "
                      "int index holds", (long long)factor, loop->name,
                      (long long)e, (long long)nouter, (long long)factor,
                      MAX_INDEX);
  if (!outer || !inner)
    return sched_fail(s, TS_ERR_NULL_ARG, NULL,
                      "ts_split: argument %d '%s' is NULL", outer ? 5 : 4,
                      outer ? "inner" : "outer");
  if (!sched_require_serial(s, "ts_split", loop))
    return s->status;
  nest_path path;
  if (!nest_find(s->root, loop, &path))
    return sched_fail(s, TS_ERR_UNKNOWN_LOOP, NULL,
                      "ts_split: loop \"%s\" is not in the nest", loop->name);

  ts_arena *a = &s->arena;
  /* Step 1. The two loops: loop = outer * factor + inner.  As TVM's, the
   * inner loop keeps the factor at every extent, so a schedule keeps its
   * block shape at every size; a factor past the extent leaves one outer
   * iteration, guarded. */
  ts_loop *made[2] = {
      sched_new_loop(s, ts_arena_printf(a, "%s.outer", loop->name), nouter,
                     loop->reduce, 0),
      sched_new_loop(s, ts_arena_printf(a, "%s.inner", loop->name), factor,
                     loop->reduce, 1),
  };
  if (!made[0] || !made[1])
    return sched_oom(s, "ts_split");
  /* A trip count chosen at launch: the outer loop's is its ceiling over
   * the factor, and the guard stays (no factor divides every extent). */
  ir_expr *size = ir_loop_size(a, loop);
  if (loop->size)
    ir_loop_sized(made[0], ir_binary(a, E_DIV,
                                     ir_add(a, size, ir_int(a, factor - 1)),
                                     ir_int(a, factor)));
  made[0]->stage = made[1]->stage = loop->stage;
  ir_expr *value = ir_add(a, ir_mul(a, ir_varref(a, made[0]->var),
                                    ir_int(a, factor)),
                          ir_varref(a, made[1]->var));
  /* Step 2. Substitute into the body; guard where the factor does not
   * divide the extent (the simplifier drops guards it can prove). */
  ir_stmt *body = ir_subst_stmt(a, path.node[path.depth - 1]->for_.body,
                                loop->var, value);
  if (nouter * factor != e || loop->size)
    body = nest_add_guard(a, body, ir_binary(a, E_LT, value, size));
  /* Step 3. Nest the new loops where the old one was. */
  ir_stmt *nest = ir_new_for(a, made[0], ir_new_for(a, made[1], body));
  ir_stmt *root = nest_replace(a, &path, nest);
  trace_rec rec = {.op = TR_SPLIT, .loops = {loop->id}, .nloops = 1,
                   .factor = factor};
  ts_status st = sched_commit(s, "ts_split", root, made, 2, &rec);
  if (st != TS_OK)
    return st;
  loop->live = false;
  *outer = made[0];
  *inner = made[1];
  return TS_OK;
}

/* ---- fuse ---------------------------------------------------------------- */

ts_status (ts_fuse)(ts_sched *s, ts_loop *outer, ts_loop *inner,
                    ts_loop **fused) {
  if (fused)
    *fused = NULL;
  CHECK_SCHED(s);
  /* Check: two live serial loops of one kind of axis, the inner being the
   * whole body of the outer. */
  if (!sched_check_loop(s, "ts_fuse", 2, "outer", outer) ||
      !sched_check_loop(s, "ts_fuse", 3, "inner", inner))
    return s->status;
  if (!fused)
    return sched_fail(s, TS_ERR_NULL_ARG, NULL,
                      "ts_fuse: argument 4 'fused' is NULL");
  if (outer == inner)
    return sched_fail(s, TS_ERR_DUPLICATE_LOOP, outer,
                      "ts_fuse: loop \"%s\" is given twice", outer->name);
  if (!sched_require_serial(s, "ts_fuse", outer) ||
      !sched_require_serial(s, "ts_fuse", inner))
    return s->status;
  if (outer->reduce != inner->reduce)
    return sched_fail(s, TS_ERR_MIXED_AXES, outer,
                      "ts_fuse: loop \"%s\" is a %s loop and \"%s\" a %s loop; "
                      "a reduction loop fuses only with reduction loops",
                      outer->name, outer->reduce ? "reduction" : "spatial",
                      inner->name, inner->reduce ? "reduction" : "spatial");
  nest_path path;
  if (!nest_find(s->root, outer, &path))
    return sched_fail(s, TS_ERR_UNKNOWN_LOOP, NULL,
                      "ts_fuse: loop \"%s\" is not in the nest", outer->name);
  ir_stmt *of = path.node[path.depth - 1];
  ir_stmt *inf = of->for_.body;
  if (inf->kind != S_FOR || inf->for_.loop != inner)
    return sched_fail(s, TS_ERR_NOT_ADJACENT, outer,
                      "ts_fuse: loop \"%s\" must be the only statement in the "
                      "body of loop \"%s\"; reorder them first",
                      inner->name, outer->name);

  /* The inner loop's trip count divides the fused index. */
  if (!sched_require_static(s, "ts_fuse", inner))
    return s->status;
  ts_arena *a = &s->arena;
  int64_t e1 = outer->extent, e2 = inner->extent;
  /* Step 1. The fused loop: outer = fused / e2, inner = fused % e2. */
  ts_loop *made[1] = {sched_new_loop(
      s, ts_arena_printf(a, "%s.%s.fused", outer->name, inner->name), e1 * e2,
      outer->reduce, 0)};
  if (!made[0])
    return sched_oom(s, "ts_fuse");
  if (outer->size)
    ir_loop_sized(made[0], ir_mul(a, outer->size, ir_int(a, e2)));
  made[0]->stage = outer->stage;
  ir_expr *f = ir_varref(a, made[0]->var);
  ir_stmt *body = ir_subst_stmt(a, inf->for_.body, outer->var,
                                ir_binary(a, E_DIV, f, ir_int(a, e2)));
  body = ir_subst_stmt(a, body, inner->var,
                       ir_binary(a, E_MOD, f, ir_int(a, e2)));
  /* Step 2. One loop in place of the two. */
  ir_stmt *root = nest_replace(a, &path, ir_new_for(a, made[0], body));
  trace_rec rec = {.op = TR_FUSE, .loops = {outer->id, inner->id}, .nloops = 2};
  ts_status st = sched_commit(s, "ts_fuse", root, made, 1, &rec);
  if (st != TS_OK)
    return st;
  outer->live = inner->live = false;
  *fused = made[0];
  return TS_OK;
}

/* ---- reorder --------------------------------------------------------------- */

/* A cache attached at a loop that encloses `loop` in `root`, or NULL. */
static const ts_stage *stage_attached_outside(const ts_sched *s, ir_stmt *root,
                                              const ts_loop *loop) {
  nest_path p;
  if (!nest_find(root, loop, &p))
    return NULL;
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->at != loop && nest_path_has(&p, s->stages[i]->at))
      return s->stages[i];
  return NULL;
}

/* Caches live inside the launch loops (a register cache belongs to one
 * thread, a shared one to one block): a bound loop of `chain` that the
 * reorder puts inside an attach loop is refused, as ts_bind refuses to
 * bind one there. */
static bool check_caches_inside_launch(ts_sched *s, ir_stmt *root,
                                       ts_loop *const *chain, int n) {
  for (int d = 0; d < n; d++) {
    const ts_loop *l = chain[d];
    const ts_stage *holder = ir_kind_is_launch(l->kind)
                                 ? stage_attached_outside(s, root, l) : NULL;
    if (holder) {
      sched_fail(s, TS_ERR_CACHE_REGION, l,
                 "ts_reorder: bound loop \"%s\" would lie inside loop \"%s\", "
                 "where cache \"%s\" is attached; caches live inside the "
                 "loops bound to blockIdx and threadIdx", l->name,
                 holder->at->name, holder->name);
      return false;
    }
  }
  return true;
}

static int find_in(const nest_path *p, const ts_loop *loop) {
  for (int d = 0; d < p->depth; d++)
    if (p->node[d]->kind == S_FOR && p->node[d]->for_.loop == loop)
      return d;
  return -1;
}

ts_status (ts_reorder)(ts_sched *s, int n, ts_loop *const loops[]) {
  CHECK_SCHED(s);
  /* Check: live loops, none twice, all on one path of a perfect nest. */
  if (!loops)
    return sched_fail(s, TS_ERR_NULL_ARG, NULL,
                      "ts_reorder: argument 3 'loops' is NULL");
  if (n < 1 || n > TRACE_MAX_LOOPS)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "ts_reorder: argument 2 'n' must be in 1..%d (got %d)",
                      TRACE_MAX_LOOPS, n);
  for (int i = 0; i < n; i++) {
    char arg[32];
    snprintf(arg, sizeof(arg), "loops[%d]", i);
    if (!sched_check_loop(s, "ts_reorder", 3, arg, loops[i]))
      return s->status;
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i])
        return sched_fail(s, TS_ERR_DUPLICATE_LOOP, loops[i],
                          "ts_reorder: loop \"%s\" is given twice (loops[%d] "
                          "and loops[%d])", loops[i]->name, j, i);
  }
  /* The deepest loop's path must hold every other one. */
  nest_path path, p;
  int deepest = 0, best = -1;
  for (int i = 0; i < n; i++) {
    if (!nest_find(s->root, loops[i], &p))
      return sched_fail(s, TS_ERR_UNKNOWN_LOOP, NULL,
                        "ts_reorder: loop \"%s\" is not in the nest",
                        loops[i]->name);
    if (p.depth > best) {
      best = p.depth;
      deepest = i;
      path = p;
    }
  }
  int pos[TRACE_MAX_LOOPS], top = NEST_MAX_DEPTH;
  for (int i = 0; i < n; i++) {
    pos[i] = find_in(&path, loops[i]);
    if (pos[i] < 0)
      return sched_fail(s, TS_ERR_NOT_PERFECT_NEST, loops[i],
                        "ts_reorder: loops \"%s\" and \"%s\" are not nested "
                        "one in the other", loops[i]->name,
                        loops[deepest]->name);
    if (pos[i] < top)
      top = pos[i];
  }
  for (int d = top; d < path.depth - 1; d++)
    if (path.node[d]->kind != S_FOR || path.node[d]->for_.body != path.node[d + 1])
      return sched_fail(s, TS_ERR_NOT_PERFECT_NEST, loops[deepest],
                        "ts_reorder: the loops from \"%s\" to \"%s\" are not "
                        "a perfect nest (a loop between them has other "
                        "statements)", path.node[top]->for_.loop->name,
                        loops[deepest]->name);

  /* Step 1. The chain of loops from the outermost given to the deepest, the
   * given loops put into their slots in the order asked for. */
  ts_loop *chain[NEST_MAX_DEPTH];
  int len = path.depth - top;
  for (int d = 0; d < len; d++)
    chain[d] = path.node[top + d]->for_.loop;
  int slots[TRACE_MAX_LOOPS];
  for (int i = 0; i < n; i++)
    slots[i] = pos[i] - top;
  for (int i = 1; i < n; i++) /* sort slots ascending */
    for (int j = i; j > 0 && slots[j - 1] > slots[j]; j--) {
      int t = slots[j];
      slots[j] = slots[j - 1];
      slots[j - 1] = t;
    }
  for (int i = 0; i < n; i++)
    chain[slots[i]] = loops[i];
  /* Step 2. Rebuild the chain around the deepest loop's body. */
  ts_arena *a = &s->arena;
  ir_stmt *nest = path.node[path.depth - 1]->for_.body;
  for (int d = len - 1; d >= 0; d--)
    nest = ir_new_for(a, chain[d], nest);
  nest_path at = path;
  at.depth = top + 1;
  ir_stmt *root = nest_replace(a, &at, nest);
  /* Step 3. Bound loops must still nest block outside thread, outside k
   * loops and outside caches. */
  const ts_loop *lo, *li;
  ts_status bad = root ? nest_check_binding(root, NULL, TS_SERIAL, &lo, &li)
                       : TS_OK;
  if (bad != TS_OK)
    return nest_binding_error(s, "ts_reorder", bad, lo, li);
  if (root && !check_caches_inside_launch(s, root, chain, len))
    return s->status;
  trace_rec rec = {.op = TR_REORDER, .nloops = n};
  for (int i = 0; i < n; i++)
    rec.loops[i] = loops[i]->id;
  return sched_commit(s, "ts_reorder", root, NULL, 0, &rec);
}

/* ---- bind ------------------------------------------------------------------ */

/* CUDA's limits on launch dimensions. */
static int64_t tag_limit(ts_loop_kind tag) {
  switch (tag) {
  case TS_BLOCK_X: return 0x7fffffff;
  case TS_BLOCK_Y: case TS_BLOCK_Z: return 65535;
  case TS_THREAD_X: case TS_THREAD_Y: return 1024;
  case TS_THREAD_Z: return 64;
  default: return 0;
  }
}

enum { MAX_THREADS = 1024 };

/* The live loop bound to `tag` in `stage`'s copy nest, or in the compute
 * nest when stage is NULL (copy loops bound to thread indices only share
 * the block's), or NULL. */
static ts_loop *loop_with_tag(const ts_sched *s, const ts_stage *stage,
                              ts_loop_kind tag) {
  for (int i = 0; i < s->nloops; i++)
    if (s->loops[i]->live && s->loops[i]->stage == stage &&
        s->loops[i]->kind == tag)
      return s->loops[i];
  return NULL;
}

/* A copy loop bound to threadIdx.x takes the block's threadIdx.x as its
 * index: the threads share the copy's iterations, which lowering guards
 * when the loop is shorter than the block.  The block's shape stays the
 * compute nest's. */
static ts_status bind_copy_loop(ts_sched *s, ts_loop *loop, ts_loop_kind tag) {
  const ts_stage *st = loop->stage;
  /* Check: a thread index, a shared cache, the index free in this copy,
   * an extent within the block's threads along it. */
  if (!ir_kind_is_thread(tag))
    return sched_fail(s, TS_ERR_BAD_TAG, loop,
                      "ts_bind: loop \"%s\" copies cache \"%s\"; a copy loop "
                      "is bound to TS_THREAD_X/Y/Z, the threads that share the "
                      "copy, not to %s", loop->name, st->name,
                      ir_loop_kind_name(tag));
  if (st->buf->scope != SCOPE_SHARED)
    return sched_fail(s, TS_ERR_BAD_TAG, loop,
                      "ts_bind: loop \"%s\" copies register cache \"%s\", "
                      "which each thread fills for itself; only a shared "
                      "copy's loops are bound to threads", loop->name,
                      st->name);
  ts_loop *other = loop_with_tag(s, st, tag);
  if (other)
    return sched_fail(s, TS_ERR_TAG_BOUND_TWICE, loop,
                      "ts_bind: %s is already bound to loop \"%s\" of the "
                      "copy of \"%s\"", ir_loop_kind_name(tag), other->name,
                      st->name);
  const ts_loop *threads = loop_with_tag(s, NULL, tag);
  int64_t block = threads ? threads->extent : 1;
  if (loop->extent > block)
    return sched_fail(s, TS_ERR_LAUNCH_LIMIT, loop,
                      "ts_bind: copy loop \"%s\" has extent %lld; the block "
                      "has %lld threads along %s%s%s%s; split the copy loop "
                      "by %lld first", loop->name, (long long)loop->extent,
                      (long long)block, ir_loop_kind_name(tag),
                      threads ? " (loop \"" : "", threads ? threads->name : "",
                      threads ? "\")" : "", (long long)block);
  /* Step 1. Set the loop's kind. */
  trace_rec rec = {.op = TR_BIND, .loops = {loop->id}, .nloops = 1, .tag = tag};
  ts_status status = sched_commit(s, "ts_bind", s->root, NULL, 0, &rec);
  if (status == TS_OK)
    loop->kind = tag;
  return status;
}

ts_status (ts_bind)(ts_sched *s, ts_loop *loop, ts_loop_kind tag) {
  CHECK_SCHED(s);
  /* Check: a launch index not yet taken, a serial spatial loop, extents
   * within the device's limits, block loops outside thread loops. */
  if (!sched_check_loop(s, "ts_bind", 2, "loop", loop))
    return s->status;
  if (!ir_kind_is_launch(tag))
    return sched_fail(s, TS_ERR_BAD_TAG, loop,
                      "ts_bind: argument 3 'tag' must be TS_BLOCK_X/Y/Z or "
                      "TS_THREAD_X/Y/Z (got %d)", (int)tag);
  if (!sched_require_serial(s, "ts_bind", loop))
    return s->status;
  if (loop->reduce)
    return sched_fail(s, TS_ERR_BIND_REDUCTION, loop,
                      "ts_bind: loop \"%s\" iterates the reduction axis k; "
                      "binding it would make threads race on C",
                      loop->name);
  if (loop->stage)
    return bind_copy_loop(s, loop, tag);
  /* A block's threads are compiled in; its blocks may follow the launch. */
  if (ir_kind_is_thread(tag) && !sched_require_static(s, "ts_bind", loop))
    return s->status;
  if (ir_kind_is_thread(tag))
    for (int i = 0; i < s->nstages; i++)
      if (s->stages[i]->buf && s->stages[i]->buf->scope == SCOPE_SHARED)
        return sched_fail(s, TS_ERR_CACHE_REGION, loop,
                          "ts_bind: binding loop \"%s\" to %s would change "
                          "the region of shared cache \"%s\", which the "
                          "block's threads share; bind thread loops before "
                          "cache_read", loop->name, ir_loop_kind_name(tag),
                          s->stages[i]->name);
  const ts_stage *holder = stage_attached_outside(s, s->root, loop);
  if (holder)
    return sched_fail(s, TS_ERR_CACHE_REGION, loop,
                      "ts_bind: loop \"%s\" lies inside loop \"%s\", where "
                      "cache \"%s\" is attached; caches live inside the "
                      "loops bound to blockIdx and threadIdx, so bind before "
                      "caching", loop->name, holder->at->name, holder->name);
  ts_loop *other = loop_with_tag(s, NULL, tag);
  if (other)
    return sched_fail(s, TS_ERR_TAG_BOUND_TWICE, loop,
                      "ts_bind: %s is already bound to loop \"%s\"",
                      ir_loop_kind_name(tag), other->name);
  if (loop->extent > tag_limit(tag))
    return sched_fail(s, TS_ERR_LAUNCH_LIMIT, loop,
                      "ts_bind: loop \"%s\" has extent %lld, over the limit "
                      "of %lld for %s", loop->name, (long long)loop->extent,
                      (long long)tag_limit(tag), ir_loop_kind_name(tag));
  if (ir_kind_is_thread(tag)) {
    int64_t threads = loop->extent;
    for (int i = 0; i < s->nloops; i++)
      if (s->loops[i]->live && !s->loops[i]->stage &&
          ir_kind_is_thread(s->loops[i]->kind))
        threads *= s->loops[i]->extent;
    if (threads > MAX_THREADS)
      return sched_fail(s, TS_ERR_TOO_MANY_THREADS, loop,
                        "ts_bind: binding loop \"%s\" to %s makes %lld "
                        "threads per block, over the limit of %d",
                        loop->name, ir_loop_kind_name(tag),
                        (long long)threads, MAX_THREADS);
  }
  const ts_loop *lo, *li;
  ts_status bad = nest_check_binding(s->root, loop, tag, &lo, &li);
  if (bad != TS_OK)
    return nest_binding_error(s, "ts_bind", bad, lo, li);
  /* Step 1. Set the loop's kind. */
  trace_rec rec = {.op = TR_BIND, .loops = {loop->id}, .nloops = 1, .tag = tag};
  ts_status st = sched_commit(s, "ts_bind", s->root, NULL, 0, &rec);
  if (st == TS_OK)
    loop->kind = tag;
  return st;
}

/* ---- unroll ---------------------------------------------------------------- */

ts_status (ts_unroll)(ts_sched *s, ts_loop *loop) {
  CHECK_SCHED(s);
  /* Check: a live serial loop. */
  if (!sched_check_loop(s, "ts_unroll", 2, "loop", loop) ||
      !sched_require_serial(s, "ts_unroll", loop) ||
      !sched_require_static(s, "ts_unroll", loop))
    return s->status;
  /* Step 1. Mark it; codegen emits #pragma unroll. */
  trace_rec rec = {.op = TR_UNROLL, .loops = {loop->id}, .nloops = 1};
  ts_status st = sched_commit(s, "ts_unroll", s->root, NULL, 0, &rec);
  if (st == TS_OK)
    loop->kind = TS_UNROLLED;
  return st;
}

/* ---- rename ---------------------------------------------------------------- */

static bool valid_name(const char *name) {
  if (!name[0] || !(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z') ||
                    (name[0] >= 'A' && name[0] <= 'Z')))
    return false;
  for (const char *p = name; *p; p++) {
    char c = *p;
    if (!(c == '_' || c == '.' || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  }
  return strlen(name) < 64;
}

ts_status (ts_rename)(ts_sched *s, ts_loop *loop, const char *name) {
  CHECK_SCHED(s);
  /* Check: the loop, a well-formed name, and no clash in generated code. */
  if (!sched_check_loop(s, "ts_rename", 2, "loop", loop))
    return s->status;
  if (!name)
    return sched_fail(s, TS_ERR_NULL_ARG, NULL,
                      "ts_rename: argument 3 'name' is NULL");
  if (!valid_name(name))
    return sched_fail(s, TS_ERR_BAD_NAME, loop,
                      "ts_rename: argument 3 'name' must be a letter or '_' "
                      "then letters, digits, '_' or '.', under 64 characters "
                      "(got \"%s\")", name);
  if (sched_name_taken(s, name))
    return sched_fail(s, TS_ERR_NAME_TAKEN, loop,
                      "ts_rename: name \"%s\" is reserved or taken by "
                      "another loop", name);
  /* Step 1. Rename the loop and its variable. */
  const char *copy = ts_arena_strdup(&s->arena, name);
  if (!copy)
    return sched_fail(s, TS_ERR_NO_MEMORY, NULL, "ts_rename: out of memory");
  trace_rec rec = {.op = TR_RENAME, .loops = {loop->id}, .nloops = 1,
                   .name = copy};
  if (!sched_trace(s, &rec))
    return sched_fail(s, TS_ERR_NO_MEMORY, NULL, "ts_rename: out of memory");
  loop->name = copy;
  loop->var->name = copy;
  sched_invalidate(s);
  return TS_OK;
}
