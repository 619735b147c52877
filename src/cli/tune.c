/*
 * tessel tune: every configuration of a space, per shape: enumerated and
 * pruned on the CPU, lowered and compiled in parallel, then timed on the
 * GPU beside cuBLAS in two passes (a few runs of every candidate, then the
 * full count for the best few), and summarized by knob as seed 003
 * summarizes its sweep.  The run is a worker process's, started again
 * after a candidate faults (tune_supervisor.c); the journal carries what
 * was timed from one worker to the next, and the report is printed in
 * steps that a later worker does not print again.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/random.h"
#include "tune.h"

static const char *tune_help =
    "usage: tessel tune SPACE... [--shape MxNxK]... [--layout L] [--dtype T]\n"
    "                  [--c-dtype T] [--alpha X] [--beta Y] [--jobs J]\n"
    "                  [--top N] [--limit N] [--budget N] [--time SECONDS]\n"
    "                  [--restart] [--repeats N] [--warmup N] [--seed N]\n"
    "                  [--csv FILE] [--json FILE]\n"
    "       tessel tune --list\n"
    "--list prints the built-in spaces, each with its knobs and their\n"
    "values as tune enumerates them at 1024x1024x1024 (in f16 for tensor\n"
    "cores): a knob declared in some configurations only says in how\n"
    "many, and one declared only at other shapes is not there (docs/\n"
    "tuning.md lists them all); tessel list FILE.c does so for a file's.\n"
    "A SPACE is a built-in space (--list), FILE.c (each TS_SPACE of a C\n"
    "file) or FILE.c:SPACE; a file's space is recorded under its name and\n"
    "the hash of the file's text, so an edited file is tuned afresh.\n"
    "Enumerates every configuration of the space (one value per knob),\n"
    "prunes those a constraint or a primitive refuses (and says why),\n"
    "lowers and compiles the rest on --jobs threads (default: every core),\n"
    "then times them on the GPU with cuBLAS in the same run: 3 runs of\n"
    "each, then the --top N (default 10) again with the median of\n"
    "--repeats (default 50).  Prints the best configurations, the mean and\n"
    "best TFLOP/s by each knob's value over all shapes (first-pass times),\n"
    "and the best configuration of each shape as `name=value` text and as\n"
    "the C calls that make it, and records it in the cache directory for\n"
    "this GPU, space and definition (show, check and bench use it with\n"
    "--tuned).\n"
    "  --budget N    time at most N configurations per shape: the first\n"
    "                and a random sample of the rest (seeded by --seed)\n"
    "  --limit N     refuse a space that has more than N configurations\n"
    "                at a shape, pruned ones included (default and most\n"
    "                100000): a guard against an enumeration without\n"
    "                end, not a sample (that is --budget)\n"
    "  --time S      stop the first pass of a shape after S seconds\n"
    "  --restart     time everything again; by default a run resumes what\n"
    "                an interrupted run of the same space, shape and GPU\n"
    "                timed (its journal in the cache directory)\n"
    "  --csv FILE    every timed row; --json FILE the whole run, with\n"
    "                every configuration and what became of it\n"
    "Progress (timed/total, the best so far, the time left) is one line\n"
    "on a terminal, plain lines otherwise.  A candidate that crashes the\n"
    "GPU (an illegal address) is reported as failed with the CUDA error,\n"
    "and the run goes on in a new GPU process (at most 16 times a run).\n"
    "--shape may repeat; default 1024x1024x1024.  Needs a GPU; kernels are\n"
    "compiled for its architecture.\n"
    "Exit status: 0 every candidate timed, 1 a failure (no GPU, a candidate\n"
    "that failed, a record not written), 2 a usage error.\n";

/* The first pass: few runs each, in chunks between which progress is shown
 * and the journal written. */
enum { QUICK_REPEATS = 3, QUICK_WARMUP = 1, CHUNK = 16 };

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void free_run(shape_run *r) {
  for (int i = 0; i < r->n; i++) {
    ts_config_free(r->c[i].config);
    free(r->c[i].text);
    ts_kernel_free(r->c[i].kernel);
  }
  free(r->c);
  *r = (shape_run){0};
}

