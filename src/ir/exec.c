/*
 * The reference executor.  Blocks run one after another; the threads of a
 * block run in lockstep, statement by statement: a loop's iterations are
 * the same for every thread (extents are constants), a divergent `if` is a
 * mask, and a store evaluates every active thread's value before any thread
 * writes, as a warp does.
 *
 * Every global and shared element carries a shadow: whether anything has
 * written it, and the last writer and reader with the barrier epoch of the
 * access.  Two threads touching one element between barriers, at least one
 * of them writing, is a race; threads of different blocks never
 * synchronize, so there any such pair is a race.
 *
 * Vectorized loops run as the lanes lowering expanded them into: a vector
 * access touches the contiguous elements from its lane 0's on, and one that
 * is not aligned to its width faults, as it does on the GPU.
 *
 * Asynchronous copies (cp.async) read global memory when issued and land
 * when a wait of the issuing thread completes their copy group (commit
 * closes a thread's group; wait N completes all but its N newest); a
 * barrier completes none.  Until then the elements are in flight: reading
 * one, or writing one, is a fault naming the copy and the wait it missed,
 * as is a copy still in flight when its buffer's scope ends.  A landed
 * copy counts as written at its wait, so other threads need a barrier
 * after the wait, not only after the issue.
 */
#include "exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "mma.h"

enum { NONE = -1, MANY = -2, MAX_LIVE = 64 };

typedef struct {
  const ir_buffer *buf;
  float *data;
  size_t size;     /* elements per copy */
  bool per_thread; /* local: one copy per thread */
  bool tracked;    /* shadow kept (C and shared buffers) */
  bool read_only;  /* A and B: defined everywhere, never written */
  uint8_t *defined;
  uint8_t *atomic; /* the last write was an atomic add (split-K) */
  int32_t *writer, *reader;
  uint64_t *wepoch, *repoch;
  int32_t *pending; /* shared buffers: the thread whose asynchronous copy
                     * is in flight into the element, or NONE */
} mem;

/* A thread's asynchronous copies in flight, oldest first. */
typedef struct {
  mem *m;
  size_t at;
  uint64_t group;
} copy_rec;

typedef struct {
  copy_rec *recs;
  size_t head, n, cap;       /* recs[head .. n) are in flight */
  uint64_t committed, done;  /* groups closed; groups below `done` landed */
  uint64_t waited;           /* groups closed at the last wait */
} copy_queue;

typedef struct {
  const ir_kernel *k;
  int nthreads;
  int64_t block_idx[3];
  int block_linear;
  int64_t *env; /* [thread][var] */
  int nvars;
  mem live[MAX_LIVE];
  int nlive;
  uint64_t epoch; /* barriers so far, all blocks */
  copy_queue *queues; /* per thread of the block */
  int nqueues;
  bool fault;
  char *msg;
  size_t msglen;
} exec;

__attribute__((format(printf, 3, 4))) static void fault(exec *x, int t,
                                                        const char *fmt, ...) {
  if (x->fault)
    return;
  x->fault = true;
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  int64_t bx = x->k->block[0], by = x->k->block[1];
  snprintf(x->msg, x->msglen, "%s, by thread (%lld, %lld, %lld) of block "
           "(%lld, %lld, %lld)", what, (long long)(t % bx),
           (long long)(t / bx % by), (long long)(t / (bx * by)),
           (long long)x->block_idx[0], (long long)x->block_idx[1],
           (long long)x->block_idx[2]);
}

/* ---- Memory ---------------------------------------------------------------- */

static bool mem_init(mem *m, const ir_buffer *b, float *data, size_t copies,
                     bool tracked) {
  memset(m, 0, sizeof(*m));
  m->buf = b;
  m->size = (size_t)ir_buffer_size(b);
  size_t n = m->size * copies;
  m->per_thread = copies > 1;
  m->tracked = tracked;
  m->data = data ? data : calloc(n, sizeof(float));
  m->defined = calloc(n, 1);
  if (tracked && b->scope == SCOPE_SHARED) {
    m->pending = malloc(n * sizeof(int32_t));
    for (size_t i = 0; m->pending && i < n; i++)
      m->pending[i] = NONE;
    if (!m->pending)
      return false;
  }
  if (tracked) {
    m->writer = malloc(n * sizeof(int32_t));
    m->reader = malloc(n * sizeof(int32_t));
    m->wepoch = calloc(n, sizeof(uint64_t));
    m->repoch = calloc(n, sizeof(uint64_t));
    m->atomic = calloc(n, 1);
    if (m->writer)
      for (size_t i = 0; i < n; i++)
        m->writer[i] = NONE;
    if (m->reader)
      for (size_t i = 0; i < n; i++)
        m->reader[i] = NONE;
  }
  return m->data && m->defined &&
         (!tracked ||
          (m->writer && m->reader && m->wepoch && m->repoch && m->atomic));
}

