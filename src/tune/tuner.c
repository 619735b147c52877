/*
 * The tuner's run: every configuration of a space, per shape, enumerated
 * and pruned on the CPU, lowered and compiled in parallel (candidates.c),
 * then timed on
 * the GPU beside cuBLAS in two passes (a few runs of every candidate, then
 * the full count for the best few), ranked (ranking.c) and the best
 * recorded.  The run is a worker process's, started again after a
 * candidate faults (supervisor.c); the journal (journal.c) carries what
 * was timed from one worker to the next, and the report goes out through
 * the caller's hooks in steps that a later worker does not report again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tune_impl.h"

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

void tune_free_shape(ts_tune_shape *r) {
  for (int i = 0; i < r->n; i++) {
    ts_config_free(r->c[i].config);
    free(r->c[i].text);
    ts_kernel_free(r->c[i].kernel);
  }
  free(r->c);
  *r = (ts_tune_shape){0};
}

/* A shape's first pass as published in the queue: its generation, its
 * candidates and when. */
typedef struct {
  int gen, n;
  struct timespec at;
} tune_published;

/* A worker's run (see supervisor.c): what timing and reporting need, and
 * where it is. */
typedef struct {
  ts_gpu *gpu;
  const ts_tune_opts *o;
  const ts_tune_report *rep;
  const ts_tune_space *spaces;
  int nspaces;
  tune_handover *h;
  tune_queue *q; /* with several GPUs, what the runners share; else NULL */
  const tune_args *a;
  int nrunners;  /* GPUs: this runner's and its helpers', or MPI ranks */
  bool ranks;    /* the runners are MPI ranks */
  const ts_tune_space *sp; /* the space being tuned */
  int unit;           /* its shape's place in the run: space * shapes + shape */
  int step;           /* report steps passed; see step_due */
  /* With several runners: the space's shapes, each one's first pass as
   * published (by its place among them), the last unit published (the
   * next shapes' are, before this runner times a shape's fastest in full;
   * -1 when none is), and the thread compiling what they hold. */
  ts_tune_shape *runs;
  tune_published *pub;
  int published;
  int refused; /* a unit that could not be published ahead; -1 */
  tune_ahead *compiling;
} tune_run;

/* ---- Timing ---------------------------------------------------------------- */

/* Marks which[0..n) as in flight, in the journal and for the supervisor,
 * before they are timed: if the process dies, the next one knows them.
 * What was printed is flushed first, so that a crash loses none of it. */
static void mark_in_flight(tune_run *t, const ts_tune_shape *r, const int *which,
                           int n) {
  tune_handover *h = t->h;
  fflush(stdout);
  for (int i = 0; i < n; i++)
    tune_journal_timing(t->gpu, t->sp->key, r, &r->c[which[i]]);
  h->unit = t->unit;
  tune_shape_text(&r->def, h->shape, sizeof(h->shape));
  snprintf(h->config, sizeof(h->config), "%s",
           n == 1 ? r->c[which[0]].text : "");
  h->in_flight = n;
  tune_inject_crash(r, which, n);
}

/* A device error while timing which[0..n): the context is lost and the
 * worker must end.  A candidate timed alone is surely at fault and
 * journaled as failed with the error; a group stays marked, so that the
 * next worker times each alone.  in_flight stays set: it is how the
 * supervisor and the caller know. */
static void note_fault(tune_run *t, const ts_tune_shape *r, const int *which,
                       int n) {
  snprintf(t->h->fault, sizeof(t->h->fault), "%s", ts_gpu_errmsg(t->gpu));
  if (n == 1)
    tune_journal_failure(t->gpu, t->sp->key, r, r->c[which[0]].text, t->h->fault);
}

/* Times the candidates listed in `which` (n of them) as one group, marked
 * in flight first and their results journaled after; `full` picks the
 * result they fill.  The GPU's status: a device error ends the context
 * (and leaves t->h->in_flight set). */
