/*
 * The walk of a kernel that finds its memory requests: every warp of a
 * block, each of its 32 lanes with its own indices, through the kernel's
 * statements as the warp runs them.  A serial loop runs every iteration,
 * except a long one (more than 2 ENDS + WINDOW iterations): its first and
 * last ENDS, and WINDOW iterations in its middle that stand for the rest
 * (so a pipeline's prologue and drain, which differ from the steady state
 * only near the ends, are counted exactly, and rows whose alignment
 * changes from one k to the next are counted over a whole period of it).
 * The kernel's k loop (its outermost serial reduction loop) marks what
 * lies before, in and after it; a k step's counts are the mean over the
 * middle WINDOW iterations (or over all of a short k loop).  A guard splits the lanes as it
 * would split the warp; each global or shared access met becomes one
 * request of the lanes that reach it, costed by cost.c, and added to the
 * row of the IR node it came from.
 */
#include <stdlib.h>
#include <string.h>

#include "../ir/eval.h"
#include "../ir/printer.h"
#include "../base/strbuf.h"
#include "../ir/visit.h"
#include "explain_impl.h"

enum { ENDS = 8, WINDOW = 32 };

typedef struct walk {
  const ir_kernel *k;
  int kernel;
  explain_rows *rows;
  int64_t *vars; /* vars[lane * nvars + id] */
  int nvars;
  ir_point pt[WARP];
  int phase;        /* TS_BEFORE_K, TS_IN_K, TS_AFTER_K */
  int64_t k_steps;  /* the k loop's extent once met */
  double weight;    /* iterations this visit stands for */
  double step;      /* the same within the k loop's middle step, else 0 */
  const ir_stmt *group; /* the vectorized loop being expanded, or NULL */
  pending_list pend;    /* requests of the straight-line runs open */
  kernel_walk *out;     /* locals touched are noted here */
  bool thread0;         /* the warp walked holds thread 0 of the block */
  bool as_written;      /* no compiler model (ts_explain_opts) */
  /* Writes (and for shared memory, barriers) so far: a load reused from
   * before one of these is not the same value. */
  unsigned shared_epoch, global_epoch;
} walk;

/* ---- Rows ---------------------------------------------------------------- */

/* The access as the IR text prints it: buf[idx], vec4(...) when lanes. */
static const char *access_text(walk *w, const ir_buffer *buf,
                               ir_expr *const *idx, int lanes) {
  ir_expr e = {.kind = E_LOAD, .type = TY_FLOAT, .dtype = buf->dtype};
  e.load.buf = (ir_buffer *)buf;
  e.load.idx = (ir_expr **)idx;
  e.load.lanes = lanes;
  ts_buf b;
  ts_buf_init(&b);
  ir_print_expr(&b, &e, &ir_pseudo_style);
  char *text = ts_buf_take(&b);
  const char *kept = text ? ts_arena_strdup(w->rows->arena, text) : NULL;
  free(text);
  return kept ? kept : "";
}

typedef struct {
  const ir_buffer *buf;
  bool store;
  const ir_expr *load;
  const ir_stmt *st;
} found_access;

static bool find_in_group(ir_visitor *v, const ir_expr *e) {
  found_access *f = v->ctx;
  if (e->kind == E_LOAD && !f->store && e->load.buf == f->buf) {
    f->load = e;
    v->stop = true;
  }
  return true;
}

static bool find_store_in_group(ir_visitor *v, const ir_stmt *s) {
  found_access *f = v->ctx;
  if (s->kind == S_STORE && f->store && s->store.buf == f->buf) {
    f->st = s;
    v->stop = true;
  }
  return true;
}

/* The text of an access of buf in the vectorized loop being expanded, as
 * the loop was scheduled (its vector marks), so its lanes share one row. */
static const char *group_text(walk *w, const ir_buffer *buf, bool store) {
  found_access f = {.buf = buf, .store = store};
  ir_visitor v = {.expr = find_in_group, .stmt = find_store_in_group,
                  .ctx = &f};
  ir_visit_stmt(&v, w->group->lanes.body);
  if (f.load)
    return access_text(w, buf, f.load->load.idx, f.load->load.lanes);
  if (f.st)
    return access_text(w, buf, f.st->store.idx, f.st->store.lanes);
  return buf->name;
}