static void mem_free(mem *m, bool owns_data) {
  if (owns_data)
    free(m->data);
  free(m->defined);
  free(m->atomic);
  free(m->writer);
  free(m->reader);
  free(m->wepoch);
  free(m->repoch);
  free(m->pending);
}

static mem *find_mem(exec *x, const ir_buffer *b) {
  for (int i = x->nlive - 1; i >= 0; i--)
    if (x->live[i].buf == b)
      return &x->live[i];
  return NULL;
}

static const char *scope_word(ir_scope s) {
  return s == SCOPE_GLOBAL ? "global" : s == SCOPE_SHARED ? "shared" : "local";
}

/* ---- Expressions --------------------------------------------------------------- */

static int64_t eval_int(exec *x, const ir_expr *e, int t);
static float eval_float(exec *x, const ir_expr *e, int t);

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The element an access touches, or -1 after reporting it out of bounds. */
static int64_t element(exec *x, const ir_buffer *b, ir_expr *const *idx,
                       int t, const char *verb) {
  int64_t at[IR_MAX_DIMS], off = 0;
  for (int d = 0; d < b->ndim; d++) {
    at[d] = eval_int(x, idx[d], t);
    off += at[d] * b->strides[d];
  }
  for (int d = 0; d < b->ndim; d++) {
    if (at[d] < 0 || at[d] >= b->shape[d]) {
      char where[128] = "", *p = where;
      for (int i = 0; i < b->ndim; i++)
        p += snprintf(p, sizeof(where) - (size_t)(p - where), "%s%lld",
                      i ? ", " : "", (long long)at[i]);
      fault(x, t, "out-of-bounds %s of %s %s[%s]: index %d is %lld, the "
            "extent %lld", verb, scope_word(b->scope), b->name, where, d,
            (long long)at[d], (long long)b->shape[d]);
      return -1;
    }
  }
  return off;
}

static int32_t gid(const exec *x, int t) {
  return x->block_linear * x->nthreads + t;
}

static bool same_block(const exec *x, int32_t a, int32_t b) {
  return a / x->nthreads == b / x->nthreads;
}

/* Someone else's access since the last barrier, or in another block. */
static bool conflicts(const exec *x, int32_t who, uint64_t epoch, int32_t me) {
  if (who == NONE || who == me)
    return false;
  if (who == MANY)
    return epoch == x->epoch;
  return !same_block(x, who, me) || epoch == x->epoch;
}

/* Where thread t's element `off` of m is held. */
static size_t slot(const mem *m, int64_t off, int t) {
  return (size_t)off + (m->per_thread ? (size_t)t * m->size : 0);
}

/* A vector access of `lanes` elements from element `off` on: aligned to
 * its width, as the GPU requires (it faults on a misaligned float4), and
 * inside the buffer.  Its lanes are contiguous in memory, so lane l is
 * element off + l. */
static bool vector_fits(exec *x, const mem *m, int64_t off, int lanes,
                        int t) {
  const ir_buffer *b = m->buf;
  if (off % lanes != 0) {
    fault(x, t, "misaligned %d-wide vector access to %s %s at element %lld",
          lanes, scope_word(b->scope), b->name, (long long)off);
    return false;
  }
  if (off + lanes > (int64_t)m->size) {
    fault(x, t, "%d-wide vector access to %s %s at element %lld passes its "
          "end, element %lld", lanes, scope_word(b->scope), b->name,
          (long long)off, (long long)m->size);
    return false;
  }
  return true;
}

/* ---- Asynchronous copies ----------------------------------------------------- */

