/*
 * wgmma's batches: a warpgroup's instructions run asynchronously, so each
 * run of them between barriers is opened by a wgmma.fence (their
 * accumulators were written by other instructions) and closed by a commit
 * and a wait, before anything reads the accumulators or a barrier lets the
 * tiles be overwritten.  A batch is the largest statement holding wgmma
 * and no barrier or cp.async wait.
 *
 * The wait is for the whole batch (wait_group 0), except inside a loop
 * marked by ts_wgmma_in_flight(loop, n): there it leaves the n newest
 * batches running (wait_group n), so that the tensor cores work on
 * iteration ko's batch while the warpgroup issues iteration ko + 1's, and
 * a commit with wait_group 0 after the loop lets the last ones finish.
 * The pipeline at that loop delays its copies to match (stages.c,
 * stages_tma.c).
 *
 * Where an instruction takes its a from registers (lower_tensorize.c),
 * the PTX ISA asks a wgmma.fence between writing a register and a wgmma
 * that reads it: a fill that opens the batch's statement goes before its
 * fence, and each instruction after a fill of its registers inside the
 * batch gets a fence of its own.  A fill inside the batch may not write
 * a register an issued instruction may still read: a loop in the batch
 * whose iterations fill the same registers is refused.
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

/* A cp.async wait of the loop's own pipeline: one not inside a loop nested
 * in its body (a pipeline at an inner loop waits there). */
static bool own_wait(ir_visitor *v, const ir_stmt *s) {
  bool *found = v->ctx;
  *found |= s->kind == S_ASYNC_WAIT || s->kind == S_MBARRIER;
  v->stop = *found;
  return !v->stop && s->kind != S_FOR;
}

static bool pipelined_here(const ir_stmt *loop) {
  bool found = false;
  ir_visitor v = {.stmt = own_wait, .ctx = &found};
  ir_visit_stmt(&v, loop->for_.body);
  return found;
}

typedef struct {
  lower_ctx *cx;
  int pending; /* batches the innermost in-flight loop leaves running */
  bool failed; /* a refusal recorded in cx */
} batch_pass;

/* The register operands of the wgmma in a batch, to check its stores
 * against. */
enum { MAX_REGISTER_OPERANDS = 8 }; /* in a batch, that it checks */

typedef struct {
  const ir_buffer *regs[MAX_REGISTER_OPERANDS];
  int n;
  const ir_stmt *loop;  /* a loop that refills one of them */
  const ir_buffer *buf; /* which */
} register_operands;

static bool is_register_operand(const register_operands *r,
                                const ir_buffer *b) {
  for (int i = 0; i < r->n; i++)
    if (r->regs[i] == b)
      return true;
  return false;
}

/* Each register operand once; past the array's room, n counts on, and
 * the batch is refused. */
static bool note_register_operand(ir_visitor *v, const ir_stmt *s) {
  register_operands *r = v->ctx;
  if (s->kind != S_WGMMA || !ir_wgmma_a_regs(s) ||
      is_register_operand(r, s->wgmma.src[0]->load.buf))
    return true;
  if (r->n < MAX_REGISTER_OPERANDS)
    r->regs[r->n] = s->wgmma.src[0]->load.buf;
  r->n++;
  return true;
}

typedef struct {
  register_operands *r;
  const ir_var *var;
  bool found; /* a store into a register operand not indexed by var */
} same_element;

static bool store_ignoring(ir_visitor *v, const ir_stmt *s) {
  same_element *e = v->ctx;
  if (s->kind == S_STORE && is_register_operand(e->r, s->store.buf)) {
    bool indexed = false;
    for (int d = 0; d < s->store.buf->ndim; d++)
      indexed |= ir_expr_uses_var(s->store.idx[d], e->var);
    if (!indexed) {
      e->found = true;
      e->r->buf = s->store.buf;
    }
  }
  v->stop = e->found;
  return !v->stop;
}

/* A loop inside the batch whose iterations store into the same register
 * of an operand, which an instruction of an earlier iteration may still
 * read. */
