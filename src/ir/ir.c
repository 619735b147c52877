/*
 * IR constructors, kind names, structural equality and variable
 * substitution.  Constructors allocate from the arena and return NULL only
 * when it is out of memory (the arena then stays marked failed, and callers
 * check it once after building).
 */
#include "ir.h"

#include <string.h>

#include "visit.h"
#include "../base/grid.h"

static const char *const expr_names[] = {
#define IR_NAME(k, s, form) s,
    IR_EXPR_KINDS(IR_NAME)
#undef IR_NAME
};

static const char *const stmt_names[] = {
#define IR_NAME(k, s, form) s,
    IR_STMT_KINDS(IR_NAME)
#undef IR_NAME
};

const char *ir_expr_kind_name(ir_expr_kind k) { return expr_names[k]; }
const char *ir_stmt_kind_name(ir_stmt_kind k) { return stmt_names[k]; }

const char *ir_loop_kind_name(ts_loop_kind k) {
  switch (k) {
  case TS_SERIAL: return "serial";
  case TS_UNROLLED: return "unrolled";
  case TS_VECTORIZED: return "vectorized";
  case TS_TENSORIZED: return "tensorized";
  case TS_BLOCK_X: return "blockIdx.x";
  case TS_BLOCK_Y: return "blockIdx.y";
  case TS_BLOCK_Z: return "blockIdx.z";
  case TS_THREAD_X: return "threadIdx.x";
  case TS_THREAD_Y: return "threadIdx.y";
  case TS_THREAD_Z: return "threadIdx.z";
  }
  return "?";
}

bool ir_kind_is_block(ts_loop_kind k) {
  return k == TS_BLOCK_X || k == TS_BLOCK_Y || k == TS_BLOCK_Z;
}

bool ir_kind_is_thread(ts_loop_kind k) {
  return k == TS_THREAD_X || k == TS_THREAD_Y || k == TS_THREAD_Z;
}

bool ir_kind_is_launch(ts_loop_kind k) {
  return ir_kind_is_block(k) || ir_kind_is_thread(k);
}

bool ir_loop_is_split_k(const ts_loop *l) {
  return l->reduce && l->kind == TS_BLOCK_Z;
}

/* ---- Variables, loops, buffers ----------------------------------------- */

ir_var *ir_new_var(ts_arena *a, int id, const char *name, ir_var_kind kind,
                   int64_t extent) {
  ir_var *v = ts_arena_alloc(a, sizeof(*v));
  if (!v)
    return NULL;
  v->id = id;
  v->name = ts_arena_strdup(a, name);
  v->kind = kind;
  v->extent = extent;
  return v;
}

ts_loop *ir_new_loop(ts_arena *a, int id, const char *name, int64_t extent,
                     bool reduce, const void *owner) {
  ts_loop *l = ts_arena_alloc(a, sizeof(*l));
  if (!l)
    return NULL;
  l->id = id;
  l->name = ts_arena_strdup(a, name);
  l->birth = l->name;
  l->var = ir_new_var(a, id, name, VAR_LOOP, extent);
  l->extent = extent;
  l->kind = TS_SERIAL;
  l->reduce = reduce;
  l->live = true;
  l->owner = owner;
  return l;
}

ir_buffer *ir_new_buffer(ts_arena *a, const char *name, ir_scope scope,
                         ts_dtype dtype, int ndim, const int64_t *shape,
                         const int64_t *strides) {
  ir_buffer *b = ts_arena_alloc(a, sizeof(*b));
  if (!b)
    return NULL;
  b->name = ts_arena_strdup(a, name);
  b->scope = scope;
  b->dtype = dtype;
  b->ndim = ndim;
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    b->shape[d] = shape[d];
    b->strides[d] = strides ? strides[d] : stride;
    b->order[d] = d;
    stride *= shape[d];
  }
  return b;
}