/* The group of the copy in flight into m's element `at`, by thread `who`. */
static uint64_t copy_group(const exec *x, const mem *m, size_t at, int who) {
  const copy_queue *q = &x->queues[who];
  for (size_t i = q->head; i < q->n; i++)
    if (q->recs[i].m == m && q->recs[i].at == at)
      return q->recs[i].group;
  return q->committed;
}

/* A fault for touching an element whose copy has not landed: which copy
 * of the pipelined buffer it lies in, who issued it, and the wait that
 * would have completed it. */
static void in_flight(exec *x, const mem *m, int64_t off, int t,
                      const char *verb) {
  const ir_buffer *b = m->buf;
  int who = m->pending[off] % x->nthreads;
  const copy_queue *q = &x->queues[who];
  uint64_t group = copy_group(x, m, (size_t)off, who);
  int64_t bx = x->k->block[0], by = x->k->block[1];
  char missing[160], stage[64] = "";
  if (b->async_fill) /* a pipelined cache: which of its copies */
    snprintf(stage, sizeof(stage), " (stage %lld of %lld)",
             (long long)(off / b->strides[0]), (long long)b->shape[0]);
  if (group >= q->committed)
    snprintf(missing, sizeof(missing), "its group is not committed yet "
             "(cp.async.commit)");
  else if (group >= q->waited)
    snprintf(missing, sizeof(missing), "no cp.async.wait came after its "
             "commit");
  else
    snprintf(missing, sizeof(missing), "its last cp.async.wait left it in "
             "flight: it needs cp.async.wait %llu or less",
             (unsigned long long)(q->waited - group - 1));
  fault(x, t, "%s of shared %s at element %lld%s before its cp.async "
        "landed: thread (%lld, %lld, %lld) issued it in its copy group %llu, "
        "and %s", verb, b->name, (long long)off, stage, (long long)(who % bx), (long long)(who / bx % by),
        (long long)(who / (bx * by)), (unsigned long long)group, missing);
}

/* Thread t's copy into m's element `at` is in flight in its open group. */
static bool issue_copy(exec *x, mem *m, size_t at, int t) {
  copy_queue *q = &x->queues[t];
  if (!m->pending) {
    fault(x, t, "asynchronous copy into %s %s: cp.async writes only shared "
          "memory", scope_word(m->buf->scope), m->buf->name);
    return false;
  }
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 64;
    copy_rec *r = realloc(q->recs, cap * sizeof(*r));
    if (!r) {
      fault(x, t, "the executor ran out of memory");
      return false;
    }
    q->recs = r;
    q->cap = cap;
  }
  q->recs[q->n++] = (copy_rec){m, at, q->committed};
  m->pending[at] = gid(x, t);
  return true;
}

static void run_commit(exec *x, const bool *active) {
  for (int t = 0; t < x->nthreads; t++)
    x->queues[t].committed += active[t];
}

/* wait N: every group but the N newest lands; its copies count as written
 * now, so a barrier must follow before other threads read them. */
static void run_wait(exec *x, const ir_stmt *s, const bool *active) {
  uint64_t keep = (uint64_t)s->wait.pending;
  for (int t = 0; t < x->nthreads; t++) {
    copy_queue *q = &x->queues[t];
    if (!active[t])
      continue;
    q->waited = q->committed;
    if (q->committed <= keep)
      continue;
    if (q->committed - keep > q->done)
      q->done = q->committed - keep;
    while (q->head < q->n && q->recs[q->head].group < q->done) {
      copy_rec *r = &q->recs[q->head++];
      r->m->pending[r->at] = NONE;
      r->m->wepoch[r->at] = x->epoch;
    }
    if (q->head == q->n)
      q->head = q->n = 0;
  }
}

/* A buffer's scope ends: no copy into it may still be in flight. */
static void check_landed(exec *x, const mem *m) {
  for (size_t i = 0; m->pending && i < m->size && !x->fault; i++)
    if (m->pending[i] != NONE)
      in_flight(x, m, (int64_t)i, m->pending[i] % x->nthreads, "end of scope");
}

static void reset_queues(exec *x) {
  for (int t = 0; t < x->nthreads; t++) {
    copy_queue *q = &x->queues[t];
    q->head = q->n = 0;
    q->committed = q->done = q->waited = 0;
  }
}

/* Element `off` of m as thread t reads it: written before (unless an
 * input), and no race with another thread's write. */
