/*
 * wgmma's epilogue in stores of 4 elements a lane: the accumulator layout
 * gives lane l, q = l % 4, columns 2q and 2q + 1 of each group of 8; a
 * store of that pair is 4 bytes of a 16-bit C, and the 4 lanes of a row
 * fill half of a 32-byte sector; of an fp32 C it is 8 bytes, twice the
 * stores of 16-byte ones.  Neighbouring lanes (q and q ^ 1) exchange one pair of
 * two neighbouring groups, 2G and 2G + 1, so that each holds 4 contiguous
 * columns:
 *
 *   q even: group 2G's columns 2q .. 2q + 3 (its own pair, then q + 1's)
 *   q odd:  group 2G + 1's columns 2(q - 1) .. 2q + 1 (q - 1's, then its own)
 *
 * and the 4 lanes of a row store 32 contiguous bytes of a 16-bit C, a
 * whole sector, in 8 bytes each (64 of fp32 in 16 each, half the stores):
 * the 4 registers of column e of a lane's quad come from its
 * own registers where e / 2 == q % 2, else from the neighbour's (a warp
 * shuffle, E_PAIR_PICK).  A shuffle asks every lane of the warp to take
 * part, so the exchange is made only where C's indices are in bounds
 * everywhere (no guard can leave a lane out); elsewhere the registers are
 * stored in pairs as they lie.
 */
#include "lower.h"

#include "../base/dtype.h"
#include "../ir/analysis.h"
#include "../ir/visit.h"

static ir_expr *num(ts_arena *a, int64_t v) { return ir_int(a, v); }

typedef struct {
  const ir_var *reg;    /* the placeholder register variable */
  /* Its value in groups 2G and 2G + 1 (constants once the loops are
   * unrolled: a register index that depended on the lane would put the
   * accumulators in local memory), whether the lane keeps its own. */
  ir_expr *group[2], *keep, *odd;
  /* A plain store into global memory (split-K's atomic adds stay
   * scalar: nothing to gain), whose elements' size; whether the body
   * reads global memory (C, for beta). */
  bool stores;
  int64_t size;
  bool reads;
} exchange;

static bool find_store(ir_visitor *v, const ir_stmt *s) {
  exchange *x = v->ctx;
  if (s->kind == S_STORE && s->store.buf->scope == SCOPE_GLOBAL) {
    x->stores = !s->store.atomic;
    x->size = ts_dtype_size(s->store.buf->dtype);
  }
  return true;
}

static bool find_read(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_LOAD && e->load.buf->scope == SCOPE_GLOBAL)
    ((exchange *)v->ctx)->reads = true;
  return true;
}

/* A 16-bit C gains a whole sector a row; an fp32 C half its store
 * instructions, but read for beta its quads hold 8 values more a lane,
 * which spills where the registers are capped: only beta = 0 there. */
static bool worth_it(const exchange *x) {
  return x->stores && (x->size == 2 || (x->size == 4 && !x->reads));
}

/* An accumulator register's load, read as the exchange gives it. */
static ir_expr *pick(ir_mutator *m, ir_expr *e) {
  exchange *x = m->ctx;
  ir_expr *n = ir_mutate_expr_children(m, e);
  if (!n || n->kind != E_LOAD || !ir_expr_uses_var(n, x->reg))
    return n;
  ts_arena *a = m->a;
  ir_expr *in[2] = {ir_subst_expr(a, n, x->reg, x->group[0]),
                    ir_subst_expr(a, n, x->reg, x->group[1])};
  ir_expr *odd = ir_binary(a, E_EQ, x->odd, num(a, 1));
  return ir_pair_pick(a, x->keep, ir_select(a, odd, in[1], in[0]),
                      ir_select(a, odd, in[0], in[1]));
}

