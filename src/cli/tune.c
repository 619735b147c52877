/*
 * tessel tune: every configuration of a space, per shape: enumerated and
 * pruned on the CPU, lowered and compiled in parallel, then timed on the
 * GPU beside cuBLAS in two passes (a few runs of every candidate, then the
 * full count for the best few), and summarized by knob as seed 003
 * summarizes its sweep.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../random.h"
#include "tune.h"

static const char *tune_help =
    "usage: tessel tune SPACE [--shape MxNxK]... [--layout L] [--dtype T]\n"
    "                  [--c-dtype T] [--jobs J] [--top N] [--limit N]\n"
    "                  [--budget N] [--time SECONDS] [--restart]\n"
    "                  [--repeats N] [--warmup N] [--csv FILE] [--json FILE]\n"
    "       tessel tune --list\n"
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
    "  --time S      stop the first pass of a shape after S seconds\n"
    "  --restart     time everything again; by default a run resumes what\n"
    "                an interrupted run of the same space, shape and GPU\n"
    "                timed (its journal in the cache directory)\n"
    "  --csv FILE    every timed row; --json FILE the whole run, with\n"
    "                every configuration and what became of it\n"
    "Progress (timed/total, the best so far, the time left) is one line\n"
    "on a terminal, plain lines otherwise.  --shape may repeat; default\n"
    "1024x1024x1024.  Needs a GPU.\n";

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
    fprintf(stderr, "tessel: %s has more than %d configurations (or memory "
            "ran out); raise --limit\n", sp->name, o->limit);
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

/* Times the candidates listed in `which` (n of them) as one group, each
 * marked in the journal first and its result written there after; `full`
 * picks the result they fill.  The GPU's status: a device error ends the
 * context. */
static ts_status time_some(ts_gpu *gpu, const ts_space *sp, shape_run *r,
                           const int *which, int n, const ts_bench_opts *bo,
                           bool full) {
  ts_kernel **k = calloc((size_t)(n ? n : 1), sizeof(*k));
  ts_bench_result *res = calloc((size_t)(n ? n : 1), sizeof(*res));
  if (!k || !res) {
    free(k);
    free(res);
    return TS_ERR_NO_MEMORY;
  }
  for (int i = 0; i < n; i++) {
    k[i] = r->c[which[i]].kernel;
    tune_journal_timing(gpu, sp, r, &r->c[which[i]]);
  }
  ts_bench_result blas;
  ts_bench(gpu, k, n, bo, res, &blas);
  if (blas.status == TS_OK) {
    r->cublas = blas;
    tune_journal_cublas(gpu, sp, r);
  }
  for (int i = 0; i < n && blas.status == TS_OK; i++) {
    candidate *c = &r->c[which[i]];
    *(full ? &c->full : &c->quick) = res[i];
    *(full ? &c->has_full : &c->has_quick) = true;
    c->suspect = false;
    tune_journal_note(gpu, sp, r, c, full);
  }
  free(k);
  free(res);
  return blas.status == TS_OK ? TS_OK : ts_gpu_status(gpu);
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
static ts_status first_pass(ts_gpu *gpu, const ts_space *sp,
                            const cli_opts *o, shape_run *r) {
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
    st = time_some(gpu, sp, r, which + at, m, &quick, false);
    p.done = at + m;
    show_progress(&p, r, at + m >= n);
  }
  free(which);
  return st;
}

/* The fastest o->top of the first pass timed again with the full count
 * (suspects alone, the rest together), but for those whose full count the
 * journal has; those resumed from the journal are compiled first. */
static ts_status full_pass(ts_gpu *gpu, const ts_space *sp, const cli_opts *o,
                           shape_run *r) {
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
  if (st == TS_OK && nb && !compile_some(sp, o, ts_gpu_arch(gpu), r, build, nb))
    st = TS_ERR_NO_MEMORY;
  suspects_first(r, which, n);
  ts_bench_opts full = {.warmup = o->warmup, .repeats = o->repeats,
                        .seed = o->seed};
  for (int at = 0, m; st == TS_OK && at < n; at += m) {
    m = group_at(r, which, at, n, n);
    st = time_some(gpu, sp, r, which + at, m, &full, true);
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

static int list_spaces(void) {
  for (int i = 0; i < ts_space_count(); i++)
    printf("%-16s %s\n", ts_space_at(i)->name, ts_space_at(i)->summary);
  return 0;
}

static int count_left_out(const shape_run *r, const char *why) {
  int n = 0;
  for (int i = 0; i < r->n; i++)
    n += r->c[i].left_out && strcmp(r->c[i].left_out, why) == 0;
  return n;
}

/* Enumerated, resumed, sampled and compiled; false on an error. */
static bool prepare(ts_gpu *gpu, const ts_space *sp, const cli_opts *o,
                    shape_run *r, const char *shape) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!enumerate(sp, o, r))
    return false;
  if (o->restart)
    ts_tune_journal_remove(gpu, sp->name, &r->def);
  int resumed = o->restart ? 0 : tune_resume(gpu, sp, r);
  apply_budget(o, r);
  int compiled = compile_wanted(sp, o, ts_gpu_arch(gpu), r);
  if (compiled < 0) {
    fprintf(stderr, "tessel: out of memory\n");
    return false;
  }
  int pruned = 0;
  for (int i = 0; i < r->n; i++)
    pruned += ts_config_pruned(r->c[i].config) != NULL;
  printf("\n# %s %s: %d configurations, %d pruned, %d compiled in %.1f s\n",
         sp->name, shape, r->n, pruned, compiled, seconds_since(&t0));
  if (resumed)
    printf("#   %5d timed by an interrupted run, taken from its journal "
           "(--restart times them again)\n", resumed);
  int suspects = 0;
  for (int i = 0; i < r->n; i++)
    suspects += r->c[i].suspect && !r->c[i].left_out;
  if (suspects)
    printf("#   %5d in flight when a tuning process died, each to be timed "
           "alone\n", suspects);
  if (count_left_out(r, "--budget"))
    printf("#   %5d left out by --budget %d\n", count_left_out(r, "--budget"),
           o->budget);
  print_pruned(r);
  return true;
}