static float read_at(exec *x, mem *m, int64_t off, int t) {
  const ir_buffer *b = m->buf;
  size_t at = slot(m, off, t);
  if (!m->read_only && !m->defined[at]) {
    fault(x, t, "read of %s %s at element %lld, which nothing wrote",
          scope_word(b->scope), b->name, (long long)off);
    return 0.0f;
  }
  if (m->pending && m->pending[at] != NONE) {
    in_flight(x, m, off, t, "read");
    return 0.0f;
  }
  if (m->tracked) {
    int32_t me = gid(x, t);
    if (conflicts(x, m->writer[at], m->wepoch[at], me)) {
      fault(x, t, "race: read of %s %s at element %lld written by another "
            "thread without a barrier between", scope_word(b->scope), b->name,
            (long long)off);
      return 0.0f;
    }
    if (m->reader[at] == NONE || m->repoch[at] != x->epoch)
      m->reader[at] = me;
    else if (m->reader[at] != me)
      m->reader[at] = MANY;
    m->repoch[at] = x->epoch;
  }
  return m->data[at];
}

static float load(exec *x, const ir_expr *e, int t) {
  if (e->load.lanes > 1) {
    fault(x, t, "vector load of %s used as a scalar", e->load.buf->name);
    return 0.0f;
  }
  mem *m = find_mem(x, e->load.buf);
  int64_t off = element(x, e->load.buf, e->load.idx, t, "load");
  return m && off >= 0 ? read_at(x, m, off, t) : 0.0f;
}

/* A vector load's lanes into out[0 .. lanes); false after a fault. */
static bool load_vector(exec *x, const ir_expr *e, int t, float *out) {
  mem *m = find_mem(x, e->load.buf);
  int64_t off = element(x, e->load.buf, e->load.idx, t, "load");
  if (!m || off < 0 || !vector_fits(x, m, off, e->load.lanes, t))
    return false;
  for (int l = 0; l < e->load.lanes && !x->fault; l++)
    out[l] = read_at(x, m, off + l, t);
  return !x->fault;
}

static int64_t launch_index(const exec *x, ts_loop_kind kind, int t) {
  int64_t bx = x->k->block[0], by = x->k->block[1];
  switch (kind) {
  case TS_BLOCK_X: return x->block_idx[0];
  case TS_BLOCK_Y: return x->block_idx[1];
  case TS_BLOCK_Z: return x->block_idx[2];
  case TS_THREAD_X: return t % bx;
  case TS_THREAD_Y: return t / bx % by;
  case TS_THREAD_Z: return t / (bx * by);
  default: return 0;
  }
}

static int64_t eval_int(exec *x, const ir_expr *e, int t) {
  switch (e->kind) {
  case E_INT: return e->ival;
  case E_VAR:
    if (e->var->kind == VAR_LAUNCH)
      return launch_index(x, e->var->tag, t);
    return x->env[(size_t)t * (size_t)x->nvars + (size_t)e->var->id];
  case E_NOT: return !eval_int(x, e->op.a, t);
  case E_SELECT:
    return eval_int(x, e->op.c, t) ? eval_int(x, e->op.a, t)
                                   : eval_int(x, e->op.b, t);
  case E_AND: return eval_int(x, e->op.a, t) && eval_int(x, e->op.b, t);
  case E_OR: return eval_int(x, e->op.a, t) || eval_int(x, e->op.b, t);
  default: break;
  }
  if (e->op.a && e->op.a->type == TY_FLOAT) { /* a float comparison */
    float a = eval_float(x, e->op.a, t), b = eval_float(x, e->op.b, t);
    switch (e->kind) {
    case E_LT: return a < b;
    case E_LE: return a <= b;
    case E_EQ: return a == b;
    case E_NE: return a != b;
    default: return 0;
    }
  }
  int64_t a = eval_int(x, e->op.a, t), b = eval_int(x, e->op.b, t);
  switch (e->kind) {
  case E_ADD: return a + b;
  case E_SUB: return a - b;
  case E_MUL: return a * b;
  case E_DIV: return b ? floordiv(a, b) : 0;
  case E_MOD: return b ? a - floordiv(a, b) * b : 0;
  case E_MIN: return a < b ? a : b;
  case E_MAX: return a > b ? a : b;
  case E_LT: return a < b;
  case E_LE: return a <= b;
  case E_EQ: return a == b;
  case E_NE: return a != b;
  default: return 0;
  }
}