static ts_access_report *new_row(walk *w, const void *key) {
  explain_rows *r = w->rows;
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    ts_access_report *rows = realloc(r->rows, sizeof(*rows) * (size_t)cap);
    if (rows)
      r->rows = rows;
    const void **keys = realloc(r->keys, sizeof(*keys) * (size_t)cap);
    if (keys)
      r->keys = keys;
    double *pads = realloc(r->pad_wavefronts,
                           sizeof(*pads) * PAD_SLOTS * (size_t)cap);
    if (pads)
      r->pad_wavefronts = pads;
    if (!rows || !keys || !pads)
      return r->oom = true, NULL;
    r->cap = cap;
  }
  r->keys[r->n] = key;
  memset(row_pad_wavefronts(r, r->n), 0, sizeof(double) * PAD_SLOTS);
  ts_access_report *row = &r->rows[r->n++];
  memset(row, 0, sizeof(*row));
  row->kernel = w->kernel;
  return row;
}

/* The row of (key, kind): the IR node, or in an expanded vectorized loop
 * the loop and the buffer, so that its lanes add up in one row. */
static ts_access_report *row_for(walk *w, const void *key, ts_access_kind kind,
                                 const ir_buffer *buf) {
  const void *k = w->group ? (const void *)w->group : key;
  for (int i = 0; i < w->rows->n; i++) {
    ts_access_report *r = &w->rows->rows[i];
    if (w->rows->keys[i] == k && r->kernel == w->kernel && r->kind == kind &&
        strcmp(r->buffer, buf->name) == 0)
      return r;
  }
  ts_access_report *r = new_row(w, k);
  if (r) {
    r->kind = kind;
    r->phase = w->phase;
    r->buffer = ts_arena_strdup(w->rows->arena, buf->name);
    if (!r->buffer)
      r->buffer = "", w->rows->oom = true;
  }
  return r;
}

/* ---- Addresses ----------------------------------------------------------- */

/* Each active lane's byte address of buf[idx]; a lane whose indices do not
 * evaluate drops out of the request. */
static void addresses(walk *w, const ir_buffer *buf, ir_expr *const *idx,
                      int lanes, const bool *mask, warp_req *q) {
  int size = ts_dtype_size(buf->dtype);
  q->width = size * (lanes > 1 ? lanes : 1);
  for (int l = 0; l < WARP; l++) {
    q->active[l] = mask[l];
    if (!mask[l])
      continue;
    int64_t off = 0, at;
    for (int d = 0; d < buf->ndim && q->active[l]; d++) {
      q->active[l] = ir_eval_int(idx[d], &w->pt[l], &at);
      off += at * buf->strides[d];
    }
    q->addr[l] = ir_swizzle_offset(buf, off) * size;
  }
}

static bool any(const bool *mask) {
  for (int l = 0; l < WARP; l++)
    if (mask[l])
      return true;
  return false;
}

/* Queues a request of the lanes of q for its run's end (compiled.c). */
static void queue(walk *w, ts_access_report *r, const ir_buffer *buf,
                  cost_how how, const warp_req *q, bool load) {
  pending_req p = {.row = r, .index = (int)(r - w->rows->rows),
                   .buf = buf, .how = how, .q = *q, .load = load,
                   .weight = w->weight, .step = w->step,
                   .epoch = buf->scope == SCOPE_SHARED ? w->shared_epoch
                                                       : w->global_epoch};
  if (!pending_add(&w->pend, &p))
    w->rows->oom = true;
}

/* A store to buf: loads of it before are not the values after. */
static void written(walk *w, const ir_buffer *buf) {
  if (buf->scope == SCOPE_SHARED)
    w->shared_epoch++;
  else
    w->global_epoch++;
}

/* The elements of a local buffer that thread 0 (lane 0 of its warp)
 * touches, noted once for the kernel. */