static int tune_shape(ts_gpu *gpu, const ts_space *sp, const cli_opts *o,
                      shape_run *r, FILE *csv) {
  char shape[64];
  tune_shape_text(&r->def, shape, sizeof(shape));
  if (!prepare(gpu, sp, o, r, shape))
    return EXIT_FAIL;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ts_status st = first_pass(gpu, sp, o, r);
  if (st == TS_OK)
    st = full_pass(gpu, sp, o, r);
  if (st != TS_OK) {
    fprintf(stderr, "tessel: %s: %s (what was timed is in the journal; run "
            "again to resume)\n", shape, ts_gpu_errmsg(gpu)[0]
                                               ? ts_gpu_errmsg(gpu)
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
  tune_print_best(o, r, order, csv, ts_gpu_name(gpu));
  int failed = tune_print_failures(r);
  tune_record_best(gpu, sp, r, order);
  tune_print_reproduction(sp, r, order);
  free(order);
  r->finished = !stopped;
  return failed ? EXIT_FAIL : 0;
}

int cli_tune(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0)
    return list_spaces();
  cli_opts o;
  int rc = cli_parse(argc, argv, tune_help, CLI_TUNE, &o);
  if (rc >= 0)
    return rc;
  cli_finish_shapes(&o, 1024, 1024, 1024);
  shape_run *runs = calloc((size_t)o.nshapes, sizeof(*runs));
  ts_gpu *gpu = ts_gpu_open();
  FILE *csv = NULL;
  rc = 0;
  if (!runs) {
    fprintf(stderr, "tessel: out of memory\n");
    rc = EXIT_FAIL;
  } else if (ts_gpu_status(gpu) != TS_OK) {
    fprintf(stderr, "tessel: tune needs a GPU: %s\n", ts_gpu_errmsg(gpu));
    rc = EXIT_FAIL;
  } else if (o.csv && !(csv = fopen(o.csv, "w"))) {
    fprintf(stderr, "tessel: cannot write --csv %s\n", o.csv);
    rc = EXIT_FAIL;
  }
  for (int n = 0; rc == 0 && n < o.nnames; n++) {
    const ts_space *sp = ts_space_find(o.names[n]);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("# tune %s on %s (%s), A and B %s, C %s, layout %s\n", sp->name,
           ts_gpu_name(gpu), ts_gpu_arch(gpu), ts_dtype_name(o.ab_type),
           ts_dtype_name(o.c_type), ts_layout_name(o.layout));
    if (csv)
      fputs("gpu,shape,configuration,layout,median_ms,tflops,"
            "ratio_to_cublas,pass\n", csv);
    for (int j = 0; j < o.nshapes; j++) {
      runs[j].def = o.shapes[j];
      if (tune_shape(gpu, sp, &o, &runs[j], csv) != 0)
        rc = EXIT_FAIL;
    }
    printf("\n# by knob, over every shape (first-pass TFLOP/s):");
    tune_print_knob_tables(runs, o.nshapes);
    printf("\n# %s: %.1f s in all\n", sp->name, seconds_since(&t0));
    if (o.json && !tune_write_json(o.json, &o, argc, argv, gpu, sp, runs,
                                   o.nshapes)) {
      fprintf(stderr, "tessel: cannot write --json %s\n", o.json);
      rc = EXIT_FAIL;
    }
    /* The journals stay until the space's run is over, so that a run
     * resumed after its last shape was interrupted reports every shape. */
    for (int j = 0; j < o.nshapes; j++) {
      if (runs[j].finished)
        ts_tune_journal_remove(gpu, sp->name, &runs[j].def);
      free_run(&runs[j]);
    }
  }
  if (csv)
    fclose(csv);
  ts_gpu_close(gpu);
  free(runs);
  return rc;
}
