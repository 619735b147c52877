/*
 * Placing the reduction.  C[i, j] += A[i, k] * B[k, j] becomes an
 * accumulator in registers:
 *
 *   acc = 0                              init, above the outermost k loop
 *   for k ...: acc += A[i, k] * B[k, j]  the update
 *   C[i, j] = alpha * acc + beta * C     epilogue, after the k loops end
 *
 * The accumulator covers the part of C that the spatial loops inside the
 * outermost k loop walk (a scalar when every k loop is innermost), or those
 * inside cache_write's loop, around whose body it then lies; its size
 * comes from interval analysis of i and j over those loops.  Init and
 * epilogue replay those loops, so they touch exactly the elements the
 * update does.  Loops bound to block or thread indices are fixed within a
 * thread and do not widen the tile.
 */
#include "lower.h"

#include "../ir/analysis.h"

enum { MAX_ACC_ELEMS = 1 << 17 }; /* 512 KiB of local memory per thread */

typedef struct {
  lower_ctx *cx;
  nest_path path; /* root to the compute statement */
  int wrap;       /* path index of the node the accumulator wraps */
  const char *acc_name;
  const char *acc_made_by; /* cache_write's step, or NULL (lowering's) */
} nest;

static const ts_loop *loop_at(const nest *ns, int d) {
  const ir_stmt *n = ns->path.node[d];
  return n->kind == S_FOR ? n->for_.loop : NULL;
}

/* Where the accumulator goes: around the body of cache_write's loop, or
 * around the outermost k loop. */
static bool place(lower_ctx *cx, nest *ns) {
  const ts_sched *s = cx->s;
  const ts_stage *cw = NULL;
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->write && !s->stages[i]->shared)
      cw = s->stages[i];
  int first_k = ns->path.depth - 1;
  for (int d = 0; d < ns->path.depth; d++)
    if (loop_at(ns, d) && loop_at(ns, d)->reduce &&
        !ir_loop_is_split_k(loop_at(ns, d))) {
      first_k = d;
      break;
    }
  ns->wrap = first_k;
  ns->acc_name = "acc";
  if (!cw)
    return true;
  for (int d = 0; d < ns->path.depth; d++)
    if (loop_at(ns, d) == cw->at) {
      if (d > first_k) {
        lower_fail(cx, TS_ERR_BAD_ATTACH, "ts_lower: \"%s\" is attached at loop \"%s\", which now "
                   "lies inside reduction loop \"%s\"; the accumulators must "
                   "live across the whole reduction", cw->name, cw->at->name,
                   loop_at(ns, first_k)->name);
        return false;
      }
      ns->wrap = d + 1;
      /* Caches refilled at the same loop keep their copies first in its
       * body, where the stages pass finds them: the accumulator wraps the
       * rest. */
      const ir_stmt *body = ns->path.node[ns->wrap];
      if (body->kind == S_SEQ && body->seq.n > 0 &&
          nest_copy_stage(body->seq.items[0]) && ns->wrap + 1 < ns->path.depth)
        ns->wrap++;
      ns->acc_name = cw->name;
      for (int r = 0; r < s->ntrace; r++) /* cache_write's step */
        if (s->trace[r].op == TR_CACHE_WRITE && s->trace[r].stage == cw->id)
          ns->acc_made_by = s->trace[r].label;
      return true;
    }
  lower_fail(cx, TS_ERR_BAD_ATTACH, "ts_lower: \"%s\" is attached at loop \"%s\", which no longer "
             "encloses the computation", cw->name, cw->at->name);
  return false;
}

/* Variables the accumulator tile spans: unbound spatial loops inside it. */
static bool in_tile(const ir_var *v, void *ctx) {
  const nest *ns = ctx;
  for (int d = ns->wrap; d < ns->path.depth; d++) {
    const ts_loop *l = loop_at(ns, d);
    if (l && l->var == v)
      return !l->reduce && !ir_kind_is_launch(l->kind);
  }
  return false;
}

static bool uses_reduce_var(const ir_expr *e, const nest *ns) {
  for (int d = 0; d < ns->path.depth; d++) {
    const ts_loop *l = loop_at(ns, d);
    if (l && l->reduce && ir_expr_uses_var(e, l->var))
      return true;
  }
  return false;
}

/* The conjuncts of pred that involve no k loop. */
static ir_expr *spatial_part(ts_arena *a, ir_expr *pred, const nest *ns) {
  if (!pred)
    return NULL;
  if (pred->kind == E_AND)
    return ir_and(a, spatial_part(a, pred->op.a, ns),
                  spatial_part(a, pred->op.b, ns));
  return uses_reduce_var(pred, ns) ? NULL : pred;
}

/* Whether every read of a cache by the computation lies inside the cache
 * over all iterations, guards or not (a loop split after the cache was
 * made can reach past its region). */