void ir_buffer_set_layout(ir_buffer *b, const int *order, int64_t pad) {
  int64_t stride = 1;
  for (int s = b->ndim - 1; s >= 0; s--) {
    int d = order[s];
    b->order[s] = d;
    b->strides[d] = stride;
    stride *= b->shape[d] + (s == b->ndim - 1 ? pad : 0);
  }
  b->pad = pad;
}

int64_t ir_swizzle_row(const ir_buffer *b) {
  return b->shape[b->order[b->ndim - 1]] + b->pad;
}

int64_t ir_swizzle_chunk(const ir_buffer *b) {
  return 16 / ts_dtype_size(b->dtype);
}

int64_t ir_swizzle_rows(const ir_buffer *b) {
  return b->swizzle ? 8 / b->swizzle : 1;
}

int64_t ir_swizzle_panel(const ir_buffer *b) {
  int64_t panel = 8 * ir_swizzle_chunk(b);
  return b->swizzle == 8 && ir_swizzle_row(b) > panel ? panel : 0;
}

int64_t ir_swizzle_offset(const ir_buffer *b, int64_t off) {
  if (!b->swizzle || off < 0)
    return off;
  int64_t w = ir_swizzle_row(b), e = ir_swizzle_chunk(b);
  int64_t row = off / w, col = off % w;
  int64_t chunk = (col / e) ^ ((row / ir_swizzle_rows(b)) % b->swizzle);
  int64_t panel = ir_swizzle_panel(b);
  if (!panel)
    return row * w + chunk * e + col % e;
  /* Rows of more than 128 bytes: each copy's rows cut into 128-byte
   * panels, stored one panel after another. */
  int64_t rows = b->shape[b->order[b->ndim - 2]];
  int64_t copy = row / rows, r = row % rows;
  return copy * rows * w + (col / panel) * rows * panel + r * panel +
         (chunk % 8) * e + col % e;
}

void ir_kernel_grid(const ir_kernel *k, int multiprocessors,
                    int64_t grid[3]) {
  ts_grid_launched(k->grid, k->persistent, k->cluster, multiprocessors, grid);
}

int64_t ir_buffer_size(const ir_buffer *b) {
  int64_t n = 1;
  for (int d = 0; d < b->ndim; d++)
    n += (b->shape[d] - 1) * b->strides[d];
  return n + (b->ndim ? b->pad : 0);
}

int64_t ir_buffer_bytes(const ir_buffer *b) {
  return ir_buffer_size(b) * ts_dtype_size(b->dtype);
}

int ir_shared_alignment(const ir_buffer *b) {
  return b->swizzle == 8 ? 1024 : 16;
}

int64_t ir_shared_slot_start(const ir_buffer *b, int64_t offset) {
  int64_t align = ir_shared_alignment(b);
  return (offset + align - 1) / align * align;
}

int64_t ir_shared_slot_bytes(const ir_buffer *b) {
  int64_t n = ts_dtype_size(b->dtype);
  for (int d = 0; d < b->ndim; d++)
    n *= b->shape[b->order[d]] + (d == b->ndim - 1 ? b->pad : 0);
  return (n + 15) / 16 * 16;
}

/* ---- Expressions --------------------------------------------------------- */

static ir_expr *new_expr(ts_arena *a, ir_expr_kind kind, ir_type type) {
  ir_expr *e = ts_arena_alloc(a, sizeof(*e));
  if (e) {
    e->kind = kind;
    e->type = type;
  }
  return e;
}

ir_expr *ir_int(ts_arena *a, int64_t v) {
  ir_expr *e = new_expr(a, E_INT, TY_INT);
  if (e)
    e->ival = v;
  return e;
}

ir_expr *ir_float(ts_arena *a, float v) {
  ir_expr *e = new_expr(a, E_FLOAT, TY_FLOAT);
  if (e) {
    e->fval = v;
    e->dtype = TS_F32;
  }
  return e;
}

