/*
 * Swizzled blocks (ts_swizzle): the loops of the block rows and columns get
 * their values from the launch indices through Triton's grouped order
 * instead of being the indices themselves.  With R block rows, C block
 * columns and groups of G rows, the blocks in launch order (blockIdx.x
 * fastest) are numbered pid; each group of G rows takes G * C of them,
 * down each column before the next:
 *
 *   row = pid / (G*C) * G + pid % (G*C) % G      col = pid % (G*C) / G
 *
 * and the last group, of the L = R - (R-1)/G*G rows that are left, starts
 * at pid0 = (R-L) * C:
 *
 *   row = R - L + (pid - pid0) % L                col = (pid - pid0) / L
 *
 * The loops keep their variables and extents (the map is a permutation of
 * the grid), so every bound that interval analysis proved stays proved;
 * only the two index lines change, and the grid is the one it was.
 */
#include "lower.h"

#include "../ir/analysis.h"
#include "../ir/visit.h"

typedef struct {
  const sched_swizzle *sw;
  ir_expr *row, *col; /* the index expressions */
  int found;          /* of the two loops */
} swizzler;

static ir_expr *launch_ref(lower_ctx *cx, const ts_loop *l) {
  /* Its range: the most a grid that follows the launch may be. */
  ir_var *v = ir_new_var(cx->arena, cx->next_var++,
                         ir_loop_kind_name(l->kind), VAR_LAUNCH,
                         l->var->extent);
  if (v)
    v->tag = l->kind;
  return v ? ir_varref(cx->arena, v) : NULL;
}

static ir_expr *op(lower_ctx *cx, ir_expr_kind k, ir_expr *x, int64_t c) {
  return x ? ir_binary(cx->arena, k, x, ir_int(cx->arena, c)) : NULL;
}

/* The block's number in launch order: the loop on the lower launch index
 * (blockIdx.x before .y before .z) varies fastest. */
static ir_expr *launch_order(lower_ctx *cx, const sched_swizzle *sw) {
  const ts_loop *fast = sw->rows->kind < sw->cols->kind ? sw->rows : sw->cols;
  const ts_loop *slow = fast == sw->rows ? sw->cols : sw->rows;
  return ir_add(cx->arena, ir_mul(cx->arena, launch_ref(cx, slow),
                                  ir_loop_size(cx->arena, fast)),
                launch_ref(cx, fast));
}

/* The same map where the grid follows extents chosen at launch: R, C and
 * so G and L are expressions, and the last group's select stays (when L
 * is G it gives what the first formula does). */
static bool build_symbolic_indices(lower_ctx *cx, swizzler *z) {
  ts_arena *a = cx->arena;
  ir_expr *R = ir_loop_size(a, z->sw->rows), *C = ir_loop_size(a, z->sw->cols);
  ir_expr *G = ir_binary(a, E_MIN, ir_int(a, z->sw->group), R);
  ir_expr *L = ir_sub(a, R, ir_mul(a, ir_binary(a, E_DIV,
                                                ir_sub(a, R, ir_int(a, 1)), G),
                                   G));
  ir_expr *GC = ir_mul(a, G, C);
  /* A persistent grid's blocks take the tiles in the order of `tile`. */
  ir_expr *pid = cx->wave ? lower_persistent_tile(cx) : launch_order(cx, z->sw);
  ir_expr *in_group = ir_binary(a, E_MOD, pid, GC);
  ir_expr *row = ir_add(a, ir_mul(a, ir_binary(a, E_DIV, pid, GC), G),
                        ir_binary(a, E_MOD, in_group, G));
  ir_expr *col = ir_binary(a, E_DIV, in_group, G);
  ir_expr *pid0 = ir_mul(a, ir_sub(a, R, L), C);
  ir_expr *in_last = ir_sub(a, pid, pid0);
  ir_expr *last = ir_binary(a, E_LT, pid, pid0);
  z->row = ir_select(a, last, row, ir_add(a, ir_sub(a, R, L),
                                          ir_binary(a, E_MOD, in_last, L)));
  z->col = ir_select(a, last, col, ir_binary(a, E_DIV, in_last, L));
  return z->row && z->col;
}

static bool build_indices(lower_ctx *cx, swizzler *z) {
  ts_arena *a = cx->arena;
  if (z->sw->rows->size || z->sw->cols->size) /* ts_cluster refuses them */
    return build_symbolic_indices(cx, z);
  /* A cluster pairs neighbouring rows: an even count of them, the one
   * past C's edge its partner's again (lower_cluster.c). */
  const int64_t R = cx->cluster ? cx->pair_extent : z->sw->rows->extent;
  const int64_t C = z->sw->cols->extent;
  const int64_t G = z->sw->group < R ? z->sw->group : R;
  const int64_t L = R - (R - 1) / G * G;
  /* A persistent grid's blocks take the tiles in the order of `tile`. */
  ir_expr *pid = cx->wave ? lower_persistent_tile(cx) : launch_order(cx, z->sw);
  ir_expr *in_group = op(cx, E_MOD, pid, G * C);
  z->row = ir_add(a, op(cx, E_MUL, op(cx, E_DIV, pid, G * C), G),
                  op(cx, E_MOD, in_group, G));
  z->col = op(cx, E_DIV, in_group, G);
  if (L != G) {
    ir_expr *in_last = ir_sub(a, pid, ir_int(a, (R - L) * C));
    ir_expr *last = ir_binary(a, E_LT, pid, ir_int(a, (R - L) * C));
    ir_expr *row = ir_add(a, ir_int(a, R - L), op(cx, E_MOD, in_last, L));
    z->row = row && last ? ir_select(a, last, z->row, row) : NULL;
    z->col = z->row ? ir_select(a, last, z->col, op(cx, E_DIV, in_last, L))
                    : NULL;
  }
  z->row = z->row ? ir_simplify_expr(a, z->row) : NULL;
  z->col = z->col ? ir_simplify_expr(a, z->col) : NULL;
  if (cx->cluster)
    z->row = lower_cluster_clamp(cx, z->row);
  return z->row && z->col;
}

static ir_stmt *set_index(ir_mutator *m, ir_stmt *s) {
  swizzler *z = m->ctx;
  ir_stmt *n = ir_mutate_stmt_children(m, s);
  if (!n || s->kind != S_FOR ||
      (s->for_.loop != z->sw->rows && s->for_.loop != z->sw->cols))
    return n;
  ir_stmt *c = ir_new_for(m->a, n->for_.loop, n->for_.body);
  if (c)
    c->for_.index = s->for_.loop == z->sw->rows ? z->row : z->col;
  z->found++;
  return c;
}

ir_stmt *lower_swizzle(lower_ctx *cx, ir_stmt *root) {
  const sched_swizzle *sw = &cx->s->swizzle;
  if (!sw->group)
    return root;
  swizzler z = {.sw = sw};
  if (!build_indices(cx, &z)) {
    lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
    return NULL;
  }
  ir_mutator m = {.a = cx->arena, .stmt = set_index, .ctx = &z};
  ir_stmt *out = ir_mutate_stmt(&m, root);
  if (!out) {
    lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
    return NULL;
  }
  if (z.found != 2) {
    lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_swizzle's loops \"%s\" and "
               "\"%s\" are not both in the kernel", sw->rows->name,
               sw->cols->name);
    return NULL;
  }
  return out;
}
