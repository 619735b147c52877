/*
 * Compiling ahead of the runners (tune --gpus, mpirun): each runner
 * compiles the group it takes, and while NVRTC runs its GPU waits.  So
 * while shapes' first passes are in the queue, a thread of the lead
 * compiles the candidates still pending there, in the order the runners
 * take them (the earliest shape first, each in the queue's order), a
 * core's worth at a time, into the kernel cache, and a runner that takes
 * them later finds them compiled.  The
 * kernels themselves are dropped: the cache on disk is what is shared
 * (its writes are atomic renames, so a runner compiling the same
 * candidate at the same moment only does the work twice).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune_impl.h"

struct tune_ahead {
  pthread_t thread;
  const ts_tune_space *sp;
  const ts_tune_opts *o;
  const char *arch;
  const ts_tune_shape *runs; /* read only: definitions and configurations */
  int unit0, nruns;          /* runs[i] is unit unit0 + i */
  tune_queue *q;
  int batch;          /* candidates compiled at once: the threads' count */
  bool *done;         /* by slot: compiled here, or found taken */
  int seen[TUNE_BANKS]; /* each bank's generation that done is for */
  pthread_mutex_t lock;
  bool stop;
};

static bool stopping(tune_ahead *a) {
  pthread_mutex_lock(&a->lock);
  bool stop = a->stop;
  pthread_mutex_unlock(&a->lock);
  return stop;
}

/* Bank b's slots not yet compiled here that are pending, up to a batch,
 * as candidate indices in which; how many.  A slot a runner has taken is
 * its own to compile.  Under the queue's lock. */
static int pending_in(tune_ahead *a, int b, int *which) {
  tune_queue *q = a->q;
  int first = b * q->capacity, m = 0;
  if (a->seen[b] != q->bank[b].generation) { /* published anew */
    memset(a->done + first, 0, sizeof(*a->done) * (size_t)q->capacity);
    a->seen[b] = q->bank[b].generation;
  }
  for (int i = first; i < first + q->bank[b].n && m < a->batch; i++) {
    if (a->done[i])
      continue;
    a->done[i] = true;
    if (q->slot[i].state == SLOT_PENDING)
      which[m++] = q->slot[i].index;
  }
  return m;
}

/* The next batch, of the earliest shape of this space with any pending
 * (*r that shape); how many. */
static int next_batch(tune_ahead *a, int *which, const ts_tune_shape **r) {
  tune_queue *q = a->q;
  int order[TUNE_BANKS], m = 0;
  tune_queue_lock(q);
  int n = tune_queue_open_banks(q, order);
  for (int i = 0; i < n && m == 0; i++) {
    int u = q->bank[order[i]].unit - a->unit0;
    if (u < 0 || u >= a->nruns) /* another space's */
      continue;
    *r = &a->runs[u];
    m = pending_in(a, order[i], which);
  }
  tune_queue_unlock(q);
  return m;
}

static void compile_batch(tune_ahead *a, const ts_tune_shape *r,
                          const int *which, int m) {
  ts_program **progs = calloc((size_t)m, sizeof(*progs));
  ts_kernel **k = calloc((size_t)m, sizeof(*k));
  for (int v = 0; progs && k && v < m; v++) {
    /* A copy of the configuration, parsed from its text: scheduling
     * writes into a configuration (the knobs it declares), and the runner
     * that takes this candidate meanwhile schedules the original. */
    char err[160];
    ts_config *c = ts_config_parse(r->c[which[v]].text, err, sizeof(err));
    ts_sched *s = c ? ts_space_schedule(a->sp->space, &r->def, c) : NULL;
    progs[v] = s ? ts_lower(s) : NULL;
    ts_sched_free(s);
    ts_config_free(c);
  }
  int n = 0; /* the programs lowered, packed to the front */
  for (int v = 0; progs && k && v < m; v++)
    if (progs[v])
      progs[n++] = progs[v];
  if (progs && k)
    ts_compile_all(progs, n, a->arch, a->batch, k);
  for (int v = 0; progs && k && v < n; v++) {
    ts_kernel_free(k[v]);
    ts_program_free(progs[v]);
  }
  free(progs);
  free(k);
}

/* Until stopped: what is pending compiled, and while nothing is, a look
 * every few ms for the next shape the lead publishes. */
static void *compile_pending(void *arg) {
  tune_ahead *a = arg;
  int *which = malloc(sizeof(*which) * (size_t)a->batch);
  while (which && !stopping(a)) {
    const ts_tune_shape *r = NULL;
    int m = next_batch(a, which, &r);
    if (m)
      compile_batch(a, r, which, m);
    else
      usleep(5000);
  }
  free(which);
  return NULL;
}

tune_ahead *tune_ahead_start(const ts_tune_space *sp, const ts_tune_opts *o,
                             const char *arch, const ts_tune_shape *runs,
                             int unit0, int nruns, tune_queue *q) {
  tune_ahead *a = calloc(1, sizeof(*a));
  if (!a)
    return NULL;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  *a = (tune_ahead){.sp = sp, .o = o, .arch = arch, .runs = runs,
                    .unit0 = unit0, .nruns = nruns, .q = q,
                    .batch = o->jobs > 0 ? o->jobs : cpus > 0 ? (int)cpus : 1};
  a->done = calloc((size_t)q->capacity * (size_t)q->nbanks, sizeof(*a->done));
  if (!a->done || pthread_mutex_init(&a->lock, NULL) != 0) {
    free(a->done);
    free(a);
    return NULL;
  }
  if (pthread_create(&a->thread, NULL, compile_pending, a) != 0) {
    pthread_mutex_destroy(&a->lock);
    free(a->done);
    free(a);
    return NULL;
  }
  return a;
}

void tune_ahead_stop(tune_ahead *a) {
  if (!a)
    return;
  pthread_mutex_lock(&a->lock);
  a->stop = true;
  pthread_mutex_unlock(&a->lock);
  pthread_join(a->thread, NULL);
  pthread_mutex_destroy(&a->lock);
  free(a->done);
  free(a);
}
