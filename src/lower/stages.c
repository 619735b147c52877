/*
 * Lowering caches (the stages pass).  At each loop whose body starts with
 * copy nests:
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
 *     iteration, or per group of tiles (ts_double_buffer_tiles; both in
 *     stages_buffer.c), a copy pipelined by ts_pipeline one of cp.async
 *     copies (async_pipeline below), and one filled by the TMA (ts_tma) a
 *     pipeline on mbarriers (stages_tma.c):
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
 * split and retarget the copy nests.  This file holds the walk, the copy
 * nests, the attach points, the copies of a cache that every pipeline
 * makes (stages.h shares them) and the cp.async pipelines.
 */
#include "stages.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../ir/analysis.h"
#include "../ir/visit.h"

enum { MAX_UNROLLED_ROUNDS = 32 };

static ir_stmt *walk(walker *w, ir_stmt *st);

static int thread_axis(ts_loop_kind k) {
  return k == TS_THREAD_X ? 0 : k == TS_THREAD_Y ? 1 : 2;
}

void stages_fail(walker *w, ts_status code, const char *fmt, ...) {
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
ir_expr *stages_thread_id(walker *w, int64_t *count) {
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
  ir_expr *tid = stages_thread_id(w, &nthreads);
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

/* ---- Copies of a cache (every pipeline's) ---------------------------- */

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
ir_stmt *stages_retarget_stmt(ts_arena *a, ir_stmt *st, const retarget *r) {
  ir_mutator m = {.a = a, .expr = retarget_load, .stmt = retarget_store,
                  .ctx = (void *)r};
  return ir_mutate_stmt(&m, st);
}

/* n copies of a shared buffer, the copy index outermost. */
ir_buffer *stages_copies_of(ts_arena *a, const ir_buffer *b, int64_t n) {
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

ir_stmt *stages_seq_of(ts_arena *a, ir_stmt *const *items, int n) {
  return n == 1 ? items[0] : ir_new_seq(a, items, n);
}

/* Register caches filled at the attach loop (of the shared ones, say):
 * in a pipeline they read the current copy, like the rest of the body. */
int stages_register_copies(const attach *at, ir_stmt **copies,
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
      stages_fail(
          w, TS_ERR_STAGES_DIFFER,
          "ts_lower: \"%s\" and \"%s\", attached at loop \"%s\", are "
          "pipelined with %d and %d stages; their tiles share copy groups, "
          "so give both one count", first->name, st->name, f->name,
          first->pipeline, st->pipeline);
    else
      stages_fail(
          w, TS_ERR_STAGES_DIFFER,
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
    items[n++] = stages_retarget_stmt(a, ir_subst_stmt(a, at->copies[i], f->var,
                                                       tile), &r);
  }
  return stages_seq_of(a, items, n);
}

/* The prologue: tiles 0 .. tiles-1 issued, each its own copy group; a
 * tile past the loop's end is an empty group, so that the waits count
 * alike at every extent. */
static int prologue(ts_arena *a, const ts_loop *f, const attach *at,
                    ir_buffer *const *staged, int tiles, ir_stmt **items) {
  int n = 0;
  for (int t = 0; t < tiles; t++) {
    if (f->size) /* a trip count chosen at launch: tested at run time */
      items[n++] = ir_new_if(a, ir_binary(a, E_LT, ir_int(a, t), f->size),
                             issue_tile(a, f, at, staged, ir_int(a, t),
                                        ir_int(a, t)), NULL);
    else if (t < f->extent)
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
static ir_stmt *async_pipeline(walker *w, ts_loop *f, attach *at,
                               bool outer_repeats) {
  ts_arena *a = w->cx->arena;
  int depth = pipeline_depth(w, f, at);
  if (!depth)
    return NULL;
  if (ir_kind_is_launch(f->kind)) {
    stages_fail(
        w, TS_ERR_BAD_ATTACH,
        "ts_lower: a pipelined cache is attached at loop \"%s\", which "
        "is bound; attach it at a serial k loop", f->name);
    return NULL;
  }
  int lag = f->wgmma_in_flight;
  if (depth < lag + 2) {
    stages_fail(
        w, TS_ERR_BAD_ARG,
        "ts_lower: loop \"%s\" keeps %d wgmma batch%s in flight, so its "
        "pipeline needs %d stages or more (the tile in use, one in flight, "
        "the batches'); it has %d: raise ts_pipeline's stages or lower "
        "ts_wgmma_in_flight's batches", f->name, lag, lag == 1 ? "" : "es",
        lag + 2, depth);
    return NULL;
  }
  for (int i = 0; i < at->n; i++)
    if (at->stages[i]->tma)
      return stages_tma_pipeline(w, f, at, depth, lag, outer_repeats);
  ir_buffer *staged[MAX_ITEMS] = {NULL}, *local_bufs[MAX_ITEMS];
  ir_stmt *locals[MAX_ITEMS];
  int nl = stages_register_copies(at, locals, local_bufs);
  ir_expr *fv = ir_varref(a, f->var);
  ir_expr *ahead = ir_add(a, fv, ir_int(a, depth - 1 - lag));
  retarget cur = {NULL, NULL, ir_binary(a, E_MOD, fv, ir_int(a, depth))};
  ir_stmt *rest = at->rest;
  for (int i = 0; i < at->n; i++) {
    if (at->stages[i]->buf->scope != SCOPE_SHARED)
      continue;
    if (!(staged[i] = stages_copies_of(a, at->stages[i]->buf, depth)))
      return NULL;
    staged[i]->async_fill = true;
    cur.from = at->stages[i]->buf;
    cur.to = staged[i];
    rest = stages_retarget_stmt(a, rest, &cur);
    for (int j = 0; j < nl; j++)
      locals[j] = stages_retarget_stmt(a, locals[j], &cur);
  }
  ir_stmt *body[MAX_ITEMS + 5];
  int nb = 0;
  body[nb++] = ir_new_async_wait(a, depth - 2 - lag);
  body[nb++] = ir_new_barrier(a);
  body[nb++] = ir_new_if(
      a, ir_binary(a, E_LT, ahead, ir_loop_size(a, f)),
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
  at.rest = walk(w, stages_seq_of(a, body->seq.items + at.n, n - at.n));
  if (!at.rest)
    return NULL;
  bool db = false, async = false;
  for (int i = 0; i < at.n; i++) {
    db |= at.stages[i]->double_buffered;
    async |= at.stages[i]->pipeline > 0;
  }
  if (async)
    return async_pipeline(w, for_f->for_.loop, &at, outer_repeats);
  return db ? stages_double_buffer(w, for_f->for_.loop, &at)
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
  w->repeats |= !ir_kind_is_launch(l->kind) && (l->size || l->extent > 1);
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