static void note_local(walk *w, const ir_buffer *buf, ir_expr *const *idx,
                       int lanes, const bool *mask) {
  if (!w->thread0 || !mask[0] || buf->vector)
    return;
  kernel_walk *kw = w->out;
  local_use *u = NULL;
  for (int i = 0; i < kw->nlocals && !u; i++)
    u = kw->locals[i].buf == buf ? &kw->locals[i] : NULL;
  if (!u) {
    local_use *more = realloc(kw->locals, sizeof(*more) *
                                              (size_t)(kw->nlocals + 1));
    int64_t size = ir_buffer_size(buf);
    uint8_t *seen = more ? calloc((size_t)size, 1) : NULL;
    if (more)
      kw->locals = more;
    if (!seen)
      return (void)(w->rows->oom = true);
    u = &kw->locals[kw->nlocals++];
    *u = (local_use){.buf = buf, .seen = seen, .size = size};
  }
  int64_t off = 0, at;
  for (int d = 0; d < buf->ndim; d++) {
    if (!ir_eval_int(idx[d], &w->pt[0], &at))
      return;
    off += at * buf->strides[d];
  }
  for (int l = 0; l < (lanes > 1 ? lanes : 1); l++)
    if (off + l >= 0 && off + l < u->size && !u->seen[off + l]) {
      u->seen[off + l] = 1;
      u->touched++;
    }
}

/* One access of a global or shared buffer by the lanes of mask. */
static void access(walk *w, const void *key, const ir_buffer *buf,
                   ir_expr *const *idx, int lanes, bool store, bool atomic,
                   const bool *mask) {
  if (buf->scope == SCOPE_LOCAL)
    note_local(w, buf, idx, lanes, mask);
  if (buf->scope == SCOPE_LOCAL || !any(mask))
    return;
  bool global = buf->scope == SCOPE_GLOBAL;
  ts_access_kind kind = global ? (atomic  ? TS_ACCESS_GLOBAL_ATOMIC
                                  : store ? TS_ACCESS_GLOBAL_STORE
                                          : TS_ACCESS_GLOBAL_LOAD)
                        : store ? TS_ACCESS_SHARED_STORE
                                : TS_ACCESS_SHARED_LOAD;
  ts_access_report *r = row_for(w, key, kind, buf);
  if (!r)
    return;
  if (!r->text) {
    r->text = w->group ? group_text(w, buf, store)
                       : access_text(w, buf, idx, lanes);
    r->scalar_lanes = w->group && lanes <= 1;
  }
  warp_req q;
  addresses(w, buf, idx, lanes, mask, &q);
  queue(w, r, buf, global ? COST_GLOBAL : COST_SHARED, &q, !store);
  if (store)
    written(w, buf);
}

/* ---- Expressions --------------------------------------------------------- */

static void walk_expr(walk *w, const ir_expr *e, const bool *mask);

/* The lanes of mask for which cond holds, and those for which it does
 * not; a lane whose condition does not evaluate (it reads memory) takes
 * the first branch. */
static void split_lanes(const walk *w, const ir_expr *cond, const bool *mask,
                        bool *then_, bool *else_) {
  for (int l = 0; l < WARP; l++) {
    int64_t c = 1;
    bool known = mask[l] && ir_eval_int(cond, &w->pt[l], &c);
    then_[l] = mask[l] && (!known || c);
    else_[l] = mask[l] && known && !c;
  }
}

/* c ? a : b, each side for the lanes that take it. */
static void walk_select(walk *w, const ir_expr *e, const bool *mask) {
  bool then_[WARP], else_[WARP];
  split_lanes(w, e->op.c, mask, then_, else_);
  walk_expr(w, e->op.a, then_);
  walk_expr(w, e->op.b, else_);
}

static void walk_expr(walk *w, const ir_expr *e, const bool *mask) {
  if (!e || !any(mask))
    return;
  switch (ir_expr_form(e->kind)) {
  case FORM_LOAD:
    access(w, e, e->load.buf, e->load.idx, e->load.lanes, false, false, mask);
    return;
  case FORM_SELECT: walk_select(w, e, mask); return;
  case FORM_UNARY: walk_expr(w, e->op.a, mask); return;
  case FORM_BINARY:
    walk_expr(w, e->op.a, mask);
    walk_expr(w, e->op.b, mask);
    return;
  case FORM_VECTOR:
    for (int i = 0; i < e->vector.n; i++)
      walk_expr(w, e->vector.lane[i], mask);
    return;
  default: return;
  }
}

