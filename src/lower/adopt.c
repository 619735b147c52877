/*
 * The last step of lowering: the finished kernel, built in a scratch arena
 * out of the schedule's loops and buffers and lowering's own, is copied
 * into the program's arena.  Every loop, variable and buffer gets a copy of
 * its own, so the program shares no pointer with the schedule (which may be
 * changed or freed afterwards) and carries none of lowering's garbage.
 * Variables are numbered 0..nvars-1 in the order they are met, which is the
 * executor's slot numbering.
 */
#include "lower.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  ts_program *p;
  ts_arena *a;
  int nold;          /* variable ids of the scratch kernel are below this */
  ir_var **vars;     /* by old id: the copy, or NULL */
  ts_loop **loops;   /* by old id */
  int nvars;         /* copies made: the next new id */
  const ir_buffer **from;
  ir_buffer **to;
  int nbufs, bufs_cap;
  /* The pipelines copied so far (a kernel has a few): old, then new. */
  ir_var *params[TS_VALUE_COUNT]; /* the copies of the VAR_PARAM ones */
  const ir_pipeline *pipes_from[8];
  ir_pipeline *pipes_to[8];
  int npipes;
  bool failed;
} adopter;

/* The program's copy of pipeline p, made at its S_PIPELINE, which the
 * copies and barrier operations inside it come after. */
static const ir_pipeline *adopt_pipeline(adopter *ad, const ir_pipeline *p) {
  for (int i = 0; i < ad->npipes; i++)
    if (ad->pipes_from[i] == p)
      return ad->pipes_to[i];
  ir_pipeline *c = ad->npipes < 8 ? ts_arena_alloc(ad->a, sizeof(*c)) : NULL;
  if (!c) {
    ad->failed = true;
    return NULL;
  }
  *c = *p;
  ad->pipes_from[ad->npipes] = p;
  ad->pipes_to[ad->npipes++] = c;
  return c;
}

/* A value taken at launch: one copy of each, with no slot. */
static ir_var *adopt_param(adopter *ad, const ir_var *v) {
  if (v->value < 0 || v->value >= TS_VALUE_COUNT) {
    ad->failed = true;
    return NULL;
  }
  if (!ad->params[v->value]) {
    ir_var *c = ts_arena_alloc(ad->a, sizeof(*c));
    if (!c)
      return NULL;
    *c = *v;
    c->name = ts_arena_strdup(ad->a, v->name);
    ad->params[v->value] = c;
  }
  return ad->params[v->value];
}

static ir_var *adopt_var(adopter *ad, const ir_var *v) {
  if (!v)
    return NULL;
  if (v->kind == VAR_PARAM)
    return adopt_param(ad, v);
  if (v->id < 0 || v->id >= ad->nold) {
    ad->failed = true;
    return NULL;
  }
  if (!ad->vars[v->id]) {
    ir_var *c = ts_arena_alloc(ad->a, sizeof(*c));
    if (!c)
      return NULL;
    *c = *v;
    c->id = ad->nvars++;
    c->name = ts_arena_strdup(ad->a, v->name);
    ad->vars[v->id] = c;
  }
  return ad->vars[v->id];
}

static ir_expr *adopt_expr(adopter *ad, const ir_expr *e);

static ts_loop *adopt_loop(adopter *ad, const ts_loop *l) {
  if (l->var->id < 0 || l->var->id >= ad->nold) {
    ad->failed = true;
    return NULL;
  }
  ts_loop **slot = &ad->loops[l->var->id];
  if (!*slot) {
    ts_loop *c = ts_arena_alloc(ad->a, sizeof(*c));
    if (!c)
      return NULL;
    *c = *l;
    c->var = adopt_var(ad, l->var);
    c->id = c->var ? c->var->id : -1;
    c->name = c->var ? c->var->name : NULL;
    c->birth = c->name;
    c->live = false;
    c->owner = ad->p;
    c->stage = NULL;
    c->made_by = l->made_by ? ts_arena_strdup(ad->a, l->made_by) : NULL;
    c->size = adopt_expr(ad, l->size);
    *slot = c;
  }
  return *slot;
}

