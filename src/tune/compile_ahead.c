/*
 * Compiling ahead of the runners (tune --gpus, mpirun): each runner
 * compiles the group it takes, and while NVRTC runs its GPU waits.  So
 * while a shape's first pass is in the queue, a thread of the lead
 * compiles the candidates still pending there, in the queue's order (the
 * order the runners take them), a core's worth at a time, into the kernel
 * cache, and a runner that takes them later finds them compiled.  The
 * kernels themselves are dropped: the cache on disk is what is shared
 * (its writes are atomic renames, so a runner compiling the same
 * candidate at the same moment only does the work twice).
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "tune_impl.h"

struct tune_ahead {
  pthread_t thread;
  const ts_tune_space *sp;
  const ts_tune_opts *o;
  const char *arch;
  const ts_tune_shape *r; /* read only: its definition and configurations */
  tune_queue *q;
  int gen, n;        /* the generation and its slots when published */
  int batch;          /* candidates compiled at once: the threads' count */
  bool *done;         /* by slot: compiled here, or found taken */
  pthread_mutex_t lock;
  bool stop;
};

static bool stopping(tune_ahead *a) {
  pthread_mutex_lock(&a->lock);
  bool stop = a->stop;
  pthread_mutex_unlock(&a->lock);
  return stop;
}

/* The next pending slots of the generation not compiled here yet, up to
 * a batch, as candidate indices in which; how many.  A slot a runner has
 * taken is its own to compile. */
static int next_batch(tune_ahead *a, int *which) {
  int m = 0;
  tune_queue_lock(a->q);
  for (int i = 0; a->q->generation == a->gen && i < a->n && m < a->batch;
       i++) {
    if (a->done[i])
      continue;
    a->done[i] = true;
    if (a->q->slot[i].state == SLOT_PENDING)
      which[m++] = a->q->slot[i].index;
  }
  tune_queue_unlock(a->q);
  return m;
}

static void compile_batch(tune_ahead *a, const int *which, int m) {
  ts_program **progs = calloc((size_t)m, sizeof(*progs));
  ts_kernel **k = calloc((size_t)m, sizeof(*k));
  for (int v = 0; progs && k && v < m; v++) {
    /* A copy of the configuration, parsed from its text: scheduling
     * writes into a configuration (the knobs it declares), and the runner
     * that takes this candidate meanwhile schedules the original. */
    char err[160];
    ts_config *c = ts_config_parse(a->r->c[which[v]].text, err, sizeof(err));
    ts_sched *s = c ? ts_space_schedule(a->sp->space, &a->r->def, c) : NULL;
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

static void *compile_pending(void *arg) {
  tune_ahead *a = arg;
  int *which = malloc(sizeof(*which) * (size_t)a->batch);
  for (int m; which && !stopping(a) && (m = next_batch(a, which)) > 0;)
    compile_batch(a, which, m);
  free(which);
  return NULL;
}

tune_ahead *tune_ahead_start(const ts_tune_space *sp, const ts_tune_opts *o,
                             const char *arch, const ts_tune_shape *r,
                             tune_queue *q, int gen) {
  tune_ahead *a = calloc(1, sizeof(*a));
  if (!a)
    return NULL;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  *a = (tune_ahead){.sp = sp, .o = o, .arch = arch, .r = r, .q = q,
                    .gen = gen, .n = q->n,
                    .batch = o->jobs > 0 ? o->jobs : cpus > 0 ? (int)cpus : 1};
  a->done = calloc((size_t)(q->n ? q->n : 1), sizeof(*a->done));
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
