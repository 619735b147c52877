/*
 * Lane expansion.  Each vectorized loop becomes an S_LANES node that keeps
 * the loop and its body, which the IR text prints as scheduled, and adds
 * its lanes as they run, which the code generator prints one statement to
 * one line and the executor runs.  For a loop v of width W:
 *
 *   - a body that is not one store (a guarded one, say) is repeated for
 *     v = 0 .. W-1, substituted and simplified;
 *   - a store reads each vector load of its value (vectors.c marked them)
 *     once into a vector temporary, a local buffer of W elements that its
 *     allocation fills; then one vector store of the W lane values, or W
 *     scalar stores, where lane l reads element l of the temporaries:
 *
 *       for j.inner in 0..4 vectorized:
 *         vec4(C[i, j.o*4 + j.inner]) = acc[j.inner] + vec4(C[i, j.o*4 + j.inner])
 *     ->
 *       local float C.v0[4] = vec4(C[i, j.o*4])
 *       vec4(C[i, j.o*4]) = vec4(acc[0] + C.v0[0], ..., acc[3] + C.v0[3])
 *
 * Indices and conditions are substituted and simplified whole for each
 * lane; the float arithmetic around them is rebuilt lane by lane.
 */
#include "lower.h"

#include "../ir/analysis.h"
#include "../ir/visit.h"

/* Vector loads of one store that get a temporary; any more are read lane by
 * lane. */
enum { MAX_TEMPS = 8 };

typedef struct {
  ts_arena *a;
  const ts_loop *loop;
  int lane; /* the lane being made */
  const ir_expr *loads[MAX_TEMPS]; /* the store's vector loads... */
  ir_buffer *temps[MAX_TEMPS];     /* ...and the temporaries they fill */
  int n;
} expansion;

/* e at the current lane: the loop's variable replaced, then simplified. */
static ir_expr *at_lane(const expansion *x, ir_expr *e) {
  ts_arena *a = x->a;
  return ir_simplify_expr(a, ir_subst_expr(a, e, x->loop->var,
                                           ir_int(a, x->lane)));
}

static ir_expr **indices_at_lane(const expansion *x, ir_expr *const *idx,
                                 int n) {
  ir_expr **out = ts_arena_alloc(x->a, sizeof(*out) * (size_t)n);
  for (int d = 0; out && d < n; d++)
    if (!(out[d] = at_lane(x, idx[d])))
      return NULL;
  return out;
}

/* The vector loads of a value, in the order they are read; a load's
 * indices hold none. */
static bool find_vector_load(ir_visitor *v, const ir_expr *e) {
  expansion *x = v->ctx;
  if (e->kind != E_LOAD)
    return true;
  if (e->load.lanes > 1 && x->n < MAX_TEMPS)
    x->loads[x->n++] = e;
  return false;
}

/* A temporary for each vector load: "<buffer>.v<i>", which the code
 * generator names <buffer>_v<i>. */
static bool make_temps(expansion *x, const ir_expr *value) {
  ir_visitor v = {.expr = find_vector_load, .ctx = x};
  ir_visit_expr(&v, value);
  int64_t width = x->loop->extent;
  for (int i = 0; i < x->n; i++) {
    const ir_buffer *src = x->loads[i]->load.buf;
    x->temps[i] = ir_new_buffer(
        x->a, ts_arena_printf(x->a, "%s.v%d", src->name, i), SCOPE_LOCAL,
        src->dtype, 1, &width, NULL);
    if (!x->temps[i])
      return false;
    x->temps[i]->vector = true;
  }
  return true;
}

/* A float expression at the current lane: a vector load becomes its
 * temporary's element, any other load a scalar load of the lane's
 * element, and integer parts (indices, conditions) are taken at the lane
 * whole. */