static ir_buffer *adopt_buffer(adopter *ad, const ir_buffer *b) {
  for (int i = 0; i < ad->nbufs; i++)
    if (ad->from[i] == b)
      return ad->to[i];
  if (ad->nbufs == ad->bufs_cap) {
    int cap = ad->bufs_cap ? 2 * ad->bufs_cap : 16;
    const ir_buffer **from = realloc(ad->from, sizeof(*from) * (size_t)cap);
    if (from)
      ad->from = from;
    ir_buffer **to = realloc(ad->to, sizeof(*to) * (size_t)cap);
    if (to)
      ad->to = to;
    if (!from || !to) {
      ad->failed = true;
      return NULL;
    }
    ad->bufs_cap = cap;
  }
  ir_buffer *c = ts_arena_alloc(ad->a, sizeof(*c));
  if (!c)
    return NULL;
  *c = *b;
  c->name = ts_arena_strdup(ad->a, b->name);
  c->made_by = b->made_by ? ts_arena_strdup(ad->a, b->made_by) : NULL;
  ad->from[ad->nbufs] = b;
  ad->to[ad->nbufs++] = c;
  for (int d = 0; d < b->ndim; d++) {
    c->shape_expr[d] = adopt_expr(ad, b->shape_expr[d]);
    c->stride_expr[d] = adopt_expr(ad, b->stride_expr[d]);
  }
  return c;
}

static ir_expr **adopt_exprs(adopter *ad, ir_expr *const *xs, int n) {
  ir_expr **c = ts_arena_alloc(ad->a, sizeof(*c) * (size_t)(n ? n : 1));
  for (int i = 0; c && i < n; i++)
    c[i] = adopt_expr(ad, xs[i]);
  return c;
}

static ir_expr *adopt_expr(adopter *ad, const ir_expr *e) {
  if (!e)
    return NULL;
  ir_expr *c = ts_arena_alloc(ad->a, sizeof(*c));
  if (!c)
    return NULL;
  *c = *e;
  switch (e->kind) {
  case E_INT:
  case E_FLOAT:
    break;
  case E_VAR:
    c->var = adopt_var(ad, e->var);
    break;
  case E_LOAD:
    c->load.buf = adopt_buffer(ad, e->load.buf);
    c->load.idx = adopt_exprs(ad, e->load.idx, e->load.buf->ndim);
    break;
  case E_VECTOR:
    c->vector.lane = adopt_exprs(ad, e->vector.lane, e->vector.n);
    break;
  default: /* operators: a, b and c, where present */
    c->op.a = adopt_expr(ad, e->op.a);
    c->op.b = adopt_expr(ad, e->op.b);
    c->op.c = adopt_expr(ad, e->op.c);
    break;
  }
  return c;
}