static ts_status time_some(tune_run *t, ts_tune_shape *r, const int *which, int n,
                           const ts_bench_opts *bo, bool full) {
  ts_kernel **k = calloc((size_t)(n ? n : 1), sizeof(*k));
  ts_bench_result *res = calloc((size_t)(n ? n : 1), sizeof(*res));
  if (!k || !res) {
    free(k);
    free(res);
    return TS_ERR_NO_MEMORY;
  }
  for (int i = 0; i < n; i++)
    k[i] = r->c[which[i]].kernel;
  mark_in_flight(t, r, which, n);
  ts_bench_result blas;
  ts_bench(t->gpu, k, n, bo, res, &blas);
  ts_status st = blas.status == TS_OK ? TS_OK : ts_gpu_status(t->gpu);
  if (st == TS_OK) {
    r->cublas = blas;
    tune_journal_cublas(t->gpu, t->sp->key, r);
  }
  for (int i = 0; i < n && st == TS_OK; i++) {
    ts_tune_candidate *c = &r->c[which[i]];
    *(full ? &c->full : &c->quick) = res[i];
    *(full ? &c->has_full : &c->has_quick) = true;
    c->suspect = false;
    tune_journal_note(t->gpu, t->sp->key, r, c, full);
  }
  if (st != TS_OK && st != TS_ERR_NO_MEMORY)
    note_fault(t, r, which, n);
  else
    t->h->in_flight = 0;
  free(k);
  free(res);
  return st;
}

/* Suspects (in flight when a process died) first in which[0..n), so that
 * each is timed alone before the rest are timed in groups. */
static void suspects_first(const ts_tune_shape *r, int *which, int n) {
  int at = 0;
  for (int i = 0; i < n; i++)
    if (r->c[which[i]].suspect) {
      int x = which[i];
      memmove(which + at + 1, which + at, sizeof(*which) * (size_t)(i - at));
      which[at++] = x;
    }
}

/* How many to time together from which[at]: one suspect alone, else up to
 * `most` of the rest. */
static int group_at(const ts_tune_shape *r, const int *which, int at, int n,
                    int most) {
  if (r->c[which[at]].suspect)
    return 1;
  return n - at < most ? n - at : most;
}

/* ---- The first pass on several GPUs ------------------------------------------ */

/* The results helpers wrote to the queue since the last look, applied to
 * r's candidates and journaled (the lead's own are applied as it times
 * them); the slots of generation gen that are over (timed, failed or left
 * out) counted in *over, each GPU's share in r->timed_on. */
static void collect(tune_run *t, ts_tune_shape *r, int gen, int *over) {
  tune_queue *q = t->q;
  tune_queue_lock(q);
  *over = 0;
  memset(r->timed_on, 0, sizeof(r->timed_on));
  int first;
  const tune_bank *b = tune_queue_bank(q, gen, &first);
  for (int i = first; b && i < first + b->n; i++) {
    tune_slot *s = &q->slot[i];
    *over += s->state == SLOT_DONE || s->state == SLOT_LEFT;
    if (s->state == SLOT_DONE && s->runner >= 0 && s->runner < TUNE_MAX_GPUS)
      r->timed_on[s->runner]++;
    if (s->state != SLOT_DONE || s->collected)
      continue;
    s->collected = true;
    ts_tune_candidate *c = &r->c[s->index];
    if (s->runner == 0 && c->has_quick)
      continue;
    c->quick = (ts_bench_result){.status = s->status, .median_ms = s->median_ms,
                                 .tflops = s->tflops,
                                 .max_rel_err = s->max_rel_err};
    snprintf(c->quick.message, sizeof(c->quick.message), "%s", s->message);
    c->has_quick = true;
    c->suspect = false;
    tune_journal_note(t->gpu, t->sp->key, r, c, false);
  }
  tune_queue_unlock(q);
}