/* ---- Statements ---------------------------------------------------------- */

static void walk_stmt(walk *w, const ir_stmt *s, const bool *mask);

static void set_var(walk *w, const ir_var *v, int64_t value) {
  for (int l = 0; l < WARP; l++)
    w->vars[(size_t)l * (size_t)w->nvars + (size_t)v->id] = value;
}

/* A launch loop: its variable is the launch index (or its swizzle's
 * expression of them) lane by lane. */
static void walk_launch(walk *w, const ir_stmt *s, const bool *mask) {
  const ts_loop *lp = s->for_.loop;
  ir_var launch = {.kind = VAR_LAUNCH, .tag = lp->kind};
  ir_expr tag = {.kind = E_VAR, .type = TY_INT, .var = &launch};
  const ir_expr *index = s->for_.index ? s->for_.index : &tag;
  for (int l = 0; l < WARP; l++) {
    int64_t v = 0;
    ir_eval_int(index, &w->pt[l], &v);
    w->vars[(size_t)l * (size_t)w->nvars + (size_t)lp->var->id] = v;
  }
  walk_stmt(w, s->for_.body, mask);
}

static bool visit_loop(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_FOR) {
    *(bool *)v->ctx = true;
    v->stop = true;
  }
  return true;
}

/* A serial loop the compiled code keeps as a loop, so that each of its
 * iterations is a straight-line run of its own.  Unrolled loops are laid
 * out flat, and so does the compiler lay out a short loop with no loop
 * inside it (32 iterations or fewer: NVVM unrolls such loops in full). */
static bool stays_a_loop(const ir_stmt *s) {
  const ts_loop *lp = s->for_.loop;
  if (lp->kind != TS_SERIAL)
    return false;
  if (lp->extent > 32)
    return true;
  bool inner = false;
  ir_visitor v = {.stmt = visit_loop, .ctx = &inner};
  ir_visit_stmt(&v, s->for_.body);
  return inner;
}

/* One iteration standing for `count` of the loop.  per_step: within the k
 * loop, its share of one steady-state k step, or -1 for an iteration at
 * its ends (not the steady state); 0 elsewhere (the share is the outer
 * one's, times count). */
static void iteration(walk *w, const ir_stmt *s, int64_t it, double count,
                      double per_step, const bool *mask) {
  double weight = w->weight, step = w->step;
  int run = w->pend.n;
  set_var(w, s->for_.loop->var, it);
  w->weight = weight * count;
  w->step = per_step > 0 ? per_step : per_step < 0 ? 0 : step * count;
  walk_stmt(w, s->for_.body, mask);
  if (stays_a_loop(s))
    pending_flush(&w->pend, run, w->as_written);
  w->weight = weight;
  w->step = step;
}

static void walk_serial(walk *w, const ir_stmt *s, const bool *mask) {
  const ts_loop *lp = s->for_.loop;
  int64_t e = lp->extent;
  bool is_k = w->phase == TS_BEFORE_K && lp->reduce;
  if (is_k) {
    w->phase = TS_IN_K;
    w->k_steps = e;
  }
  /* An unrolled loop is walked whole: it is straight-line code, and its
   * iterations may differ in ways no window stands for (a lane's
   * accumulator registers, guarded past an edge, in order). */
  if (e <= 2 * ENDS + WINDOW || lp->kind == TS_UNROLLED) {
    for (int64_t it = 0; it < e; it++)
      iteration(w, s, it, 1, is_k ? 1.0 / (double)e : 0, mask);
  } else {
    /* The ends one by one; the middle run's WINDOW iterations (a whole
     * period of any row alignment: 32 bytes over elements of 1 byte or
     * more) stand for all of it. */
    double share = (double)(e - 2 * ENDS) / WINDOW;
    int64_t from = e / 2 - WINDOW / 2;
    for (int64_t it = 0; it < ENDS; it++)
      iteration(w, s, it, 1, is_k ? -1 : 0, mask);
    for (int64_t it = from; it < from + WINDOW; it++)
      iteration(w, s, it, share, is_k ? 1.0 / WINDOW : 0, mask);
    for (int64_t it = e - ENDS; it < e; it++)
      iteration(w, s, it, 1, is_k ? -1 : 0, mask);
  }
  if (is_k)
    w->phase = TS_AFTER_K;
}