ir_expr *ir_cast(ts_arena *a, ts_dtype to, ir_expr *x) {
  if (!x || x->type != TY_FLOAT || x->dtype == to)
    return x;
  ir_expr *e = new_expr(a, E_CAST, TY_FLOAT);
  if (e) {
    e->dtype = to;
    e->op.a = x;
  }
  return e;
}

ir_expr *ir_round_tf32(ts_arena *a, ir_expr *x) {
  if (!x)
    return NULL;
  ir_expr *e = new_expr(a, E_ROUND_TF32, TY_FLOAT);
  if (e) {
    e->dtype = TS_F32;
    e->op.a = ir_cast(a, TS_F32, x);
  }
  return e;
}

/* Data operands of arithmetic, widened to fp32. */
static ir_expr *widened(ts_arena *a, ir_expr *x) {
  return x->type == TY_FLOAT ? ir_cast(a, TS_F32, x) : x;
}

ir_expr *ir_varref(ts_arena *a, ir_var *v) {
  ir_expr *e = new_expr(a, E_VAR, TY_INT);
  if (e)
    e->var = v;
  return e;
}

static ir_type binary_type(ir_expr_kind kind, const ir_expr *x) {
  switch (kind) {
  case E_LT: case E_LE: case E_EQ: case E_NE: case E_AND: case E_OR:
    return TY_BOOL;
  default:
    return x ? x->type : TY_INT;
  }
}

ir_expr *ir_binary(ts_arena *a, ir_expr_kind kind, ir_expr *x, ir_expr *y) {
  if (!x || !y)
    return NULL;
  x = widened(a, x);
  y = widened(a, y);
  if (!x || !y)
    return NULL;
  ir_expr *e = new_expr(a, kind, binary_type(kind, x));
  if (e) {
    e->op.a = x;
    e->op.b = y;
  }
  return e;
}

ir_expr *ir_not(ts_arena *a, ir_expr *x) {
  if (!x)
    return NULL;
  ir_expr *e = new_expr(a, E_NOT, TY_BOOL);
  if (e)
    e->op.a = x;
  return e;
}

ir_expr *ir_select(ts_arena *a, ir_expr *c, ir_expr *x, ir_expr *y) {
  if (!c || !x || !y)
    return NULL;
  if (x->type == TY_FLOAT && x->dtype != y->dtype) {
    x = widened(a, x);
    y = widened(a, y);
    if (!x || !y)
      return NULL;
  }
  ir_expr *e = new_expr(a, E_SELECT, x->type);
  if (e) {
    e->dtype = x->dtype;
    e->op.a = x;
    e->op.b = y;
    e->op.c = c;
  }
  return e;
}

ir_expr *ir_pair_pick(ts_arena *a, ir_expr *c, ir_expr *own,
                      ir_expr *theirs) {
  own = own ? ir_cast(a, TS_F32, own) : NULL;
  theirs = theirs ? ir_cast(a, TS_F32, theirs) : NULL;
  ir_expr *e = c && own && theirs ? new_expr(a, E_PAIR_PICK, TY_FLOAT) : NULL;
  if (e) {
    e->dtype = TS_F32;
    e->op.a = own;
    e->op.b = theirs;
    e->op.c = c;
  }
  return e;
}

/* The n expressions copied into the arena; NULL when one is missing (a
 * constructor that ran out of memory) or the arena is out of memory. */
static ir_expr **copy_exprs(ts_arena *a, ir_expr *const *xs, int n) {
  ir_expr **copy = ts_arena_alloc(a, sizeof(*copy) * (size_t)(n ? n : 1));
  for (int i = 0; copy && i < n; i++)
    if (!(copy[i] = xs[i]))
      return NULL;
  return copy;
}

ir_expr *ir_load(ts_arena *a, ir_buffer *buf, ir_expr *const *idx) {
  ir_expr *e = new_expr(a, E_LOAD, TY_FLOAT);
  ir_expr **copy = copy_exprs(a, idx, buf->ndim);
  if (!e || !copy)
    return NULL;
  e->load.buf = buf;
  e->load.idx = copy;
  e->dtype = buf->dtype;
  return e;
}