static bool cache_reads_inside(ts_arena *a, const ir_stmt *cs) {
  for (int w = 0; w < 2; w++) {
    const ir_buffer *buf = cs->compute.src[w];
    for (int d = 0; buf && d < 2; d++) {
      int64_t lo, hi;
      ir_expr *idx = ir_simplify_expr(
          a, ir_sub(a, ir_compute_coord(cs, w, d), cs->compute.origin[w][d]));
      if (!idx || !ir_bounds(idx, &lo, &hi) || lo < 0 || hi >= buf->shape[d])
        return false;
    }
  }
  return true;
}

/* Whether e is the definition's value v: M, N or K as compiled in, or
 * its variable where taken at launch. */
static bool is_value(const lower_ctx *cx, const ir_expr *e, ts_param_value v) {
  const ir_var *param = cx->s->param[v];
  if (param)
    return e->kind == E_VAR && e->var == param;
  const ts_gemm *g = &cx->s->def;
  int64_t n = v == TS_VALUE_M ? g->m : v == TS_VALUE_N ? g->n : g->k;
  return e->kind == E_INT && e->ival == n;
}

/* Whether conjunct e is a bound of the GEMM (i < M, j < N or k < K) that
 * the caches make unnecessary for the update.  A cache stores 0 where its
 * region passes op(A) or op(B), so past K the update adds 0 * 0, and past
 * M or N it fills accumulators the epilogue does not store.  That needs
 * the operands the bound indexes read from caches, every read inside its
 * cache (see cache_reads_inside), and no copy skipped by the same test (a
 * loop split after a cache was made guards its copy too, which then
 * leaves the cache stale, not zero). */
static bool bound_the_caches_cover(lower_ctx *cx, const ir_stmt *root,
                                   const ir_stmt *cs, ir_expr *e) {
  /* Callers check cache_reads_inside(cs) once for all conjuncts. */
  ts_arena *a = cx->arena;
  if (e->kind != E_LT)
    return false;
  ir_expr *x = ir_simplify_expr(a, e->op.a);
  bool a_cached = cs->compute.src[0], b_cached = cs->compute.src[1];
  bool bound =
      (a_cached && is_value(cx, e->op.b, TS_VALUE_M) &&
       ir_expr_equal(x, ir_simplify_expr(a, cs->compute.i))) ||
      (b_cached && is_value(cx, e->op.b, TS_VALUE_N) &&
       ir_expr_equal(x, ir_simplify_expr(a, cs->compute.j))) ||
      (a_cached && b_cached && is_value(cx, e->op.b, TS_VALUE_K) &&
       ir_expr_equal(x, ir_simplify_expr(a, cs->compute.k)));
  return bound && !nest_copy_guarded_by(a, root, NULL, e);
}

static ir_expr *without_covered(lower_ctx *cx, const ir_stmt *root,
                                const ir_stmt *cs, ir_expr *pred) {
  if (!pred)
    return NULL;
  if (pred->kind == E_AND)
    return ir_and(cx->arena, without_covered(cx, root, cs, pred->op.a),
                  without_covered(cx, root, cs, pred->op.b));
  return bound_the_caches_cover(cx, root, cs, pred) ? NULL : pred;
}

/* The predicate less the bounds the caches cover: the update's guard. */
static ir_expr *update_part(lower_ctx *cx, const ir_stmt *root, const ir_stmt *cs,
                            ir_expr *pred) {
  return cache_reads_inside(cx->arena, cs) ? without_covered(cx, root, cs, pred)
                                           : pred;
}

static ir_stmt *guarded(ts_arena *a, ir_expr *cond, ir_stmt *body) {
  return cond ? ir_new_if(a, cond, body, NULL) : body;
}

/* body wrapped in fresh copies of the tile's loops, variables renamed. */
static ir_stmt *replay_tile_loops(lower_ctx *cx, const nest *ns, ir_stmt *body) {
  ts_arena *a = cx->arena;
  for (int d = ns->path.depth - 1; d >= ns->wrap && body; d--) {
    const ts_loop *l = loop_at(ns, d);
    /* A tensorized loop's elements are a lane's registers (tensorize.c). */
    if (!l || l->kind == TS_TENSORIZED || !in_tile(l->var, (void *)ns))
      continue;
    ts_loop *copy = ir_loop_sized(lower_new_loop(cx, l->name, l->extent,
                                                 l->kind), l->size);
    if (!copy)
      return NULL;
    copy->made_by = l->made_by; /* the same loop, replayed */
    body = ir_subst_stmt(a, body, l->var, ir_varref(a, copy->var));
    body = ir_new_for(a, copy, body);
  }
  return body;
}