/* --time ran out: what no runner took is left out. */
static void leave_the_rest(tune_queue *q, ts_tune_shape *r, int gen) {
  tune_queue_lock(q);
  int first;
  const tune_bank *b = tune_queue_bank(q, gen, &first);
  for (int i = first; b && i < first + b->n; i++)
    if (q->slot[i].state == SLOT_PENDING) {
      q->slot[i].state = SLOT_LEFT;
      r->c[q->slot[i].index].left_out = "--time";
    }
  tune_queue_unlock(q);
}

/* One group this runner took from the queue, timed as time_some times
 * one, and its results put back for the others to see. */
static ts_status time_taken(tune_run *t, ts_tune_shape *r, int gen,
                            const int *got, int m, const ts_bench_opts *bo) {
  int idx[CHUNK], build[CHUNK], nb = 0;
  for (int i = 0; i < m; i++) {
    idx[i] = t->q->slot[got[i]].index; /* ours: no one else writes it */
    if (!r->c[idx[i]].kernel) /* with several runners, compiled as taken */
      build[nb++] = idx[i];
  }
  if (nb && !tune_compile_some(t->sp, t->o, ts_gpu_arch(t->gpu), r, build, nb))
    return TS_ERR_NO_MEMORY;
  ts_status st = time_some(t, r, idx, m, bo, false);
  for (int i = 0; st == TS_OK && i < m; i++)
    tune_queue_finish(t->q, gen, 0, got[i], &r->c[idx[i]].quick);
  return st;
}

/* The first pass of which[0..n) on every GPU of the run, put in the
 * queue: the helpers start taking groups at once, while this runner may
 * still be timing an earlier shape's fastest (tune_shape), and the
 * thread compiling ahead (started with the space's first) compiles them.
 * False when the queue cannot hold them (said on stderr). */
static bool publish_first_pass(tune_run *t, const ts_tune_shape *r,
                               const int *which, int n) {
  bool *alone = calloc((size_t)(n ? n : 1), sizeof(*alone));
  if (!alone)
    return false;
  for (int i = 0; i < n; i++)
    alone[i] = r->c[which[i]].suspect;
  /* Groups small enough that each GPU takes several: a slow one then
   * holds up the end of the pass by one small group at most. */
  int group = n / (4 * t->nrunners);
  group = group < 1 ? 1 : group > CHUNK ? CHUNK : group;
  int gen = tune_queue_publish(t->q, t->unit, which, alone, n, group);
  free(alone);
  if (!gen)
    fprintf(stderr, "tessel: tune: %d candidates are more than the queue of "
            "the GPUs holds (--limit %d)\n", n, t->o->limit);
  int j = t->unit % t->o->nshapes;
  t->pub[j] = (tune_published){.gen = gen, .n = n};
  clock_gettime(CLOCK_MONOTONIC, &t->pub[j].at);
  if (gen && !t->compiling)
    t->compiling = tune_ahead_start(t->sp, t->o, ts_gpu_arch(t->gpu), t->runs,
                                    t->unit - j, t->o->nshapes, t->q);
  return gen != 0;
}

/* The published first pass to its end: this runner takes groups as the
 * helpers do until none is left, and gathers the helpers' results.  A
 * helper that dies leaves its candidates in the queue for the others (the
 * supervisor puts them back).  Returns TS_OK, or the error that ended
 * this runner's timing. */
