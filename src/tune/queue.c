/*
 * The queue that runners on several GPUs take a shape's candidates from
 * (tuner.c's first pass with --gpus): the lead runner publishes the
 * candidates to time, every runner (the lead too) takes a group when it
 * is free, so a slow GPU takes fewer, and writes the results back; the
 * supervisor puts the groups of a runner that died back in the queue,
 * each to be timed alone (or fails the one it had alone).  It holds the
 * first passes of several shapes at once, each in a bank of its own: the
 * lead publishes the next ones before it times a shape's fastest in full
 * on its GPU alone, and the others take from the earliest shape that has
 * candidates pending.
 *
 * It lives in shared memory mapped before the runners are forked, locked
 * by a process-shared robust mutex: a runner killed while it holds the
 * lock leaves it to the next taker, who finds the queue as it was (every
 * change is made whole under the lock, a few stores).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "tune_impl.h"

static size_t queue_bytes(int capacity, int nbanks) {
  return sizeof(tune_queue) + sizeof(tune_slot) * (size_t)capacity * (size_t)nbanks;
}

tune_queue *tune_queue_new(int capacity, int nbanks) {
  if (nbanks < 1 || nbanks > TUNE_BANKS || capacity < 1)
    return NULL;
  /* Pages are mapped as they are first written: the banks cost what the
   * shapes in them use. */
  tune_queue *q = mmap(NULL, queue_bytes(capacity, nbanks), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED)
    return NULL;
  memset(q, 0, sizeof(*q));
  q->capacity = capacity;
  q->nbanks = nbanks;
  for (int b = 0; b < nbanks; b++)
    q->bank[b].unit = -1;
  pthread_mutexattr_t a;
  bool ok = pthread_mutexattr_init(&a) == 0 &&
            pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0 &&
            pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0 &&
            pthread_mutex_init(&q->lock, &a) == 0;
  pthread_mutexattr_destroy(&a);
  if (!ok) {
    munmap(q, queue_bytes(capacity, nbanks));
    return NULL;
  }
  return q;
}

void tune_queue_free(tune_queue *q) {
  if (!q)
    return;
  pthread_mutex_destroy(&q->lock);
  munmap(q, queue_bytes(q->capacity, q->nbanks));
}

void tune_queue_lock(tune_queue *q) {
  if (pthread_mutex_lock(&q->lock) == EOWNERDEAD)
    pthread_mutex_consistent(&q->lock);
}

void tune_queue_unlock(tune_queue *q) { pthread_mutex_unlock(&q->lock); }

tune_bank *tune_queue_bank(tune_queue *q, int gen, int *first) {
  for (int b = 0; gen > 0 && b < q->nbanks; b++)
    if (q->bank[b].generation == gen && q->bank[b].unit >= 0) {
      *first = b * q->capacity;
      return &q->bank[b];
    }
  return NULL;
}

/* The bank for unit's publish (see tune_queue_publish), or -1. */
static int bank_for(const tune_queue *q, int unit) {
  int free_bank = -1, latest = -1;
  for (int b = 0; b < q->nbanks; b++) {
    int u = q->bank[b].unit;
    if (u == unit)
      return b;
    if (u < 0 && free_bank < 0)
      free_bank = b;
    if (u > unit && (latest < 0 || u > q->bank[latest].unit))
      latest = b;
  }
  return free_bank >= 0 ? free_bank : latest;
}

/* Slots [at, at + n) of bank b: which[0..n), pending. */
static void fill(tune_queue *q, int b, int at, const int *which,
                 const bool *alone, int n) {
  tune_slot *s = q->slot + (size_t)b * (size_t)q->capacity;
  for (int i = 0; i < n; i++)
    s[at + i] = (tune_slot){.index = which[i], .state = SLOT_PENDING,
                            .alone = alone[i], .runner = -1};
}

int tune_queue_publish(tune_queue *q, int unit, const int *which,
                       const bool *alone, int n, int group) {
  if (n > q->capacity)
    return 0;
  tune_queue_lock(q);
  int b = bank_for(q, unit), gen = 0;
  if (b >= 0) {
    gen = ++q->generation;
    q->bank[b] = (tune_bank){.generation = gen, .unit = unit, .n = n,
                             .group = group};
    fill(q, b, 0, which, alone, n);
  }
  tune_queue_unlock(q);
  return gen;
}

bool tune_queue_append(tune_queue *q, int gen, const int *which,
                       const bool *alone, int n) {
  tune_queue_lock(q);
  int first;
  tune_bank *k = tune_queue_bank(q, gen, &first);
  bool ok = k && k->n + n <= q->capacity;
  if (ok) {
    fill(q, (int)(k - q->bank), k->n, which, alone, n);
    k->n += n;
  }
  tune_queue_unlock(q);
  return ok;
}

/* Up to `most` pending slots of bank k (its slots from first) for runner
 * r: a suspect alone, else pending ones together; their numbers in got. */