ir_expr *lower_epilogue_value(ts_arena *a, const ts_gemm *g, ir_expr *acc,
                              ir_expr *c_old) {
  ir_expr *v = g->alpha == 1.0f ? acc
                                : ir_binary(a, E_MUL, ir_float(a, g->alpha), acc);
  if (g->beta == 0.0f)
    return v;
  ir_expr *c = g->beta == 1.0f
                   ? c_old
                   : ir_binary(a, E_MUL, ir_float(a, g->beta), c_old);
  return ir_binary(a, E_ADD, v, c);
}

/* The epilogue's store: C through alpha and beta, or into C's shared
 * stage where the schedule has one; with split-K, the block's partial sum
 * into its part of the workspace, or alpha times it added atomically into
 * C. */
static ir_stmt *epilogue_store(lower_ctx *cx, const tma_store_plan *stage,
                               ir_buffer *acc, ir_expr *const *acc_idx,
                               ir_expr *const c_idx[2]) {
  ts_arena *a = cx->arena;
  const ts_gemm *g = &cx->s->def;
  ir_expr *sum = ir_load(a, acc, acc_idx);
  ir_expr *value = lower_epilogue_value(a, g, sum,
                                        ir_load(a, cx->s->C, c_idx));
  if (stage->buf)
    return lower_tma_store_target(a, stage, c_idx, value);
  if (!cx->split_k)
    return ir_new_store(a, cx->s->C, c_idx, value);
  if (!cx->W)
    return ir_new_atomic_add(a, cx->s->C, c_idx,
                             g->alpha == 1.0f ? sum
                                              : ir_binary(a, E_MUL,
                                                          ir_float(a, g->alpha),
                                                          sum));
  ir_expr *w_idx[3] = {ir_varref(a, cx->split_k->var), c_idx[0], c_idx[1]};
  return ir_new_store(a, cx->W, w_idx, sum);
}

/* Operand w as the compute reads it: the input, or a cache at its origin. */
static ir_expr *operand_load(lower_ctx *cx, const ir_stmt *cs, int w) {
  ts_arena *a = cx->arena;
  ir_expr *x = ir_compute_coord(cs, w, 0);
  ir_expr *y = ir_compute_coord(cs, w, 1);
  ir_buffer *buf = cs->compute.src[w];
  if (!buf) {
    ir_expr *idx[2] = {x, y};
    return ir_load(a, w == 0 ? cx->s->A : cx->s->B, idx);
  }
  ir_expr *idx[2] = {
      ir_simplify_expr(a, ir_sub(a, x, cs->compute.origin[w][0])),
      ir_simplify_expr(a, ir_sub(a, y, cs->compute.origin[w][1]))};
  return ir_load(a, buf, idx);
}

/* The accumulator tile of ext_i x ext_j elements, and the index of
 * element (ai, aj); tensorized, a lane's registers of it (tensorize.c). */
static ir_buffer *new_acc(lower_ctx *cx, const nest *ns, const lower_mma *t,
                          int64_t ext_i, int64_t ext_j, ir_expr *ai,
                          ir_expr *aj, ir_expr *idx[3]) {
  ts_arena *a = cx->arena;
  ts_dtype type = cx->s->def.acc_type;
  if (!t->in) {
    idx[0] = ai;
    idx[1] = aj;
    return ir_new_buffer(a, ns->acc_name, SCOPE_LOCAL, type, 2,
                         (int64_t[]){ext_i, ext_j}, NULL);
  }
  if (!lower_mma_acc_index(cx, t, ai, aj, idx))
    return NULL;
  int64_t shape[3] = {ext_i / lower_mma_tile(t, 0),
                      ext_j / lower_mma_tile(t, 1),
                      t->in->frag[MMA_ACC].regs};
  return ir_new_buffer(a, ns->acc_name, SCOPE_LOCAL, type, 3, shape, NULL);
}

/* The update in place of the compute statement, or of the tensorized
 * loops: the tree below the accumulator. */
static ir_stmt *update_nest(lower_ctx *cx, const nest *ns, const lower_mma *t,
                            const ir_stmt *cs, ir_expr *upred, ir_buffer *acc,
                            ir_expr *const *acc_idx) {
  ts_arena *a = cx->arena;
  ir_expr *operand[2] = {operand_load(cx, cs, 0), operand_load(cx, cs, 1)};
  ir_stmt *update;
  int last = ns->path.depth - 1;
  if (t->in) {
    update = lower_mma_update(cx, t, &ns->path, ns->wrap, operand, upred, acc,
                              acc_idx, &last);
  } else {
    update = guarded(a, upred, ir_new_store(
        a, acc, acc_idx,
        ir_binary(a, E_ADD, ir_load(a, acc, acc_idx),
                  ir_binary(a, E_MUL, operand[0], operand[1]))));
  }
  nest_path inner = {.depth = last - ns->wrap + 1};
  for (int d = 0; d < inner.depth; d++)
    inner.node[d] = ns->path.node[ns->wrap + d];
  return update ? nest_replace(a, &inner, update) : NULL;
}