static float eval_float(exec *x, const ir_expr *e, int t) {
  switch (e->kind) {
  case E_FLOAT: return e->fval;
  case E_INT: return (float)e->ival;
  case E_LOAD: return load(x, e, t);
  case E_VECTOR:
    fault(x, t, "vector of %d lanes used as a scalar", e->vector.n);
    return 0.0f;
  case E_CAST: return ts_round_to(e->dtype, eval_float(x, e->op.a, t));
  case E_SELECT:
    return eval_int(x, e->op.c, t) ? eval_float(x, e->op.a, t)
                                   : eval_float(x, e->op.b, t);
  default: break;
  }
  float a = eval_float(x, e->op.a, t), b = eval_float(x, e->op.b, t);
  switch (e->kind) {
  case E_ADD: return a + b;
  case E_SUB: return a - b;
  case E_MUL: return a * b;
  case E_DIV: return a / b;
  case E_MIN: return a < b ? a : b;
  case E_MAX: return a > b ? a : b;
  default: return 0.0f;
  }
}

/* ---- Statements ----------------------------------------------------------------- */

static void run(exec *x, const ir_stmt *s, const bool *active);

static void set_var(exec *x, const ir_var *v, int t, int64_t value) {
  x->env[(size_t)t * (size_t)x->nvars + (size_t)v->id] = value;
}

static void run_for(exec *x, const ir_stmt *s, const bool *active) {
  const ts_loop *l = s->for_.loop;
  if (ir_kind_is_launch(l->kind)) {
    const ir_expr *index = s->for_.index;
    for (int t = 0; t < x->nthreads; t++)
      set_var(x, l->var, t,
              index ? eval_int(x, index, t) : launch_index(x, l->kind, t));
    run(x, s->for_.body, active);
    return;
  }
  for (int64_t it = 0; it < l->extent && !x->fault; it++) {
    for (int t = 0; t < x->nthreads; t++)
      set_var(x, l->var, t, it);
    run(x, s->for_.body, active);
  }
}

/* Element `off` of m written by thread t, unless that races with another
 * thread's access; false after a fault. */
static bool write_at(exec *x, mem *m, int64_t off, int t, float value,
                     bool atomic) {
  const ir_buffer *b = m->buf;
  size_t at = slot(m, off, t);
  if (m->pending && m->pending[at] != NONE) {
    in_flight(x, m, off, t, "write");
    return false;
  }
  if (m->tracked) {
    int32_t me = gid(x, t);
    /* Atomic adds by any threads to one element are ordered by the
     * hardware; anything else beside one is a race. */
    bool both_atomic = atomic && m->atomic[at];
    if (!both_atomic && conflicts(x, m->writer[at], m->wepoch[at], me)) {
      fault(x, t, "race: two threads write %s %s at element %lld without "
            "a barrier between", scope_word(b->scope), b->name,
            (long long)off);
      return false;
    }
    if (conflicts(x, m->reader[at], m->repoch[at], me)) {
      fault(x, t, "race: write of %s %s at element %lld that another "
            "thread read without a barrier between", scope_word(b->scope),
            b->name, (long long)off);
      return false;
    }
    m->writer[at] = me;
    m->wepoch[at] = x->epoch;
    m->atomic[at] = atomic;
  }
  /* Memory holds the buffer's type: what a store rounds to. */
  m->data[at] = ts_round_to(b->dtype, value);
  m->defined[at] = 1;
  return true;
}

/* A store's lanes for thread t (one, or a vector store's) into val, and the
 * element of lane 0 into *off (-1 after a fault). */
static void store_lanes(exec *x, const ir_stmt *s, mem *m, int t, float *val,
                        int64_t *off) {
  const ir_expr *v = s->store.value;
  int lanes = s->store.lanes > 1 ? s->store.lanes : 1;
  if (lanes > 1 && !s->store.async &&
      (v->kind != E_VECTOR || v->vector.n != lanes)) {
    fault(x, t, "vector store to %s of no vector of %d lanes", m->buf->name,
          lanes);
    return;
  }
  if (s->store.async && lanes > 1) {
    if (!load_vector(x, v, t, val))
      return;
  } else {
    for (int l = 0; l < lanes; l++)
      val[l] = eval_float(x, lanes > 1 ? v->vector.lane[l] : v, t);
  }
  *off = element(x, m->buf, s->store.idx, t, "store");
  if (*off >= 0 && lanes > 1 && !vector_fits(x, m, *off, lanes, t))
    *off = -1;
}