/* A worker's run (see tune_supervisor.c): what timing and reporting need,
 * and where it is. */
typedef struct {
  ts_gpu *gpu;
  const cli_opts *o;
  tune_handover *h;
  FILE *csv;
  const ts_space *sp; /* the space being tuned */
  int unit;           /* its shape's place in the run: space * shapes + shape */
  int step;           /* report steps passed; see step_due */
  ts_gpu_sensors start; /* the sensors as this process began the space */
} tune_run;

/* ---- Enumerating and compiling ---------------------------------------------- */

/* Pruned configurations counted by reason, as "  12  reason" lines. */
static void print_pruned(const shape_run *r) {
  for (int i = 0; i < r->n; i++) {
    const char *why = ts_config_pruned(r->c[i].config);
    bool first = why != NULL;
    for (int j = 0; first && j < i; j++) {
      const char *w = ts_config_pruned(r->c[j].config);
      first = !(w && strcmp(w, why) == 0);
    }
    if (!first)
      continue;
    int count = 0;
    for (int j = i; j < r->n; j++) {
      const char *w = ts_config_pruned(r->c[j].config);
      count += w && strcmp(w, why) == 0;
    }
    printf("#   %5d pruned: %s\n", count, why);
  }
}

/* Every configuration of the space for r->def; false when out of memory
 * or over the limit. */
static bool enumerate(const ts_space *sp, const cli_opts *o, shape_run *r) {
  ts_config **configs;
  int n = ts_space_enumerate(sp, &r->def, o->limit, &configs);
  if (n < 0) {
    fprintf(stderr, "tessel: %s has more than %d configuration%s (or "
            "memory ran out); raise --limit\n", cli_space_name(sp), o->limit,
            o->limit == 1 ? "" : "s");
    return false;
  }
  r->c = calloc((size_t)(n ? n : 1), sizeof(*r->c));
  if (!r->c) {
    ts_space_free_configs(configs, n);
    return false;
  }
  r->n = n;
  for (int i = 0; i < n; i++) {
    r->c[i].config = configs[i];
    r->c[i].text = ts_config_text(configs[i]);
  }
  free(configs); /* the configurations now belong to r */
  return true;
}

/* Whether candidate c still needs a kernel: not pruned, not left out, not
 * resumed from the journal. */
static bool wanted(const candidate *c) {
  return !ts_config_pruned(c->config) && !c->left_out && !c->resumed &&
         !c->kernel;
}

/* ---- Fault injection ----------------------------------------------------------
 *
 * TESSEL_TUNE_FAULT=CONFIG, a testing aid (docs/reliability.md): that
 * configuration's kernel is replaced by one of the same definition that
 * writes through an invalid C pointer, so its first launch faults with an
 * illegal address as a miscompiled kernel would, and the context is lost.
 * TESSEL_TUNE_FAULT=signal:CONFIG instead kills the worker with SIGSEGV
 * while the configuration is in flight, as a crash in the driver would.
 * The kernel is replaced here in the CLI, with a hand-written kernel, so
 * that the runtime needs no hook for it. */

static const char *faulting_kernel =
    "extern \"C\" __device__ int tessel_block[3] = {32, 1, 1};\n"
    "extern \"C\" __device__ int tessel_tile[2] = {1, 32};\n"
    "extern \"C\" __global__ void gemm(const float *A, const float *B, "
    "float *C, int M, int N, int K, float alpha, float beta) {\n"
    "  C[(long long)(threadIdx.x + 1) << 40] = alpha;\n"
    "}\n";

/* Whether TESSEL_TUNE_FAULT names candidate c, for a kernel that faults
 * or (`signal`) for a worker that dies. */
static bool fault_injected(const candidate *c, bool signal) {
  const char *v = getenv("TESSEL_TUNE_FAULT");
  if (!v)
    return false;
  bool by_signal = strncmp(v, "signal:", 7) == 0;
  return by_signal == signal && strcmp(by_signal ? v + 7 : v, c->text) == 0;
}

