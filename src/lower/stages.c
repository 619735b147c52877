/*
 * Lowering caches.  At each loop whose body starts with copy nests:
 *
 *   - a shared copy is spread over the block's threads: its loops (all but
 *     a vectorized innermost one) fuse into one index f, and each thread
 *     takes f = round * threads + tid, consecutive threads on consecutive
 *     elements of the source's contiguous dimension (coalesced); or, when
 *     the user bound some of its loops to thread indices, each bound loop
 *     becomes the block's index along that axis;
 *   - a register copy's loops are unrolled, so its array stays in
 *     registers;
 *   - a barrier follows the shared copies (their data crosses threads),
 *     and another ends the body when the copy will be refilled while other
 *     threads may still read it; nowhere else;
 *   - a double-buffered copy becomes a pipeline with one barrier per
 *     iteration, or per group of tiles (ts_double_buffer_tiles,
 *     pipeline_by_group below), and a copy pipelined by ts_pipeline one of
 *     cp.async copies (async_pipeline below):
 *
 *       copy tile 0 into S[0]; barrier
 *       for ko:
 *         if ko + 1 < n: load tile ko + 1 into registers R
 *         compute on S[ko % 2]
 *         if ko + 1 < n: store R into S[(ko + 1) % 2]
 *         barrier
 *
 * Each cache's allocation wraps the loop it is attached at.  The walks are
 * the traversal's (src/ir/visit.h): a mutator finds the attach loops,
 * keeping the enclosing thread loops as it goes, and others bind, unroll,
 * split and retarget the copy nests.
 */
#include "lower.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../ir/analysis.h"
#include "../ir/visit.h"

enum { MAX_ITEMS = 16, MAX_UNROLLED_ROUNDS = 32, MAX_DEPTH = 8 };

typedef struct {
  lower_ctx *cx;
  ir_mutator m;              /* the walk: this walker is its ctx */
  const ts_loop *threads[3]; /* the enclosing loops bound to threadIdx.x/y/z */
  bool repeats;              /* an enclosing serial loop runs more than once */
  bool failed;
} walker;

static ir_stmt *walk(walker *w, ir_stmt *st);

static int thread_axis(ts_loop_kind k) {
  return k == TS_THREAD_X ? 0 : k == TS_THREAD_Y ? 1 : 2;
}

__attribute__((format(printf, 3, 4))) static void fail(walker *w,
                                                        ts_status code,
                                                        const char *fmt, ...) {
  if (!w->failed) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    lower_fail(w->cx, code, "%s", text);
  }
  w->failed = true;
}

/* ---- Copy nests ------------------------------------------------------------ */

typedef struct {
  ts_loop *loops[NEST_MAX_DEPTH];
  int n;
  ir_stmt *body; /* below the loops: guards and the store */
} chain;

/* The copy's leading loops, outermost first: a path down one chain of
 * loops that stops at the first other node, not a walk of the tree. */
static void get_chain(ir_stmt *st, chain *c) {
  c->n = 0;
  while (st->kind == S_FOR && c->n < NEST_MAX_DEPTH) {
    c->loops[c->n++] = st->for_.loop;
    st = st->for_.body;
  }
  c->body = st;
}

/* threadIdx.x + bx * (threadIdx.y + by * threadIdx.z), from the enclosing
 * thread loops; *count gets the block's size. */
static ir_expr *thread_id(walker *w, int64_t *count) {
  ts_arena *a = w->cx->arena;
  ir_expr *tid = ir_int(a, 0);
  *count = 1;
  for (int d = 2; d >= 0; d--) {
    const ts_loop *l = w->threads[d];
    if (!l)
      continue;
    tid = ir_add(a, ir_mul(a, tid, ir_int(a, l->extent)), ir_varref(a, l->var));
    *count *= l->extent;
  }
  return tid;
}

/* A shared copy spread over the block's threads (see the top of the file). */
static ir_stmt *distribute(walker *w, ir_stmt *copy, const ts_stage *st) {
  ts_arena *a = w->cx->arena;
  chain c;
  get_chain(copy, &c);
  int64_t nthreads;
  ir_expr *tid = thread_id(w, &nthreads);
  if (nthreads == 1)
    return copy;
  ts_loop *vec = c.n && c.loops[c.n - 1]->kind == TS_VECTORIZED
                     ? c.loops[c.n - 1] : NULL;
  int m = vec ? c.n - 1 : c.n;
  int64_t total = 1;
  for (int q = 0; q < m; q++)
    total *= c.loops[q]->extent;
  int64_t rounds = (total + nthreads - 1) / nthreads;
  ts_loop *round = lower_new_loop(
      w->cx, ts_arena_printf(a, "%s.round", st->name), rounds,
      rounds > 1 && rounds <= MAX_UNROLLED_ROUNDS ? TS_UNROLLED : TS_SERIAL);
  if (!round)
    return NULL;
  round->stage = (ts_stage *)st;
  ir_expr *f = ir_add(a, ir_mul(a, ir_varref(a, round->var),
                                ir_int(a, nthreads)), tid);
  ir_stmt *body = c.body;
  int64_t stride = 1;
  for (int q = m - 1; q >= 0; q--) {
    ir_expr *v = ir_binary(a, E_DIV, f, ir_int(a, stride));
    if (q > 0)
      v = ir_binary(a, E_MOD, v, ir_int(a, c.loops[q]->extent));
    body = ir_subst_stmt(a, body, c.loops[q]->var, v);
    stride *= c.loops[q]->extent;
  }
  if (vec)
    body = ir_new_for(a, vec, body);
  if (total % nthreads)
    body = ir_new_if(a, ir_binary(a, E_LT, f, ir_int(a, total)), body, NULL);
  return ir_new_for(a, round, body);
}

static bool stop_at_bound_loop(ir_visitor *v, const ir_stmt *st) {
  v->stop |= st->kind == S_FOR && ir_kind_is_thread(st->for_.loop->kind);
  return true;
}

/* Whether a copy nest has a loop the user bound to a thread index. */
static bool has_bound_loop(const ir_stmt *st) {
  ir_visitor v = {.stmt = stop_at_bound_loop};
  ir_visit_stmt(&v, st);
  return v.stop;
}

typedef struct {
  walker *w;
  bool used[3]; /* the thread indices some bound loop takes */
} binding;

/* A bound loop replaced by the block's thread index along its axis,
 * guarded where the loop is shorter than the block. */
static ir_stmt *bind_loop(ir_mutator *m, ir_stmt *st) {
  binding *bd = m->ctx;
  if (st->kind != S_FOR || !ir_kind_is_thread(st->for_.loop->kind))
    return ir_mutate_stmt_children(m, st);
  ts_arena *a = m->a;
  const ts_loop *l = st->for_.loop;
  ir_stmt *body = ir_mutate_stmt(m, st->for_.body);
  if (!body)
    return NULL;
  int d = thread_axis(l->kind);
  const ts_loop *t = bd->w->threads[d];
  bd->used[d] = true;
  /* ts_bind keeps the extent within the block's: 1 where no loop of the
   * computation takes the index. */
  ir_expr *tid = t ? ir_varref(a, t->var) : ir_int(a, 0);
  body = ir_subst_stmt(a, body, l->var, tid);
  if (t && l->extent < t->extent)
    body = ir_new_if(a, ir_binary(a, E_LT, tid, ir_int(a, l->extent)), body,
                     NULL);
  return body;
}