static void walk_if(walk *w, const ir_stmt *s, const bool *mask) {
  bool then_[WARP], else_[WARP];
  split_lanes(w, s->if_.cond, mask, then_, else_);
  walk_stmt(w, s->if_.then_, then_);
  walk_stmt(w, s->if_.else_, else_);
}

/* cp.async: the global side's sectors and the shared side's wavefronts in
 * one row. */
static void walk_async(walk *w, const ir_stmt *s, const bool *mask) {
  const ir_expr *src = s->store.value;
  if (src->kind != E_LOAD) {
    walk_expr(w, src, mask);
    return;
  }
  ts_access_report *r = row_for(w, s, TS_ACCESS_CP_ASYNC, s->store.buf);
  if (!r)
    return;
  if (!r->text)
    r->text = access_text(w, src->load.buf, src->load.idx, src->load.lanes);
  pending_req p = {.row = r, .index = (int)(r - w->rows->rows),
                   .buf = s->store.buf, .how = COST_ASYNC,
                   .weight = w->weight, .step = w->step};
  addresses(w, src->load.buf, src->load.idx, src->load.lanes, mask, &p.q);
  addresses(w, s->store.buf, s->store.idx, s->store.lanes, mask,
            &p.shared_side);
  if (!pending_add(&w->pend, &p))
    w->rows->oom = true;
  written(w, s->store.buf);
}

static void walk_store(walk *w, const ir_stmt *s, const bool *mask) {
  if (s->store.async) {
    walk_async(w, s, mask);
    return;
  }
  walk_expr(w, s->store.value, mask);
  access(w, s, s->store.buf, s->store.idx, s->store.lanes, true,
         s->store.atomic, mask);
}

/* A warp's request of `matrices` 8 x 8 matrices whose rows the lanes'
 * `row` loads address (ldmatrix, stmatrix): rows of 16 bytes, one phase
 * a matrix at best. */
static void matrix_request(walk *w, const ir_stmt *s, ts_access_kind kind,
                           const ir_expr *row, int matrices,
                           const bool *mask) {
  const ir_buffer *buf = row->load.buf;
  ts_access_report *r = row_for(w, s, kind, buf);
  if (!r)
    return;
  if (!r->text)
    r->text = access_text(w, buf, row->load.idx, 1);
  pending_req p = {.row = r, .index = (int)(r - w->rows->rows), .buf = buf,
                   .how = COST_LDMATRIX, .matrices = matrices,
                   .weight = w->weight, .step = w->step};
  addresses(w, buf, row->load.idx, 1, mask, &p.q);
  p.q.width = 16;
  if (!pending_add(&w->pend, &p))
    w->rows->oom = true;
}

static void walk_ldmatrix(walk *w, const ir_stmt *s, const bool *mask) {
  matrix_request(w, s, TS_ACCESS_LDMATRIX, s->ldsm.src, s->ldsm.matrices,
                 mask);
}

/* stmatrix: its values' reads, then its request, a write of the stage. */
static void walk_stmatrix(walk *w, const ir_stmt *s, const bool *mask) {
  for (int v = 0; v < 2 * s->stsm.matrices; v++)
    walk_expr(w, s->stsm.value[v], mask);
  matrix_request(w, s, TS_ACCESS_STMATRIX, s->stsm.dst, s->stsm.matrices,
                 mask);
  written(w, s->stsm.dst->load.buf);
}

static void walk_lanes(walk *w, const ir_stmt *s, const bool *mask) {
  const ir_stmt *outer = w->group;
  w->group = s;
  walk_stmt(w, s->lanes.expanded, mask);
  w->group = outer;
}