static int take_from(tune_queue *q, const tune_bank *k, int first, int r,
                     int most, int *got) {
  int m = 0;
  most = most < k->group ? most : k->group;
  for (int pass = 0; pass < 2 && m == 0; pass++)
    for (int i = first; i < first + k->n && m < most; i++) {
      tune_slot *s = &q->slot[i];
      /* Suspects first, each alone. */
      if (s->state != SLOT_PENDING || s->alone != (pass == 0))
        continue;
      s->state = SLOT_TAKEN;
      s->runner = r;
      got[m++] = i;
      if (s->alone)
        break;
    }
  return m;
}

int tune_queue_take(tune_queue *q, int gen, int k, int most, int *got) {
  tune_queue_lock(q);
  int first;
  const tune_bank *b = tune_queue_bank(q, gen, &first);
  int m = b ? take_from(q, b, first, k, most, got) : 0;
  tune_queue_unlock(q);
  return m;
}

int tune_queue_open_banks(const tune_queue *q, int *order) {
  int n = 0;
  for (int b = 0; b < q->nbanks; b++) {
    if (q->bank[b].unit < 0)
      continue;
    int at = n++; /* insertion: a few banks */
    for (; at > 0 && q->bank[order[at - 1]].unit > q->bank[b].unit; at--)
      order[at] = order[at - 1];
    order[at] = b;
  }
  return n;
}

int tune_queue_take_next(tune_queue *q, int k, int most, tune_group *g) {
  tune_queue_lock(q);
  int order[TUNE_BANKS], m = 0;
  int n = tune_queue_open_banks(q, order);
  most = most < CHUNK ? most : CHUNK;
  for (int i = 0; i < n && m == 0; i++) {
    const tune_bank *b = &q->bank[order[i]];
    m = take_from(q, b, order[i] * q->capacity, k, most, g->slot);
    g->gen = b->generation;
    g->unit = b->unit;
  }
  for (int i = 0; i < m; i++) {
    g->index[i] = q->slot[g->slot[i]].index;
    g->alone[i] = q->slot[g->slot[i]].alone;
  }
  g->n = m;
  tune_queue_unlock(q);
  return m;
}

void tune_queue_finish(tune_queue *q, int gen, int k, int slot,
                       const ts_bench_result *b) {
  tune_queue_lock(q);
  int first;
  const tune_bank *bank = tune_queue_bank(q, gen, &first);
  tune_slot *s = &q->slot[slot];
  if (bank && slot >= first && slot < first + bank->n &&
      s->state == SLOT_TAKEN && s->runner == k) {
    s->state = SLOT_DONE;
    s->status = b->status != TS_OK ? b->status : b->skipped ? TS_ERR_CUDA : TS_OK;
    s->median_ms = b->median_ms;
    s->tflops = b->tflops;
    s->max_rel_err = b->max_rel_err;
    snprintf(s->message, sizeof(s->message), "%.255s", b->message);
    if (k >= 0 && k < TUNE_MAX_GPUS)
      q->took[k]++;
  }
  tune_queue_unlock(q);
}

/* Whether slot i is runner k's, taken in a bank still open. */
static bool held_by(const tune_queue *q, int i, int k) {
  const tune_slot *s = &q->slot[i];
  const tune_bank *b = &q->bank[i / q->capacity];
  return b->unit >= 0 && i % q->capacity < b->n && s->state == SLOT_TAKEN &&
         s->runner == k;
}

int tune_queue_requeue(tune_queue *q, int k, bool in_flight,
                       const char *alone_failed) {
  int taken = 0, all = q->nbanks * q->capacity;
  tune_queue_lock(q);
  for (int i = 0; i < all; i++)
    taken += held_by(q, i, k);
  for (int i = 0; i < all; i++) {
    if (!held_by(q, i, k))
      continue;
    tune_slot *s = &q->slot[i];
    if (in_flight && taken == 1 && alone_failed) {
      s->state = SLOT_DONE;
      s->status = TS_ERR_CUDA;
      snprintf(s->message, sizeof(s->message), "%.255s", alone_failed);
    } else {
      s->state = SLOT_PENDING;
      s->alone = s->alone || in_flight;
      s->runner = -1;
    }
  }
  tune_queue_unlock(q);
  return taken;
}

void tune_queue_close_unit(tune_queue *q, int gen) {
  tune_queue_lock(q);
  int first;
  tune_bank *b = tune_queue_bank(q, gen, &first);
  if (b)
    b->unit = -1;
  tune_queue_unlock(q);
}

void tune_queue_close_all(tune_queue *q) {
  tune_queue_lock(q);
  for (int b = 0; b < q->nbanks; b++)
    q->bank[b].unit = -1;
  tune_queue_unlock(q);
}

void tune_queue_close_run(tune_queue *q) {
  tune_queue_lock(q);
  q->closed = true;
  tune_queue_unlock(q);
}