static ir_expr *lane_value(ir_mutator *m, ir_expr *e) {
  const expansion *x = m->ctx;
  if (e->type != TY_FLOAT)
    return at_lane(x, e);
  for (int i = 0; i < x->n; i++)
    if (x->loads[i] == e) {
      ir_expr *lane = ir_int(m->a, x->lane);
      return lane ? ir_load(m->a, x->temps[i], &lane) : NULL;
    }
  if (e->kind == E_LOAD)
    return ir_load(m->a, e->load.buf,
                   indices_at_lane(x, e->load.idx, e->load.buf->ndim));
  return ir_mutate_expr_children(m, e);
}

/* One vector store of the lanes' values, or a scalar store per lane. */
static ir_stmt *lane_stores(expansion *x, const ir_stmt *st) {
  ts_arena *a = x->a;
  int width = (int)x->loop->extent;
  ir_buffer *buf = st->store.buf;
  ir_mutator values = {.a = a, .expr = lane_value, .ctx = x};
  ir_expr **value = ts_arena_alloc(a, sizeof(*value) * (size_t)width);
  ir_stmt **store = ts_arena_alloc(a, sizeof(*store) * (size_t)width);
  if (!value || !store)
    return NULL;
  for (x->lane = 0; x->lane < width; x->lane++)
    if (!(value[x->lane] = ir_mutate_expr(&values, st->store.value)))
      return NULL;
  if (st->store.lanes > 1) {
    x->lane = 0;
    ir_stmt *out = ir_new_store(a, buf,
                                indices_at_lane(x, st->store.idx, buf->ndim),
                                ir_vector(a, value, width));
    if (out)
      out->store.lanes = width;
    return out;
  }
  for (x->lane = 0; x->lane < width; x->lane++) {
    store[x->lane] = ir_new_store(
        a, buf, indices_at_lane(x, st->store.idx, buf->ndim), value[x->lane]);
    if (store[x->lane]) /* split-K's adds stay atomic, lane by lane */
      store[x->lane]->store.atomic = st->store.atomic;
  }
  return ir_new_seq(a, store, width);
}

/* The stores inside the temporaries' allocations, each filled by its
 * vector load at lane 0. */
static ir_stmt *with_temps(expansion *x, ir_stmt *body) {
  x->lane = 0;
  for (int i = x->n - 1; i >= 0 && body; i--) {
    const ir_expr *load = x->loads[i];
    ir_expr *init = ir_load(
        x->a, load->load.buf,
        indices_at_lane(x, load->load.idx, load->load.buf->ndim));
    body = init ? ir_new_alloc(x->a, x->temps[i], body) : NULL;
    if (body) {
      init->load.lanes = load->load.lanes;
      body->alloc.init = init;
    }
  }
  return body;
}

/* A body other than one store, once per lane. */
static ir_stmt *repeated(expansion *x, ir_stmt *body) {
  ts_arena *a = x->a;
  int width = (int)x->loop->extent;
  ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)width);
  if (!items)
    return NULL;
  for (int lane = 0; lane < width; lane++)
    if (!(items[lane] = ir_simplify_stmt(
              a, ir_subst_stmt(a, body, x->loop->var, ir_int(a, lane)))))
      return NULL;
  return ir_new_seq(a, items, width);
}

static ir_stmt *expand_loop(ir_mutator *m, ir_stmt *s) {
  if (s->kind != S_FOR || s->for_.loop->kind != TS_VECTORIZED)
    return ir_mutate_stmt_children(m, s);
  ir_stmt *body = s->for_.body;
  expansion x = {.a = m->a, .loop = s->for_.loop};
  ir_stmt *lanes;
  if (body->kind != S_STORE)
    lanes = repeated(&x, body);
  else if (!make_temps(&x, body->store.value))
    return NULL;
  else
    lanes = with_temps(&x, lane_stores(&x, body));
  return ir_new_lanes(m->a, s->for_.loop, body, lanes);
}

ir_stmt *lower_lanes(ts_arena *a, ir_stmt *root) {
  ir_mutator m = {.a = a, .stmt = expand_loop};
  return ir_mutate_stmt(&m, root);
}