/* A shared copy whose loops the user bound to thread indices: the threads
 * along an index no copy loop takes make the copy once, at index 0, so no
 * two threads write one element. */
static ir_stmt *bound_copy(walker *w, ir_stmt *copy) {
  ts_arena *a = w->cx->arena;
  binding bd = {.w = w};
  ir_mutator m = {.a = a, .stmt = bind_loop, .ctx = &bd};
  ir_stmt *out = ir_mutate_stmt(&m, copy);
  ir_expr *once = NULL;
  for (int d = 0; d < 3; d++)
    if (w->threads[d] && !bd.used[d] && w->threads[d]->extent > 1)
      once = ir_and(a, once, ir_binary(a, E_EQ, ir_varref(a, w->threads[d]->var),
                                       ir_int(a, 0)));
  return out && once ? ir_new_if(a, once, out, NULL) : out;
}

/* A serial loop of a register copy made an unrolled one. */
static ir_stmt *unroll_loop(ir_mutator *m, ir_stmt *st) {
  walker *w = m->ctx;
  if (st->kind != S_FOR || st->for_.loop->kind != TS_SERIAL)
    return ir_mutate_stmt_children(m, st);
  ts_loop *l = st->for_.loop;
  ir_stmt *body = ir_mutate_stmt(m, st->for_.body);
  ts_loop *u = body ? lower_new_loop(w->cx, l->name, l->extent, TS_UNROLLED)
                    : NULL;
  if (!u)
    return NULL;
  u->stage = l->stage;
  body = ir_subst_stmt(m->a, body, l->var, ir_varref(m->a, u->var));
  return ir_new_for(m->a, u, body);
}

/* A register copy with its serial loops unrolled. */
static ir_stmt *unroll_copy(walker *w, ir_stmt *copy) {
  ir_mutator m = {.a = w->cx->arena, .stmt = unroll_loop, .ctx = w};
  return ir_mutate_stmt(&m, copy);
}

/* ---- Double buffering -------------------------------------------------------- */

typedef struct {
  const ir_buffer *from;
  ir_buffer *to;
  ir_expr *lead; /* the copy's index: which of the two */
} retarget;

static ir_expr **lead_indices(ts_arena *a, const retarget *r, ir_expr *const *idx,
                              int ndim) {
  ir_expr **out = ts_arena_alloc(a, sizeof(*out) * (size_t)(ndim + 1));
  if (!out)
    return NULL;
  out[0] = r->lead;
  for (int d = 0; d < ndim; d++)
    out[d + 1] = idx[d];
  return out;
}

static ir_expr *retarget_load(ir_mutator *m, ir_expr *e) {
  const retarget *r = m->ctx;
  if (e->kind != E_LOAD || e->load.buf != r->from)
    return ir_mutate_expr_children(m, e);
  return ir_load(m->a, r->to, lead_indices(m->a, r, e->load.idx, r->from->ndim));
}

static ir_stmt *retarget_store(ir_mutator *m, ir_stmt *st) {
  const retarget *r = m->ctx;
  if (st->kind != S_STORE || st->store.buf != r->from)
    return ir_mutate_stmt_children(m, st);
  return ir_new_store(m->a, r->to,
                      lead_indices(m->a, r, st->store.idx, r->from->ndim),
                      ir_mutate_expr(m, st->store.value));
}

/* Every access to r->from in st made an access to one copy of r->to. */
static ir_stmt *retarget_stmt(ts_arena *a, ir_stmt *st, const retarget *r) {
  ir_mutator m = {.a = a, .expr = retarget_load, .stmt = retarget_store,
                  .ctx = (void *)r};
  return ir_mutate_stmt(&m, st);
}

/* n copies of a shared buffer, the copy index outermost. */
static ir_buffer *copies_of(ts_arena *a, const ir_buffer *b, int64_t n) {
  int64_t shape[IR_MAX_DIMS] = {n};
  int order[IR_MAX_DIMS] = {0};
  for (int d = 0; d < b->ndim; d++) {
    shape[d + 1] = b->shape[d];
    order[d + 1] = b->order[d] + 1;
  }
  ir_buffer *x = ir_new_buffer(a, b->name, b->scope, b->dtype, b->ndim + 1,
                               shape, NULL);
  if (x) {
    ir_buffer_set_layout(x, order, b->pad);
    x->swizzle = b->swizzle; /* copies are whole rows: the pattern holds */
    x->made_by = b->made_by;
  }
  return x;
}

/* One half of a double-buffered copy: its nest with loops and guards kept
 * and the store replaced. */
typedef struct {
  ts_arena *a;
  ir_buffer *reg;
  ir_expr *ridx[IR_MAX_DIMS];
  int64_t shape[IR_MAX_DIMS];
  int n;       /* the copy's loops: R's dimensions */
  bool to_reg; /* the global -> registers half, else registers -> shared */
  bool deep;   /* more loops than R can have dimensions */
  bool other;  /* a guard's else that is not the zero-fill's store */
} half;

static ir_stmt *rebuild_half(ir_mutator *m, ir_stmt *st) {
  const half *h = m->ctx;
  switch (st->kind) {
  case S_IF:
    /* The zero-fill's else: the registers get the 0, and then both ways
     * store the registers. */
    if (st->if_.else_ && !h->to_reg)
      return ir_mutate_stmt(m, st->if_.then_);
    return ir_mutate_stmt_children(m, st);
  case S_STORE:
    if (h->to_reg)
      return ir_new_store(m->a, h->reg, h->ridx, st->store.value);
    return ir_new_store(m->a, st->store.buf, st->store.idx,
                        ir_load(m->a, h->reg, h->ridx));
  default:
    return ir_mutate_stmt_children(m, st);
  }
}

/* The copy's loops, outermost first, as R's dimensions. */
static bool copy_loop(ir_visitor *v, const ir_stmt *x) {
  half *h = v->ctx;
  h->other |= x->kind == S_IF && x->if_.else_ && x->if_.else_->kind != S_STORE;
  if (x->kind == S_FOR && h->n == IR_MAX_DIMS)
    h->deep = true;
  else if (x->kind == S_FOR) {
    h->shape[h->n] = x->for_.loop->extent;
    h->ridx[h->n++] = ir_varref(h->a, x->for_.loop->var);
  }
  v->stop = h->other || h->deep;
  return true;
}

/* A distributed copy split in two: global -> registers R, R -> shared.  R
 * has one dimension per loop of the copy. */