static void inject_faulting_kernel(const char *arch, shape_run *r,
                                   const int *which, int n) {
  for (int v = 0; v < n; v++) {
    candidate *c = &r->c[which[v]];
    if (!fault_injected(c, false))
      continue;
    ts_cuda_kernel src = {.name = c->text, .source = faulting_kernel};
    ts_kernel_free(c->kernel);
    c->kernel = ts_compile_cuda(&src, &r->def, arch);
    printf("# TESSEL_TUNE_FAULT: %s gets a kernel that writes through an "
           "invalid C pointer\n", c->text);
  }
}

static void inject_crash(const shape_run *r, const int *which, int n) {
  for (int i = 0; i < n; i++)
    if (fault_injected(&r->c[which[i]], true)) {
      printf("# TESSEL_TUNE_FAULT: the GPU process dies of SIGSEGV while "
             "%s is timed\n", r->c[which[i]].text);
      fflush(stdout);
      raise(SIGSEGV);
    }
}

/* The candidates listed in `which` lowered and compiled on o->jobs
 * threads; false when out of memory. */
static bool compile_some(const ts_space *sp, const cli_opts *o,
                         const char *arch, shape_run *r, const int *which,
                         int n) {
  ts_program **progs = calloc((size_t)(n ? n : 1), sizeof(*progs));
  ts_kernel **k = calloc((size_t)(n ? n : 1), sizeof(*k));
  bool ok = progs && k;
  for (int v = 0; ok && v < n; v++) {
    ts_sched *s = ts_space_schedule(sp, &r->def, r->c[which[v]].config);
    progs[v] = ts_lower(s);
    ts_sched_free(s);
  }
  if (ok)
    ts_compile_all(progs, n, arch, o->jobs, k);
  for (int v = 0; ok && v < n; v++)
    r->c[which[v]].kernel = k[v];
  if (ok)
    inject_faulting_kernel(arch, r, which, n);
  for (int v = 0; progs && v < n; v++)
    ts_program_free(progs[v]);
  free(progs);
  free(k);
  return ok;
}

/* --budget: the space's first configuration (its default) and a sample
 * of the rest drawn at random with the run's seed, n in all.  The sample
 * is drawn over every unpruned configuration, whatever a journal holds,
 * so that a resumed run times the sample the interrupted one drew; those
 * outside it are left out unless the journal has their results. */
static void apply_budget(const cli_opts *o, shape_run *r) {
  if (o->budget <= 0)
    return;
  int *pool = malloc(sizeof(*pool) * (size_t)(r->n ? r->n : 1)), np = 0;
  for (int i = 0; pool && i < r->n; i++)
    if (!ts_config_pruned(r->c[i].config))
      pool[np++] = i;
  uint64_t rng = o->seed ^ 0x7e55e1b0d6e7ull;
  for (int i = 1; i < np; i++) { /* shuffle all but the first */
    int j = 1 + (int)(ts_random_next(&rng) % (uint64_t)i);
    int x = pool[i];
    pool[i] = pool[j];
    pool[j] = x;
  }
  for (int i = o->budget; i < np; i++)
    if (!r->c[pool[i]].resumed)
      r->c[pool[i]].left_out = "--budget";
  free(pool);
}

/* Every wanted candidate compiled; returns how many there were, -1 when
 * out of memory. */
static int compile_wanted(const ts_space *sp, const cli_opts *o,
                          const char *arch, shape_run *r) {
  int *which = malloc(sizeof(*which) * (size_t)(r->n ? r->n : 1)), n = 0;
  if (!which)
    return -1;
  for (int i = 0; i < r->n; i++)
    if (wanted(&r->c[i]))
      which[n++] = i;
  bool ok = compile_some(sp, o, arch, r, which, n);
  free(which);
  return ok ? n : -1;
}

/* ---- Timing ---------------------------------------------------------------- */

/* What is shown while the first pass runs. */
typedef struct {
  struct timespec t0, last;
  int done, total;
  bool tty;
} progress;