static ts_status drain_first_pass(tune_run *t, ts_tune_shape *r) {
  const tune_published *p = &t->pub[t->unit % t->o->nshapes];
  int gen = p->gen, n = p->n;
  r->ngpus = t->nrunners;
  r->ranks = t->ranks;
  ts_bench_opts quick = {.warmup = QUICK_WARMUP, .repeats = QUICK_REPEATS,
                         .seed = t->o->seed};
  ts_status st = TS_OK;
  int over = 0, shown = -1;
  for (collect(t, r, gen, &over); st == TS_OK && over < n;
       collect(t, r, gen, &over)) {
    if (over != shown && t->rep->progress)
      t->rep->progress(t->rep->ctx, r, over, n, seconds_since(&p->at));
    shown = over;
    if (t->o->time_limit && seconds_since(&p->at) > t->o->time_limit)
      leave_the_rest(t->q, r, gen);
    int got[CHUNK];
    int m = tune_queue_take(t->q, gen, 0, CHUNK, got);
    if (m)
      st = time_taken(t, r, gen, got, m, &quick);
    else
      usleep(2000); /* the helpers have the rest */
  }
  if (st == TS_OK && t->rep->progress && over != shown)
    t->rep->progress(t->rep->ctx, r, over, n, seconds_since(&p->at));
  tune_queue_close_unit(t->q, gen);
  return st;
}

/* The candidates of the first pass in which (malloc'd; NULL when out of
 * memory): every compiled one not timed yet (with several runners, every
 * one wanted: each runner compiles what it takes), suspects first. */
static int *first_pass_candidates(const tune_run *t, const ts_tune_shape *r,
                                  int *n) {
  int *which = malloc(sizeof(*which) * (size_t)(r->n ? r->n : 1));
  *n = 0;
  for (int i = 0; which && i < r->n; i++)
    if ((r->c[i].kernel || (t->q && tune_wanted(&r->c[i]))) && !r->c[i].has_quick)
      which[(*n)++] = i;
  if (which)
    suspects_first(r, which, *n);
  return which;
}

/* With several runners: r's first pass published (false on an error). */
static bool queue_first_pass(tune_run *t, const ts_tune_shape *r) {
  int n;
  int *which = first_pass_candidates(t, r, &n);
  bool ok = which && publish_first_pass(t, r, which, n);
  free(which);
  return ok;
}

/* The first pass: every compiled candidate not timed yet, suspects alone
 * and the rest CHUNK at a time (on every GPU of the run where there are
 * several); stops at --time.  Returns TS_OK, or the error that ended it. */
static ts_status first_pass(tune_run *t, ts_tune_shape *r) {
  const ts_tune_opts *o = t->o;
  if (t->q)
    return drain_first_pass(t, r);
  int n;
  int *which = first_pass_candidates(t, r, &n);
  if (!which)
    return TS_ERR_NO_MEMORY;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ts_bench_opts quick = {.warmup = QUICK_WARMUP, .repeats = QUICK_REPEATS,
                         .seed = o->seed};
  ts_status st = TS_OK;
  for (int at = 0, m; at < n && st == TS_OK; at += m) {
    if (o->time_limit && seconds_since(&t0) > o->time_limit) {
      for (int i = at; i < n; i++)
        r->c[which[i]].left_out = "--time";
      break;
    }
    m = group_at(r, which, at, n, CHUNK);
    st = time_some(t, r, which + at, m, &quick, false);
    if (st == TS_OK && t->rep->progress)
      t->rep->progress(t->rep->ctx, r, at + m, n, seconds_since(&t0));
  }
  free(which);
  return st;
}

/* The fastest o->top of the first pass timed again with the full count
 * (suspects alone, the rest together), but for those whose full count the
 * journal has; those resumed from the journal are compiled first. */