static bool split_copy(walker *w, ir_stmt *copy, const ts_stage *st,
                       ir_buffer **reg, ir_stmt **load, ir_stmt **store) {
  ts_arena *a = w->cx->arena;
  half h = {.a = a, .to_reg = true, .shape = {1}};
  ir_visitor loops = {.stmt = copy_loop, .ctx = &h};
  ir_visit_stmt(&loops, copy);
  if (h.other)
    return false;
  if (h.deep) {
    fail(w, TS_ERR_BAD_ARG,
         "ts_lower: the copy of \"%s\" has more than 4 loops; fuse "
         "some before double buffering it", st->name);
    return false;
  }
  h.ridx[0] = h.n ? h.ridx[0] : ir_int(a, 0);
  /* The registers pass the elements through: the shared copy's type. */
  h.reg = *reg = ir_new_buffer(a, ts_arena_printf(a, "%s.reg", st->name),
                               SCOPE_LOCAL, st->buf->dtype, h.n ? h.n : 1,
                               h.shape, NULL);
  if (!h.reg)
    return false;
  ir_mutator halves = {.a = a, .stmt = rebuild_half, .ctx = &h};
  *load = ir_mutate_stmt(&halves, copy);
  h.to_reg = false;
  *store = ir_mutate_stmt(&halves, copy);
  return *load && *store;
}

typedef struct {
  ir_stmt *copies[MAX_ITEMS];
  ir_stmt *raw[MAX_ITEMS]; /* the copy nests as scheduled (ts_tma reads) */
  const ts_stage *stages[MAX_ITEMS];
  int n;
  ir_stmt *rest; /* the body after the copies, lowered */
} attach;

static ir_stmt *seq_of(ts_arena *a, ir_stmt *const *items, int n) {
  return n == 1 ? items[0] : ir_new_seq(a, items, n);
}

/* Register caches filled at the attach loop (of the shared ones, say):
 * in a pipeline they read the current copy, like the rest of the body. */
static int register_copies(const attach *at, ir_stmt **copies,
                           ir_buffer **bufs) {
  int n = 0;
  for (int i = 0; i < at->n; i++) {
    if (at->stages[i]->buf->scope != SCOPE_SHARED) {
      bufs[n] = at->stages[i]->buf;
      copies[n++] = at->copies[i];
    }
  }
  return n;
}

/* The double-buffered shared stages at one loop, with one count of tiles
 * a copy: the count, or 0 after failing. */
static int buffer_tiles(walker *w, const ts_loop *at_loop, const attach *at) {
  const ts_stage *db = NULL;
  for (int i = 0; i < at->n; i++)
    if (at->stages[i]->double_buffered && !db)
      db = at->stages[i];
  for (int i = 0; i < at->n; i++) {
    const ts_stage *st = at->stages[i];
    if (st->buf->scope != SCOPE_SHARED)
      continue;
    if (!st->double_buffered) {
      fail(w, TS_ERR_STAGES_DIFFER,
           "ts_lower: \"%s\" is double-buffered and \"%s\", attached at "
           "the same loop, is not; double buffer both", db->name, st->name);
      return 0;
    }
    if (st->buffer_tiles != db->buffer_tiles) {
      fail(w, TS_ERR_STAGES_DIFFER,
           "ts_lower: \"%s\" and \"%s\" are double-buffered at the same "
           "loop \"%s\" with %d and %d tiles a copy; their copies share the "
           "barriers, so give both the same count", db->name, st->name,
           at_loop->name, db->buffer_tiles, st->buffer_tiles);
      return 0;
    }
  }
  return db->buffer_tiles;
}

/* A double-buffered loop's pieces: per shared stage its prologue copy, its
 * registers R, the load of the next tile into R and the store of R into
 * the other copy; the register caches and the rest of the body. */
typedef struct {
  ir_stmt *pro[MAX_ITEMS], *loads[MAX_ITEMS], *stores[MAX_ITEMS];
  ir_buffer *regs[MAX_ITEMS], *bufs[MAX_ITEMS];
  int np;
  ir_stmt *locals[MAX_ITEMS];
  ir_buffer *local_bufs[MAX_ITEMS];
  int nl;
  ir_stmt *rest;
} doubled;

/* Splits each shared stage's copy into pieces over `copies` copies:
 * iteration `t` (NULL: f's variable as it is) computes on copy `cur`,
 * loads tile `ahead` and stores it into copy `nxt`; the prologue copies
 * tile `first` into copy `first`. */
static bool split_doubled(walker *w, ts_loop *f, attach *at, int copies,
                          ir_expr *t, ir_expr *cur, ir_expr *ahead,
                          ir_expr *nxt, ir_expr *first, doubled *d) {
  ts_arena *a = w->cx->arena;
  d->nl = register_copies(at, d->locals, d->local_bufs);
  d->rest = at->rest;
  for (int i = 0; i < at->n; i++) {
    const ts_stage *st = at->stages[i];
    if (st->buf->scope != SCOPE_SHARED)
      continue;
    ir_buffer *all = copies_of(a, st->buf, copies);
    ir_stmt *ld, *sd;
    int k = d->np;
    if (!all || !split_copy(w, at->copies[i], st, &d->regs[k], &ld, &sd))
      return false;
    retarget pro = {st->buf, all, first};
    retarget now = {st->buf, all, cur};
    retarget other = {st->buf, all, nxt};
    d->pro[k] = retarget_stmt(a, ir_subst_stmt(a, at->copies[i], f->var,
                                               first), &pro);
    d->loads[k] = ir_subst_stmt(a, ld, f->var, ahead);
    d->stores[k] = retarget_stmt(a, ir_subst_stmt(a, sd, f->var, ahead),
                                 &other);
    d->rest = retarget_stmt(a, d->rest, &now);
    for (int j = 0; j < d->nl; j++)
      d->locals[j] = retarget_stmt(a, d->locals[j], &now);
    d->bufs[d->np++] = all;
  }
  if (t != NULL) {
    d->rest = ir_subst_stmt(a, d->rest, f->var, t);
    for (int j = 0; j < d->nl; j++)
      d->locals[j] = ir_subst_stmt(a, d->locals[j], f->var, t);
  }
  return d->rest != NULL;
}

/* One step of the loop: the tile `ahead` into registers, this tile used,
 * the registers into the other copy. */
static ir_stmt *doubled_step(ts_arena *a, const doubled *d, ir_expr *has_next) {
  ir_stmt *body[MAX_ITEMS + 3];
  int nb = 0;
  body[nb++] = ir_new_if(a, has_next, seq_of(a, d->loads, d->np), NULL);
  for (int j = 0; j < d->nl; j++)
    body[nb++] = d->locals[j];
  body[nb++] = d->rest;
  body[nb++] = ir_new_if(a, has_next, seq_of(a, d->stores, d->np), NULL);
  return ir_new_seq(a, body, nb);
}

/* The pipeline inside the allocations of its buffers, staging registers
 * and register caches. */
