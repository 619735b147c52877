/*
 * Asynchronous copies.  After the lanes pass, the stores into a pipelined
 * shared cache (ir_buffer.async_fill, made by the stages pass) that read
 * global memory become cp.async copies where the hardware has one of their
 * size: 4, 8 or 16 bytes, the source and the destination aligned to it.
 *
 *   - a scalar store of a global load: 4 bytes for fp32;
 *   - a vector store of a vector temporary's lanes in order, the temporary
 *     filled by a vector load of global memory: one copy of the vector's
 *     bytes (16 for float4 or 8 halves), the temporary dropped;
 *   - scalar stores of a temporary's lanes (a transposed cache): one
 *     4-byte copy per lane, reading the lane's own element;
 *   - a vector store of scalar global loads: one 4-byte copy per lane.
 *
 * Everything else stays a plain store: 2-byte elements copied one at a
 * time (an fp16 copy that is not vectorized, or whose lanes are not
 * aligned at an odd shape) and the zeros of a tile's edge.  That is
 * correct in the pipeline, whose barriers order plain stores as they order
 * the copies; it only loses the overlap for those elements.  The loop as
 * scheduled (what the IR text shows) is marked `async` by the same rule
 * on the access's width.  A kernel with copy groups needs sm_80.
 */
#include "lower.h"

#include "../ir/analysis.h"
#include "../ir/visit.h"

enum { MAX_LANES = 8 };

typedef struct {
  bool used; /* an asynchronous copy or a copy group met */
} async_pass;

static bool copyable_bytes(int64_t bytes) {
  return bytes == 4 || bytes == 8 || bytes == 16;
}

static bool is_global_load(const ir_expr *e) {
  return e->kind == E_LOAD && e->load.buf->scope == SCOPE_GLOBAL;
}

static int width(int lanes) { return lanes > 1 ? lanes : 1; }

/* The store as a copy: its value, a global load of its own width. */
static ir_stmt *async_copy(ts_arena *a, const ir_stmt *st, ir_expr *value) {
  ir_stmt *out = ir_new_store(a, st->store.buf, st->store.idx, value);
  if (out) {
    out->store.lanes = st->store.lanes;
    out->store.async = true;
  }
  return out;
}

/* buf's indices of the element `lane` places after idx's in memory: the
 * dimension of stride 1 moved on. */
static ir_expr **lane_index(ts_arena *a, const ir_buffer *buf,
                            ir_expr *const *idx, int lane) {
  ir_expr **out = ts_arena_alloc(a, sizeof(*out) * (size_t)buf->ndim);
  for (int d = 0; out && d < buf->ndim; d++)
    out[d] = buf->strides[d] == 1
                 ? ir_simplify_expr(a, ir_add(a, idx[d], ir_int(a, lane)))
                 : idx[d];
  return out;
}

/* Whether e is element `lane` of the vector temporary t. */
static bool is_temp_lane(const ir_expr *e, const ir_buffer *t, int lane) {
  return e->kind == E_LOAD && e->load.buf == t &&
         e->load.idx[0]->kind == E_INT && e->load.idx[0]->ival == lane;
}

/* One 4-byte copy per lane of a vector store of scalar global loads. */
static ir_stmt *copies_per_lane(ts_arena *a, const ir_stmt *st) {
  const ir_expr *v = st->store.value;
  int n = v->vector.n;
  ir_stmt *items[MAX_LANES];
  for (int l = 0; l < n; l++) {
    ir_stmt one = *st;
    one.store.idx = lane_index(a, st->store.buf, st->store.idx, l);
    one.store.lanes = 1;
    if (!one.store.idx || !(items[l] = async_copy(a, &one, v->vector.lane[l])))
      return NULL;
  }
  return ir_new_seq(a, items, n);
}

/* A store into a pipelined cache, as a copy where one fits it; the store
 * itself otherwise. */
static ir_stmt *store_to_copy(ts_arena *a, ir_stmt *st) {
  const ir_buffer *buf = st->store.buf;
  ir_expr *v = st->store.value;
  int64_t size = ts_dtype_size(buf->dtype);
  if (is_global_load(v) && copyable_bytes(size * width(st->store.lanes)))
    return async_copy(a, st, v);
  if (v->kind != E_VECTOR || size != 4 || v->vector.n > MAX_LANES)
    return st;
  for (int l = 0; l < v->vector.n; l++)
    if (!is_global_load(v->vector.lane[l]) || v->vector.lane[l]->load.lanes > 1)
      return st;
  return copies_per_lane(a, st);
}

/* Whether st stores lane `lane` of t (all lanes in order for a vector
 * store) into a pipelined cache. */
static bool stores_temp(const ir_stmt *st, const ir_buffer *t, int lane) {
  if (st->kind != S_STORE || !st->store.buf->async_fill)
    return false;
  const ir_expr *v = st->store.value;
  if (st->store.lanes <= 1)
    return is_temp_lane(v, t, lane);
  if (v->kind != E_VECTOR || v->vector.n != t->shape[0])
    return false;
  for (int l = 0; l < v->vector.n; l++)
    if (!is_temp_lane(v->vector.lane[l], t, l))
      return false;
  return true;
}

/* A vector temporary that only passes a global vector load into a
 * pipelined cache: the copies read global memory themselves. */
static ir_stmt *temp_to_copies(ts_arena *a, ir_stmt *s) {
  const ir_buffer *t = s->alloc.buf;
  ir_expr *init = s->alloc.init;
  ir_stmt *body = s->alloc.body;
  int64_t size = ts_dtype_size(t->dtype);
  if (!is_global_load(init))
    return NULL;
  if (body->kind == S_STORE && body->store.lanes > 1 &&
      stores_temp(body, t, 0) && copyable_bytes(size * body->store.lanes))
    return async_copy(a, body, init);
  if (body->kind != S_SEQ || body->seq.n != t->shape[0] || size != 4 ||
      body->seq.n > MAX_LANES)
    return NULL;
  ir_stmt *items[MAX_LANES];
  for (int l = 0; l < body->seq.n; l++) {
    if (!stores_temp(body->seq.items[l], t, l))
      return NULL;
    ir_expr *src = ir_load(a, init->load.buf,
                           lane_index(a, init->load.buf, init->load.idx, l));
    if (!src || !(items[l] = async_copy(a, body->seq.items[l], src)))
      return NULL;
  }
  return ir_new_seq(a, items, body->seq.n);
}

static ir_stmt *to_async(ir_mutator *m, ir_stmt *s) {
  async_pass *p = m->ctx;
  p->used |= s->kind == S_ASYNC_COMMIT || s->kind == S_ASYNC_WAIT;
  if (s->kind == S_STORE && s->store.buf->async_fill)
    return store_to_copy(m->a, s);
  if (s->kind == S_ALLOC && s->alloc.init) {
    ir_stmt *copies = temp_to_copies(m->a, s);
    if (copies)
      return copies;
  }
  return ir_mutate_stmt_children(m, s);
}

ir_stmt *lower_async(ts_arena *a, ir_stmt *root, int *min_arch) {
  async_pass p = {.used = false};
  ir_mutator m = {.a = a, .stmt = to_async, .ctx = &p};
  ir_stmt *out = ir_mutate_stmt(&m, root);
  *min_arch = p.used ? 80 : 0;
  return out;
}