static ts_status full_pass(tune_run *t, ts_tune_shape *r) {
  const ts_tune_opts *o = t->o;
  int *order = ts_tune_ranking(r);
  int *which = malloc(sizeof(*which) * (size_t)(o->top ? o->top : 1));
  int *build = malloc(sizeof(*build) * (size_t)(o->top ? o->top : 1));
  ts_status st = order && which && build ? TS_OK : TS_ERR_NO_MEMORY;
  int n = 0, nb = 0;
  for (int i = 0; st == TS_OK && i < r->n && i < o->top; i++) {
    const ts_tune_candidate *c = &r->c[order[i]];
    if (!ts_tune_timed(c))
      break;
    if (c->has_full)
      continue;
    if (!c->kernel)
      build[nb++] = order[i];
    which[n++] = order[i];
  }
  if (st == TS_OK && nb &&
      !tune_compile_some(t->sp, o, ts_gpu_arch(t->gpu), r, build, nb))
    st = TS_ERR_NO_MEMORY;
  suspects_first(r, which, n);
  ts_bench_opts full = {.warmup = o->warmup, .repeats = o->repeats,
                        .seed = o->seed};
  for (int at = 0, m; st == TS_OK && at < n; at += m) {
    m = group_at(r, which, at, n, n);
    st = time_some(t, r, which + at, m, &full, true);
  }
  free(order);
  free(which);
  free(build);
  return st;
}

/* First-pass ratios to the shape's last cuBLAS time, and full ones where
 * the journal gave the result without a ratio. */
static void fill_ratios(ts_tune_shape *r) {
  for (int i = 0; i < r->n; i++) {
    ts_tune_candidate *c = &r->c[i];
    if (c->has_quick && c->quick.median_ms > 0)
      c->quick.ratio_to_cublas = r->cublas.median_ms / c->quick.median_ms;
    if (c->has_full && !(c->full.ratio_to_cublas > 0) && c->full.median_ms > 0)
      c->full.ratio_to_cublas = r->cublas.median_ms / c->full.median_ms;
  }
}

void tune_shape_text(const ts_gemm *g, char *out, size_t len) {
  snprintf(out, len, "%lldx%lldx%lld", (long long)g->m, (long long)g->n,
           (long long)g->k);
}

/* The best configuration becomes the tuning record of this GPU, space and
 * definition, unless it ran wrong; r->recorded says whether it did. */
static void record_best(tune_run *t, ts_tune_shape *r, const int *order) {
  const ts_tune_candidate *best = r->n ? &r->c[order[0]] : NULL;
  r->record_tried = best && ts_tune_correct(r, best);
  if (r->record_tried)
    r->recorded = ts_tune_record_save(t->gpu, t->sp->key, &r->def, best->text,
                                      ts_tune_result(best)->tflops);
}

/* ---- A shape ------------------------------------------------------------------ */

static int count_left_out(const ts_tune_shape *r, const char *why) {
  int n = 0;
  for (int i = 0; i < r->n; i++)
    n += r->c[i].left_out && strcmp(r->c[i].left_out, why) == 0;
  return n;
}

/* The candidate that was alone in flight when the last worker died (the
 * supervisor's note), journaled as failed before the journal is read, so
 * that it is reported and never timed again. */
static void journal_crash(tune_run *t, const ts_tune_shape *r) {
  tune_handover *h = t->h;
  if (h->crashed_unit != t->unit)
    return;
  tune_journal_failure(t->gpu, t->sp->key, r, h->crashed, h->crashed_why);
  h->crashed_unit = -1;
}

/* r's counts of what became of its candidates before timing. */
static void count_prepared(tune_run *t, ts_tune_shape *r, int resumed) {
  r->resumed = resumed;
  r->resumed_after_restart = resumed && t->h->restarts;
  r->pruned = r->suspects = 0;
  for (int i = 0; i < r->n; i++) {
    r->pruned += ts_config_pruned(r->c[i].config) != NULL;
    r->suspects += r->c[i].suspect && !r->c[i].left_out;
  }
  r->budget_left_out = count_left_out(r, "--budget");
}

/* What the other GPUs of the run (and of earlier runs of the same model)
 * journaled of r's first pass, applied to the candidates this GPU's
 * journal has no first-pass result for: runners of this host journal in
 * the same cache directory, the other MPI ranks sent theirs at the start.
 * How many candidates it gave results. */
static int resume_peers(tune_run *t, ts_tune_shape *r) {
  char *lines = tune_journal_peers(t->gpu, t->sp->key, &r->def, t->a->sent,
                                   t->a->nsent);
  int resumed = tune_resume_peers(r, lines);
  free(lines);
  return resumed;
}