static ir_stmt *wrap_doubled(ts_arena *a, const doubled *d, ir_stmt *out) {
  for (int i = 0; i < d->nl; i++)
    out = ir_new_alloc(a, d->local_bufs[i], out);
  for (int i = 0; i < d->np; i++)
    out = ir_new_alloc(a, d->regs[i], out);
  for (int i = 0; i < d->np; i++)
    out = ir_new_alloc(a, d->bufs[i], out);
  return out;
}

/* One tile a copy:
 *
 *   copy tile 0 into S[0]; barrier
 *   for ko: step (tile ko + 1 into R, compute on S[ko % 2], R into
 *           S[(ko + 1) % 2]); barrier                                    */
static ir_stmt *pipeline_by_tile(walker *w, ts_loop *f, attach *at) {
  ts_arena *a = w->cx->arena;
  ir_expr *fv = ir_varref(a, f->var);
  ir_expr *next = ir_add(a, fv, ir_int(a, 1));
  doubled d = {.np = 0};
  if (!split_doubled(w, f, at, 2, NULL, ir_binary(a, E_MOD, fv, ir_int(a, 2)),
                     next, ir_binary(a, E_MOD, next, ir_int(a, 2)),
                     ir_int(a, 0), &d))
    return NULL;
  ir_expr *has_next = ir_binary(a, E_LT, next, ir_int(a, f->extent));
  ir_stmt *body[2] = {doubled_step(a, &d, has_next), ir_new_barrier(a)};
  ir_stmt *items[MAX_ITEMS + 2];
  int n = 0;
  for (int i = 0; i < d.np; i++)
    items[n++] = d.pro[i];
  items[n++] = ir_new_barrier(a);
  items[n++] = ir_new_for(a, f, ir_new_seq(a, body, 2));
  return wrap_doubled(a, &d, ir_new_seq(a, items, n));
}

/* P tiles a copy (ts_double_buffer_tiles), t = g * P + q:
 *
 *   for q in 0..min(P, n): copy tile q into S[q]; barrier
 *   for g in 0..ceil(n / P):
 *     for q in 0..P (unrolled):
 *       if t < n: step (tile t + P into R, compute on S[g % 2 * P + q],
 *                       R into S[(g + 1) % 2 * P + q])
 *     barrier
 *
 * Tile t + P goes where tile t - P was, which every thread finished with
 * before the barrier that ended group g - 1. */
static ir_stmt *pipeline_by_group(walker *w, ts_loop *f, attach *at,
                                  int tiles) {
  ts_arena *a = w->cx->arena;
  int64_t n = f->extent, groups = (n + tiles - 1) / tiles;
  ts_loop *g = lower_new_loop(w->cx, ts_arena_printf(a, "%s.group", f->name),
                              groups, TS_SERIAL);
  ts_loop *q = lower_new_loop(w->cx, ts_arena_printf(a, "%s.tile", f->name),
                              tiles, TS_UNROLLED);
  ts_loop *q0 = lower_new_loop(w->cx, ts_arena_printf(a, "%s.first", f->name),
                               n < tiles ? n : tiles, TS_UNROLLED);
  if (!g || !q || !q0)
    return NULL;
  /* The groups' loop takes the k loop's place: its kind (serial or
   * unrolled), its partition (the tail is the last groups) and its wgmma
   * batches, which lowering then checks as it would the k loop's.  The
   * prologue's loop is a copy, not a step of k. */
  g->kind = f->kind;
  g->reduce = q->reduce = f->reduce;
  g->partitioned = f->partitioned;
  g->wgmma_in_flight = f->wgmma_in_flight;
  ir_expr *gv = ir_varref(a, g->var), *qv = ir_varref(a, q->var);
  ir_expr *p = ir_int(a, tiles);
  ir_expr *t = ir_add(a, ir_mul(a, gv, p), qv);
  ir_expr *ahead = ir_add(a, t, p);
  ir_expr *cur = ir_add(a, ir_mul(a, ir_binary(a, E_MOD, gv, ir_int(a, 2)), p),
                        qv);
  ir_expr *nxt = ir_add(
      a, ir_mul(a, ir_binary(a, E_MOD, ir_add(a, gv, ir_int(a, 1)),
                             ir_int(a, 2)), p), qv);
  ir_expr *q0v = ir_varref(a, q0->var);
  doubled d = {.np = 0};
  if (!split_doubled(w, f, at, 2 * tiles, t, cur, ahead, nxt, q0v, &d))
    return NULL;
  ir_expr *has_next = ir_binary(a, E_LT, ahead, ir_int(a, n));
  ir_stmt *step = doubled_step(a, &d, has_next);
  if (n % tiles)
    step = ir_new_if(a, ir_binary(a, E_LT, t, ir_int(a, n)), step, NULL);
  ir_stmt *body[2] = {ir_new_for(a, q, step), ir_new_barrier(a)};
  ir_stmt *items[3] = {ir_new_for(a, q0, seq_of(a, d.pro, d.np)),
                       ir_new_barrier(a),
                       ir_new_for(a, g, ir_new_seq(a, body, 2))};
  return wrap_doubled(a, &d, ir_new_seq(a, items, 3));
}

static ir_stmt *pipeline(walker *w, ts_loop *f, attach *at) {
  if (ir_kind_is_launch(f->kind)) {
    fail(w, TS_ERR_BAD_ATTACH,
         "ts_lower: a double-buffered cache is attached at loop \"%s\", "
         "which is bound; attach it at a serial k loop", f->name);
    return NULL;
  }
  int tiles = buffer_tiles(w, f, at);
  if (!tiles)
    return NULL;
  return tiles == 1 ? pipeline_by_tile(w, f, at)
                    : pipeline_by_group(w, f, at, tiles);
}

/* ---- cp.async pipelines -------------------------------------------------------- */

/* The shared stages at one loop all pipelined, with one count: their tiles
 * travel in the same copy groups.  The count, or 0 after failing. */
static int pipeline_depth(walker *w, const ts_loop *f, const attach *at) {
  const ts_stage *first = NULL;
  for (int i = 0; i < at->n; i++)
    if (at->stages[i]->pipeline && !first)
      first = at->stages[i];
  for (int i = 0; i < at->n; i++) {
    const ts_stage *st = at->stages[i];
    if (st->buf->scope != SCOPE_SHARED || st->pipeline == first->pipeline)
      continue;
    if (st->pipeline)
      fail(w, TS_ERR_STAGES_DIFFER,
           "ts_lower: \"%s\" and \"%s\", attached at loop \"%s\", are "
           "pipelined with %d and %d stages; their tiles share copy groups, "
           "so give both one count", first->name, st->name, f->name,
           first->pipeline, st->pipeline);
    else
      fail(w, TS_ERR_STAGES_DIFFER,
           "ts_lower: \"%s\" is pipelined (ts_pipeline) and \"%s\", "
           "attached at the same loop \"%s\", is %s; pipeline both with "
           "%d stages", first->name, st->name, f->name,
           st->double_buffered ? "double-buffered" : "not", first->pipeline);
    return 0;
  }
  return first->pipeline;
}