static bool check_bounds(ir_visitor *v, const ir_stmt *s) {
  bool *inside = v->ctx;
  if (s->kind != S_STORE || s->store.buf->scope != SCOPE_GLOBAL)
    return true;
  for (int d = 0; d < s->store.buf->ndim; d++) {
    int64_t lo, hi;
    if (!ir_bounds(s->store.idx[d], &lo, &hi) || lo < 0 ||
        hi >= s->store.buf->shape[d])
      *inside = false;
  }
  return true;
}

/* The lane's row and column in the tile, and its registers', for quad
 * register r (group pair r / 2, row half r % 2) and column e of it. */
static void coordinates(ts_arena *a, const lower_mma *t, ir_expr *r,
                        ir_expr *e, ir_expr *out[2], exchange *x) {
  ir_expr *l = ir_varref(a, t->lane->var);
  ir_expr *q = ir_binary(a, E_MOD, l, num(a, 4));
  ir_expr *odd = ir_binary(a, E_MOD, q, num(a, 2));
  ir_expr *half = ir_binary(a, E_MOD, r, num(a, 2));
  ir_expr *pair = ir_binary(a, E_DIV, r, num(a, 2));
  out[0] = ir_add(a, ir_add(a, ir_mul(a, ir_binary(a, E_DIV, l, num(a, 32)),
                                      num(a, 16)),
                            ir_binary(a, E_DIV, ir_binary(a, E_MOD, l,
                                                          num(a, 32)),
                                      num(a, 4))),
                  ir_mul(a, half, num(a, 8)));
  out[1] = ir_add(a, ir_add(a, ir_mul(a, pair, num(a, 16)),
                            ir_mul(a, odd, num(a, 8))),
                  ir_add(a, ir_mul(a, ir_binary(a, E_DIV, q, num(a, 2)),
                                   num(a, 4)), e));
  /* group 2 pair + w, register 2 (2 group + half) + e % 2 */
  ir_expr *in_pair = ir_binary(a, E_MOD, e, num(a, 2));
  for (int w = 0; w < 2; w++) {
    ir_expr *group = ir_add(a, ir_mul(a, pair, num(a, 2)), num(a, w));
    x->group[w] = ir_simplify_expr(
        a, ir_add(a, ir_mul(a, ir_add(a, ir_mul(a, group, num(a, 2)), half),
                            num(a, 2)), in_pair));
  }
  x->odd = odd;
  x->keep = ir_binary(a, E_EQ, ir_binary(a, E_DIV, e, num(a, 2)), odd);
}

ir_stmt *lower_exchanged_registers(lower_ctx *cx, const lower_mma *t,
                                   ir_stmt *body) {
  ts_arena *a = cx->arena;
  exchange x = {.reg = t->reg->var};
  ir_visitor find = {.stmt = find_store, .expr = find_read, .ctx = &x};
  ir_visit_stmt(&find, body);
  int64_t regs = t->in->frag[MMA_ACC].regs;
  if (!worth_it(&x) || t->in->n % 16 != 0 || regs % 4 != 0)
    return NULL;
  ts_loop *quad = lower_new_loop(cx, "reg.quad", regs / 4, TS_UNROLLED);
  ts_loop *elem = lower_new_loop(cx, "reg.elem", 4, TS_VECTORIZED);
  if (!quad || !elem)
    return NULL;
  ir_expr *at[2];
  coordinates(a, t, ir_varref(a, quad->var), ir_varref(a, elem->var), at, &x);
  ir_mutator m = {.a = a, .expr = pick, .ctx = &x};
  ir_stmt *s = ir_mutate_stmt(&m, body);
  for (int d = 0; d < 2 && s; d++)
    s = ir_subst_stmt(a, s, t->loop[d]->var, at[d]);
  bool inside = s != NULL;
  ir_visitor bounds = {.stmt = check_bounds, .ctx = &inside};
  if (s)
    ir_visit_stmt(&bounds, s);
  if (!inside)
    return NULL;
  s = ir_new_for(a, elem, s);
  return s ? ir_new_for(a, quad, s) : NULL;
}