static void walk_stmt(walk *w, const ir_stmt *s, const bool *mask) {
  if (!s || !any(mask) || w->rows->oom)
    return;
  switch (s->kind) {
  case S_FOR:
    if (s->for_.loop->persistent) /* a block's first tile stands for each */
      iteration(w, s, 0, 1, 0, mask);
    else
      (ir_kind_is_launch(s->for_.loop->kind) ? walk_launch : walk_serial)(
          w, s, mask);
    return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      walk_stmt(w, s->seq.items[i], mask);
    return;
  case S_STORE: walk_store(w, s, mask); return;
  case S_IF: walk_if(w, s, mask); return;
  case S_ALLOC:
    walk_expr(w, s->alloc.init, mask);
    walk_stmt(w, s->alloc.body, mask);
    return;
  case S_LANES: walk_lanes(w, s, mask); return;
  case S_PIPELINE: /* its copies are the TMA's; a persistent grid's tile
                    * loop may lie inside */
    walk_stmt(w, s->pipe.body, mask);
    return;
  case S_LDMATRIX: walk_ldmatrix(w, s, mask); return;
  case S_STMATRIX: walk_stmatrix(w, s, mask); return;
  case S_BARRIER: case S_ASYNC_WAIT: w->shared_epoch++; return;
  default: return; /* copy groups, mma: no memory of their own */
  }
}

/* ---- Warps and blocks ---------------------------------------------------- */

/* The threads that run the kernel's body: a warp-specialized pipeline's
 * producer warpgroup runs only its copies, which are the TMA's. */
static int64_t body_threads(const ir_kernel *k) {
  return k->consumer_threads ? k->consumer_threads
                             : k->block[0] * k->block[1] * k->block[2];
}

/* Warp `warp` of block b: lane l is thread 32 warp + l, where it exists. */
static void walk_warp(walk *w, const int64_t *b, int64_t warp) {
  const int64_t *bd = w->k->block;
  int64_t threads = body_threads(w->k);
  bool mask[WARP];
  for (int l = 0; l < WARP; l++) {
    int64_t t = warp * WARP + l;
    mask[l] = t < threads;
    ir_point *p = &w->pt[l];
    p->vars = w->vars + (size_t)l * (size_t)w->nvars;
    for (int d = 0; d < 3; d++) {
      p->block[d] = b[d];
      p->grid[d] = w->k->grid[d];
    }
    p->thread[0] = t % bd[0];
    p->thread[1] = t / bd[0] % bd[1];
    p->thread[2] = t / (bd[0] * bd[1]);
  }
  w->phase = TS_BEFORE_K;
  w->weight = 1;
  w->step = 0;
  walk_stmt(w, w->k->body, mask);
  pending_flush(&w->pend, 0, w->as_written);
}

static void walk_block(walk *w, const int64_t *b) {
  int64_t warps = (body_threads(w->k) + WARP - 1) / WARP;
  for (int64_t warp = 0; warp < warps; warp++) {
    w->thread0 = warp == 0 && w->out->blocks_walked == 0;
    walk_warp(w, b, warp);
  }
}

void kernel_walk_free(kernel_walk *kw) {
  for (int i = 0; i < kw->nlocals; i++)
    free(kw->locals[i].seen);
  free(kw->locals);
  kw->locals = NULL;
  kw->nlocals = 0;
}

bool walk_kernel(const ir_kernel *k, int index, const ts_explain_opts *o,
                 explain_rows *rows, kernel_walk *out) {
  walk w = {.k = k, .kernel = index, .rows = rows, .nvars = k->nvars,
            .as_written = o->as_written, .out = out, .pend = {.rows = rows}};
  bool every_block = o->every_block;
  int first = rows->n;
  w.vars = calloc((size_t)WARP * (size_t)(k->nvars ? k->nvars : 1),
                  sizeof(*w.vars));
  if (!w.vars)
    return rows->oom = true, false;
  const int64_t *g = k->grid;
  int64_t b[3];
  out->blocks_walked = 0;
  if (every_block) {
    for (b[2] = 0; b[2] < g[2]; b[2]++)
      for (b[1] = 0; b[1] < g[1]; b[1]++)
        for (b[0] = 0; b[0] < g[0]; b[0]++, out->blocks_walked++)
          walk_block(&w, b);
  } else {
    for (int d = 0; d < 3; d++)
      b[d] = g[d] / 2;
    walk_block(&w, b);
    out->blocks_walked = 1;
  }
  out->k_steps = w.k_steps;
  for (int i = first; i < rows->n; i++)
    if (!w.k_steps)
      rows->rows[i].phase = TS_NO_K;
  free(w.vars);
  free(w.pend.v);
  return !rows->oom;
}