/* The copies of tile `tile` (an expression of f's variable) into their
 * copy `lead` of the staged buffers. */
static ir_stmt *issue_tile(ts_arena *a, const ts_loop *f, const attach *at,
                           ir_buffer *const *staged, ir_expr *tile,
                           ir_expr *lead) {
  ir_stmt *items[MAX_ITEMS];
  int n = 0;
  for (int i = 0; i < at->n; i++) {
    const ts_stage *st = at->stages[i];
    if (st->buf->scope != SCOPE_SHARED)
      continue;
    retarget r = {st->buf, staged[i], lead};
    items[n++] = retarget_stmt(a, ir_subst_stmt(a, at->copies[i], f->var,
                                                tile), &r);
  }
  return seq_of(a, items, n);
}

/* The prologue: tiles 0 .. tiles-1 issued, each its own copy group; a
 * tile past the loop's end is an empty group, so that the waits count
 * alike at every extent. */
static int prologue(ts_arena *a, const ts_loop *f, const attach *at,
                    ir_buffer *const *staged, int tiles, ir_stmt **items) {
  int n = 0;
  for (int t = 0; t < tiles; t++) {
    if (t < f->extent)
      items[n++] = issue_tile(a, f, at, staged, ir_int(a, t), ir_int(a, t));
    items[n++] = ir_new_async_commit(a);
  }
  return n;
}

/* Shared caches in `depth` copies filled by cp.async, no registers between
 * (see src/schedule/pipeline.c):
 *
 *   for t in 0..depth-2: issue tile t into S[t]; commit
 *   for ko:
 *     wait depth-2; barrier        tile ko has landed, for every thread
 *     if ko + depth-1 < n: issue tile ko + depth-1 into S[(ko + depth-1) % depth]
 *     commit                       a group each iteration, empty or not
 *     compute on S[ko % depth]
 *
 * The copy overwrites the tile used in iteration ko - 1, which every thread
 * finished before the barrier; it is issued before the computation, so it
 * has the whole iteration to land.  When an enclosing loop runs the
 * pipeline again, a barrier after it keeps the next prologue from
 * overwriting tiles still in use.
 *
 * With n wgmma batches left in flight (ts_wgmma_in_flight), the batch of
 * iteration ko - 1 may still read its tile after the barrier: the barrier
 * proves only the batches of ko - 1 - n and before finished.  So each copy
 * goes n tiles later, tile ko + depth-1-n into the copy of ko - 1 - n, and
 * the waits keep n groups fewer in flight. */
static ir_stmt *tma_pipeline(walker *w, ts_loop *f, attach *at, int depth,
                             int lag, bool outer_repeats);

static ir_stmt *async_pipeline(walker *w, ts_loop *f, attach *at,
                               bool outer_repeats) {
  ts_arena *a = w->cx->arena;
  int depth = pipeline_depth(w, f, at);
  if (!depth)
    return NULL;
  if (ir_kind_is_launch(f->kind)) {
    fail(w, TS_ERR_BAD_ATTACH,
         "ts_lower: a pipelined cache is attached at loop \"%s\", which "
         "is bound; attach it at a serial k loop", f->name);
    return NULL;
  }
  int lag = f->wgmma_in_flight;
  if (depth < lag + 2) {
    fail(w, TS_ERR_BAD_ARG,
         "ts_lower: loop \"%s\" keeps %d wgmma batch%s in flight, so its "
         "pipeline needs %d stages or more (the tile in use, one in flight, "
         "the batches'); it has %d: raise ts_pipeline's stages or lower "
         "ts_wgmma_in_flight's batches", f->name, lag, lag == 1 ? "" : "es",
         lag + 2, depth);
    return NULL;
  }
  for (int i = 0; i < at->n; i++)
    if (at->stages[i]->tma)
      return tma_pipeline(w, f, at, depth, lag, outer_repeats);
  ir_buffer *staged[MAX_ITEMS] = {NULL}, *local_bufs[MAX_ITEMS];
  ir_stmt *locals[MAX_ITEMS];
  int nl = register_copies(at, locals, local_bufs);
  ir_expr *fv = ir_varref(a, f->var);
  ir_expr *ahead = ir_add(a, fv, ir_int(a, depth - 1 - lag));
  retarget cur = {NULL, NULL, ir_binary(a, E_MOD, fv, ir_int(a, depth))};
  ir_stmt *rest = at->rest;
  for (int i = 0; i < at->n; i++) {
    if (at->stages[i]->buf->scope != SCOPE_SHARED)
      continue;
    if (!(staged[i] = copies_of(a, at->stages[i]->buf, depth)))
      return NULL;
    staged[i]->async_fill = true;
    cur.from = at->stages[i]->buf;
    cur.to = staged[i];
    rest = retarget_stmt(a, rest, &cur);
    for (int j = 0; j < nl; j++)
      locals[j] = retarget_stmt(a, locals[j], &cur);
  }
  ir_stmt *body[MAX_ITEMS + 5];
  int nb = 0;
  body[nb++] = ir_new_async_wait(a, depth - 2 - lag);
  body[nb++] = ir_new_barrier(a);
  body[nb++] = ir_new_if(
      a, ir_binary(a, E_LT, ahead, ir_int(a, f->extent)),
      issue_tile(a, f, at, staged, ahead,
                 ir_binary(a, E_MOD, ahead, ir_int(a, depth))),
      NULL);
  body[nb++] = ir_new_async_commit(a);
  for (int j = 0; j < nl; j++)
    body[nb++] = locals[j];
  body[nb++] = rest;
  ir_stmt *items[2 * MAX_DEPTH + 2]; /* ts_pipeline allows 2..8 stages */
  int n = prologue(a, f, at, staged, depth - 1 - lag, items);
  items[n++] = ir_new_for(a, f, ir_new_seq(a, body, nb));
  /* A persistent grid's next tile runs the pipeline again. */
  if (outer_repeats || w->cx->wave)
    items[n++] = ir_new_barrier(a);
  ir_stmt *out = ir_new_seq(a, items, n);
  for (int i = 0; i < nl; i++)
    out = ir_new_alloc(a, local_bufs[i], out);
  for (int i = 0; i < at->n; i++)
    if (staged[i])
      out = ir_new_alloc(a, staged[i], out);
  return out;
}

/* ---- TMA pipelines (ts_tma) ------------------------------------------------- */

/* The expression `tid == 0` or `tid % 32 == 0`. */
static ir_expr *is_thread(ts_arena *a, ir_expr *tid, int64_t every) {
  ir_expr *x = every > 1 ? ir_binary(a, E_MOD, tid, ir_int(a, every)) : tid;
  return ir_binary(a, E_EQ, x, ir_int(a, 0));
}