/* An atomic add's result: the element, which must hold a value, plus v. */
static bool atomic_sum(exec *x, mem *m, int64_t off, int t, float *v) {
  size_t at = slot(m, off, t);
  if (!m->defined[at]) {
    fault(x, t, "atomic add to %s %s at element %lld, which nothing wrote",
          scope_word(m->buf->scope), m->buf->name, (long long)off);
    return false;
  }
  *v += m->data[at];
  return true;
}

static void run_store(exec *x, const ir_stmt *s, const bool *active) {
  const ir_buffer *b = s->store.buf;
  mem *m = find_mem(x, b);
  if (!m) {
    fault(x, 0, "store to %s, which is not allocated here", b->name);
    return;
  }
  /* Phase 1: every active thread evaluates; phase 2: every one writes. */
  int lanes = s->store.lanes > 1 ? s->store.lanes : 1;
  int64_t *off = malloc(sizeof(int64_t) * (size_t)x->nthreads);
  float *val = malloc(sizeof(float) * (size_t)x->nthreads * (size_t)lanes);
  if (!off || !val) {
    fault(x, 0, "the executor ran out of memory");
    free(off);
    free(val);
    return;
  }
  for (int t = 0; t < x->nthreads && !x->fault; t++)
    if (active[t])
      store_lanes(x, s, m, t, val + (size_t)t * (size_t)lanes, &off[t]);
  for (int t = 0; t < x->nthreads && !x->fault; t++)
    for (int l = 0; l < lanes && active[t]; l++) {
      float v = val[(size_t)t * (size_t)lanes + l];
      if (s->store.atomic && !atomic_sum(x, m, off[t] + l, t, &v))
        break;
      if (!write_at(x, m, off[t] + l, t, v, s->store.atomic) ||
          (s->store.async && !issue_copy(x, m, slot(m, off[t] + l, t), t)))
        break;
    }
  free(off);
  free(val);
}

static void run_if(exec *x, const ir_stmt *s, const bool *active) {
  bool *then_mask = malloc((size_t)x->nthreads);
  bool *else_mask = malloc((size_t)x->nthreads);
  if (!then_mask || !else_mask) {
    fault(x, 0, "the executor ran out of memory");
  } else {
    bool any_then = false, any_else = false;
    for (int t = 0; t < x->nthreads && !x->fault; t++) {
      bool c = active[t] && eval_int(x, s->if_.cond, t);
      then_mask[t] = c;
      else_mask[t] = active[t] && !c;
      any_then |= c;
      any_else |= else_mask[t];
    }
    if (any_then)
      run(x, s->if_.then_, then_mask);
    if (any_else && s->if_.else_)
      run(x, s->if_.else_, else_mask);
  }
  free(then_mask);
  free(else_mask);
}

/* A vector temporary's lanes, each thread's read by one vector load. */
static void fill_vector_temp(exec *x, mem *m, const ir_expr *init,
                             const bool *active) {
  if (init->kind != E_LOAD || init->load.lanes != (int)m->size) {
    fault(x, 0, "vector temporary %s filled by no vector load of its size",
          m->buf->name);
    return;
  }
  for (int t = 0; t < x->nthreads && !x->fault; t++) {
    if (active[t] && load_vector(x, init, t, m->data + slot(m, 0, t)))
      memset(m->defined + slot(m, 0, t), 1, m->size);
  }
}

static void run_alloc(exec *x, const ir_stmt *s, const bool *active) {
  const ir_buffer *b = s->alloc.buf;
  if (x->nlive == MAX_LIVE) {
    fault(x, 0, "more than %d buffers live at once", MAX_LIVE);
    return;
  }
  mem *m = &x->live[x->nlive];
  bool local = b->scope == SCOPE_LOCAL;
  if (!mem_init(m, b, NULL, local ? (size_t)x->nthreads : 1, !local)) {
    mem_free(m, true);
    fault(x, 0, "the executor ran out of memory allocating %s", b->name);
    return;
  }
  x->nlive++;
  if (s->alloc.init)
    fill_vector_temp(x, m, s->alloc.init, active);
  run(x, s->alloc.body, active);
  check_landed(x, m);
  x->nlive--;
  mem_free(m, true);
}

