/*
 * Split-K: the reduction split across blocks.  When C has too few tiles to
 * fill the GPU (a tall K, a small M x N), each block can sum only a part of
 * k, and the parts are combined afterwards:
 *
 *   for k.outer in 0..parts bound to blockIdx.z:     moved outermost
 *     for i ...:
 *       for j ...:
 *         for k.inner in 0..ceil(K / parts):
 *           C[i, j] += A[i, k.outer * f + k.inner] * B[...]
 *
 * Lowering keeps the accumulator inside the blockIdx.z loop, so it holds
 * one block's partial sum, and combines the partial sums in a workspace
 * reduced by a second kernel, or by atomic adds into C (src/lower/lower_split_k.c).
 * The outer loop is the one reduction loop that is bound; the binding rules
 * (nest.c) let bound loops lie inside it and nowhere else in k.
 */
#include "sched.h"

enum { MAX_PARTS = 65535 }; /* CUDA's limit on gridDim.z */

/* Check: the loop is the outermost reduction loop of a perfect nest from
 * the root down (nothing but loops above it), so it can move outermost. */
static bool check_outermost(ts_sched *s, const char *fn, ts_loop *k,
                            nest_path *path) {
  if (!nest_find(s->root, k, path)) {
    sched_fail(s, TS_ERR_UNKNOWN_LOOP, NULL, "%s: loop \"%s\" is not in the "
               "nest", fn, k->name);
    return false;
  }
  for (int d = 0; d + 1 < path->depth; d++) {
    const ir_stmt *n = path->node[d];
    if (n->kind != S_FOR || n->for_.body != path->node[d + 1]) {
      sched_fail(s, TS_ERR_NOT_PERFECT_NEST, k, "%s: the loops above \"%s\" "
                 "are not a perfect nest; the blockIdx.z loop moves "
                 "outermost, past them", fn, k->name);
      return false;
    }
    if (n->for_.loop->reduce) {
      sched_fail(s, TS_ERR_NOT_OUTERMOST_REDUCTION, k, "%s: reduction loop "
                 "\"%s\" lies outside \"%s\"; split the outermost reduction "
                 "loop", fn, n->for_.loop->name, k->name);
      return false;
    }
  }
  return true;
}

static bool check_args(ts_sched *s, const char *fn, ts_loop *k, int64_t parts,
                       ts_split_k_mode mode, ts_loop **outer, ts_loop **inner) {
  if (!sched_check_loop(s, fn, 2, "k", k) || !sched_require_static(s, fn, k))
    return false;
  if (parts < 1 || parts > MAX_PARTS) {
    sched_fail(s, parts < 1 ? TS_ERR_BAD_FACTOR : TS_ERR_LAUNCH_LIMIT, k,
               "%s: argument 3 'parts' must be in 1..%d, the blocks along "
               "blockIdx.z (got %lld)", fn, MAX_PARTS, (long long)parts);
    return false;
  }
  if (mode != TS_SPLIT_K_WORKSPACE && mode != TS_SPLIT_K_ATOMIC) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL, "%s: argument 4 'mode' must be "
               "TS_SPLIT_K_WORKSPACE or TS_SPLIT_K_ATOMIC (got %d)", fn,
               (int)mode);
    return false;
  }
  if (!outer || !inner) {
    sched_fail(s, TS_ERR_NULL_ARG, NULL, "%s: argument %d '%s' is NULL", fn,
               outer ? 6 : 5, outer ? "inner" : "outer");
    return false;
  }
  return true;
}

/* Check: the schedule can take split-K at all: fp32 C for atomics,
 * blockIdx.z free, no cache (whose regions were computed over the whole
 * k). */