ir_expr *ir_vector(ts_arena *a, ir_expr *const *lanes, int n) {
  ir_expr *e = new_expr(a, E_VECTOR, TY_FLOAT);
  ir_expr **copy = n > 0 ? copy_exprs(a, lanes, n) : NULL;
  if (!e || !copy)
    return NULL;
  e->vector.lane = copy;
  e->vector.n = n;
  e->dtype = lanes[0]->dtype;
  return e;
}

static bool is_int(const ir_expr *e, int64_t v) {
  return e && e->kind == E_INT && e->ival == v;
}

ir_expr *ir_add(ts_arena *a, ir_expr *x, ir_expr *y) {
  if (is_int(x, 0))
    return y;
  if (is_int(y, 0))
    return x;
  if (x && y && x->kind == E_INT && y->kind == E_INT)
    return ir_int(a, x->ival + y->ival);
  return ir_binary(a, E_ADD, x, y);
}

ir_expr *ir_sub(ts_arena *a, ir_expr *x, ir_expr *y) {
  if (is_int(y, 0))
    return x;
  if (x && y && x->kind == E_INT && y->kind == E_INT)
    return ir_int(a, x->ival - y->ival);
  return ir_binary(a, E_SUB, x, y);
}

ir_expr *ir_mul(ts_arena *a, ir_expr *x, ir_expr *y) {
  if (is_int(x, 1))
    return y;
  if (is_int(y, 1))
    return x;
  if (is_int(x, 0) || is_int(y, 0))
    return ir_int(a, 0);
  if (x && y && x->kind == E_INT && y->kind == E_INT)
    return ir_int(a, x->ival * y->ival);
  return ir_binary(a, E_MUL, x, y);
}

ir_expr *ir_and(ts_arena *a, ir_expr *x, ir_expr *y) {
  if (!x)
    return y;
  if (!y)
    return x;
  return ir_binary(a, E_AND, x, y);
}

/* ---- Statements ---------------------------------------------------------- */

static ir_stmt *new_stmt(ts_arena *a, ir_stmt_kind kind) {
  ir_stmt *s = ts_arena_alloc(a, sizeof(*s));
  if (s)
    s->kind = kind;
  return s;
}

ir_stmt *ir_new_for(ts_arena *a, ts_loop *loop, ir_stmt *body) {
  if (!loop || !body)
    return NULL;
  ir_stmt *s = new_stmt(a, S_FOR);
  if (s) {
    s->for_.loop = loop;
    s->for_.body = body;
  }
  return s;
}

ir_stmt *ir_new_seq(ts_arena *a, ir_stmt *const *items, int n) {
  ir_stmt *s = new_stmt(a, S_SEQ);
  ir_stmt **copy = ts_arena_alloc(a, sizeof(*copy) * (size_t)(n ? n : 1));
  if (!s || !copy)
    return NULL;
  for (int i = 0; i < n; i++) {
    if (!items[i])
      return NULL;
    copy[i] = items[i];
  }
  s->seq.items = copy;
  s->seq.n = n;
  return s;
}

ir_stmt *ir_new_store(ts_arena *a, ir_buffer *buf, ir_expr *const *idx,
                      ir_expr *value) {
  ir_stmt *s = new_stmt(a, S_STORE);
  ir_expr **copy = copy_exprs(a, idx, buf->ndim);
  if (!s || !copy || !value)
    return NULL;
  s->store.buf = buf;
  s->store.idx = copy;
  s->store.value = ir_cast(a, buf->dtype, value);
  return s->store.value ? s : NULL;
}

ir_stmt *ir_new_atomic_add(ts_arena *a, ir_buffer *buf, ir_expr *const *idx,
                           ir_expr *value) {
  ir_stmt *s = ir_new_store(a, buf, idx, value);
  if (s)
    s->store.atomic = true;
  return s;
}

