/*
 * What the compiler makes of the requests the walk finds.  Within
 * straight-line code (one iteration of a loop the compiler keeps as a
 * loop, with the unrolled loops inside it laid out one after another)
 * NVVM, before ptxas, does two things to loads that the IR does not say:
 *
 *   - a load of the same addresses as an earlier one, with no barrier and
 *     no store to its buffer between them, is not made again: the value
 *     is still in a register (common subexpressions; tvm_step2 reads each
 *     A[i, k] once for its 4 columns, not 4 times);
 *   - loads of a shared buffer by one access in different iterations,
 *     each lane's addresses following one another, are merged into one
 *     8- or 16-byte load where every lane's first address is aligned to
 *     it (the load-store vectorizer; smem32 reads A.shared's row as
 *     float4s, blocktile2d its register copies of 8 k steps).
 *
 * So the walk queues each request of a run here, and the run is costed
 * when it ends: duplicates dropped, neighbours merged, the rest costed by
 * cost.c and added to their rows.  Global loads are not merged (the
 * compiler cannot prove a pointer's alignment) and stores neither.
 */
#include <stdlib.h>
#include <string.h>

#include "explain_impl.h"

bool pending_add(pending_list *l, const pending_req *p) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    pending_req *v = realloc(l->v, sizeof(*v) * (size_t)cap);
    if (!v)
      return false;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *p;
  return true;
}

static bool same_lanes(const warp_req *a, const warp_req *b, int64_t shift) {
  for (int i = 0; i < WARP; i++)
    if (a->active[i] != b->active[i] ||
        (a->active[i] && a->addr[i] + shift != b->addr[i]))
      return false;
  return true;
}

static bool aligned(const warp_req *q, int width) {
  for (int i = 0; i < WARP; i++)
    if (q->active[i] && q->addr[i] % width != 0)
      return false;
  return true;
}

/* An earlier load of the run that p repeats: same buffer, same lanes and
 * addresses, nothing written to the buffer in between. */
static bool repeats(const pending_list *l, int from, int i) {
  const pending_req *p = &l->v[i];
  for (int j = from; j < i; j++) {
    const pending_req *e = &l->v[j];
    if (!e->dropped && e->load && e->buf == p->buf && e->epoch == p->epoch &&
        e->q.width == p->q.width && same_lanes(&e->q, &p->q, 0))
      return true;
  }
  return false;
}

/* A later request of p's row, still to cost, that continues p's lanes
 * `have` bytes on: each lane's address right after what p has; or -1. */
static int continuation(const pending_list *l, int i, int have) {
  const pending_req *p = &l->v[i];
  for (int j = i + 1; j < l->n; j++) {
    const pending_req *q = &l->v[j];
    if (!q->dropped && q->row == p->row && q->epoch == p->epoch &&
        q->weight == p->weight && q->q.width == p->q.width &&
        same_lanes(&p->q, &q->q, have))
      return j;
  }
  return -1;
}

/* Grows request i by the following requests of its row that continue it,
 * to `width` bytes; false (nothing changed) when they do not. */
static bool merge_to(pending_list *l, int i, int width) {
  pending_req *p = &l->v[i];
  int take[4], n = 0, have = p->q.width;
  while (have < width) {
    int j = continuation(l, i, have);
    if (j < 0 || n == 4)
      return false;
    take[n++] = j;
    have += p->q.width;
  }
  for (int t = 0; t < n; t++)
    l->v[take[t]].dropped = true;
  p->q.width = width;
  return true;
}

/* A shared load merged with its row's next ones where they continue it. */
static void merge(pending_list *l, int i) {
  pending_req *p = &l->v[i];
  if (!p->load || p->how != COST_SHARED || p->q.width >= 16)
    return;
  for (int width = 16; width > p->q.width; width /= 2)
    if (aligned(&p->q, width) && merge_to(l, i, width))
      return;
}