/* Init or epilogue: body at each element of the tile, over fresh copies
 * of the tile's loops (and, tensorized, each register of a lane). */
static ir_stmt *over_tile(lower_ctx *cx, const nest *ns, const lower_mma *t,
                          ir_stmt *body) {
  if (t->in)
    body = body ? lower_mma_registers(cx, t, body) : NULL;
  return body ? replay_tile_loops(cx, ns, body) : NULL;
}

ir_stmt *lower_reduction(lower_ctx *cx, ir_stmt *root) {
  ts_arena *a = cx->arena;
  nest ns = {.cx = cx};
  lower_mma t;
  if (!nest_find_compute(root, &ns.path)) {
    lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: the nest has no computation");
    return NULL;
  }
  tma_store_plan stage;
  if (!place(cx, &ns) || !lower_mma_plan(cx, &ns.path, &t))
    return NULL;
  if (t.in && ns.wrap > t.depth)
    ns.wrap = t.depth; /* the instruction's k loop is the only one */
  if (!lower_tma_store_plan(cx, &ns.path, ns.wrap, &t, &stage))
    return NULL;

  /* Step 1. The tile of C the accumulator holds. */
  ir_stmt *cs = ns.path.node[ns.path.depth - 1];
  ir_expr *base_i, *base_j;
  int64_t ext_i, ext_j;
  if (!ir_region(a, cs->compute.i, in_tile, &ns, &base_i, &ext_i) ||
      !ir_region(a, cs->compute.j, in_tile, &ns, &base_j, &ext_j)) {
    lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: cannot size the accumulator for C[%s, %s]",
               "i", "j");
    return NULL;
  }
  if (ext_i * ext_j > MAX_ACC_ELEMS) {
    lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: the accumulator would hold %lld x %lld elements of "
               "C per thread (at most %d); move spatial loops outside the "
               "outermost k loop", (long long)ext_i, (long long)ext_j,
               MAX_ACC_ELEMS);
    return NULL;
  }
  ir_expr *ai = ir_simplify_expr(a, ir_sub(a, cs->compute.i, base_i));
  ir_expr *aj = ir_simplify_expr(a, ir_sub(a, cs->compute.j, base_j));
  ir_expr *acc_idx[3];
  ir_expr *c_idx[2] = {cs->compute.i, cs->compute.j};
  if (!ai || !aj)
    goto oom;
  ir_buffer *acc = new_acc(cx, &ns, &t, ext_i, ext_j, ai, aj, acc_idx);
  if (!acc)
    goto fail;
  acc->made_by = ns.acc_made_by;

  /* Step 2. The update, guarded by the predicate less what the caches
   * cover, in place of the compute statement. */
  ir_expr *upred = update_part(cx, root, cs, cs->compute.pred);
  ir_stmt *loop_part = update_nest(cx, &ns, &t, cs, upred, acc, acc_idx);

  /* Step 3. Init and epilogue over the tile's loops, guarded by the
   * spatial part of the update's predicate (every accumulator it adds
   * into starts at 0; a tensor-core instruction reads all of a lane's)
   * and of the whole one (only C's elements are stored). */
  ir_expr *sguard = spatial_part(a, cs->compute.pred, &ns);
  ir_stmt *zero = ir_new_store(a, acc, acc_idx, ir_float(a, 0));
  ir_stmt *init = over_tile(
      cx, &ns, &t, t.in ? zero : guarded(a, spatial_part(a, upred, &ns), zero));
  ir_stmt *epilogue = over_tile(
      cx, &ns, &t,
      guarded(a, sguard, epilogue_store(cx, &stage, acc, acc_idx, c_idx)));
  if (epilogue && stage.buf)
    epilogue = lower_tma_store_epilogue(cx, &stage, epilogue);

  /* Step 4. The accumulator around init, update and epilogue. */
  ir_stmt *parts[3] = {init, loop_part, epilogue};
  ir_stmt *body = loop_part && init && epilogue
                      ? ir_new_alloc(a, acc, ir_new_seq(a, parts, 3))
                      : NULL;
  nest_path outer = ns.path;
  outer.depth = ns.wrap + 1;
  body = body ? nest_replace(a, &outer, body) : NULL;
  if (body && t.in) {
    body = lower_mma_lanes(cx, &t, body);
    cx->mma = true;
    cx->wgmma |= t.in->warpgroup;
  }
  if (!body || a->failed)
    goto fail;
  return body;
oom:
  lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  return NULL;
fail:
  if (cx->status == TS_OK)
    lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  return NULL;
}