ir_stmt *ir_new_if(ts_arena *a, ir_expr *cond, ir_stmt *then_,
                   ir_stmt *else_) {
  if (!cond || !then_)
    return NULL;
  ir_stmt *s = new_stmt(a, S_IF);
  if (s) {
    s->if_.cond = cond;
    s->if_.then_ = then_;
    s->if_.else_ = else_;
  }
  return s;
}

ir_stmt *ir_new_alloc(ts_arena *a, ir_buffer *buf, ir_stmt *body) {
  if (!buf || !body)
    return NULL;
  ir_stmt *s = new_stmt(a, S_ALLOC);
  if (s) {
    s->alloc.buf = buf;
    s->alloc.body = body;
  }
  return s;
}

ir_stmt *ir_new_barrier(ts_arena *a) { return new_stmt(a, S_BARRIER); }

ir_stmt *ir_new_named_barrier(ts_arena *a, int64_t threads) {
  ir_stmt *s = new_stmt(a, S_BARRIER);
  if (s)
    s->barrier.threads = threads;
  return s;
}

ir_stmt *ir_new_tma_store(ts_arena *a, ir_expr *src, ir_buffer *dst_global,
                          ir_expr *const coord[2], const int64_t box[2]) {
  ir_stmt *s = src && coord[0] && coord[1] ? new_stmt(a, S_TMA_STORE) : NULL;
  if (s) {
    s->pipe.dst = src;
    s->pipe.src = dst_global;
    s->pipe.map = -1;
    for (int d = 0; d < 2; d++) {
      s->pipe.coord[d] = coord[d];
      s->pipe.box[d] = box[d];
    }
  }
  return s;
}

ir_stmt *ir_new_tma_store_wait(ts_arena *a) {
  return new_stmt(a, S_TMA_STORE_WAIT);
}

ir_stmt *ir_new_async_commit(ts_arena *a) {
  return new_stmt(a, S_ASYNC_COMMIT);
}

ir_stmt *ir_new_async_wait(ts_arena *a, int pending) {
  ir_stmt *s = new_stmt(a, S_ASYNC_WAIT);
  if (s)
    s->wait.pending = pending;
  return s;
}

ir_stmt *ir_new_lanes(ts_arena *a, ts_loop *loop, ir_stmt *body,
                      ir_stmt *expanded) {
  if (!loop || !body || !expanded)
    return NULL;
  ir_stmt *s = new_stmt(a, S_LANES);
  if (s) {
    s->lanes.loop = loop;
    s->lanes.body = body;
    s->lanes.expanded = expanded;
  }
  return s;
}

ir_stmt *ir_new_compute(ts_arena *a, ir_expr *i, ir_expr *j, ir_expr *k,
                        ir_expr *pred) {
  if (!i || !j || !k)
    return NULL;
  ir_stmt *s = new_stmt(a, S_COMPUTE);
  if (s) {
    s->compute.i = i;
    s->compute.j = j;
    s->compute.k = k;
    s->compute.pred = pred;
  }
  return s;
}

ir_stmt *ir_new_ldmatrix(ts_arena *a, ir_buffer *frag, ir_expr *const *idx,
                         ir_expr *src, int matrices, bool trans) {
  ir_stmt *s = src ? new_stmt(a, S_LDMATRIX) : NULL;
  if (s) {
    s->ldsm.frag = frag;
    s->ldsm.src = src;
    s->ldsm.matrices = matrices;
    s->ldsm.trans = trans;
    s->ldsm.idx = copy_exprs(a, idx, frag->ndim);
  }
  return s && s->ldsm.idx ? s : NULL;
}