static bool check_schedule(ts_sched *s, const char *fn, const ts_loop *k,
                           ts_split_k_mode mode) {
  if (mode == TS_SPLIT_K_ATOMIC && s->def.c_type != TS_F32) {
    sched_fail(s, TS_ERR_BAD_ARG, k, "%s: atomic adds into a %s C would "
               "round at every add; use TS_SPLIT_K_WORKSPACE, which sums in "
               "fp32 and rounds once", fn, ts_dtype_name(s->def.c_type));
    return false;
  }
  for (int i = 0; i < s->nloops; i++) {
    const ts_loop *l = s->loops[i];
    if (!l->live || l->kind != TS_BLOCK_Z)
      continue;
    if (ir_loop_is_split_k(l))
      sched_fail(s, TS_ERR_TAG_BOUND_TWICE, k, "%s: the reduction is already "
                 "split across blocks by loop \"%s\"", fn, l->name);
    else
      sched_fail(s, TS_ERR_TAG_BOUND_TWICE, k, "%s: blockIdx.z, which split-K "
                 "takes, is already bound to loop \"%s\"; bind it to "
                 "blockIdx.x or .y", fn, l->name);
    return false;
  }
  if (s->nstages > 0) {
    sched_fail(s, TS_ERR_CACHE_REGION, k, "%s: cache \"%s\" was made over "
               "the whole reduction; call ts_split_k before ts_cache_read and "
               "ts_cache_write", fn, s->stages[0]->name);
    return false;
  }
  return true;
}

/* The nest with k split and its outer part outermost, bound to z. */
static ir_stmt *split_nest(ts_sched *s, const nest_path *path, ts_loop *k,
                           ts_loop *outer, ts_loop *inner) {
  ts_arena *a = &s->arena;
  int64_t f = inner->extent;
  ir_expr *value = ir_add(a, ir_mul(a, ir_varref(a, outer->var), ir_int(a, f)),
                          ir_varref(a, inner->var));
  ir_stmt *body = ir_subst_stmt(a, path->node[path->depth - 1]->for_.body,
                                k->var, value);
  if (outer->extent * f != k->extent)
    body = nest_add_guard(a, body, ir_binary(a, E_LT, value,
                                             ir_int(a, k->extent)));
  ir_stmt *root = nest_replace(a, path, ir_new_for(a, inner, body));
  return root ? ir_new_for(a, outer, root) : NULL;
}

ts_status (ts_split_k)(ts_sched *s, ts_loop *k, int64_t parts,
                       ts_split_k_mode mode, ts_loop **outer, ts_loop **inner) {
  const char *fn = "ts_split_k";
  if (outer)
    *outer = NULL;
  if (inner)
    *inner = NULL;
  CHECK_SCHED(s);
  /* Check: a serial reduction loop, outermost of its kind, in a nest
   * without caches or another split-K; parts within gridDim.z. */
  nest_path path;
  if (!check_args(s, fn, k, parts, mode, outer, inner) ||
      !sched_require_serial(s, fn, k))
    return s->status;
  if (!k->reduce)
    return sched_fail(s, TS_ERR_BAD_ARG, k, "%s: loop \"%s\" is a spatial "
                      "loop; split-K splits a reduction loop (k)", fn,
                      k->name);
  if (!check_schedule(s, fn, k, mode) || !check_outermost(s, fn, k, &path))
    return s->status;
  trace_rec rec = {.op = TR_SPLIT_K, .loops = {k->id}, .nloops = 1,
                   .factor = parts, .split_k = mode};
  /* Step 1. One part is the reduction as it is: recorded, nothing made. */
  if (parts == 1) {
    ts_status st = sched_commit(s, fn, s->root, NULL, 0, &rec);
    if (st == TS_OK)
      *inner = k;
    return st;
  }
  /* Step 2. The loops: k = outer * ceil(K / parts) + inner, as ts_split
   * with the outer extent fixed at parts (grid z is what a user asks for);
   * the blocks past K find every iteration guarded off. */
  ts_arena *a = &s->arena;
  int64_t f = k->extent / parts + (k->extent % parts != 0);
  ts_loop *made[2] = {
      sched_new_loop(s, ts_arena_printf(a, "%s.outer", k->name), parts, true, 0),
      sched_new_loop(s, ts_arena_printf(a, "%s.inner", k->name), f, true, 1),
  };
  if (!made[0] || !made[1])
    return sched_oom(s, fn);
  made[0]->kind = TS_BLOCK_Z;
  /* Step 3. The nest rebuilt around them, and taken. */
  ts_status st = sched_commit(s, fn, split_nest(s, &path, k, made[0], made[1]),
                              made, 2, &rec);
  if (st != TS_OK)
    return st;
  k->live = false;
  s->split_k = mode;
  *outer = made[0];
  *inner = made[1];
  return TS_OK;
}