/* Enumerated, resumed, sampled and compiled; false on an error. */
static bool prepare(tune_run *t, ts_tune_shape *r) {
  const ts_tune_opts *o = t->o;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!tune_enumerate(t->sp, o, r))
    return false;
  /* --restart clears a shape's journals (every GPU's: none has timed it
   * yet) when the run first comes to it, not again when a worker started
   * after a fault comes back to it. */
  if (o->restart && t->unit >= t->h->started)
    tune_journal_remove_all(t->gpu, t->sp->key, &r->def);
  if (t->unit >= t->h->started)
    t->h->started = t->unit + 1;
  journal_crash(t, r);
  int resumed = tune_resume(t->gpu, t->sp->key, r) + resume_peers(t, r);
  tune_apply_budget(o, r);
  r->compiled = tune_compile_wanted(t->sp, o, ts_gpu_arch(t->gpu), r, t->q);
  if (r->compiled < 0) {
    fprintf(stderr, "tessel: out of memory\n");
    return false;
  }
  r->compiled_as_taken = t->q != NULL;
  r->compile_seconds = seconds_since(&t0);
  count_prepared(t, r, resumed);
  return true;
}

/* r prepared and, with several runners, its first pass published: now,
 * or already while an earlier shape was finished (publish_ahead).  The
 * report of it is made here, in the shapes' order. */
static bool open_shape(tune_run *t, ts_tune_shape *r) {
  bool ok = (t->q && t->published >= t->unit) ||
            (prepare(t, r) && (!t->q || queue_first_pass(t, r)));
  if (ok && t->q && t->published < t->unit)
    t->published = t->unit;
  if (ok && t->rep->shape_ready)
    t->rep->shape_ready(t->rep->ctx, t->sp, r);
  return ok;
}

/* With several runners, the next shapes of the space after runs[j] (this
 * unit), up to `depth` of them, prepared and their first passes
 * published: the other GPUs take their candidates when this shape has
 * none left for them, and while this runner times its fastest in full on
 * its own GPU, instead of waiting.  Where one fails, it is opened in its
 * turn (and says why). */
static void publish_ahead(tune_run *t, ts_tune_shape *runs, int j, int depth) {
  if (!t->q)
    return;
  int here = t->unit;
  int last = here + (t->o->nshapes - 1 - j); /* the space's last unit */
  int from = t->published > here ? t->published + 1 : here + 1;
  for (int u = from; u <= here + depth && u <= last && u != t->refused; u++) {
    ts_tune_shape *next = &runs[j + (u - here)];
    t->unit = u;
    if (!prepare(t, next) || !queue_first_pass(t, next)) {
      tune_free_shape(next);
      next->def = t->o->shapes[j + (u - here)]; /* for its turn */
      t->refused = u;
      break;
    }
    t->published = u;
  }
  t->unit = here;
}

/* With several runners, what the other GPUs timed of the shapes published
 * ahead of runs[j] while this runner timed its fastest in full, taken
 * from the queue and journaled now, so that a run interrupted before it
 * comes to them resumes with it. */
static void journal_ahead(tune_run *t, ts_tune_shape *runs, int j) {
  for (int u = t->unit + 1; t->q && u <= t->published; u++) {
    int at = j + (u - t->unit), over;
    collect(t, &runs[at], t->pub[at].gen, &over);
  }
}

/* A shape, runs[j]: prepared, timed, ranked, recorded and reported; with
 * several runners, the next shapes published before the fastest of this
 * one are timed again.  Returns 0, TUNE_EXIT_FAIL (an error, or a
 * candidate failed), or TUNE_WORKER_FAULTED when a device fault ended the
 * timing (the supervisor reports it). */