static void run_barrier(exec *x, const bool *active) {
  for (int t = 0; t < x->nthreads; t++) {
    if (!active[t]) {
      fault(x, t, "barrier in divergent code: this thread does not reach it "
            "while others of its block do");
      return;
    }
  }
  x->epoch++;
}

/* Operand w's registers of `lane` (thread t) into r; false after a
 * fault, which a register nothing wrote is. */
static bool mma_operand(exec *x, const ir_stmt *s, int w, int t, int nregs,
                        float *r, int64_t *off) {
  const ir_buffer *b = s->mma.buf[w];
  mem *m = find_mem(x, b);
  *off = element(x, b, s->mma.idx[w], t, "mma operand read");
  for (int i = 0; m && *off >= 0 && i < nregs && !x->fault; i++)
    r[i] = read_at(x, m, *off + i * b->strides[b->ndim - 1], t);
  return m && *off >= 0 && !x->fault;
}

/* A warp's tensor-core instruction, once for each warp that reaches it:
 * the lanes' registers gathered, the tiles multiplied, the accumulators
 * scattered back (mma.h).  The whole warp must be there. */
static void run_mma(exec *x, const ir_stmt *s, const bool *active) {
  const mma_instr *in = mma_instr_for(s->mma.buf[MMA_A]->dtype);
  float regs[3][MMA_LANES][MMA_MAX_REGS];
  int64_t acc_off[MMA_LANES];
  for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += MMA_LANES) {
    int here = 0, missing = -1;
    for (int l = 0; l < MMA_LANES; l++) {
      bool on = w0 + l < x->nthreads && active[w0 + l];
      here += on;
      missing = !on && missing < 0 ? l : missing;
    }
    if (here == 0)
      continue;
    if (missing >= 0) {
      fault(x, w0, "mma.%s reached by %d of the 32 lanes of warp %d (lane "
            "%d is not there); the instruction needs the whole warp",
            in->name, here, w0 / MMA_LANES, missing);
      return;
    }
    for (int l = 0; l < MMA_LANES; l++)
      for (int w = 0; w < 3; w++) {
        int64_t off;
        if (!mma_operand(x, s, w, w0 + l, in->frag[w].regs, regs[w][l], &off))
          return;
        if (w == MMA_ACC)
          acc_off[l] = off;
      }
    mma_warp(in, regs[MMA_ACC], (const float(*)[MMA_MAX_REGS])regs[MMA_A],
             (const float(*)[MMA_MAX_REGS])regs[MMA_B]);
    const ir_buffer *acc = s->mma.buf[MMA_ACC];
    mem *m = find_mem(x, acc);
    for (int l = 0; l < MMA_LANES; l++)
      for (int r = 0; r < in->frag[MMA_ACC].regs; r++)
        if (!write_at(x, m, acc_off[l] + r * acc->strides[acc->ndim - 1],
                      w0 + l, regs[MMA_ACC][l][r], false))
          return;
  }
}

static void run(exec *x, const ir_stmt *s, const bool *active) {
  if (x->fault)
    return;
  switch (s->kind) {
  case S_FOR: run_for(x, s, active); return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n && !x->fault; i++)
      run(x, s->seq.items[i], active);
    return;
  case S_STORE: run_store(x, s, active); return;
  case S_IF: run_if(x, s, active); return;
  case S_ALLOC: run_alloc(x, s, active); return;
  case S_BARRIER: run_barrier(x, active); return;
  case S_ASYNC_COMMIT: run_commit(x, active); return;
  case S_ASYNC_WAIT: run_wait(x, s, active); return;
  case S_LANES: run(x, s->lanes.expanded, active); return;
  case S_MMA: run_mma(x, s, active); return;
  case S_COMPUTE:
    fault(x, 0, "compute statement in a lowered kernel");
    return;
  }
}

/* A kernel boundary: every access of the kernel before happened before
 * any of the next one's, so none of them can race with those. */
static void forget_accesses(mem *m) {
  for (size_t i = 0; m->tracked && i < m->size; i++) {
    m->writer[i] = m->reader[i] = NONE;
    m->atomic[i] = 0;
  }
}