static void show_progress(progress *p, const shape_run *r, bool last) {
  double elapsed = seconds_since(&p->t0);
  if (!p->tty && !last && seconds_since(&p->last) < 5.0)
    return;
  clock_gettime(CLOCK_MONOTONIC, &p->last);
  const candidate *best = NULL;
  for (int i = 0; i < r->n; i++)
    if (tune_timed(&r->c[i]) && r->c[i].quick.status == TS_OK &&
        (!best || r->c[i].quick.median_ms < best->quick.median_ms))
      best = &r->c[i];
  double left = p->done ? elapsed / p->done * (p->total - p->done) : 0;
  printf("%s# timed %d/%d, %.0f s, about %.0f s left; best %.2f TFLOP/s "
         "(%.40s)%s", p->tty ? "\r" : "", p->done, p->total, elapsed, left,
         best ? best->quick.tflops : 0.0, best ? best->text : "-",
         p->tty && !last ? "   " : "\n");
  fflush(stdout);
}

/* Marks which[0..n) as in flight, in the journal and for the supervisor,
 * before they are timed: if the process dies, the next one knows them.
 * What was printed is flushed first, so that a crash loses none of it. */
static void mark_in_flight(tune_run *t, const shape_run *r, const int *which,
                           int n) {
  tune_handover *h = t->h;
  fflush(stdout);
  for (int i = 0; i < n; i++)
    tune_journal_timing(t->gpu, t->sp, r, &r->c[which[i]]);
  h->unit = t->unit;
  tune_shape_text(&r->def, h->shape, sizeof(h->shape));
  snprintf(h->config, sizeof(h->config), "%s",
           n == 1 ? r->c[which[0]].text : "");
  h->in_flight = n;
  inject_crash(r, which, n);
}

/* A device error while timing which[0..n): the context is lost and the
 * worker must end.  A candidate timed alone is surely at fault and
 * journaled as failed with the error; a group stays marked, so that the
 * next worker times each alone.  in_flight stays set: it is how the
 * supervisor and the caller know. */
static void note_fault(tune_run *t, const shape_run *r, const int *which,
                       int n) {
  snprintf(t->h->fault, sizeof(t->h->fault), "%s", ts_gpu_errmsg(t->gpu));
  if (n == 1)
    tune_journal_failure(t->gpu, t->sp, r, r->c[which[0]].text, t->h->fault);
}

/* Times the candidates listed in `which` (n of them) as one group, marked
 * in flight first and their results journaled after; `full` picks the
 * result they fill.  The GPU's status: a device error ends the context
 * (and leaves t->h->in_flight set). */