static int tune_shape(tune_run *t, ts_tune_shape *runs, int j) {
  ts_tune_shape *r = &runs[j];
  if (!open_shape(t, r))
    return TUNE_EXIT_FAIL;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* The shapes ahead, as many as the queue has banks for: all but this
   * one's while its first pass is on, all once it is over.  With --time,
   * which counts from the publishing, only the next, once it is over. */
  int banks = t->q ? t->q->nbanks : 0;
  publish_ahead(t, runs, j, t->o->time_limit ? 0 : banks - 1);
  ts_status st = first_pass(t, r);
  if (st == TS_OK)
    publish_ahead(t, runs, j, t->o->time_limit ? 1 : banks);
  if (st == TS_OK)
    st = full_pass(t, r);
  if (st == TS_OK)
    journal_ahead(t, runs, j);
  if (st != TS_OK && t->h->in_flight)
    return TUNE_WORKER_FAULTED;
  if (st != TS_OK) {
    char shape[64];
    tune_shape_text(&r->def, shape, sizeof(shape));
    fprintf(stderr, "tessel: %s: %s (what was timed is in the journal; run "
            "again to resume)\n", shape, ts_gpu_errmsg(t->gpu)[0]
                                               ? ts_gpu_errmsg(t->gpu)
                                               : ts_strerror(st));
    return TUNE_EXIT_FAIL;
  }
  fill_ratios(r);
  r->time_seconds = seconds_since(&t0);
  r->time_left_out = count_left_out(r, "--time");
  int *order = ts_tune_ranking(r);
  if (!order) {
    fprintf(stderr, "tessel: out of memory\n");
    return TUNE_EXIT_FAIL;
  }
  record_best(t, r, order);
  int rc = t->rep->shape_done
               ? t->rep->shape_done(t->rep->ctx, t->sp, t->gpu, r, order)
               : 0;
  free(order);
  r->finished = !r->time_left_out;
  return rc || tune_count_failures(r) ? TUNE_EXIT_FAIL : 0;
}

/* A shape an earlier worker of the run reported: its results taken from
 * the journal for the space's end, nothing compiled, timed or reported.
 * What the journal has no result for was not timed: --time ran out. */
static int replay_shape(tune_run *t, ts_tune_shape *r) {
  if (!tune_enumerate(t->sp, t->o, r))
    return TUNE_EXIT_FAIL;
  tune_resume(t->gpu, t->sp->key, r);
  tune_apply_budget(t->o, r);
  for (int i = 0; i < r->n; i++)
    if (!ts_config_pruned(r->c[i].config) && !r->c[i].left_out &&
        !r->c[i].has_quick)
      r->c[i].left_out = "--time";
  fill_ratios(r);
  r->time_left_out = count_left_out(r, "--time");
  r->finished = !r->time_left_out;
  return tune_count_failures(r) ? TUNE_EXIT_FAIL : 0;
}

/* ---- Report steps -------------------------------------------------------------
 *
 * What a run reports comes in steps, in order: per space its beginning,
 * each shape and its end.  h->printed counts those reported, so that a
 * worker started after a fault reports only the rest: the report comes
 * out once, though several workers made it. */

static bool step_due(const tune_run *t) { return t->step >= t->h->printed; }

/* The step is over: what it printed flushed, so that a crash after it
 * loses none of it, and counted; rc is its status. */
static void step_done(tune_run *t, int rc) {
  fflush(stdout);
  if (step_due(t) && rc)
    t->h->status = TUNE_EXIT_FAIL;
  if (step_due(t))
    t->h->printed = t->step + 1;
  t->step++;
}

/* A space's end: reported, then the journals of its finished shapes go.
 * Returns 0, or TUNE_EXIT_FAIL when the report fails. */