ir_stmt *ir_new_stmatrix(ts_arena *a, ir_expr *dst, ir_expr *const *value,
                         int matrices) {
  ir_stmt *s = dst ? new_stmt(a, S_STMATRIX) : NULL;
  if (s) {
    s->stsm.dst = dst;
    s->stsm.matrices = matrices;
    s->stsm.value = copy_exprs(a, value, 2 * matrices);
  }
  if (!s || !s->stsm.value)
    return NULL;
  for (int i = 0; i < 2 * matrices; i++) /* stored as the buffer's type */
    if (!(s->stsm.value[i] = ir_cast(a, dst->dtype, s->stsm.value[i])))
      return NULL;
  return s;
}

ir_stmt *ir_new_mma(ts_arena *a, ir_buffer *const *buf, ir_expr **const *idx) {
  ir_stmt *s = new_stmt(a, S_MMA);
  for (int w = 0; s && w < 3; w++) {
    s->mma.buf[w] = buf[w];
    s->mma.idx[w] = copy_exprs(a, idx[w], buf[w]->ndim);
    if (!s->mma.idx[w])
      return NULL;
  }
  return s;
}

ir_stmt *ir_new_wgmma(ts_arena *a, const struct mma_instr_s *in,
                      ir_buffer *acc, ir_expr *const *idx, ir_expr *src_a,
                      ir_expr *src_b) {
  ir_stmt *s = new_stmt(a, S_WGMMA);
  if (!s)
    return NULL;
  s->wgmma.in = in;
  s->wgmma.acc = acc;
  s->wgmma.idx = copy_exprs(a, idx, acc->ndim);
  s->wgmma.src[0] = src_a;
  s->wgmma.src[1] = src_b;
  return s->wgmma.idx ? s : NULL;
}

bool ir_wgmma_a_regs(const ir_stmt *s) {
  return s->wgmma.src[0]->load.buf->scope == SCOPE_LOCAL;
}

ir_stmt *ir_new_wgmma_sync(ts_arena *a, int pending, ir_buffer *acc) {
  ir_stmt *s = new_stmt(a, S_WGMMA_SYNC);
  if (s) {
    s->wait.pending = pending;
    s->wait.acc = acc;
  }
  return s;
}

ir_stmt *ir_new_pipeline(ts_arena *a, const ir_pipeline *p, ir_stmt *body) {
  ir_stmt *s = new_stmt(a, S_PIPELINE);
  if (s) {
    s->pipe.pipe = p;
    s->pipe.body = body;
  }
  return s;
}

ir_stmt *ir_new_tma(ts_arena *a, const ir_pipeline *p, ir_expr *stage,
                    ir_expr *dst, ir_buffer *src, ir_expr *const coord[2],
                    const int64_t box[2]) {
  ir_stmt *s = new_stmt(a, S_TMA);
  if (s) {
    s->pipe.pipe = p;
    s->pipe.stage = stage;
    s->pipe.dst = dst;
    s->pipe.src = src;
    s->pipe.map = -1;
    for (int d = 0; d < 2; d++) {
      s->pipe.coord[d] = coord[d];
      s->pipe.box[d] = box[d];
    }
  }
  return s;
}

ir_stmt *ir_new_mbarrier(ts_arena *a, const ir_pipeline *p, ir_mbar_op op,
                         ir_mbar_which bar, ir_expr *stage, ir_expr *parity) {
  ir_stmt *s = new_stmt(a, S_MBARRIER);
  if (s) {
    s->pipe.pipe = p;
    s->pipe.op = op;
    s->pipe.bar = bar;
    s->pipe.stage = stage;
    s->pipe.parity = parity;
  }
  return s;
}

static ir_stmt *copy_compute(ts_arena *a, const ir_stmt *s) {
  ir_stmt *c = new_stmt(a, S_COMPUTE);
  if (c)
    c->compute = s->compute;
  return c;
}

ir_expr *ir_compute_coord(const ir_stmt *s, int w, int d) {
  if (w == 0)
    return d == 0 ? s->compute.i : s->compute.k;
  return d == 0 ? s->compute.k : s->compute.j;
}