/* The buffers global memory holds, as kernel k names them. */
static void bind_globals(exec *x, const ir_kernel *k) {
  const ir_buffer *bufs[4] = {k->A, k->B, k->C, k->W};
  for (int i = 0; i < x->nlive; i++) {
    forget_accesses(&x->live[i]);
    if (bufs[i])
      x->live[i].buf = bufs[i];
  }
}

/* Runs kernel k over its grid: blocks one after another. */
static bool run_grid(exec *x, const ir_kernel *k) {
  x->k = k;
  x->nthreads = (int)(k->block[0] * k->block[1] * k->block[2]);
  if (k->grid[0] * k->grid[1] * k->grid[2] * x->nthreads > INT32_MAX - 2) {
    snprintf(x->msg, x->msglen, "the executor runs at most 2^31 threads; "
             "use a smaller shape");
    return false;
  }
  x->nvars = k->nvars;
  free(x->env);
  x->env = calloc((size_t)x->nthreads * (size_t)(x->nvars ? x->nvars : 1),
                  sizeof(int64_t));
  bool *all = malloc((size_t)x->nthreads);
  for (int t = 0; x->queues && t < x->nqueues; t++)
    free(x->queues[t].recs);
  free(x->queues);
  x->queues = calloc((size_t)x->nthreads, sizeof(*x->queues));
  x->nqueues = x->queues ? x->nthreads : 0;
  if (!x->env || !all || !x->queues) {
    free(all);
    snprintf(x->msg, x->msglen, "the executor ran out of memory");
    return false;
  }
  bind_globals(x, k);
  memset(all, 1, (size_t)x->nthreads);
  for (int64_t bz = 0; bz < k->grid[2] && !x->fault; bz++)
    for (int64_t by = 0; by < k->grid[1] && !x->fault; by++)
      for (int64_t bx = 0; bx < k->grid[0] && !x->fault; bx++) {
        x->block_idx[0] = bx;
        x->block_idx[1] = by;
        x->block_idx[2] = bz;
        x->block_linear = (int)((bz * k->grid[1] + by) * k->grid[0] + bx);
        reset_queues(x);
        run(x, k->body, all);
      }
  free(all);
  return !x->fault;
}

/* "kernel 2 of 2 (tessel_x_reduce): " before a fault's description. */
static void name_kernel(exec *x, int i, int n) {
  char what[1024];
  snprintf(what, sizeof(what), "%s", x->msg);
  snprintf(x->msg, x->msglen, "kernel %d of %d (%s): %s", i + 1, n,
           x->k->entry ? x->k->entry : "?", what);
}

bool ir_execute_kernels(const ir_kernel *const *ks, int n, const float *A,
                        const float *B, float *C, bool c_defined, char *msg,
                        size_t msglen) {
  char scratch[1];
  exec x = {.k = ks[0], .msg = msglen ? msg : scratch,
            .msglen = msglen ? msglen : 1};
  x.msg[0] = 0;
  const ir_buffer *w = NULL;
  for (int i = 0; i < n; i++)
    w = ks[i]->W ? ks[i]->W : w;
  bool ok = mem_init(&x.live[0], ks[0]->A, (float *)A, 1, false) &&
            mem_init(&x.live[1], ks[0]->B, (float *)B, 1, false) &&
            mem_init(&x.live[2], ks[0]->C, C, 1, true) &&
            (!w || mem_init(&x.live[3], w, NULL, 1, true));
  x.nlive = w ? 4 : 3;
  if (!ok) {
    snprintf(x.msg, x.msglen, "the executor ran out of memory");
  } else {
    x.live[0].read_only = x.live[1].read_only = true;
    memset(x.live[2].defined, c_defined, x.live[2].size);
    for (int i = 0; i < n && ok; i++) {
      ok = run_grid(&x, ks[i]);
      if (!ok && n > 1)
        name_kernel(&x, i, n);
    }
  }
  for (int i = 0; i < x.nlive; i++)
    mem_free(&x.live[i], i == 3);
  for (int t = 0; x.queues && t < x.nqueues; t++)
    free(x.queues[t].recs);
  free(x.queues);
  free(x.env);
  return ok && !x.fault;
}

bool ir_execute(const ir_kernel *k, const float *A, const float *B, float *C,
                bool c_defined, char *msg, size_t msglen) {
  return ir_execute_kernels(&k, 1, A, B, C, c_defined, msg, msglen);
}
