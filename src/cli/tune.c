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

#include "options.h"

static const char *tune_help =
    "usage: tessel tune SPACE [--shape MxNxK]... [--layout L] [--dtype T]\n"
    "                  [--c-dtype T] [--jobs J] [--top N] [--limit N]\n"
    "                  [--repeats N] [--warmup N] [--csv FILE]\n"
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
    "--tuned).  --csv writes every timed row.  --shape may repeat; default\n"
    "1024x1024x1024.  Needs a GPU.\n";

enum { QUICK_REPEATS = 3, QUICK_WARMUP = 1 };

typedef struct {
  ts_config *config;
  char *text;       /* "block=32x32x32,..." */
  ts_kernel *kernel; /* NULL when pruned */
  ts_bench_result quick, full;
  bool has_full;
} candidate;

typedef struct {
  ts_gemm def;
  candidate *c;
  int n;
  ts_bench_result cublas;
} shape_run;

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
  r->c = NULL;
  r->n = 0;
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

/* The unpruned configurations lowered and compiled on o->jobs threads. */
static bool compile(const ts_space *sp, const cli_opts *o, const char *arch,
                    shape_run *r, int *valid) {
  ts_program **progs = calloc((size_t)(r->n ? r->n : 1), sizeof(*progs));
  ts_kernel **k = calloc((size_t)(r->n ? r->n : 1), sizeof(*k));
  int *at = calloc((size_t)(r->n ? r->n : 1), sizeof(*at));
  bool ok = progs && k && at;
  *valid = 0;
  for (int i = 0; ok && i < r->n; i++) {
    if (ts_config_pruned(r->c[i].config))
      continue;
    ts_sched *s = ts_space_schedule(sp, &r->def, r->c[i].config);
    progs[*valid] = ts_lower(s);
    at[(*valid)++] = i;
    ts_sched_free(s);
  }
  if (ok)
    ts_compile_all(progs, *valid, arch, o->jobs, k);
  for (int v = 0; ok && v < *valid; v++)
    r->c[at[v]].kernel = k[v];
  for (int v = 0; progs && v < *valid; v++)
    ts_program_free(progs[v]);
  free(progs);
  free(k);
  free(at);
  return ok;
}

/* ---- Timing ---------------------------------------------------------------- */

/* Times the candidates listed in `which` (n of them); `full` picks the
 * result they fill. */
static ts_status time_some(ts_gpu *gpu, shape_run *r, const int *which, int n,
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
  ts_bench(gpu, k, n, bo, res, &r->cublas);
  for (int i = 0; i < n; i++) {
    candidate *c = &r->c[which[i]];
    if (full) {
      c->full = res[i];
      c->has_full = true;
    } else {
      c->quick = res[i];
    }
  }
  free(k);
  free(res);
  return r->cublas.status;
}

static const ts_bench_result *best_result(const candidate *c) {
  return c->has_full ? &c->full : &c->quick;
}

static bool timed(const candidate *c) {
  return c->kernel && best_result(c)->status == TS_OK && !best_result(c)->skipped;
}

/* Candidates in order of time, fastest first; untimed ones last. */
static const shape_run *sort_run;
static int by_time(const void *a, const void *b) {
  const candidate *x = &sort_run->c[*(const int *)a];
  const candidate *y = &sort_run->c[*(const int *)b];
  if (timed(x) != timed(y))
    return timed(x) ? -1 : 1;
  if (!timed(x))
    return 0;
  double tx = best_result(x)->median_ms, ty = best_result(y)->median_ms;
  return tx < ty ? -1 : tx > ty;
}

static int *ranking(const shape_run *r) {
  int *order = malloc(sizeof(*order) * (size_t)(r->n ? r->n : 1));
  if (!order)
    return NULL;
  for (int i = 0; i < r->n; i++)
    order[i] = i;
  sort_run = r;
  qsort(order, (size_t)r->n, sizeof(*order), by_time);
  return order;
}

/* The first pass over every compiled candidate, then the full count for
 * the fastest o->top. */
