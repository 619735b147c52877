/*
 * Double buffering (ts_double_buffer, ts_double_buffer_tiles), for the
 * stages pass (stages.c): a shared cache in two copies, the next tile
 * loaded into registers while the block computes on the current copy and
 * stored into the other copy after, one barrier a tile or a group of
 * tiles (pipeline_by_tile, pipeline_by_group below).
 */
#include "stages.h"

#include "../ir/visit.h"

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
    stages_fail(
        w, TS_ERR_BAD_ARG,
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
      stages_fail(
          w, TS_ERR_STAGES_DIFFER,
          "ts_lower: \"%s\" is double-buffered and \"%s\", attached at "
          "the same loop, is not; double buffer both", db->name, st->name);
      return 0;
    }
    if (st->buffer_tiles != db->buffer_tiles) {
      stages_fail(
          w, TS_ERR_STAGES_DIFFER,
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
  d->nl = stages_register_copies(at, d->locals, d->local_bufs);
  d->rest = at->rest;
  for (int i = 0; i < at->n; i++) {
    const ts_stage *st = at->stages[i];
    if (st->buf->scope != SCOPE_SHARED)
      continue;
    ir_buffer *all = stages_copies_of(a, st->buf, copies);
    ir_stmt *ld, *sd;
    int k = d->np;
    if (!all || !split_copy(w, at->copies[i], st, &d->regs[k], &ld, &sd))
      return false;
    retarget pro = {st->buf, all, first};
    retarget now = {st->buf, all, cur};
    retarget other = {st->buf, all, nxt};
    d->pro[k] = stages_retarget_stmt(a, ir_subst_stmt(a, at->copies[i], f->var,
                                                      first), &pro);
    d->loads[k] = ir_subst_stmt(a, ld, f->var, ahead);
    d->stores[k] = stages_retarget_stmt(a, ir_subst_stmt(a, sd, f->var, ahead),
                                        &other);
    d->rest = stages_retarget_stmt(a, d->rest, &now);
    for (int j = 0; j < d->nl; j++)
      d->locals[j] = stages_retarget_stmt(a, d->locals[j], &now);
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
  body[nb++] = ir_new_if(a, has_next, stages_seq_of(a, d->loads, d->np), NULL);
  for (int j = 0; j < d->nl; j++)
    body[nb++] = d->locals[j];
  body[nb++] = d->rest;
  body[nb++] = ir_new_if(a, has_next, stages_seq_of(a, d->stores, d->np), NULL);
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
  ir_expr *has_next = ir_binary(a, E_LT, next, ir_loop_size(a, f));
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
  if (f->size) {
    lower_fail(w->cx, TS_ERR_BAD_ARG, "ts_lower: ts_double_buffer_tiles "
               "groups the tiles of loop \"%s\", whose trip count is "
               "chosen at launch (def->runtime); leave K out of "
               "def->runtime, or double-buffer a tile at a time",
               f->name);
    return NULL;
  }
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
  ir_stmt *items[3] = {ir_new_for(a, q0, stages_seq_of(a, d.pro, d.np)),
                       ir_new_barrier(a),
                       ir_new_for(a, g, ir_new_seq(a, body, 2))};
  return wrap_doubled(a, &d, ir_new_seq(a, items, 3));
}

ir_stmt *stages_double_buffer(walker *w, ts_loop *f, attach *at) {
  if (ir_kind_is_launch(f->kind)) {
    stages_fail(
        w, TS_ERR_BAD_ATTACH,
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