static bool find_refill(ir_visitor *v, const ir_stmt *s) {
  register_operands *r = v->ctx;
  if (s->kind == S_FOR && !r->loop) {
    same_element e = {.r = r, .var = s->for_.loop->var};
    ir_visitor inner = {.stmt = store_ignoring, .ctx = &e};
    ir_visit_stmt(&inner, s->for_.body);
    if (e.found)
      r->loop = s;
  }
  v->stop = r->loop != NULL;
  return !v->stop;
}

/* Whether s stores into b at all (no loop variable indexes every
 * store). */
static bool stores_into(const ir_stmt *s, const ir_buffer *b) {
  register_operands r = {.regs = {b}, .n = 1};
  same_element e = {.r = &r, .var = NULL};
  ir_visitor v = {.stmt = store_ignoring, .ctx = &e};
  ir_visit_stmt(&v, s);
  return e.found;
}

/* Each item of a sequence holding a wgmma after a fill of its registers
 * gets a fence between them. */
static ir_stmt *fence_after_fill(ir_mutator *m, ir_stmt *s) {
  if (s->kind != S_SEQ)
    return ir_mutate_stmt_children(m, s);
  ir_stmt **items = ts_arena_alloc(m->a, sizeof(*items) *
                                             (size_t)(2 * s->seq.n));
  int n = 0;
  bool changed = false;
  for (int i = 0; items && i < s->seq.n; i++) {
    const ir_stmt *x = first_of_kind(s->seq.items[i], S_WGMMA);
    bool filled = false;
    for (int j = 0; j < i && x && ir_wgmma_a_regs(x); j++)
      filled |= stores_into(s->seq.items[j], x->wgmma.src[0]->load.buf);
    if (filled && !(items[n++] = ir_new_wgmma_sync(m->a, -1, x->wgmma.acc)))
      return NULL;
    if (!(items[n++] = ir_mutate_stmt(m, s->seq.items[i])))
      return NULL;
    changed |= filled || items[n - 1] != s->seq.items[i];
  }
  if (items && !changed)
    return s;
  return items ? ir_new_seq(m->a, items, n) : NULL;
}

/* s with a fence before each instruction that its fills of register
 * operands precede, or NULL with the refusal where a loop in s refills
 * the same registers (or s reads more operands than are checked). */
static ir_stmt *fence_register_fills(batch_pass *p, ir_stmt *s) {
  register_operands r = {0};
  ir_visitor v = {.stmt = note_register_operand, .ctx = &r};
  ir_visit_stmt(&v, s);
  if (r.n == 0)
    return s;
  if (r.n > MAX_REGISTER_OPERANDS) {
    p->failed = true;
    lower_fail(p->cx, TS_ERR_BAD_TENSORIZE, "ts_lower: a wgmma batch reads "
               "%d register operands, more than the %d the batch pass "
               "checks", r.n, MAX_REGISTER_OPERANDS);
    return NULL;
  }
  ir_visitor refill = {.stmt = find_refill, .ctx = &r};
  ir_visit_stmt(&refill, s);
  if (r.loop) {
    p->failed = true;
    lower_fail(p->cx, TS_ERR_BAD_TENSORIZE, "ts_lower: loop \"%s\" refills "
               "wgmma's register operand %s inside a batch, while the "
               "batch's earlier instructions may still read it: unroll the "
               "loops between the k tile's loop and the tensorized ones "
               "(ts_unroll), so that each instruction gets registers of its "
               "own", r.loop->for_.loop->name, r.buf->name);
    return NULL;
  }
  ir_mutator m = {.a = p->cx->arena, .stmt = fence_after_fill};
  return ir_mutate_stmt(&m, s);
}

/* fence; s; commit and wait until `pending` batches run: the fence inside
 * s's allocations and after the items that open it holding no wgmma (the
 * fills of register operands, which must precede it), and one more before
 * each instruction whose registers the batch fills. */
