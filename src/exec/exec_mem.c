/*
 * The reference executor's memory: buffers with their shadows (whether an
 * element was written, its last writer and reader with the barrier epoch
 * of the access), reads and writes that find races and reads of unwritten
 * elements, and asynchronous copies (cp.async) in flight until a wait of
 * the issuing thread lands them.  exec.c describes the rules.
 */
#include "exec_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"
#include "exec_space.h"

const char *exec_scope_word(ir_scope s) {
  return s == SCOPE_GLOBAL ? "global" : s == SCOPE_SHARED ? "shared" : "local";
}

bool mem_init(mem *m, const ir_buffer *b, float *data, size_t copies,
              int group, bool tracked) {
  memset(m, 0, sizeof(*m));
  m->buf = b;
  m->size = (size_t)ir_buffer_size(b);
  size_t n = m->size * copies;
  m->copies = copies;
  m->group = copies > 1 ? group : 0;
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

void mem_set_rows(mem *m) {
  const ir_buffer *b = m->buf;
  m->pitch = m->row = 0;
  if (!b || b->ndim != 2)
    return;
  int inner = b->strides[1] == 1 ? 1 : 0;
  if (b->strides[1 - inner] > b->shape[inner] && b->shape[1 - inner] > 1) {
    m->pitch = b->strides[1 - inner];
    m->row = b->shape[inner];
  }
}

/* Whether element `off` of m lies between its rows, where the caller's
 * elements are: a fault for thread t. */
static bool between_rows(exec *x, const mem *m, int64_t off, int t,
                         const char *verb) {
  if (!m->pitch || off % m->pitch < m->row)
    return false;
  const ir_buffer *b = m->buf;
  exec_fault(x, t, "%s of global %s at element %lld, between its rows: "
             "they are %lld elements, %lld apart (its leading dimension), "
             "and the %lld between belong to the caller", verb, b->name,
             (long long)off, (long long)m->row, (long long)m->pitch,
             (long long)(m->pitch - m->row));
  return true;
}

void mem_free(mem *m, bool owns_data) {
  if (owns_data)
    free(m->data);
  free(m->defined);
  free(m->atomic);
  free(m->writer);
  free(m->reader);
  free(m->wepoch);
  free(m->repoch);
  free(m->pending);
  free(m->landed);
  free(m->store_reading);
  free(m->store_released);
  for (int r = 0; r < MAX_CLUSTER; r++)
    free(m->store[r].at);
}

/* A shared buffer's shadow saved at its scope's end in the run from
 * block `block` on: every block's copy, n elements in all. */
typedef struct kept_shadow {
  const ir_buffer *buf;
  int block;
  size_t n;
  int32_t *writer, *reader;
  uint64_t *wepoch, *repoch;
} kept_shadow;

static kept_shadow *kept_of(exec *x, const ir_buffer *b) {
  for (int i = 0; i < x->nkept; i++)
    if (x->kept[i].buf == b)
      return &x->kept[i];
  return NULL;
}

static void free_kept(kept_shadow *k) {
  free(k->writer);
  free(k->reader);
  free(k->wepoch);
  free(k->repoch);
}

bool mem_keep_shadow(exec *x, const mem *m) {
  if (!m->tracked || m->buf->scope != SCOPE_SHARED || !m->writer)
    return true;
  kept_shadow *k = kept_of(x, m->buf);
  if (!k) {
    kept_shadow *grown = realloc(x->kept, (size_t)(x->nkept + 1) * sizeof(*grown));
    if (!grown)
      return false;
    x->kept = grown;
    k = &x->kept[x->nkept++];
    *k = (kept_shadow){.buf = m->buf, .n = m->size * m->copies};
    k->writer = malloc(k->n * sizeof(int32_t));
    k->reader = malloc(k->n * sizeof(int32_t));
    k->wepoch = malloc(k->n * sizeof(uint64_t));
    k->repoch = malloc(k->n * sizeof(uint64_t));
    if (!k->writer || !k->reader || !k->wepoch || !k->repoch) {
      free_kept(k);
      x->nkept--;
      return false;
    }
  }
  k->block = x->block_linear;
  memcpy(k->writer, m->writer, k->n * sizeof(int32_t));
  memcpy(k->reader, m->reader, k->n * sizeof(int32_t));
  memcpy(k->wepoch, m->wepoch, k->n * sizeof(uint64_t));
  memcpy(k->repoch, m->repoch, k->n * sizeof(uint64_t));
  return true;
}

void mem_restore_shadow(exec *x, mem *m) {
  const kept_shadow *k = m->writer ? kept_of(x, m->buf) : NULL;
  if (!k || k->block != x->block_linear || k->n != m->size * m->copies)
    return;
  memcpy(m->writer, k->writer, k->n * sizeof(int32_t));
  memcpy(m->reader, k->reader, k->n * sizeof(int32_t));
  memcpy(m->wepoch, k->wepoch, k->n * sizeof(uint64_t));
  memcpy(m->repoch, k->repoch, k->n * sizeof(uint64_t));
}

bool mem_kept_use(const exec *x, const ir_buffer *except, shared_use *u) {
  for (int i = 0; i < x->nkept; i++) {
    const kept_shadow *k = &x->kept[i];
    if (k->block != x->block_linear || k->buf == except)
      continue;
    size_t size = k->n / (size_t)x->ranks; /* a block's copy */
    for (size_t e = 0; e < k->n; e++) {
      uint64_t epoch = x->epoch[e / size];
      bool wrote = k->writer[e] != NONE && k->wepoch[e] == epoch;
      if (wrote || (k->reader[e] != NONE && k->repoch[e] == epoch)) {
        *u = (shared_use){k->buf, e % size,
                          wrote ? k->writer[e] : k->reader[e]};
        return true;
      }
    }
  }
  return false;
}

void mem_forget_shadows(exec *x) {
  for (int i = 0; i < x->nkept; i++)
    free_kept(&x->kept[i]);
  free(x->kept);
  x->kept = NULL;
  x->nkept = 0;
}

mem *find_mem(exec *x, const ir_buffer *b) {
  for (int i = x->nlive - 1; i >= 0; i--)
    if (x->live[i].buf == b)
      return &x->live[i];
  return NULL;
}

static bool same_block(const exec *x, int32_t a, int32_t b) {
  return a / x->block_threads == b / x->block_threads;
}

/* Someone else's access since the last barrier of my block (`now`, its
 * epoch), or in another block. */
static bool conflicts(const exec *x, int32_t who, uint64_t epoch, int32_t me,
                      uint64_t now) {
  if (who == NONE || who == me)
    return false;
  if (who == MANY)
    return epoch == now;
  return !same_block(x, who, me) || epoch == now;
}

/* A vector access of `lanes` elements from element `off` on: aligned to
 * its width, as the GPU requires (it faults on a misaligned float4), and
 * inside the buffer.  Its lanes are contiguous in memory, so lane l is
 * element off + l. */
bool vector_fits(exec *x, const mem *m, int64_t off, int lanes,
                        int t) {
  const ir_buffer *b = m->buf;
  if (off % lanes != 0) {
    exec_fault(x, t, "misaligned %d-wide vector access to %s %s at element %lld",
          lanes, exec_scope_word(b->scope), b->name, (long long)off);
    return false;
  }
  if (off + lanes > (int64_t)m->size) {
    exec_fault(x, t, "%d-wide vector access to %s %s at element %lld passes its "
          "end, element %lld", lanes, exec_scope_word(b->scope), b->name,
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

/* A fault for touching element `off` (at slot `at`) whose copy has not
 * landed: which copy of the pipelined buffer it lies in, who issued it,
 * and the wait that would have completed it. */
static void in_flight(exec *x, const mem *m, int64_t off, size_t at, int t,
                      const char *verb) {
  const ir_buffer *b = m->buf;
  int who = m->pending[at] % x->nthreads;
  const copy_queue *q = &x->queues[who];
  uint64_t group = copy_group(x, m, at, who);
  char missing[160], stage[64] = "", issuer[128];
  exec_thread_name(x, who, issuer, sizeof(issuer));
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
  exec_fault(x, t, "%s of shared %s at element %lld%s before its cp.async "
             "landed: thread %s issued it in its copy group %llu, and %s",
             verb, b->name, (long long)off, stage, issuer,
             (unsigned long long)group, missing);
}

/* Thread t's copy into m's element `at` is in flight in its open group. */
bool issue_copy(exec *x, mem *m, size_t at, int t) {
  copy_queue *q = &x->queues[t];
  if (!m->pending) {
    exec_fault(x, t, "asynchronous copy into %s %s: cp.async writes only shared "
          "memory", exec_scope_word(m->buf->scope), m->buf->name);
    return false;
  }
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 64;
    copy_rec *r = realloc(q->recs, cap * sizeof(*r));
    if (!r) {
      exec_fault(x, t, "the executor ran out of memory");
      return false;
    }
    q->recs = r;
    q->cap = cap;
  }
  q->recs[q->n++] = (copy_rec){m, at, q->committed};
  m->pending[at] = exec_gid(x, t);
  return true;
}

void run_commit(exec *x, const bool *active) {
  for (int t = 0; t < x->nthreads; t++)
    x->queues[t].committed += active[t];
}

/* wait N: every group but the N newest lands; its copies count as written
 * now, so a barrier must follow before other threads read them. */
void run_wait(exec *x, const ir_stmt *s, const bool *active) {
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
      r->m->wepoch[r->at] = exec_epoch(x, t);
    }
    if (q->head == q->n)
      q->head = q->n = 0;
  }
}

/* A buffer's scope ends: no copy into any block's copy of it may still be
 * in flight. */
void check_landed(exec *x, const mem *m) {
  size_t n = m->size * m->copies;
  for (size_t i = 0; m->pending && i < n && !x->fault; i++)
    if (m->pending[i] != NONE)
      in_flight(x, m, (int64_t)(i % m->size), i,
                m->pending[i] % x->nthreads, "end of scope");
}

void reset_queues(exec *x) {
  for (int t = 0; t < x->nthreads; t++) {
    copy_queue *q = &x->queues[t];
    q->head = q->n = 0;
    q->committed = q->done = q->waited = 0;
  }
}

/* Where element `off` of m lies for thread t: m itself and its slot, or
 * for a sampled run's C or W a view of the page holding it.  SIZE_MAX
 * after a fault (out of memory). */
static size_t locate(exec *x, mem **m, int64_t off, int t, mem *view) {
  if (!(*m)->space)
    return mem_slot(*m, off, t);
  space_page *p = space_page_of((*m)->space, (*m)->matrix, off);
  if (!p) {
    exec_fault(x, t, "the executor ran out of memory for a page of %s",
               (*m)->buf->name);
    return SIZE_MAX;
  }
  *view = (mem){.buf = (*m)->buf, .data = p->data, .size = (*m)->size,
                .tracked = true, .defined = p->defined, .atomic = p->atomic,
                .writer = p->writer, .reader = p->reader,
                .wepoch = p->wepoch, .repoch = p->repoch,
                .space = (*m)->space, .matrix = (*m)->matrix};
  *m = view;
  return (size_t)(off % SPACE_PAGE);
}

/* Whether a sampled run's element `off` of m lies in the sample: C's and
 * W's over the sample's elements of C; a packed operand's in a row of
 * op(A), or a column of op(B), that the sample's elements of C take. */
static bool in_sample(const mem *m, int64_t off) {
  if (m->matrix < GLOBAL_PACKED_A)
    return space_in_sample(m->space, m->matrix, off);
  int w = m->matrix - GLOBAL_PACKED_A; /* op(A)'s rows are dimension 0 */
  return space_line_in_sample(m->space, w, off / m->buf->strides[w]);
}

/* Element `off` of m as thread t reads it: written before (unless an
 * input), and no race with another thread's write.  In a sampled run, A
 * and B are computed, and an unwritten element outside the sample reads
 * as NaN (its writer is a block the sample leaves out). */
float read_at(exec *x, mem *m, int64_t off, int t) {
  const ir_buffer *b = m->buf;
  if (between_rows(x, m, off, t, "read"))
    return 0.0f;
  if (m->space && m->read_only)
    return space_value(m->space->seed, m->matrix, off,
                       m->space->type[m->matrix]);
  mem view;
  size_t at = locate(x, &m, off, t, &view);
  if (at == SIZE_MAX)
    return 0.0f;
  if (!m->read_only && !m->defined[at]) {
    if (m->space && !in_sample(m, off))
      return NAN;
    exec_fault(x, t, "read of %s %s at element %lld, which nothing wrote",
          exec_scope_word(b->scope), b->name, (long long)off);
    return 0.0f;
  }
  if (m->pending && m->pending[at] != NONE) {
    if (m->landed) { /* a TMA copy's: it lands when its phase completes */
      exec_fault(x, t, "read of shared %s at element %lld (stage %lld) "
                 "before its TMA copy landed: its full barrier's phase has "
                 "not completed", b->name, (long long)off,
                 (long long)(off / b->strides[0]));
      return 0.0f;
    }
    in_flight(x, m, off, at, t, "read");
    return 0.0f;
  }
  if (!exec_tma_read_ok(x, m, at, off, t))
    return 0.0f;
  if (m->tracked) {
    int32_t me = exec_gid(x, t);
    uint64_t now = exec_epoch(x, t);
    if (conflicts(x, m->writer[at], m->wepoch[at], me, now)) {
      exec_fault(x, t, "race: read of %s %s at element %lld written by another "
            "thread without a barrier between", exec_scope_word(b->scope), b->name,
            (long long)off);
      return 0.0f;
    }
    if (m->reader[at] == NONE || m->repoch[at] != now)
      m->reader[at] = me;
    else if (m->reader[at] != me)
      m->reader[at] = MANY;
    m->repoch[at] = now;
  }
  return m->data[at];
}

/* Element `off` of m written by thread t, unless that races with another
 * thread's access; false after a fault. */
bool write_at(exec *x, mem *m, int64_t off, int t, float value,
                     bool atomic) {
  const ir_buffer *b = m->buf;
  if (between_rows(x, m, off, t, "write"))
    return false;
  mem view;
  size_t at = locate(x, &m, off, t, &view);
  if (at == SIZE_MAX)
    return false;
  if (m->pending && m->pending[at] != NONE) {
    in_flight(x, m, off, at, t, "write");
    return false;
  }
  if (!exec_tma_store_write_ok(x, m, at, t))
    return false;
  if (m->tracked) {
    int32_t me = exec_gid(x, t);
    uint64_t now = exec_epoch(x, t);
    /* Atomic adds by any threads to one element are ordered by the
     * hardware; anything else beside one is a race. */
    bool both_atomic = atomic && m->atomic[at];
    if (!both_atomic && conflicts(x, m->writer[at], m->wepoch[at], me, now)) {
      exec_fault(x, t, "race: two threads write %s %s at element %lld without "
            "a barrier between", exec_scope_word(b->scope), b->name,
            (long long)off);
      return false;
    }
    if (conflicts(x, m->reader[at], m->repoch[at], me, now)) {
      exec_fault(x, t, "race: write of %s %s at element %lld that another "
            "thread read without a barrier between", exec_scope_word(b->scope),
            b->name, (long long)off);
      return false;
    }
    m->writer[at] = me;
    m->wepoch[at] = b->async_read ? ++x->async_writes : now;
    m->atomic[at] = atomic;
  }
  /* Memory holds the buffer's type: what a store rounds to. */
  m->data[at] = ts_round_to(b->dtype, value);
  m->defined[at] = 1;
  return true;
}

/* An atomic add's result: the element, which must hold a value, plus v. */
bool atomic_sum(exec *x, mem *m, int64_t off, int t, float *v) {
  if (between_rows(x, m, off, t, "atomic add"))
    return false;
  mem view;
  size_t at = locate(x, &m, off, t, &view);
  if (at == SIZE_MAX)
    return false;
  if (!m->defined[at]) {
    exec_fault(x, t, "atomic add to %s %s at element %lld, which nothing wrote",
          exec_scope_word(m->buf->scope), m->buf->name, (long long)off);
    return false;
  }
  *v += m->data[at];
  return true;
}

/* A kernel boundary: every access of the kernel before happened before
 * any of the next one's, so none of them can race with those. */
void forget_accesses(mem *m) {
  if (m->space && !m->read_only)
    space_forget(m->space);
  for (size_t i = 0; m->tracked && i < m->size * m->copies; i++) {
    m->writer[i] = m->reader[i] = NONE;
    m->atomic[i] = 0;
  }
}

