/*
 * A helper runner: with several GPUs, one process per GPU but the lead's
 * (tuner.c) times candidates of the first pass that it takes from the
 * queue (queue.c), a group at a time as it is free, so that a slow GPU
 * takes fewer, from the earliest shape the lead published that has any
 * left.  It enumerates that shape (the same configurations, in the same
 * order, as the lead's), compiles what it took (the kernel
 * cache has the lead's kernels), times them as the lead would, journals
 * each result on its own GPU and puts the results back; the lead journals
 * them too, ranks, and times the fastest again on its own GPU, so the
 * ranking compares like with like.  A helper that faults ends, and the
 * supervisor puts its group back in the queue.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune_impl.h"

typedef struct {
  const tune_args *a;
  int k; /* which runner */
  ts_gpu *gpu;
  tune_handover *h;
  int unit;          /* the unit r was enumerated for; -1 when none */
  ts_tune_shape r;   /* its configurations */
  const ts_tune_space *sp;
} helper;

/* The unit the lead published, enumerated; false when it cannot be (said
 * on stderr). */
static bool open_unit(helper *w, int unit) {
  const ts_tune_opts *o = w->a->o;
  tune_free_shape(&w->r);
  w->unit = -1;
  w->sp = &w->a->spaces[unit / o->nshapes];
  w->r.def = o->shapes[unit % o->nshapes];
  w->h->unit = unit;
  tune_shape_text(&w->r.def, w->h->shape, sizeof(w->h->shape));
  if (!tune_enumerate(w->sp, o, &w->r))
    return false;
  w->unit = unit;
  return true;
}

/* A result this runner timed, journaled on its own GPU as soon as its
 * group is over: if the lead's process dies before it has the result, the
 * next run's lead takes it from this journal instead of timing it again. */
static void journal_result(helper *w, ts_tune_candidate *c,
                           const ts_bench_result *b) {
  c->quick = *b;
  c->has_quick = true;
  tune_journal_note(w->gpu, w->sp->key, &w->r, c, false);
}

/* Times the group taken as one.  TS_OK, or the device's error: the
 * context is lost, and h says what was in flight. */
static ts_status time_group(helper *w, const tune_group *g) {
  tune_queue *q = w->a->q;
  int m = g->n;
  const int *idx = g->index;
  ts_kernel *k[CHUNK];
  ts_bench_result res[CHUNK];
  if (!tune_compile_some(w->sp, w->a->o, ts_gpu_arch(w->gpu), &w->r, idx, m))
    return TS_ERR_NO_MEMORY;
  for (int i = 0; i < m; i++)
    k[i] = w->r.c[idx[i]].kernel;
  snprintf(w->h->config, sizeof(w->h->config), "%s",
           m == 1 ? w->r.c[idx[0]].text : "");
  w->h->in_flight = m;
  tune_inject_crash(&w->r, idx, m);
  ts_bench_opts quick = {.warmup = QUICK_WARMUP, .repeats = QUICK_REPEATS,
                         .seed = w->a->o->seed};
  ts_bench_result blas;
  ts_bench(w->gpu, k, m, &quick, res, &blas);
  ts_status st = blas.status == TS_OK ? TS_OK : ts_gpu_status(w->gpu);
  if (st != TS_OK) {
    snprintf(w->h->fault, sizeof(w->h->fault), "%s", ts_gpu_errmsg(w->gpu));
    return st;
  }
  for (int i = 0; i < m; i++) {
    journal_result(w, &w->r.c[idx[i]], &res[i]);
    tune_queue_finish(q, g->gen, w->k, g->slot[i], &res[i]);
    ts_kernel_free(w->r.c[idx[i]].kernel);
    w->r.c[idx[i]].kernel = NULL;
  }
  w->h->in_flight = 0;
  return TS_OK;
}

/* Takes and times groups, of the earliest shape with any pending, until
 * the run is over.  0, or TUNE_WORKER_FAULTED / TUNE_EXIT_FAIL. */
static int take_until_closed(helper *w) {
  tune_queue *q = w->a->q;
  for (;;) {
    tune_queue_lock(q);
    bool closed = q->closed;
    tune_queue_unlock(q);
    if (closed)
      return 0;
    tune_group g;
    if (!tune_queue_take_next(q, w->k, CHUNK, &g)) {
      usleep(2000);
      continue;
    }
    if (g.unit != w->unit && !open_unit(w, g.unit))
      return TUNE_EXIT_FAIL;
    if (time_group(w, &g) != TS_OK)
      return TUNE_WORKER_FAULTED;
  }
}

int tune_helper(int k, tune_handover *h, void *arg) {
  helper w = {.a = arg, .k = k, .h = h, .unit = -1};
  w.gpu = ts_gpu_open_device(w.a->gpus[k]);
  int rc = TUNE_EXIT_FAIL;
  if (ts_gpu_status(w.gpu) != TS_OK)
    fprintf(stderr, "tessel: tune: GPU %d: %s\n", w.a->gpus[k],
            ts_gpu_errmsg(w.gpu));
  else
    rc = take_until_closed(&w);
  tune_free_shape(&w.r);
  ts_gpu_close(w.gpu);
  return rc;
}
