/*
 * wgmma's batches: a warpgroup's instructions run asynchronously, so each
 * run of them between barriers is opened by a wgmma.fence (their
 * accumulators were written by other instructions) and closed by a commit
 * and a wait for the whole batch, before anything reads the accumulators
 * or a barrier lets the tiles be overwritten.  A batch is the largest
 * statement holding wgmma and no barrier or cp.async wait.
 */
#include "lower.h"

#include "../ir/visit.h"

typedef struct {
  ir_stmt_kind kind;
  const ir_stmt *found;
} kind_search;

static bool find_kind(ir_visitor *v, const ir_stmt *s) {
  kind_search *ks = v->ctx;
  if (s->kind == ks->kind)
    ks->found = s;
  v->stop = ks->found != NULL;
  return !v->stop;
}

static const ir_stmt *first_of_kind(const ir_stmt *s, ir_stmt_kind kind) {
  kind_search ks = {.kind = kind};
  ir_visitor v = {.stmt = find_kind, .ctx = &ks};
  ir_visit_stmt(&v, s);
  return ks.found;
}

/* Whether s holds a statement of kind `kind`. */
static bool holds_kind(const ir_stmt *s, ir_stmt_kind kind) {
  return first_of_kind(s, kind) != NULL;
}

static bool holds_any(const ir_stmt *s, ir_stmt_kind k1, ir_stmt_kind k2) {
  return holds_kind(s, k1) || holds_kind(s, k2);
}

ir_stmt *lower_wgmma_batches(ts_arena *a, ir_stmt *s) {
  if (!s || !holds_kind(s, S_WGMMA))
    return s;
  if (!holds_any(s, S_BARRIER, S_ASYNC_WAIT)) {
    ir_buffer *acc = first_of_kind(s, S_WGMMA)->wgmma.acc;
    ir_stmt *items[3] = {ir_new_wgmma_sync(a, -1, acc), s,
                         ir_new_wgmma_sync(a, 0, acc)};
    return items[0] && items[2] ? ir_new_seq(a, items, 3) : NULL;
  }
  ir_stmt *c = ts_arena_alloc(a, sizeof(*c));
  if (!c)
    return NULL;
  *c = *s;
  switch (s->kind) {
  case S_FOR:
    c->for_.body = lower_wgmma_batches(a, s->for_.body);
    return c->for_.body ? c : NULL;
  case S_ALLOC:
    c->alloc.body = lower_wgmma_batches(a, s->alloc.body);
    return c->alloc.body ? c : NULL;
  case S_IF:
    c->if_.then_ = lower_wgmma_batches(a, s->if_.then_);
    c->if_.else_ = lower_wgmma_batches(a, s->if_.else_);
    return c->if_.then_ && (!s->if_.else_ || c->if_.else_) ? c : NULL;
  case S_SEQ:
    c->seq.items = ts_arena_alloc(a, sizeof(ir_stmt *) * (size_t)s->seq.n);
    for (int i = 0; c->seq.items && i < s->seq.n; i++)
      if (!(c->seq.items[i] = lower_wgmma_batches(a, s->seq.items[i])))
        return NULL;
    return c->seq.items ? c : NULL;
  default:
    return c;
  }
}