static ts_status time_candidates(ts_gpu *gpu, const cli_opts *o,
                                 shape_run *r) {
  int *which = malloc(sizeof(*which) * (size_t)(r->n ? r->n : 1));
  if (!which)
    return TS_ERR_NO_MEMORY;
  int n = 0;
  for (int i = 0; i < r->n; i++)
    if (r->c[i].kernel)
      which[n++] = i;
  ts_bench_opts quick = {.warmup = QUICK_WARMUP, .repeats = QUICK_REPEATS,
                         .seed = o->seed};
  ts_status st = time_some(gpu, r, which, n, &quick, false);
  int *order = st == TS_OK ? ranking(r) : NULL;
  int top = 0;
  for (int i = 0; order && i < r->n && top < o->top; i++)
    if (timed(&r->c[order[i]]))
      which[top++] = order[i];
  ts_bench_opts full = {.warmup = o->warmup, .repeats = o->repeats,
                        .seed = o->seed};
  if (order && top)
    st = time_some(gpu, r, which, top, &full, true);
  free(order);
  free(which);
  return st;
}

/* ---- Reporting ------------------------------------------------------------- */

static void shape_text(const ts_gemm *g, char *out, size_t len) {
  snprintf(out, len, "%lldx%lldx%lld", (long long)g->m, (long long)g->n,
           (long long)g->k);
}

static void print_best(const cli_opts *o, const shape_run *r,
                       const int *order, FILE *csv, const char *gpu) {
  char shape[64];
  shape_text(&r->def, shape, sizeof(shape));
  printf("  %-4s %9s %9s %8s %9s  %s\n", "rank", "ms", "TFLOP/s", "cuBLAS",
         "max_err", "configuration");
  printf("  %-4s %9.4f %9.2f %7.1f%%\n", "-", r->cublas.median_ms,
         r->cublas.tflops, 100.0);
  for (int i = 0; i < r->n && i < o->top; i++) {
    const candidate *c = &r->c[order[i]];
    if (!timed(c))
      break;
    const ts_bench_result *b = best_result(c);
    printf("  %-4d %9.4f %9.2f %7.1f%% %9.1e  %s\n", i + 1, b->median_ms,
           b->tflops, 100.0 * b->ratio_to_cublas, b->max_rel_err, c->text);
  }
  for (int i = 0; csv && i < r->n; i++) {
    const candidate *c = &r->c[i];
    if (timed(c))
      fprintf(csv, "\"%s\",%s,\"%s\",%s,%.6f,%.4f,%.4f,%s\n", gpu, shape,
              c->text, ts_layout_name(r->def.layout), best_result(c)->median_ms,
              best_result(c)->tflops, best_result(c)->ratio_to_cublas,
              c->has_full ? "full" : "quick");
  }
}

/* Rows that failed to compile or run, or ran wrong: each with its reason;
 * returns how many. */
static int print_failures(const shape_run *r) {
  int failed = 0;
  for (int i = 0; i < r->n; i++) {
    const candidate *c = &r->c[i];
    const char *why = NULL;
    char text[160];
    if (!c->kernel)
      continue;
    if (ts_kernel_status(c->kernel) != TS_OK)
      why = ts_kernel_errmsg(c->kernel);
    else if (best_result(c)->status != TS_OK)
      why = best_result(c)->message;
    else if (!(best_result(c)->max_rel_err < ts_gemm_tolerance(&r->def))) {
      snprintf(text, sizeof(text), "differs from cuBLAS (max relative error "
               "%.2e)", best_result(c)->max_rel_err);
      why = text;
    }
    if (why) {
      printf("  FAIL %s: %.300s\n", c->text, why);
      failed++;
    }
  }
  return failed;
}

/* Whether value v of knob k appears before candidate i of run s. */
static bool seen_before(const shape_run *runs, int s, int i, int k,
                        const char *v) {
  for (int t = 0; t <= s; t++)
    for (int j = 0; j < (t == s ? i : runs[t].n); j++) {
      const char *w = ts_config_knob_value(runs[t].c[j].config, k);
      if (w && strcmp(w, v) == 0)
        return true;
    }
  return false;
}

/* One row of a knob's table: the first-pass TFLOP/s of every timed
 * candidate whose knob k has value v. */
static void print_knob_value(const shape_run *runs, int nruns, int k,
                             const char *v) {
  int count = 0;
  double sum = 0, best = 0;
  for (int t = 0; t < nruns; t++)
    for (int j = 0; j < runs[t].n; j++) {
      const candidate *c = &runs[t].c[j];
      const char *w = ts_config_knob_value(c->config, k);
      if (!w || strcmp(w, v) != 0 || !c->kernel ||
          c->quick.status != TS_OK || c->quick.skipped)
        continue;
      count++;
      sum += c->quick.tflops;
      best = c->quick.tflops > best ? c->quick.tflops : best;
    }
  printf("  %-20s %6d %10.2f %10.2f\n", v, count, count ? sum / count : 0.0,
         best);
}