static ir_stmt *adopt_stmt(adopter *ad, const ir_stmt *s) {
  if (!s)
    return NULL;
  ir_stmt *c = ts_arena_alloc(ad->a, sizeof(*c));
  if (!c)
    return NULL;
  *c = *s;
  switch (s->kind) {
  case S_FOR:
    c->for_.loop = adopt_loop(ad, s->for_.loop);
    c->for_.index = adopt_expr(ad, s->for_.index);
    c->for_.body = adopt_stmt(ad, s->for_.body);
    break;
  case S_SEQ:
    c->seq.items = ts_arena_alloc(ad->a, sizeof(ir_stmt *) *
                                             (size_t)(s->seq.n ? s->seq.n : 1));
    for (int i = 0; c->seq.items && i < s->seq.n; i++)
      c->seq.items[i] = adopt_stmt(ad, s->seq.items[i]);
    break;
  case S_STORE:
    c->store.buf = adopt_buffer(ad, s->store.buf);
    c->store.idx = adopt_exprs(ad, s->store.idx, s->store.buf->ndim);
    c->store.value = adopt_expr(ad, s->store.value);
    break;
  case S_IF:
    c->if_.cond = adopt_expr(ad, s->if_.cond);
    c->if_.then_ = adopt_stmt(ad, s->if_.then_);
    c->if_.else_ = adopt_stmt(ad, s->if_.else_);
    break;
  case S_ALLOC:
    c->alloc.buf = adopt_buffer(ad, s->alloc.buf);
    c->alloc.init = adopt_expr(ad, s->alloc.init);
    c->alloc.body = adopt_stmt(ad, s->alloc.body);
    break;
  case S_LANES:
    c->lanes.loop = adopt_loop(ad, s->lanes.loop);
    c->lanes.body = adopt_stmt(ad, s->lanes.body);
    c->lanes.expanded = adopt_stmt(ad, s->lanes.expanded);
    break;
  case S_MMA:
    for (int w = 0; w < 3; w++) {
      c->mma.buf[w] = adopt_buffer(ad, s->mma.buf[w]);
      c->mma.idx[w] = adopt_exprs(ad, s->mma.idx[w], s->mma.buf[w]->ndim);
    }
    break;
  case S_LDMATRIX:
    c->ldsm.frag = adopt_buffer(ad, s->ldsm.frag);
    c->ldsm.idx = adopt_exprs(ad, s->ldsm.idx, s->ldsm.frag->ndim);
    c->ldsm.src = adopt_expr(ad, s->ldsm.src);
    break;
  case S_STMATRIX:
    c->stsm.dst = adopt_expr(ad, s->stsm.dst);
    c->stsm.value = adopt_exprs(ad, s->stsm.value, 2 * s->stsm.matrices);
    break;
  case S_WGMMA:
    c->wgmma.acc = adopt_buffer(ad, s->wgmma.acc);
    c->wgmma.idx = adopt_exprs(ad, s->wgmma.idx, s->wgmma.acc->ndim);
    c->wgmma.src[0] = adopt_expr(ad, s->wgmma.src[0]);
    c->wgmma.src[1] = adopt_expr(ad, s->wgmma.src[1]);
    break;
  case S_WGMMA_SYNC:
    c->wait.acc = adopt_buffer(ad, s->wait.acc);
    break;
  case S_PIPELINE:
  case S_TMA:
  case S_MBARRIER:
  case S_TMA_STORE:
    c->pipe.pipe = s->pipe.pipe ? adopt_pipeline(ad, s->pipe.pipe) : NULL;
    c->pipe.stage = adopt_expr(ad, s->pipe.stage);
    c->pipe.parity = adopt_expr(ad, s->pipe.parity);
    c->pipe.dst = adopt_expr(ad, s->pipe.dst);
    for (int d = 0; d < 2; d++)
      c->pipe.coord[d] = adopt_expr(ad, s->pipe.coord[d]);
    c->pipe.src = s->pipe.src ? adopt_buffer(ad, s->pipe.src) : NULL;
    c->pipe.body = adopt_stmt(ad, s->pipe.body);
    break;
  case S_BARRIER:
  case S_TMA_STORE_WAIT:
  case S_ASYNC_COMMIT:
  case S_ASYNC_WAIT:
    break;
  case S_COMPUTE: /* the verifier refuses it in a lowered kernel */
    ad->failed = true;
    break;
  }
  return c;
}

static bool adopt_kernel(ts_program *p, const ir_kernel *k, ir_kernel *out) {
  adopter ad = {.p = p, .a = &p->arena, .nold = k->nvars};
  ad.vars = calloc((size_t)(k->nvars ? k->nvars : 1), sizeof(*ad.vars));
  ad.loops = calloc((size_t)(k->nvars ? k->nvars : 1), sizeof(*ad.loops));
  bool ok = ad.vars && ad.loops;
  if (ok) {
    *out = *k;
    out->A = adopt_buffer(&ad, k->A);
    out->B = adopt_buffer(&ad, k->B);
    out->C = adopt_buffer(&ad, k->C);
    out->W = k->W ? adopt_buffer(&ad, k->W) : NULL;
    for (int w = 0; w < 2; w++)
      out->packed[w] = k->packed[w] ? adopt_buffer(&ad, k->packed[w]) : NULL;
    out->body = adopt_stmt(&ad, k->body);
    for (int d = 0; d < 3; d++)
      out->grid_size[d] = adopt_expr(&ad, k->grid_size[d]);
    out->nvars = ad.nvars;
    ok = !ad.failed && !p->arena.failed;
  }
  free(ad.vars);
  free(ad.loops);
  free(ad.from);
  free(ad.to);
  return ok;
}

bool lower_adopt(ts_program *p, const ir_kernel *k) {
  return adopt_kernel(p, k, &p->k);
}

bool lower_adopt_aux(ts_program *p, const ir_kernel *k) {
  return adopt_kernel(p, k, &p->aux);
}

bool lower_adopt_pack(ts_program *p, int w, const ir_kernel *k) {
  return adopt_kernel(p, k, &p->pack[w]);
}