static ts_status time_some(tune_run *t, shape_run *r, const int *which, int n,
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
    tune_journal_cublas(t->gpu, t->sp, r);
  }
  for (int i = 0; i < n && st == TS_OK; i++) {
    candidate *c = &r->c[which[i]];
    *(full ? &c->full : &c->quick) = res[i];
    *(full ? &c->has_full : &c->has_quick) = true;
    c->suspect = false;
    tune_journal_note(t->gpu, t->sp, r, c, full);
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
static void suspects_first(const shape_run *r, int *which, int n) {
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
static int group_at(const shape_run *r, const int *which, int at, int n,
                    int most) {
  if (r->c[which[at]].suspect)
    return 1;
  return n - at < most ? n - at : most;
}

/* The first pass: every compiled candidate not timed yet, suspects alone
 * and the rest CHUNK at a time; stops at --time.  Returns TS_OK, or the
 * error that ended it. */
static ts_status first_pass(tune_run *t, shape_run *r) {
  const cli_opts *o = t->o;
  int *which = malloc(sizeof(*which) * (size_t)(r->n ? r->n : 1)), n = 0;
  if (!which)
    return TS_ERR_NO_MEMORY;
  for (int i = 0; i < r->n; i++)
    if (r->c[i].kernel && !r->c[i].has_quick)
      which[n++] = i;
  suspects_first(r, which, n);
  progress p = {.total = n, .tty = isatty(fileno(stdout))};
  clock_gettime(CLOCK_MONOTONIC, &p.t0);
  p.last = p.t0;
  ts_bench_opts quick = {.warmup = QUICK_WARMUP, .repeats = QUICK_REPEATS,
                         .seed = o->seed};
  ts_status st = TS_OK;
  for (int at = 0, m; at < n && st == TS_OK; at += m) {
    if (o->time_limit && seconds_since(&p.t0) > o->time_limit) {
      for (int i = at; i < n; i++)
        r->c[which[i]].left_out = "--time";
      break;
    }
    m = group_at(r, which, at, n, CHUNK);
    st = time_some(t, r, which + at, m, &quick, false);
    p.done = at + m;
    if (st == TS_OK)
      show_progress(&p, r, at + m >= n);
  }
  free(which);
  return st;
}

/* The fastest o->top of the first pass timed again with the full count
 * (suspects alone, the rest together), but for those whose full count the
 * journal has; those resumed from the journal are compiled first. */
static ts_status full_pass(tune_run *t, shape_run *r) {
  const cli_opts *o = t->o;
  int *order = tune_ranking(r);
  int *which = malloc(sizeof(*which) * (size_t)(o->top ? o->top : 1));
  int *build = malloc(sizeof(*build) * (size_t)(o->top ? o->top : 1));
  ts_status st = order && which && build ? TS_OK : TS_ERR_NO_MEMORY;
  int n = 0, nb = 0;
  for (int i = 0; st == TS_OK && i < r->n && i < o->top; i++) {
    const candidate *c = &r->c[order[i]];
    if (!tune_timed(c))
      break;
    if (c->has_full)
      continue;
    if (!c->kernel)
      build[nb++] = order[i];
    which[n++] = order[i];
  }
  if (st == TS_OK && nb &&
      !compile_some(t->sp, o, ts_gpu_arch(t->gpu), r, build, nb))
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
static void fill_ratios(shape_run *r) {
  for (int i = 0; i < r->n; i++) {
    candidate *c = &r->c[i];
    if (c->has_quick && c->quick.median_ms > 0)
      c->quick.ratio_to_cublas = r->cublas.median_ms / c->quick.median_ms;
    if (c->has_full && !(c->full.ratio_to_cublas > 0) && c->full.median_ms > 0)
      c->full.ratio_to_cublas = r->cublas.median_ms / c->full.median_ms;
  }
}

/* ---- Ranking ----------------------------------------------------------------- */

const ts_bench_result *tune_result(const candidate *c) {
  return c->has_full ? &c->full : &c->quick;
}

bool tune_timed(const candidate *c) {
  return (c->has_quick || c->has_full) && tune_result(c)->status == TS_OK &&
         !tune_result(c)->skipped;
}

static const shape_run *sort_run;
static int by_time(const void *a, const void *b) {
  const candidate *x = &sort_run->c[*(const int *)a];
  const candidate *y = &sort_run->c[*(const int *)b];
  if (tune_timed(x) != tune_timed(y))
    return tune_timed(x) ? -1 : 1;
  if (!tune_timed(x))
    return 0;
  double tx = tune_result(x)->median_ms, ty = tune_result(y)->median_ms;
  return tx < ty ? -1 : tx > ty;
}

int *tune_ranking(const shape_run *r) {
  int *order = malloc(sizeof(*order) * (size_t)(r->n ? r->n : 1));
  if (!order)
    return NULL;
  for (int i = 0; i < r->n; i++)
    order[i] = i;
  sort_run = r;
  qsort(order, (size_t)r->n, sizeof(*order), by_time);
  return order;
}

void tune_shape_text(const ts_gemm *g, char *out, size_t len) {
  snprintf(out, len, "%lldx%lldx%lld", (long long)g->m, (long long)g->n,
           (long long)g->k);
}

/* ---- The command ------------------------------------------------------------- */

/* Each built-in space and its knobs at tune's default shape, in fp16 for
 * the tensor-core ones. */
static int list_spaces(void) {
  for (int i = 0; i < ts_space_count(); i++) {
    const ts_space *sp = ts_space_at(i);
    printf("%-16s %s\n", sp->name, sp->summary);
    ts_gemm g = ts_gemm_make(1024, 1024, 1024);
    if (sp->tensor_cores)
      g.a_type = g.b_type = TS_F16;
    cli_print_knobs(sp, &g, "                 ");
  }
  return 0;
}

static int count_left_out(const shape_run *r, const char *why) {
  int n = 0;
  for (int i = 0; i < r->n; i++)
    n += r->c[i].left_out && strcmp(r->c[i].left_out, why) == 0;
  return n;
}

/* The candidate that was alone in flight when the last worker died (the
 * supervisor's note), journaled as failed before the journal is read, so
 * that it is reported and never timed again. */
static void journal_crash(tune_run *t, const shape_run *r) {
  tune_handover *h = t->h;
  if (h->crashed_unit != t->unit)
    return;
  tune_journal_failure(t->gpu, t->sp, r, h->crashed, h->crashed_why);
  h->crashed_unit = -1;
}

static void print_resumed(const tune_run *t, const shape_run *r,
                          int resumed) {
  if (resumed && t->h->restarts)
    printf("#   %5d timed before the GPU process restarted, taken from the "
           "journal\n", resumed);
  else if (resumed)
    printf("#   %5d timed by an interrupted run, taken from its journal "
           "(--restart times them again)\n", resumed);
  int suspects = 0;
  for (int i = 0; i < r->n; i++)
    suspects += r->c[i].suspect && !r->c[i].left_out;
  if (suspects)
    printf("#   %5d in flight when a GPU process died, each to be timed "
           "alone\n", suspects);
}

/* Enumerated, resumed, sampled and compiled; false on an error. */
static bool prepare(tune_run *t, shape_run *r, const char *shape) {
  const cli_opts *o = t->o;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!enumerate(t->sp, o, r))
    return false;
  /* --restart clears a shape's journal when the run first comes to it, not
   * again when a worker started after a fault comes back to it. */
  if (o->restart && t->unit >= t->h->started)
    ts_tune_journal_remove(t->gpu, cli_space_key(t->sp), &r->def);
  if (t->unit >= t->h->started)
    t->h->started = t->unit + 1;
  journal_crash(t, r);
  int resumed = tune_resume(t->gpu, t->sp, r);
  apply_budget(o, r);
  int compiled = compile_wanted(t->sp, o, ts_gpu_arch(t->gpu), r);
  if (compiled < 0) {
    fprintf(stderr, "tessel: out of memory\n");
    return false;
  }
  int pruned = 0;
  for (int i = 0; i < r->n; i++)
    pruned += ts_config_pruned(r->c[i].config) != NULL;
  printf("\n# %s %s: %d configuration%s, %d pruned, %d compiled in %.1f "
         "s\n", cli_space_name(t->sp), shape, r->n, r->n == 1 ? "" : "s",
         pruned, compiled, seconds_since(&t0));
  print_resumed(t, r, resumed);
  if (count_left_out(r, "--budget"))
    printf("#   %5d left out by --budget %d\n", count_left_out(r, "--budget"),
           o->budget);
  print_pruned(r);
  return true;
}

/* A shape: prepared, timed and reported.  Returns 0, EXIT_FAIL (an error,
 * or a candidate failed), or TUNE_WORKER_FAULTED when a device fault ended
 * the timing (the supervisor reports it). */
static int tune_shape(tune_run *t, shape_run *r) {
  const cli_opts *o = t->o;
  char shape[64];
  tune_shape_text(&r->def, shape, sizeof(shape));
  if (!prepare(t, r, shape))
    return EXIT_FAIL;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ts_status st = first_pass(t, r);
  if (st == TS_OK)
    st = full_pass(t, r);
  if (st != TS_OK && t->h->in_flight)
    return TUNE_WORKER_FAULTED;
  if (st != TS_OK) {
    fprintf(stderr, "tessel: %s: %s (what was timed is in the journal; run "
            "again to resume)\n", shape, ts_gpu_errmsg(t->gpu)[0]
                                               ? ts_gpu_errmsg(t->gpu)
                                               : ts_strerror(st));
    return EXIT_FAIL;
  }
  fill_ratios(r);
  int stopped = count_left_out(r, "--time");
  printf("# timed in %.1f s: %d runs each, then the best %d with the median "
         "of %d\n", seconds_since(&t0), QUICK_REPEATS, o->top, o->repeats);
  if (stopped)
    printf("# %d not timed: --time %d s ran out (the journal keeps what was "
           "timed; run again to go on)\n", stopped, o->time_limit);
  int *order = tune_ranking(r);
  if (!order) {
    fprintf(stderr, "tessel: out of memory\n");
    return EXIT_FAIL;
  }
  tune_print_best(o, r, order, t->csv, ts_gpu_name(t->gpu));
  int failed = tune_print_failures(r);
  tune_record_best(t->gpu, t->sp, r, order);
  tune_print_reproduction(t->sp, r, order);
  free(order);
  r->finished = !stopped;
  return failed ? EXIT_FAIL : 0;
}

/* A shape an earlier worker of the run reported: its results taken from
 * the journal for the space's tables and --json, nothing compiled, timed
 * or printed.  What the journal has no result for was not timed: --time
 * ran out. */
static int replay_shape(tune_run *t, shape_run *r) {
  if (!enumerate(t->sp, t->o, r))
    return EXIT_FAIL;
  tune_resume(t->gpu, t->sp, r);
  apply_budget(t->o, r);
  for (int i = 0; i < r->n; i++)
    if (!ts_config_pruned(r->c[i].config) && !r->c[i].left_out &&
        !r->c[i].has_quick)
      r->c[i].left_out = "--time";
  fill_ratios(r);
  r->finished = !count_left_out(r, "--time");
  return tune_count_failures(r) ? EXIT_FAIL : 0;
}

/* ---- Report steps -------------------------------------------------------------
 *
 * What a run prints comes in steps, in order: per space its header, each
 * shape's report and its summary.  h->printed counts those printed, so
 * that a worker started after a fault prints only the rest: the report
 * comes out once, though several workers made it. */

static bool step_due(const tune_run *t) { return t->step >= t->h->printed; }

/* The step is over: flushed, so that a crash after it loses none of it,
 * and counted; rc is its status. */
static void step_done(tune_run *t, int rc) {
  fflush(stdout);
  if (t->csv)
    fflush(t->csv);
  if (step_due(t) && rc)
    t->h->status = EXIT_FAIL;
  if (step_due(t))
    t->h->printed = t->step + 1;
  t->step++;
}

static void print_space_header(const tune_run *t) {
  const cli_opts *o = t->o;
  printf("# tune %s on %s (%s), A and B %s, C %s, layout %s\n",
         cli_space_name(t->sp),
         ts_gpu_name(t->gpu), ts_gpu_arch(t->gpu), ts_dtype_name(o->ab_type),
         ts_dtype_name(o->c_type), ts_layout_name(o->layout));
  ts_gemm b;
  if (ts_cublas_baseline(&o->shapes[0], &b) == TS_OK &&
      b.c_type != o->shapes[0].c_type)
    printf("# cuBLAS has no GEMM of these types: it is timed with a C %s "
           "(the nearest it has), and results are checked against its C "
           "rounded to %s\n", ts_dtype_name(b.c_type),
           ts_dtype_name(o->c_type));
  if (t->csv)
    fputs("gpu,shape,configuration,layout,median_ms,tflops,"
          "ratio_to_cublas,pass\n", t->csv);
}

/* What the command line gave, for the worker. */
typedef struct {
  cli_opts o;
  int argc;
  char **argv;
} tune_args;

/* A space's summary: the tables by knob over its shapes, its time and the
 * --json record; then the journals of its finished shapes go.  Returns 0,
 * or EXIT_FAIL when the record cannot be written. */
static int finish_space(tune_run *t, shape_run *runs, const tune_args *a,
                        const struct timespec *t0) {
  const cli_opts *o = t->o;
  int rc = 0;
  printf("\n# by knob, over every shape (first-pass TFLOP/s):");
  tune_print_knob_tables(runs, o->nshapes);
  printf("\n# %s: %.1f s in all\n", cli_space_name(t->sp),
         seconds_since(t0));
  if (o->json && !tune_write_json(o->json, o, a->argc, a->argv, t->gpu,
                                  &t->start, t->sp, runs, o->nshapes)) {
    fprintf(stderr, "tessel: cannot write --json %s\n", o->json);
    rc = EXIT_FAIL;
  }
  for (int j = 0; j < o->nshapes; j++)
    if (runs[j].finished)
      ts_tune_journal_remove(t->gpu, cli_space_key(t->sp), &runs[j].def);
  return rc;
}

/* Space n over every shape, its steps printed where due; a space whose
 * summary an earlier worker printed is passed over whole (its journals
 * are gone).  Returns 0, EXIT_FAIL or TUNE_WORKER_FAULTED. */
static int tune_space(tune_run *t, int n, shape_run *runs,
                      const tune_args *a) {
  const cli_opts *o = t->o;
  int steps = o->nshapes + 2;
  if (t->h->printed >= t->step + steps) {
    t->step += steps;
    return 0;
  }
  t->sp = cli_space(o->names[n]);
  if (o->json)
    t->start = ts_gpu_read_sensors(t->gpu);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (step_due(t))
    print_space_header(t);
  step_done(t, 0);
  int rc = 0;
  for (int j = 0; j < o->nshapes && rc != TUNE_WORKER_FAULTED; j++) {
    runs[j].def = o->shapes[j];
    t->unit = n * o->nshapes + j;
    int st = step_due(t) ? tune_shape(t, &runs[j]) : replay_shape(t, &runs[j]);
    if (st != TUNE_WORKER_FAULTED)
      step_done(t, st);
    rc = st ? st : rc;
  }
  if (rc != TUNE_WORKER_FAULTED) {
    int st = finish_space(t, runs, a, &t0);
    step_done(t, st);
    rc = st ? st : rc;
  }
  for (int j = 0; j < o->nshapes; j++)
    free_run(&runs[j]);
  return rc;
}

/* ---- The command ------------------------------------------------------------- */

/* The GPU opened, the shapes' room and --csv ready (appended to by a
 * worker that follows a fault); false with a message. */
static bool start_worker(tune_run *t, shape_run **runs) {
  const cli_opts *o = t->o;
  *runs = calloc((size_t)o->nshapes, sizeof(**runs));
  t->gpu = ts_gpu_open();
  if (!*runs) {
    fprintf(stderr, "tessel: out of memory\n");
    return false;
  }
  if (ts_gpu_status(t->gpu) != TS_OK) {
    fprintf(stderr, "tessel: tune needs a GPU: %s\n", ts_gpu_errmsg(t->gpu));
    return false;
  }
  if (o->csv && !(t->csv = fopen(o->csv, t->h->restarts ? "a" : "w"))) {
    fprintf(stderr, "tessel: cannot write --csv %s\n", o->csv);
    return false;
  }
  return true;
}

/* The whole run, in the worker process: every space at every shape.
 * Returns its status, or TUNE_WORKER_FAULTED when a fault ended it. */
static int tune_worker(tune_handover *h, void *arg) {
  const tune_args *a = arg;
  const cli_opts *o = &a->o;
  tune_run t = {.o = o, .h = h};
  shape_run *runs = NULL;
  bool ready = start_worker(&t, &runs);
  int rc = ready ? 0 : EXIT_FAIL;
  for (int n = 0; ready && n < o->nnames && rc != TUNE_WORKER_FAULTED; n++) {
    int st = tune_space(&t, n, runs, a);
    rc = st ? st : rc;
  }
  if (t.csv)
    fclose(t.csv);
  free(runs);
  /* After a fault too: the context is released as the process's exit
   * would release it, and a leak checker finds nothing left. */
  ts_gpu_close(t.gpu);
  return rc ? rc : h->status;
}

int cli_tune(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--list") == 0 && argc != 2) {
      fprintf(stderr, "tessel: tune --list takes nothing else (got '%s')\n",
              argv[i == 1 ? 2 : 1]);
      return EXIT_USAGE;
    }
  if (argc == 2 && strcmp(argv[1], "--list") == 0)
    return list_spaces();
  tune_args a = {.argc = argc, .argv = argv};
  int rc = cli_parse(argc, argv, tune_help, CLI_TUNE, &a.o);
  if (rc >= 0)
    return rc;
  /* A record holds one space (docs/records.md): a second would overwrite
   * the first. */
  if (a.o.json && a.o.nnames > 1) {
    fprintf(stderr, "tessel: tune --json records one space, and these "
            "names make %d (%s, %s%s); run tune once per space, each with "
            "its own --json FILE\n", a.o.nnames, a.o.names[0], a.o.names[1],
            a.o.nnames > 2 ? ", ..." : "");
    return EXIT_USAGE;
  }
  cli_finish_shapes(&a.o, 1024, 1024, 1024);
  return tune_supervise(tune_worker, &a);
}