/* The block's linear thread index from threadIdx itself, over the block
 * as warp specialization grows it: `producer_threads` more along the
 * outermost thread dimension in use (recorded for lower_add_producer).
 * The role tests read it, so the simplifier, which bounds the consumers'
 * thread variables by their loops, cannot fold them. */
static ir_expr *block_thread(walker *w, int producer_threads) {
  lower_ctx *cx = w->cx;
  ts_arena *a = cx->arena;
  int outer = 0;
  int64_t inner = 1;
  for (int d = 0; d < 3; d++)
    if (w->threads[d])
      outer = d;
  for (int d = 0; d < outer; d++)
    inner *= w->threads[d] ? w->threads[d]->extent : 1;
  if (producer_threads % inner) {
    fail(w, TS_ERR_BAD_ARG, "ts_lower: ts_warp_specialize adds %d producer "
         "threads along the block's outermost thread dimension, whose "
         "slices hold %lld threads; bind the consumers so that they divide "
         "it", producer_threads, (long long)inner);
    return NULL;
  }
  cx->producer_dim = outer;
  ir_expr *tid = ir_int(a, 0);
  for (int d = outer; d >= 0; d--) {
    const ts_loop *l = w->threads[d];
    int64_t extent = (l ? l->extent : 1) +
                     (d == outer ? producer_threads / inner : 0);
    ir_var *v = ir_new_var(a, cx->next_var++, ir_loop_kind_name(
                               (ts_loop_kind)(TS_THREAD_X + d)), VAR_LAUNCH,
                           extent);
    if (!v)
      return NULL;
    v->tag = (ts_loop_kind)(TS_THREAD_X + d);
    tid = ir_add(a, ir_mul(a, tid, ir_int(a, extent)), ir_varref(a, v));
  }
  return tid;
}

/* The producer's fill of tile `tile` into stage `stage`: the full
 * barrier's expected bytes, then every cache's boxes. */
static ir_stmt *tma_fill(ts_arena *a, const ir_pipeline *p, const ts_loop *f,
                         const attach *at, const tma_tile *tiles,
                         ir_buffer *const *staged, ir_expr *tile,
                         ir_expr *stage) {
  ir_stmt *items[MAX_ITEMS + 1];
  int n = 0;
  items[n++] = ir_new_mbarrier(a, p, MBAR_EXPECT_TX, MBAR_FULL, stage, NULL);
  for (int i = 0; i < at->n; i++)
    if (staged[i])
      items[n++] = lower_tma_issue(a, p, &tiles[i], staged[i], f, tile, stage);
  return ir_new_seq(a, items, n);
}

/* A stage's wait for the phase of tile `tile`: parity (tile / S) % 2. */
static ir_stmt *tma_wait(ts_arena *a, const ir_pipeline *p, ir_mbar_which bar,
                         ir_expr *tile) {
  ir_expr *S = ir_int(a, p->stages);
  return ir_new_mbarrier(a, p, MBAR_WAIT, bar, ir_binary(a, E_MOD, tile, S),
                         ir_binary(a, E_MOD, ir_binary(a, E_DIV, tile, S),
                                   ir_int(a, 2)));
}

/* A warp-specialized pipeline's threads: the block's (tid), its roles'
 * (role_tid, with the producer's), the consumers', and the wgmma batches
 * in flight. */
typedef struct {
  ir_expr *tid, *role_tid;
  int64_t consumers;
  int lag;
} tma_roles;

/* The pipeline's g-th fill, of k tile `tile`: once the consumers released
 * the stage's fill before it (the phase before g / S of empty[g % S]; for
 * the first S fills the phase before a barrier's first, which has
 * passed), the fill. */
static ir_stmt *tma_refill(ts_arena *a, const ir_pipeline *p,
                           const ts_loop *f, const attach *at,
                           const tma_tile *tiles, ir_buffer *const *staged,
                           ir_expr *tile, ir_expr *g) {
  ir_expr *S = ir_int(a, p->stages), *two = ir_int(a, 2);
  ir_expr *stage = ir_binary(a, E_MOD, g, S);
  ir_expr *parity = ir_binary(a, E_MOD, ir_add(a, ir_binary(a, E_DIV, g, S),
                                                ir_int(a, 1)), two);
  ir_stmt *items[2] = {
      ir_new_mbarrier(a, p, MBAR_WAIT, MBAR_EMPTY, stage, parity),
      tma_fill(a, p, f, at, tiles, staged, tile, stage)};
  return ir_new_seq(a, items, 2);
}

/* A warp-specialized TMA pipeline in a persistent grid's tile loop (of
 * variable `wave`): the pipeline's fills and phases count on across the
 * block's tiles, k tile ko of the tile being the g = wave * n + ko-th,
 * so that the producer, running its own loop, fills the next tile's
 * first stages as soon as the consumers release them, while they finish
 * the last tile:
 *
 *   producer: for t in 0..min(S, n)-1: refill (wait empty) tile t
 *   for ko:
 *     consumers: wait full[g % S], parity (g / S) % 2; compute on g % S;
 *                r = ko - lag: a lane 0 of each warp arrives empty[...]
 *     producer, if r + S < n: refill tile r + S
 *   consumers: the last lag tiles' stages released (after the batches)
 *
 * A refill waits first on empty (tma_refill), so that a tile's first
 * fills wait for the stages the last tile's consumers still read.
 * lower_persistent hoists the pipeline around the tile loop. */
