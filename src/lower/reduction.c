/*
 * Placing the reduction.  C[i, j] += A[i, k] * B[k, j] becomes an
 * accumulator in registers:
 *
 *   acc = 0                              init, above the outermost k loop
 *   for k ...: acc += A[i, k] * B[k, j]  the update
 *   C[i, j] = alpha * acc + beta * C     epilogue, after the k loops end
 *
 * The accumulator covers the part of C that the spatial loops inside the
 * outermost k loop walk (a scalar when every k loop is innermost); its size
 * comes from interval analysis of i and j over those loops.  Init and
 * epilogue replay those loops, so they touch exactly the elements the
 * update does.  Loops bound to block or thread indices are fixed within a
 * thread and do not widen the tile.
 */
#include "lower.h"

#include "../ir/analysis.h"

enum { MAX_ACC_ELEMS = 1 << 17 }; /* 512 KiB of local memory per thread */

typedef struct {
  ts_sched *s;
  ts_loop *path[NEST_MAX_DEPTH]; /* loops from the root to the compute */
  int n;
  int first_reduce; /* index in path of the outermost k loop */
  ir_stmt *compute;
} nest;

static bool collect(ir_stmt *st, nest *ns) {
  if (st->kind == S_COMPUTE) {
    ns->compute = st;
    return true;
  }
  if (st->kind != S_FOR || ns->n == NEST_MAX_DEPTH)
    return false;
  ns->path[ns->n++] = st->for_.loop;
  return collect(st->for_.body, ns);
}

/* Variables the accumulator tile spans: unbound spatial loops inside P. */
static bool in_tile(const ir_var *v, void *ctx) {
  const nest *ns = ctx;
  for (int q = ns->first_reduce; q < ns->n; q++) {
    const ts_loop *l = ns->path[q];
    if (l->var == v)
      return !l->reduce && !ir_kind_is_launch(l->kind);
  }
  return false;
}

static bool uses_reduce_var(const ir_expr *e, const nest *ns) {
  for (int q = 0; q < ns->n; q++)
    if (ns->path[q]->reduce && ir_expr_uses_var(e, ns->path[q]->var))
      return true;
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

static ir_stmt *guarded(ts_arena *a, ir_expr *cond, ir_stmt *body) {
  return cond ? ir_new_if(a, cond, body, NULL) : body;
}

/* body wrapped in fresh copies of the tile's loops, variables renamed. */
static ir_stmt *replay_tile_loops(ts_sched *s, const nest *ns, ir_stmt *body) {
  ts_arena *a = &s->arena;
  for (int q = ns->n - 1; q >= ns->first_reduce && body; q--) {
    const ts_loop *l = ns->path[q];
    if (!in_tile(l->var, (void *)ns))
      continue;
    ts_loop *copy = ir_new_loop(a, s->next_var++, l->name, l->extent, false, s);
    if (!copy)
      return NULL;
    copy->kind = l->kind;
    copy->live = false;
    body = ir_subst_stmt(a, body, l->var, ir_varref(a, copy->var));
    body = ir_new_for(a, copy, body);
  }
  return body;
}

static ir_expr *epilogue_value(ts_arena *a, const ts_gemm *g, ir_expr *acc,
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

static ir_stmt *rebuild_loops(ts_arena *a, ts_loop *const *loops, int from,
                              int to, ir_stmt *body) {
  for (int q = to - 1; q >= from && body; q--)
    body = ir_new_for(a, loops[q], body);
  return body;
}

ir_stmt *lower_reduction(ts_sched *s, ir_stmt *root) {
  ts_arena *a = &s->arena;
  nest ns = {.s = s};
  if (!collect(root, &ns)) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "ts_lower: the loop nest is not a single chain of loops");
    return NULL;
  }
  ns.first_reduce = ns.n;
  for (int q = 0; q < ns.n; q++)
    if (ns.path[q]->reduce) {
      ns.first_reduce = q;
      break;
    }
  s->next_var = s->nloops;

  /* Step 1. The tile of C the accumulator holds. */
  ir_stmt *cs = ns.compute;
  ir_expr *base_i, *base_j;
  int64_t ext_i, ext_j;
  if (!ir_region(a, cs->compute.i, in_tile, &ns, &base_i, &ext_i) ||
      !ir_region(a, cs->compute.j, in_tile, &ns, &base_j, &ext_j)) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "ts_lower: cannot size the accumulator for C[%s, %s]",
               "i", "j");
    return NULL;
  }
  if (ext_i * ext_j > MAX_ACC_ELEMS) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "ts_lower: the accumulator would hold %lld x %lld elements of "
               "C per thread (at most %d); move spatial loops outside the "
               "outermost k loop", (long long)ext_i, (long long)ext_j,
               MAX_ACC_ELEMS);
    return NULL;
  }
  int64_t shape[2] = {ext_i, ext_j};
  ir_buffer *acc = ir_new_buffer(a, "acc", SCOPE_LOCAL, 2, shape, NULL);
  ir_expr *ai = ir_simplify_expr(a, ir_sub(a, cs->compute.i, base_i));
  ir_expr *aj = ir_simplify_expr(a, ir_sub(a, cs->compute.j, base_j));
  ir_expr *acc_idx[2] = {ai, aj};
  ir_expr *c_idx[2] = {cs->compute.i, cs->compute.j};
  ir_expr *a_idx[2] = {cs->compute.i, cs->compute.k};
  ir_expr *b_idx[2] = {cs->compute.k, cs->compute.j};
  if (!acc || !ai || !aj)
    goto oom;

  /* Step 2. The update, guarded by the whole predicate. */
  ir_expr *product = ir_binary(a, E_MUL, ir_load(a, s->A, a_idx),
                               ir_load(a, s->B, b_idx));
  ir_stmt *update = ir_new_store(
      a, acc, acc_idx,
      ir_binary(a, E_ADD, ir_load(a, acc, acc_idx), product));
  update = guarded(a, cs->compute.pred, update);
  ir_stmt *loop_part =
      rebuild_loops(a, ns.path, ns.first_reduce, ns.n, update);

  /* Step 3. Init and epilogue over the tile's loops, guarded by the
   * predicate's spatial part. */
  ir_expr *sguard = spatial_part(a, cs->compute.pred, &ns);
  ir_stmt *init = replay_tile_loops(
      s, &ns, guarded(a, sguard, ir_new_store(a, acc, acc_idx, ir_float(a, 0))));
  ir_expr *value = epilogue_value(a, &s->def, ir_load(a, acc, acc_idx),
                                  ir_load(a, s->C, c_idx));
  ir_stmt *epilogue = replay_tile_loops(
      s, &ns, guarded(a, sguard, ir_new_store(a, s->C, c_idx, value)));

  /* Step 4. Allocate the accumulator above the outermost k loop. */
  ir_stmt *parts[3] = {init, loop_part, epilogue};
  ir_stmt *body = ir_new_alloc(a, acc, ir_new_seq(a, parts, 3));
  body = rebuild_loops(a, ns.path, 0, ns.first_reduce, body);
  if (!body || a->failed)
    goto oom;
  return body;
oom:
  sched_fail(s, TS_ERR_NO_MEMORY, NULL, "ts_lower: out of memory");
  return NULL;
}