static ir_stmt *fenced(batch_pass *p, ir_stmt *s, int pending) {
  ts_arena *a = p->cx->arena;
  if (s->kind == S_ALLOC) {
    ir_stmt *body = fenced(p, s->alloc.body, pending);
    ir_stmt *copy = body ? ir_new_alloc(a, s->alloc.buf, body) : NULL;
    if (copy)
      copy->alloc.init = s->alloc.init;
    return copy;
  }
  int lead = 0;
  while (s->kind == S_SEQ && lead < s->seq.n &&
         !holds_kind(s->seq.items[lead], S_WGMMA))
    lead++;
  if (lead > 0) {
    ir_stmt *rest = ir_new_seq(a, s->seq.items + lead, s->seq.n - lead);
    rest = rest ? fenced(p, rest, pending) : NULL;
    ir_stmt *items[2] = {ir_new_seq(a, s->seq.items, lead), rest};
    return items[0] && items[1] ? ir_new_seq(a, items, 2) : NULL;
  }
  if (!(s = fence_register_fills(p, s)))
    return NULL;
  ir_buffer *acc = first_of_kind(s, S_WGMMA)->wgmma.acc;
  ir_stmt *items[3] = {ir_new_wgmma_sync(a, -1, acc), s,
                       ir_new_wgmma_sync(a, pending, acc)};
  return items[0] && items[2] ? ir_new_seq(a, items, 3) : NULL;
}

static void refuse_loop(batch_pass *p, const ir_stmt *s, const char *why) {
  p->failed = true;
  lower_fail(p->cx, TS_ERR_BAD_ARG, "ts_lower: loop \"%s\" keeps %d wgmma "
             "batch%s in flight (ts_wgmma_in_flight), but %s",
             s->for_.loop->name, s->for_.loop->wgmma_in_flight,
             s->for_.loop->wgmma_in_flight == 1 ? "" : "es", why);
}

static ir_stmt *refuse(ir_mutator *m, ir_stmt *s, const char *why) {
  refuse_loop(m->ctx, s, why);
  return s;
}

/* Every loop marked in flight has wgmma in its body. */
static bool check_marked(ir_visitor *v, const ir_stmt *s) {
  batch_pass *p = v->ctx;
  if (s->kind == S_FOR && s->for_.loop->wgmma_in_flight > 0 &&
      !holds_kind(s->for_.body, S_WGMMA))
    refuse_loop(p, s, "its body has no wgmma (ts_tensorize over a "
                "warpgroup's tile inside it)");
  v->stop = p->failed;
  return !v->stop;
}

/* A loop that leaves batches in flight: its batches wait for all but the
 * loop's count, and the last ones are waited for after it. */
static ir_stmt *in_flight_loop(ir_mutator *m, ir_stmt *s) {
  batch_pass *p = m->ctx;
  if (!pipelined_here(s))
    return refuse(m, s, "no caches are pipelined at it: the copies into a "
                  "tile a running batch reads must wait for it (ts_pipeline "
                  "on caches attached at this loop, not at one inside it)");
  int outer = p->pending;
  p->pending = s->for_.loop->wgmma_in_flight;
  ir_stmt *loop = ir_mutate_stmt_children(m, s);
  p->pending = outer;
  if (!loop)
    return NULL;
  ir_buffer *acc = first_of_kind(s, S_WGMMA)->wgmma.acc;
  ir_stmt *items[2] = {loop, ir_new_wgmma_sync(m->a, outer, acc)};
  return items[1] ? ir_new_seq(m->a, items, 2) : NULL;
}

static ir_stmt *batch(ir_mutator *m, ir_stmt *s) {
  batch_pass *p = m->ctx;
  bool flight = s->kind == S_FOR && s->for_.loop->wgmma_in_flight > 0;
  if (p->failed || !holds_kind(s, S_WGMMA))
    return s;
  if (flight)
    return in_flight_loop(m, s);
  if (!holds_kind(s, S_BARRIER) && !holds_kind(s, S_ASYNC_WAIT) &&
      !holds_kind(s, S_MBARRIER))
    return fenced(p, s, p->pending);
  return ir_mutate_stmt_children(m, s);
}

ir_stmt *lower_wgmma_batches(lower_ctx *cx, ir_stmt *root) {
  batch_pass p = {.cx = cx};
  ir_visitor v = {.stmt = check_marked, .ctx = &p};
  ir_visit_stmt(&v, root);
  if (p.failed)
    return NULL;
  if (!holds_kind(root, S_WGMMA))
    return root;
  ir_mutator m = {.a = cx->arena, .stmt = batch, .ctx = &p};
  ir_stmt *out = ir_mutate_stmt(&m, root);
  if (!p.failed && !out)
    lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  return p.failed ? NULL : out;
}