static ir_stmt *tma_across_tiles(walker *w, ts_loop *f, const attach *at,
                                 const ir_pipeline *p, const tma_tile *tiles,
                                 ir_buffer *const *staged,
                                 const tma_roles *r, ir_stmt *rest) {
  lower_ctx *cx = w->cx;
  ts_arena *a = cx->arena;
  int64_t n = f->extent, S = p->stages;
  ir_expr *base = ir_mul(a, ir_varref(a, cx->wave->var), ir_int(a, n));
  ir_expr *fv = ir_varref(a, f->var);
  ir_expr *consumer = ir_binary(a, E_LT, r->role_tid, ir_int(a, r->consumers));
  ir_expr *producer = ir_binary(a, E_EQ, r->role_tid, ir_int(a, p->producer));
  ir_expr *lane0 = is_thread(a, r->tid, 32);
  cx->consumer_test = consumer;
  ir_stmt *fills[MAX_DEPTH];
  int nf = 0;
  for (int64_t t = 0; t < S && t < n; t++)
    fills[nf++] = tma_refill(a, p, f, at, tiles, staged, ir_int(a, t),
                             ir_add(a, base, ir_int(a, t)));
  ir_expr *rk = ir_sub(a, fv, ir_int(a, r->lag));
  ir_expr *rs = ir_binary(a, E_MOD, ir_add(a, base, rk), ir_int(a, S));
  ir_expr *started = r->lag ? ir_binary(a, E_LE, ir_int(a, r->lag), fv)
                            : NULL;
  ir_stmt *consume[3] = {
      tma_wait(a, p, MBAR_FULL, ir_add(a, base, fv)), rest,
      ir_new_if(a, ir_and(a, started, lane0),
                ir_new_mbarrier(a, p, MBAR_ARRIVE, MBAR_EMPTY, rs, NULL),
                NULL)};
  ir_expr *more = ir_binary(a, E_LT, ir_add(a, rk, ir_int(a, S)),
                            ir_int(a, n));
  ir_stmt *body[2] = {
      ir_new_if(a, consumer, ir_new_seq(a, consume, 3), NULL),
      ir_new_if(a, ir_and(a, started, ir_and(a, producer, more)),
                tma_refill(a, p, f, at, tiles, staged,
                           ir_add(a, rk, ir_int(a, S)),
                           ir_add(a, ir_add(a, base, rk), ir_int(a, S))),
                NULL)};
  ir_stmt *tail[MAX_DEPTH];
  int nt = 0;
  for (int64_t k = n - r->lag < 0 ? 0 : n - r->lag; k < n; k++)
    tail[nt++] = ir_new_mbarrier(
        a, p, MBAR_ARRIVE, MBAR_EMPTY,
        ir_binary(a, E_MOD, ir_add(a, base, ir_int(a, k)), ir_int(a, S)),
        NULL);
  ir_stmt *items[3] = {ir_new_if(a, producer, ir_new_seq(a, fills, nf), NULL),
                       ir_new_for(a, f, ir_new_seq(a, body, 2))};
  int ni = 2;
  if (nt)
    items[ni++] = ir_new_if(a, consumer, ir_new_if(a, lane0, ir_new_seq(
                                                   a, tail, nt), NULL), NULL);
  ir_stmt *out = ir_new_pipeline(a, p, ir_new_seq(a, items, ni));
  for (int i = 0; i < at->n; i++)
    out = ir_new_alloc(a, staged[i], out);
  return out;
}

/* Shared caches in `depth` stages filled by the TMA (ts_tma), one thread
 * the producer, every warp a consumer, no barrier in the loop:
 *
 *   producer: for t in 0..depth-1: fill tile t into stage t
 *   for ko:
 *     wait full[ko % S], parity (ko / S) % 2        tile ko has landed
 *     compute on stage ko % S
 *     r = ko - lag (the newest tile no wgmma batch still reads):
 *     a lane 0 of each warp: arrive empty[r % S]    released
 *     producer, if r + S < n: wait empty[r % S], parity (r / S) % 2;
 *               fill tile r + S into stage r % S
 *
 * A fill is the full barrier's arrive.expect_tx of the stage's bytes and
 * the boxes, which complete its phase as they land.  With lag batches of
 * wgmma in flight (ts_wgmma_in_flight) a stage is released lag iterations
 * after its computation, when the batch reading it has retired. */
static ir_stmt *tma_pipeline(walker *w, ts_loop *f, attach *at, int depth,
                             int lag, bool outer_repeats) {
  lower_ctx *cx = w->cx;
  ts_arena *a = cx->arena;
  ir_buffer *staged[MAX_ITEMS] = {NULL};
  tma_tile tiles[MAX_ITEMS];
  int64_t threads, bytes = 0;
  ir_expr *tid = thread_id(w, &threads);
  if (outer_repeats || threads % 32 || at->n > 2) {
    fail(w, TS_ERR_BAD_ARG, "ts_lower: the TMA pipeline at loop \"%s\" "
         "needs %s", f->name, outer_repeats ? "to run once (no serial loop "
         "around it)" : at->n > 2 ? "the caches of A and B only"
         : "whole warps (its consumers arrive one a warp)");
    return NULL;
  }
  int producer_warps = at->stages[0]->producer_warps;
  for (int i = 1; i < at->n; i++)
    if (at->stages[i]->producer_warps != producer_warps) {
      fail(w, TS_ERR_STAGES_DIFFER, "ts_lower: \"%s\" and \"%s\" share "
           "the TMA pipeline at loop \"%s\" with %d and %d producer warps; "
           "specialize both alike (ts_warp_specialize)", at->stages[0]->name,
           at->stages[i]->name, f->name, producer_warps,
           at->stages[i]->producer_warps);
      return NULL;
    }
  if (producer_warps && w->cx->producer_threads) {
    fail(w, TS_ERR_BAD_ARG, "ts_lower: a kernel has one warp-specialized "
         "pipeline; loop \"%s\" would be a second", f->name);
    return NULL;
  }
  if (cx->wave && !producer_warps) {
    fail(w, TS_ERR_BAD_ARG, "ts_lower: the TMA pipeline of \"%s\" at loop "
         "\"%s\" would run on across a persistent grid's tiles "
         "(ts_persistent), which needs a producer warpgroup: add "
         "ts_warp_specialize(s, <its stage>, 4) on each of its caches, or "
         "fill them by cp.async (no ts_tma)", at->stages[0]->name, f->name);
    return NULL;
  }
  ir_pipeline *p = ts_arena_alloc(a, sizeof(*p));
  if (!p)
    return NULL;
  /* In a persistent grid the k tiles count on across the block's tiles:
   * k tile ko of its tile `wave` is the pipeline's wave * n + ko-th. */
  ir_expr *count = ir_varref(a, f->var);
  if (cx->wave)
    count = ir_add(a, ir_mul(a, ir_varref(a, cx->wave->var),
                             ir_int(a, f->extent)), count);
  retarget cur = {NULL, NULL, ir_binary(a, E_MOD, count, ir_int(a, depth))};
  ir_stmt *rest = at->rest;
  for (int i = 0; i < at->n; i++) {
    if (at->stages[i]->buf->scope != SCOPE_SHARED || !at->stages[i]->tma) {
      fail(w, TS_ERR_STAGES_DIFFER, "ts_lower: \"%s\" is attached at loop "
           "\"%s\" beside a TMA-filled cache; fill it by the TMA too "
           "(ts_pipeline, ts_storage_swizzle, ts_tma)", at->stages[i]->name,
           f->name);
      return NULL;
    }
    if (!lower_tma_tile(cx, at->stages[i], at->raw[i], &tiles[i])) {
      w->failed = true;
      return NULL;
    }
    if (!(staged[i] = copies_of(a, at->stages[i]->buf, depth)))
      return NULL;
    bytes += tiles[i].bytes;
    cur.from = at->stages[i]->buf;
    cur.to = staged[i];
    rest = retarget_stmt(a, rest, &cur);
  }
  *p = (ir_pipeline){.id = cx->pipelines++, .stages = depth, .bytes = bytes,
                     .consumers = (int)(threads / 32),
                     .producer = producer_warps ? (int)threads : 0,
                     .producer_threads = producer_warps * 32};
  if (producer_warps) {
    cx->consumers = threads;
    cx->producer_threads = p->producer_threads;
  }
  ir_expr *fv = ir_varref(a, f->var);
  ir_expr *role_tid = producer_warps ? block_thread(w, p->producer_threads)
                                     : tid;
  if (!role_tid)
    return NULL;
  if (cx->wave) {
    tma_roles roles = {tid, role_tid, threads, lag};
    return tma_across_tiles(w, f, at, p, tiles, staged, &roles, rest);
  }
  ir_expr *producer = ir_binary(a, E_EQ, role_tid, ir_int(a, p->producer));
  ir_expr *r = ir_sub(a, fv, ir_int(a, lag));
  ir_expr *rs = ir_binary(a, E_MOD, r, ir_int(a, depth));
  ir_stmt *refill[2] = {
      tma_wait(a, p, MBAR_EMPTY, r),
      tma_fill(a, p, f, at, tiles, staged, ir_add(a, r, ir_int(a, depth)), rs)};
  ir_expr *more = ir_binary(a, E_LT, ir_add(a, r, ir_int(a, depth)),
                            ir_int(a, f->extent));
  ir_expr *started = lag ? ir_binary(a, E_LE, ir_int(a, lag), fv) : NULL;
  ir_stmt *consume[3] = {
      tma_wait(a, p, MBAR_FULL, fv), rest,
      ir_new_if(a, ir_and(a, started, is_thread(a, tid, 32)),
                ir_new_mbarrier(a, p, MBAR_ARRIVE, MBAR_EMPTY, rs, NULL), NULL)};
  ir_stmt *produce = ir_new_if(a, ir_and(a, started, ir_and(a, producer, more)),
                               ir_new_seq(a, refill, 2), NULL);
  /* Warp-specialized, the consumers' part is a role of its own: the
   * producer's threads skip it (the code generator splits the roles). */
  ir_stmt *body[4] = {consume[0], consume[1], consume[2], produce};
  int nbody = 4;
  if (producer_warps) {
    body[0] = ir_new_if(a, ir_binary(a, E_LT, role_tid, ir_int(a, threads)),
                        ir_new_seq(a, consume, 3), NULL);
    body[1] = produce;
    nbody = 2;
  }
  ir_stmt *fills[MAX_DEPTH];
  int nf = 0;
  for (int t = 0; t < depth && t < f->extent; t++)
    fills[nf++] = tma_fill(a, p, f, at, tiles, staged, ir_int(a, t),
                           ir_int(a, t));
  ir_stmt *items[2] = {ir_new_if(a, producer, ir_new_seq(a, fills, nf), NULL),
                       ir_new_for(a, f, ir_new_seq(a, body, nbody))};
  ir_stmt *out = ir_new_pipeline(a, p, ir_new_seq(a, items, 2));
  for (int i = 0; i < at->n; i++)
    out = ir_new_alloc(a, staged[i], out);
  return out;
}