/* Seed 003's tables: for each knob, each value's mean and best TFLOP/s over
 * every timed configuration of every shape (first-pass times, which every
 * candidate has), the values in the order they first appear. */
static void print_knob_tables(const shape_run *runs, int nruns) {
  const candidate *first = NULL;
  for (int s = 0; s < nruns && !first; s++)
    for (int i = 0; i < runs[s].n && !first; i++)
      if (runs[s].c[i].kernel)
        first = &runs[s].c[i];
  for (int k = 0; first && k < ts_config_knob_count(first->config); k++) {
    printf("\n  %-20s %6s %10s %10s\n", ts_config_knob_name(first->config, k),
           "count", "mean", "best");
    for (int s = 0; s < nruns; s++)
      for (int i = 0; i < runs[s].n; i++) {
        const char *v = ts_config_knob_value(runs[s].c[i].config, k);
        if (v && !seen_before(runs, s, i, k, v))
          print_knob_value(runs, nruns, k, v);
      }
  }
}

/* The best configuration becomes the tuning record of this GPU, space and
 * definition, unless it ran wrong. */
static void record_best(ts_gpu *gpu, const ts_space *sp, const shape_run *r,
                        const int *order) {
  const candidate *best = r->n ? &r->c[order[0]] : NULL;
  if (!best || !timed(best) ||
      !(best_result(best)->max_rel_err < ts_gemm_tolerance(&r->def)))
    return;
  char shape[64];
  shape_text(&r->def, shape, sizeof(shape));
  if (ts_tune_record_save(gpu, sp->name, &r->def, best->text,
                          best_result(best)->tflops) == TS_OK)
    printf("# recorded for this GPU: `tessel bench %s --tuned --shape %s` "
           "uses it\n", sp->name, shape);
  else
    printf("# not recorded: the cache directory is off or not writable\n");
}

static void print_reproduction(const ts_space *sp, const shape_run *r,
                               const int *order) {
  if (r->n && timed(&r->c[order[0]])) {
    ts_sched *s = ts_space_schedule(sp, &r->def, r->c[order[0]].config);
    char *trace = ts_print_trace(s);
    printf("\n# the best at this shape, %s, as C:\n%s", r->c[order[0]].text,
           trace ? trace : "(out of memory)\n");
    free(trace);
    ts_sched_free(s);
  }
}

/* ---- The command ------------------------------------------------------------- */

static int list_spaces(void) {
  for (int i = 0; i < ts_space_count(); i++)
    printf("%-16s %s\n", ts_space_at(i)->name, ts_space_at(i)->summary);
  return 0;
}

static int tune_shape(ts_gpu *gpu, const ts_space *sp, const cli_opts *o,
                      shape_run *r, FILE *csv) {
  char shape[64];
  shape_text(&r->def, shape, sizeof(shape));
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!enumerate(sp, o, r))
    return EXIT_FAIL;
  int valid;
  if (!compile(sp, o, ts_gpu_arch(gpu), r, &valid)) {
    fprintf(stderr, "tessel: out of memory\n");
    return EXIT_FAIL;
  }
  printf("\n# %s %s: %d configurations, %d pruned, %d compiled in %.1f s\n",
         sp->name, shape, r->n, r->n - valid, valid, seconds_since(&t0));
  print_pruned(r);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ts_status st = time_candidates(gpu, o, r);
  if (st != TS_OK) {
    fprintf(stderr, "tessel: %s: %s\n", shape, r->cublas.message[0]
                                                   ? r->cublas.message
                                                   : ts_gpu_errmsg(gpu));
    return EXIT_FAIL;
  }
  printf("# timed in %.1f s: %d runs each, then the best %d with the median "
         "of %d\n", seconds_since(&t0), QUICK_REPEATS, o->top, o->repeats);
  int *order = ranking(r);
  if (!order) {
    fprintf(stderr, "tessel: out of memory\n");
    return EXIT_FAIL;
  }
  print_best(o, r, order, csv, ts_gpu_name(gpu));
  int failed = print_failures(r);
  record_best(gpu, sp, r, order);
  print_reproduction(sp, r, order);
  free(order);
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
    print_knob_tables(runs, o.nshapes);
    printf("\n# %s: %.1f s in all\n", sp->name, seconds_since(&t0));
    for (int j = 0; j < o.nshapes; j++)
      free_run(&runs[j]);
  }
  if (csv)
    fclose(csv);
  ts_gpu_close(gpu);
  free(runs);
  return rc;
}
