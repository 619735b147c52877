/*
 * The queue that runners on several GPUs take a shape's candidates from
 * (tuner.c's first pass with --gpus): the lead runner publishes the
 * candidates to time, every runner (the lead too) takes a group when it
 * is free, so a slow GPU takes fewer, and writes the results back; the
 * supervisor puts the groups of a runner that died back in the queue,
 * each to be timed alone (or fails the one it had alone).
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

static size_t queue_bytes(int capacity) {
  return sizeof(tune_queue) + sizeof(tune_slot) * (size_t)capacity;
}

tune_queue *tune_queue_new(int capacity) {
  tune_queue *q = mmap(NULL, queue_bytes(capacity), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED)
    return NULL;
  memset(q, 0, sizeof(*q));
  q->capacity = capacity;
  q->unit = -1;
  pthread_mutexattr_t a;
  bool ok = pthread_mutexattr_init(&a) == 0 &&
            pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0 &&
            pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0 &&
            pthread_mutex_init(&q->lock, &a) == 0;
  pthread_mutexattr_destroy(&a);
  if (!ok) {
    munmap(q, queue_bytes(capacity));
    return NULL;
  }
  return q;
}

void tune_queue_free(tune_queue *q) {
  if (!q)
    return;
  pthread_mutex_destroy(&q->lock);
  munmap(q, queue_bytes(q->capacity));
}

void tune_queue_lock(tune_queue *q) {
  if (pthread_mutex_lock(&q->lock) == EOWNERDEAD)
    pthread_mutex_consistent(&q->lock);
}

void tune_queue_unlock(tune_queue *q) { pthread_mutex_unlock(&q->lock); }

bool tune_queue_publish(tune_queue *q, int unit, const int *which,
                        const bool *alone, int n, int group) {
  if (n > q->capacity)
    return false;
  tune_queue_lock(q);
  q->generation++;
  q->unit = unit;
  q->n = n;
  q->group = group;
  for (int i = 0; i < n; i++)
    q->slot[i] = (tune_slot){.index = which[i], .state = SLOT_PENDING,
                             .alone = alone[i], .runner = -1};
  tune_queue_unlock(q);
  return true;
}

bool tune_queue_append(tune_queue *q, const int *which, const bool *alone,
                       int n) {
  tune_queue_lock(q);
  bool ok = q->n + n <= q->capacity;
  for (int i = 0; ok && i < n; i++)
    q->slot[q->n + i] = (tune_slot){.index = which[i], .state = SLOT_PENDING,
                                    .alone = alone[i], .runner = -1};
  q->n += ok ? n : 0;
  tune_queue_unlock(q);
  return ok;
}

/* Up to `most` pending slots of generation gen for runner k: a suspect
 * alone, else pending ones together; their slot numbers in got. */
int tune_queue_take(tune_queue *q, int gen, int k, int most, int *got) {
  int m = 0;
  tune_queue_lock(q);
  most = most < q->group ? most : q->group;
  for (int pass = 0; q->generation == gen && pass < 2 && m == 0; pass++)
    for (int i = 0; i < q->n && m < most; i++) {
      tune_slot *s = &q->slot[i];
      /* Suspects first, each alone. */
      if (s->state != SLOT_PENDING || s->alone != (pass == 0))
        continue;
      s->state = SLOT_TAKEN;
      s->runner = k;
      got[m++] = i;
      if (s->alone)
        break;
    }
  tune_queue_unlock(q);
  return m;
}

void tune_queue_finish(tune_queue *q, int gen, int k, int slot,
                       const ts_bench_result *b) {
  tune_queue_lock(q);
  tune_slot *s = &q->slot[slot];
  if (q->generation == gen && s->state == SLOT_TAKEN && s->runner == k) {
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

int tune_queue_requeue(tune_queue *q, int k, bool in_flight,
                       const char *alone_failed) {
  int taken = 0;
  tune_queue_lock(q);
  for (int i = 0; i < q->n; i++)
    taken += q->slot[i].state == SLOT_TAKEN && q->slot[i].runner == k;
  for (int i = 0; i < q->n; i++) {
    tune_slot *s = &q->slot[i];
    if (s->state != SLOT_TAKEN || s->runner != k)
      continue;
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

void tune_queue_close_unit(tune_queue *q, bool run_over) {
  tune_queue_lock(q);
  q->unit = -1;
  q->closed = q->closed || run_over;
  tune_queue_unlock(q);
}