ir_stmt *ir_compute_with_src(ts_arena *a, const ir_stmt *s, int which,
                             ir_buffer *src, ir_expr *o0, ir_expr *o1) {
  ir_stmt *c = copy_compute(a, s);
  if (!c || (src && (!o0 || !o1)))
    return NULL;
  c->compute.src[which] = src;
  c->compute.origin[which][0] = o0;
  c->compute.origin[which][1] = o1;
  return c;
}

typedef struct {
  ir_expr_fn fn;
  void *ctx;
} map_ctx;

static ir_expr *map_whole(ir_mutator *m, ir_expr *e) {
  const map_ctx *c = m->ctx;
  return c->fn(m->a, e, c->ctx);
}

ir_stmt *ir_compute_map(ts_arena *a, ir_stmt *s, ir_expr_fn fn, void *ctx) {
  map_ctx c = {fn, ctx};
  ir_mutator m = {.a = a, .expr = map_whole, .ctx = &c};
  return ir_mutate_stmt_children(&m, s);
}

/* ---- Queries --------------------------------------------------------------- */

static bool find_var(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_VAR && e->var == v->ctx)
    v->stop = true;
  return true;
}

bool ir_expr_uses_var(const ir_expr *e, const ir_var *var) {
  ir_visitor v = {.expr = find_var, .ctx = (void *)var};
  ir_visit_expr(&v, e);
  return v.stop;
}

static bool find_grid(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_VAR && e->var->kind == VAR_GRID)
    v->stop = true;
  return true;
}

bool ir_expr_uses_grid(const ir_expr *e) {
  ir_visitor v = {.expr = find_grid};
  ir_visit_expr(&v, e);
  return v.stop;
}

bool ir_expr_equal(const ir_expr *x, const ir_expr *y) {
  if (x == y)
    return true;
  if (!x || !y || x->kind != y->kind)
    return false;
  switch (x->kind) {
  case E_INT: return x->ival == y->ival;
  case E_FLOAT: return memcmp(&x->fval, &y->fval, sizeof(float)) == 0;
  case E_VAR: return x->var == y->var;
  case E_CAST: return x->dtype == y->dtype && ir_expr_equal(x->op.a, y->op.a);
  case E_LOAD:
    if (x->load.buf != y->load.buf)
      return false;
    for (int d = 0; d < x->load.buf->ndim; d++)
      if (!ir_expr_equal(x->load.idx[d], y->load.idx[d]))
        return false;
    return true;
  case E_VECTOR:
    if (x->vector.n != y->vector.n)
      return false;
    for (int i = 0; i < x->vector.n; i++)
      if (!ir_expr_equal(x->vector.lane[i], y->vector.lane[i]))
        return false;
    return true;
  default:
    return ir_expr_equal(x->op.a, y->op.a) && ir_expr_equal(x->op.b, y->op.b) &&
           ir_expr_equal(x->op.c, y->op.c);
  }
}

/* ---- Substitution ------------------------------------------------------------ */

typedef struct {
  const ir_var *v;
  ir_expr *with;
} subst_ctx;

static ir_expr *subst_var(ir_mutator *m, ir_expr *e) {
  const subst_ctx *c = m->ctx;
  if (e->kind == E_VAR)
    return e->var == c->v ? c->with : e;
  return ir_mutate_expr_children(m, e);
}

ir_expr *ir_subst_expr(ts_arena *a, ir_expr *e, const ir_var *v,
                       ir_expr *with) {
  subst_ctx c = {v, with};
  ir_mutator m = {.a = a, .expr = subst_var, .ctx = &c};
  return ir_mutate_expr(&m, e);
}

ir_stmt *ir_subst_stmt(ts_arena *a, ir_stmt *s, const ir_var *v,
                       ir_expr *with) {
  subst_ctx c = {v, with};
  ir_mutator m = {.a = a, .expr = subst_var, .ctx = &c};
  return ir_mutate_stmt(&m, s);
}