/* ---- Attach points ----------------------------------------------------------- */

static ir_stmt *plain(walker *w, ts_loop *f, attach *at, bool repeats) {
  ts_arena *a = w->cx->arena;
  ir_stmt *items[MAX_ITEMS + 3];
  int n = 0;
  /* Shared copies, one barrier, then register copies, which may read the
   * shared ones. */
  for (int i = 0; i < at->n; i++)
    if (at->stages[i]->buf->scope == SCOPE_SHARED)
      items[n++] = at->copies[i];
  bool any_shared = n > 0;
  if (any_shared)
    items[n++] = ir_new_barrier(a);
  for (int i = 0; i < at->n; i++)
    if (at->stages[i]->buf->scope != SCOPE_SHARED)
      items[n++] = at->copies[i];
  items[n++] = at->rest;
  if (any_shared && (repeats || w->cx->wave))
    items[n++] = ir_new_barrier(a);
  ir_stmt *out = ir_new_for(a, f, ir_new_seq(a, items, n));
  for (int i = 0; i < at->n; i++)
    out = ir_new_alloc(a, at->stages[i]->buf, out);
  return out;
}

static ir_stmt *lower_attach(walker *w, ir_stmt *for_f, bool repeats,
                             bool outer_repeats) {
  ts_arena *a = w->cx->arena;
  ir_stmt *body = for_f->for_.body;
  attach at = {.n = 0};
  int n = body->seq.n;
  while (at.n < n && at.n < MAX_ITEMS && nest_copy_stage(body->seq.items[at.n])) {
    const ts_stage *st = nest_copy_stage(body->seq.items[at.n]);
    ir_stmt *c = body->seq.items[at.n];
    at.stages[at.n] = st;
    at.raw[at.n] = c;
    if (st->buf->scope != SCOPE_SHARED)
      at.copies[at.n] = unroll_copy(w, c);
    else
      at.copies[at.n] = has_bound_loop(c) ? bound_copy(w, c)
                                          : distribute(w, c, st);
    if (!at.copies[at.n])
      return NULL;
    at.n++;
  }
  at.rest = walk(w, seq_of(a, body->seq.items + at.n, n - at.n));
  if (!at.rest)
    return NULL;
  bool db = false, async = false;
  for (int i = 0; i < at.n; i++) {
    db |= at.stages[i]->double_buffered;
    async |= at.stages[i]->pipeline > 0;
  }
  if (async)
    return async_pipeline(w, for_f->for_.loop, &at, outer_repeats);
  return db ? pipeline(w, for_f->for_.loop, &at)
            : plain(w, for_f->for_.loop, &at, repeats);
}

static ir_stmt *walk(walker *w, ir_stmt *st) {
  return w->failed ? NULL : ir_mutate_stmt(&w->m, st);
}

/* A loop, with what its body sees: the thread loops around it, whether it
 * repeats, and the caches attached at it. */
static ir_stmt *lower_loop(ir_mutator *m, ir_stmt *st) {
  walker *w = m->ctx;
  if (w->failed)
    return NULL;
  if (st->kind != S_FOR)
    return ir_mutate_stmt_children(m, st);
  const ts_loop *l = st->for_.loop;
  bool thread = ir_kind_is_thread(l->kind);
  const ts_loop *saved = thread ? w->threads[thread_axis(l->kind)] : NULL;
  bool saved_repeats = w->repeats;
  if (thread)
    w->threads[thread_axis(l->kind)] = l;
  w->repeats |= !ir_kind_is_launch(l->kind) && l->extent > 1;
  ir_stmt *body = st->for_.body;
  ir_stmt *out;
  if (body->kind == S_SEQ && body->seq.n > 0 && nest_copy_stage(body->seq.items[0]))
    out = lower_attach(w, st, w->repeats, saved_repeats);
  else
    out = ir_mutate_stmt_children(m, st);
  if (thread)
    w->threads[thread_axis(l->kind)] = saved;
  w->repeats = saved_repeats;
  return out;
}

ir_stmt *lower_stages(lower_ctx *cx, ir_stmt *root) {
  if (cx->s->nstages == 0)
    return root;
  walker w = {.cx = cx};
  w.m = (ir_mutator){.a = cx->arena, .stmt = lower_loop, .ctx = &w};
  ir_stmt *out = walk(&w, root);
  if (!out && !w.failed)
    lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  return out;
}