/* Adds one request's cost to its row. */
static void add_cost(const pending_req *p, const req_cost *c) {
  ts_access_report *r = p->row;
  if (r->requests == 0) {
    r->stride = c->stride;
    r->uniform_stride = c->uniform_stride;
  }
  if (p->q.width > r->bytes)
    r->bytes = p->q.width;
  r->requests += p->weight;
  r->requests_per_step += p->step;
  r->active_lanes += p->weight * c->active;
  r->sectors += p->weight * c->sectors;
  r->ideal_sectors += p->weight * c->ideal_sectors;
  r->wavefronts += p->weight * c->wavefronts;
  r->ideal_wavefronts += p->weight * c->ideal_wavefronts;
  r->misaligned |= c->misaligned;
}

/* Whether b's stored rows can be padded: a shared buffer, unswizzled,
 * its innermost stored dimension contiguous. */
static bool paddable(const ir_buffer *b) {
  return b->scope == SCOPE_SHARED && !b->swizzle && b->ndim >= 2 &&
         b->strides[b->order[b->ndim - 1]] == 1;
}

/* q with b's rows padded by `pad` elements instead: each address keeps
 * its row (address / pitch) and its place in the row. */
static warp_req repadded(const warp_req *q, const ir_buffer *b, int64_t pad) {
  int64_t size = ts_dtype_size(b->dtype);
  int64_t pitch = b->strides[b->order[b->ndim - 2]] * size;
  int64_t to = (b->shape[b->order[b->ndim - 1]] + pad) * size;
  warp_req r = *q;
  for (int l = 0; l < WARP; l++)
    if (r.active[l])
      r.addr[l] = r.addr[l] / pitch * to + r.addr[l] % pitch;
  return r;
}

static void cost_shared_side(const pending_req *p, const warp_req *q,
                             req_cost *c) {
  if (p->how == COST_LDMATRIX)
    cost_ldmatrix(q, p->matrices, c);
  else
    cost_shared(q, c);
}

/* The shared side's wavefronts under each padding, into the row's
 * pad_wavefronts, for the first PAD_SAMPLE requests of the row. */
static void cost_pads(const pending_list *l, const pending_req *p) {
  const warp_req *q = p->how == COST_ASYNC ? &p->shared_side : &p->q;
  if (p->how == COST_GLOBAL || !l->rows || !paddable(p->buf))
    return;
  double *at = row_pad_wavefronts(l->rows, p->index);
  if (at[PAD_COUNT] >= PAD_SAMPLE)
    return;
  at[PAD_COUNT] += 1;
  at[PAD_WEIGHT] += p->weight;
  for (int pad = 0; pad < PAD_CHOICES; pad++) {
    warp_req r = repadded(q, p->buf, pad);
    req_cost c = {0};
    cost_shared_side(p, &r, &c);
    at[pad] += p->weight * c.wavefronts;
    if (pad == 0)
      at[PAD_IDEAL] += p->weight * c.ideal_wavefronts;
  }
}

static void cost(const pending_req *p) {
  req_cost c = {0}, shared = {0};
  switch (p->how) {
  case COST_GLOBAL: cost_global(&p->q, &c); break;
  case COST_SHARED: cost_shared(&p->q, &c); break;
  case COST_LDMATRIX: cost_ldmatrix(&p->q, p->matrices, &c); break;
  case COST_ASYNC:
    cost_global(&p->q, &c);
    cost_shared(&p->shared_side, &shared);
    c.wavefronts = shared.wavefronts;
    c.ideal_wavefronts = shared.ideal_wavefronts;
    break;
  }
  add_cost(p, &c);
}

void pending_flush(pending_list *l, int from, bool as_written) {
  for (int i = from; i < l->n; i++) {
    pending_req *p = &l->v[i];
    if (l->rows) /* rows made since it was queued may have moved them */
      p->row = &l->rows->rows[p->index];
    p->row->ir_requests += p->weight;
    if (!as_written && p->load && repeats(l, from, i))
      p->dropped = true;
  }
  for (int i = from; i < l->n; i++) {
    if (l->v[i].dropped)
      continue;
    if (!as_written)
      merge(l, i);
    cost(&l->v[i]);
    cost_pads(l, &l->v[i]);
  }
  l->n = from;
}