static int finish_space(tune_run *t, ts_tune_shape *runs,
                        const struct timespec *t0) {
  const ts_tune_opts *o = t->o;
  int rc = t->rep->space_done
               ? t->rep->space_done(t->rep->ctx, t->sp, t->gpu, runs,
                                    o->nshapes, seconds_since(t0))
               : 0;
  for (int j = 0; j < o->nshapes; j++)
    if (runs[j].finished)
      tune_journal_remove_all(t->gpu, t->sp->key, &runs[j].def);
  return rc ? TUNE_EXIT_FAIL : 0;
}

/* Space n over every shape, its steps reported where due; a space whose
 * end an earlier worker reported is passed over whole (its journals are
 * gone).  Returns 0, TUNE_EXIT_FAIL or TUNE_WORKER_FAULTED. */
static int tune_space(tune_run *t, int n, ts_tune_shape *runs) {
  const ts_tune_opts *o = t->o;
  int steps = o->nshapes + 2;
  if (t->h->printed >= t->step + steps) {
    t->step += steps;
    return 0;
  }
  t->sp = &t->spaces[n];
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (step_due(t) && t->rep->space_begin)
    t->rep->space_begin(t->rep->ctx, t->sp, t->gpu);
  step_done(t, 0);
  int rc = 0;
  t->runs = runs;
  for (int j = 0; j < o->nshapes; j++) {
    runs[j].def = o->shapes[j];
    t->pub[j] = (tune_published){0};
  }
  for (int j = 0; j < o->nshapes && rc != TUNE_WORKER_FAULTED; j++) {
    t->unit = n * o->nshapes + j;
    int st = step_due(t) ? tune_shape(t, runs, j) : replay_shape(t, &runs[j]);
    if (st != TUNE_WORKER_FAULTED)
      step_done(t, st);
    rc = st ? st : rc;
  }
  if (rc != TUNE_WORKER_FAULTED) {
    int st = finish_space(t, runs, &t0);
    step_done(t, st);
    rc = st ? st : rc;
  }
  tune_ahead_stop(t->compiling); /* it reads the shapes' configurations */
  t->compiling = NULL;
  for (int j = 0; j < o->nshapes; j++) {
    if (t->q) /* published but never drained: an error ended its turn */
      tune_queue_close_unit(t->q, t->pub[j].gen);
    tune_free_shape(&runs[j]);
  }
  return rc;
}

/* ---- The run ------------------------------------------------------------------ */

int tune_worker(tune_handover *h, void *arg) {
  const tune_args *a = arg;
  tune_run t = {.o = a->o, .rep = a->rep, .spaces = a->spaces,
                .nspaces = a->nspaces, .h = h, .q = a->q, .a = a,
                .nrunners = a->nrunners, .ranks = a->nrunners > a->ngpus,
                .published = -1, .refused = -1};
  ts_tune_shape *runs = calloc((size_t)a->o->nshapes, sizeof(*runs));
  t.pub = calloc((size_t)a->o->nshapes, sizeof(*t.pub));
  /* A worker started again after one died: the shapes that one published
   * go, so that nothing (the thread compiling ahead, the helpers) works
   * from them while this one prepares its own. */
  if (t.q)
    tune_queue_close_all(t.q);
  t.gpu = ts_gpu_open_device(a->gpus[0]);
  bool ready = runs && t.pub && ts_gpu_status(t.gpu) == TS_OK;
  if (!runs || !t.pub)
    fprintf(stderr, "tessel: out of memory\n");
  else if (!ready)
    fprintf(stderr, "tessel: tune needs a GPU: %s\n", ts_gpu_errmsg(t.gpu));
  int rc = ready ? 0 : TUNE_EXIT_FAIL;
  for (int n = 0; ready && n < a->nspaces && rc != TUNE_WORKER_FAULTED; n++) {
    int st = tune_space(&t, n, runs);
    rc = st ? st : rc;
  }
  free(runs);
  free(t.pub);
  /* After a fault too: the context is released as the process's exit
   * would release it, and a leak checker finds nothing left. */
  ts_gpu_close(t.gpu);
  return rc ? rc : h->status;
}
