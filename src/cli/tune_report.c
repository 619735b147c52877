/*
 * tessel tune's reports, the hooks the tuner reports through: a space's
 * header, each shape's counts, progress, best configurations, failures,
 * record and best as C, seed 003's tables by knob, and the --json record
 * of the whole run (written by record.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "record.h"
#include "tune_report.h"

/* The first pass's counts, as the tuner times it (docs/tuning.md). */
enum { QUICK_REPEATS = 3 };

static void shape_text(const ts_gemm *g, char *out, size_t len) {
  snprintf(out, len, "%lldx%lldx%lld", (long long)g->m, (long long)g->n,
           (long long)g->k);
}

/* ---- Reporting ------------------------------------------------------------- */

static void print_best(const cli_opts *o, const ts_tune_shape *r,
                       const int *order, FILE *csv, const char *gpu) {
  char shape[64];
  shape_text(&r->def, shape, sizeof(shape));
  printf("  %-4s %9s %9s %8s %9s  %s\n", "rank", "ms", "TFLOP/s", "cuBLAS",
         "max_err", "configuration");
  printf("  %-4s %9.4f %9.2f %7.1f%%\n", "-", r->cublas.median_ms,
         r->cublas.tflops, 100.0);
  for (int i = 0; i < r->n && i < o->top; i++) {
    const ts_tune_candidate *c = &r->c[order[i]];
    if (!ts_tune_timed(c))
      break;
    const ts_bench_result *b = ts_tune_result(c);
    printf("  %-4d %9.4f %9.2f %7.1f%% %9.1e  %s\n", i + 1, b->median_ms,
           b->tflops, 100.0 * b->ratio_to_cublas, b->max_rel_err, c->text);
  }
  for (int i = 0; csv && i < r->n; i++) {
    const ts_tune_candidate *c = &r->c[i];
    if (!ts_tune_timed(c))
      continue;
    cli_csv_field(csv, gpu);
    fprintf(csv, ",%s,", shape);
    cli_csv_field(csv, c->text);
    const ts_bench_result *b = ts_tune_result(c);
    fprintf(csv, ",%s,%.6f,%.4f,%.4f,%s\n", ts_layout_name(r->def.layout),
            b->median_ms, b->tflops, b->ratio_to_cublas,
            c->has_full ? "full" : "quick");
  }
}

/* Rows that failed to compile or run, or ran wrong: each with its reason;
 * returns how many. */
static int print_failures(const ts_tune_shape *r) {
  int failed = 0;
  for (int i = 0; i < r->n; i++) {
    char text[160];
    const char *why = ts_tune_failure(r, &r->c[i], text, sizeof(text));
    if (why) {
      printf("  FAIL %s: %.300s\n", r->c[i].text, why);
      failed++;
    }
  }
  return failed;
}

/* Seed 003's tables: for each knob, each value's mean and best TFLOP/s
 * over every timed configuration of every shape (first-pass times, which
 * every candidate has), the knobs in the order configurations that were
 * not pruned declare them, and their values in the order they first
 * appear.  Knobs are matched by name, not by position: a knob may depend
 * on another's value (warptiled's bar_tiles exists only with buffers=2).
 * Built in one pass over the candidates, each looked up among the few
 * knobs and values seen so far: a run of nine shapes enumerates some
 * 30,000 configurations, and a search of the earlier ones for each took
 * longer than timing them. */
typedef struct {
  const char *value;
  int count;
  double sum, best;
} knob_value;

typedef struct {
  const char *name;
  knob_value *values;
  int nvalues, cap, width;
} knob_table;

typedef struct {
  knob_table *t;
  int n, cap;
} knob_tables;

static knob_table *find_table(knob_tables *ts, const char *name) {
  for (int i = 0; i < ts->n; i++)
    if (strcmp(ts->t[i].name, name) == 0)
      return &ts->t[i];
  return NULL;
}

/* Grows an array of `size`-byte items to hold one more; false when out
 * of memory. */
static bool room_for_one(void **items, int n, int *cap, size_t size) {
  if (n < *cap)
    return true;
  int grown = *cap ? 2 * *cap : 8;
  void *p = realloc(*items, size * (size_t)grown);
  if (!p)
    return false;
  *items = p;
  *cap = grown;
  return true;
}

/* The tables of the knobs that configurations not pruned declare, empty,
 * in the order they declare them. */
static bool name_tables(const ts_tune_shape *runs, int nruns, knob_tables *ts) {
  for (int s = 0; s < nruns; s++)
    for (int i = 0; i < runs[s].n; i++) {
      const ts_config *c = runs[s].c[i].config;
      for (int k = 0; !ts_config_pruned(c) && k < ts_config_knob_count(c); k++) {
        const char *name = ts_config_knob_name(c, k);
        if (find_table(ts, name))
          continue;
        if (!room_for_one((void **)&ts->t, ts->n, &ts->cap, sizeof(*ts->t)))
          return false;
        int width = (int)strlen(name) > 20 ? (int)strlen(name) : 20;
        ts->t[ts->n++] = (knob_table){.name = name, .width = width};
      }
    }
  return true;
}

/* Candidate c's value v of table t counted: its row made where v is new,
 * its first-pass TFLOP/s added where it was timed. */
static bool count_value(knob_table *t, const char *v, const ts_tune_candidate *c) {
  knob_value *row = NULL;
  for (int i = 0; i < t->nvalues && !row; i++)
    if (strcmp(t->values[i].value, v) == 0)
      row = &t->values[i];
  if (!row) {
    if (!room_for_one((void **)&t->values, t->nvalues, &t->cap,
                      sizeof(*t->values)))
      return false;
    row = &t->values[t->nvalues++];
    *row = (knob_value){.value = v};
    t->width = (int)strlen(v) > t->width ? (int)strlen(v) : t->width;
  }
  if (c->has_quick && c->quick.status == TS_OK && !c->quick.skipped) {
    row->count++;
    row->sum += c->quick.tflops;
    row->best = c->quick.tflops > row->best ? c->quick.tflops : row->best;
  }
  return true;
}

static bool fill_tables(const ts_tune_shape *runs, int nruns, knob_tables *ts) {
  for (int s = 0; s < nruns; s++)
    for (int i = 0; i < runs[s].n; i++) {
      const ts_tune_candidate *c = &runs[s].c[i];
      for (int k = 0; k < ts_config_knob_count(c->config); k++) {
        knob_table *t = find_table(ts, ts_config_knob_name(c->config, k));
        if (t && !count_value(t, ts_config_knob_value(c->config, k), c))
          return false;
      }
    }
  return true;
}

/* A value's row: its mean and best, or "-" where no configuration of it
 * was timed (a mean of nothing is not 0 TFLOP/s). */
static void print_knob_value(const knob_table *t, const knob_value *v) {
  if (!v->count) {
    printf("  %-*s %6d %10s %10s\n", t->width, v->value, 0, "-", "-");
    return;
  }
  printf("  %-*s %6d %10.2f %10.2f\n", t->width, v->value, v->count,
         v->sum / v->count, v->best);
}

static void print_knob_tables(const ts_tune_shape *runs, int nruns) {
  knob_tables ts = {0};
  bool ok = name_tables(runs, nruns, &ts) && fill_tables(runs, nruns, &ts);
  for (int i = 0; ok && i < ts.n; i++) {
    const knob_table *t = &ts.t[i];
    printf("\n  %-*s %6s %10s %10s\n", t->width, t->name, "count", "mean",
           "best");
    for (int v = 0; v < t->nvalues; v++)
      print_knob_value(t, &t->values[v]);
  }
  if (!ok)
    printf("\n  (out of memory for the knobs' tables)\n");
  for (int i = 0; i < ts.n; i++)
    free(ts.t[i].values);
  free(ts.t);
}

/* With several GPUs, how many of the first pass each timed. */
static void print_shares(const cli_opts *o, const ts_tune_shape *r) {
  if (r->ngpus < 2)
    return;
  printf("# first pass on %d %s:", r->ngpus, r->ranks ? "MPI ranks" : "GPUs");
  for (int k = 0; k < r->ngpus; k++)
    printf("%s %s %d timed %d", k ? "," : "", r->ranks ? "rank" : "GPU",
           o->ngpus > 0 ? o->gpus[k] : k, r->timed_on[k]);
  printf("\n");
}

/* Whether the best was recorded (the tuner saves it). */
static void print_record(const ts_tune_space *sp, const ts_tune_shape *r) {
  if (!r->record_tried)
    return;
  char shape[64];
  shape_text(&r->def, shape, sizeof(shape));
  if (r->recorded == TS_OK)
    printf("# recorded for this GPU: `tessel bench %s --tuned --shape %s` "
           "uses it\n", sp->name, shape);
  else
    printf("# not recorded: the cache directory is off or not writable\n");
}

/* The best as C; where none ran right, that none is the best. */
static void print_reproduction(const ts_space *sp, const ts_tune_shape *r,
                               const int *order) {
  if (r->n && !ts_tune_correct(r, &r->c[order[0]]) &&
      ts_tune_timed(&r->c[order[0]]))
    printf("\n# no correct configuration at this shape: every one timed "
           "differs from cuBLAS (FAIL above), and none is recorded\n");
  if (r->n && ts_tune_correct(r, &r->c[order[0]])) {
    ts_sched *s = ts_space_schedule(sp, &r->def, r->c[order[0]].config);
    char *trace = ts_print_trace(s);
    printf("\n# the best at this shape, %s, as C:\n%s", r->c[order[0]].text,
           trace ? trace : "(out of memory)\n");
    free(trace);
    ts_sched_free(s);
  }
}


/* ---- The --json record ------------------------------------------------------- */

/* What became of a configuration of r; "differs" where it ran, but its
 * result is over the tolerance (the run failed it). */
static const char *candidate_state(const ts_tune_shape *r, const ts_tune_candidate *c) {
  char text[160];
  return ts_config_pruned(c->config)    ? "pruned"
         : c->left_out                  ? "left out"
         : !c->has_quick && !c->has_full ? "not timed"
         : ts_tune_result(c)->status != TS_OK ? "failed"
         : ts_tune_failure(r, c, text, sizeof(text)) ? "differs"
                                           : "timed";
}

/* One configuration of r: its text, then what became of it (why not
 * timed, or its timings: the first pass's and the full count's, and the
 * result's error against cuBLAS). */
static json_t *candidate_json(const ts_tune_shape *r, const ts_tune_candidate *c) {
  json_t *j = json_object();
  const char *pruned = ts_config_pruned(c->config);
  const char *why = pruned ? pruned : c->left_out;
  bool timed = c->has_quick || c->has_full;
  char text[160];
  bool ok = j && record_set(j, "config", json_string(c->text)) &&
            record_set(j, "state", json_string(candidate_state(r, c)));
  if (ok && !why && timed)
    why = ts_tune_failure(r, c, text, sizeof(text));
  if (ok && why)
    ok = record_set(j, "why", json_string(why));
  if (ok && !pruned && !c->left_out && timed &&
      ts_tune_result(c)->status == TS_OK)
    ok = (!c->has_quick ||
          record_set(j, "first_pass", record_timing(&c->quick, NULL, 0))) &&
         (!c->has_full || record_set(j, "full", record_timing(&c->full, NULL, 0))) &&
         record_set(j, "max_rel_err",
                    record_error_json(ts_tune_result(c)->max_rel_err));
  if (ok && !pruned && !c->left_out && timed)
    ok = record_set(j, "resumed", json_boolean(c->resumed));
  if (!ok) {
    json_decref(j);
    return NULL;
  }
  return j;
}

static bool add_shape(json_t *rec, const ts_tune_shape *r) {
  json_t *shape = record_add_shape(rec, &r->def);
  json_t *list = json_array();
  bool ok = shape && list &&
            record_set(shape, "cublas",
                       r->cublas.median_ms > 0
                           ? record_timing(&r->cublas, NULL, 0)
                           : json_null()) &&
            json_object_set(shape, "configurations", list) == 0;
  for (int i = 0; ok && i < r->n; i++)
    ok = json_array_append_new(list, candidate_json(r, &r->c[i])) == 0;
  json_decref(list);
  return ok;
}

static bool write_json(const char *path, const cli_opts *o, int argc,
                     char **argv, ts_gpu *gpu, const ts_gpu_sensors *start,
                     const ts_tune_space *sp, const ts_tune_shape *runs, int nruns) {
  record_machine m = record_machine_of(gpu);
  m.start = *start;
  json_t *rec = record_new("tune", argc, argv, &m, o);
  /* As the command line names it, so that its configurations' names
   * (SPACE:CONFIG) are what bench takes and names its rows. */
  bool ok = rec && record_set(rec, "space", json_string(sp->name));
  for (int s = 0; ok && s < nruns; s++)
    ok = add_shape(rec, &runs[s]);
  ok = ok && record_end_sensors(rec, gpu) && record_write(rec, path);
  json_decref(rec);
  return ok;
}


/* ---- The hooks ------------------------------------------------------------------ */

void tune_print_space_begin(void *ctx, const ts_tune_space *sp, ts_gpu *gpu) {
  tune_printer *p = ctx;
  const cli_opts *o = p->o;
  p->start = ts_gpu_read_sensors(gpu);
  p->have_start = true;
  printf("# tune %s on %s (%s), A and B %s, C %s, layout %s\n", sp->name,
         ts_gpu_name(gpu), ts_gpu_arch(gpu), ts_dtype_name(o->ab_type),
         ts_dtype_name(o->c_type), ts_layout_name(o->layout));
  ts_gemm b;
  if (ts_cublas_baseline(&o->shapes[0], &b) == TS_OK &&
      b.c_type != o->shapes[0].c_type)
    printf("# cuBLAS has no GEMM of these types: it is timed with a C %s "
           "(the nearest it has), and results are checked against its C "
           "rounded to %s\n", ts_dtype_name(b.c_type),
           ts_dtype_name(o->c_type));
  FILE *csv = o->csv ? fopen(o->csv, "a") : NULL;
  if (csv) {
    fputs("gpu,shape,configuration,layout,median_ms,tflops,"
          "ratio_to_cublas,pass\n", csv);
    fclose(csv);
  }
}

/* Pruned configurations counted by reason, as "  12  reason" lines. */
static void print_pruned(const ts_tune_shape *r) {
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

void tune_print_shape_ready(void *ctx, const ts_tune_space *sp,
                            const ts_tune_shape *r) {
  const cli_opts *o = ((tune_printer *)ctx)->o;
  char shape[64];
  shape_text(&r->def, shape, sizeof(shape));
  ((tune_printer *)ctx)->last_progress = 0;
  printf("\n# %s %s: %d configuration%s, %d pruned, ", sp->name, shape, r->n,
         r->n == 1 ? "" : "s", r->pruned);
  if (r->compiled_as_taken)
    printf("%d compiled by the runner that takes each\n", r->compiled);
  else
    printf("%d compiled in %.1f s\n", r->compiled, r->compile_seconds);
  if (r->resumed && r->resumed_after_restart)
    printf("#   %5d timed before the GPU process restarted, taken from the "
           "journal\n", r->resumed);
  else if (r->resumed)
    printf("#   %5d timed by an interrupted run, taken from its journal "
           "(--restart times them again)\n", r->resumed);
  if (r->suspects)
    printf("#   %5d in flight when a GPU process died, each to be timed "
           "alone\n", r->suspects);
  if (r->budget_left_out)
    printf("#   %5d left out by --budget %d\n", r->budget_left_out,
           o->budget);
  print_pruned(r);
}

/* One line rewritten in place on a terminal; a plain line every 5 s
 * otherwise (a log), and at the end. */
void tune_print_progress(void *ctx, const ts_tune_shape *r, int done,
                         int total, double seconds) {
  tune_printer *p = ctx;
  bool last = done >= total;
  if (!p->tty && !last && seconds - p->last_progress < 5.0)
    return;
  p->last_progress = seconds;
  const ts_tune_candidate *best = NULL;
  for (int i = 0; i < r->n; i++) /* the fastest that ran right */
    if (ts_tune_correct(r, &r->c[i]) && r->c[i].quick.status == TS_OK &&
        (!best || r->c[i].quick.median_ms < best->quick.median_ms))
      best = &r->c[i];
  double left = done ? seconds / done * (total - done) : 0;
  char best_text[96] = "none right yet";
  if (best)
    snprintf(best_text, sizeof(best_text), "%.2f TFLOP/s (%.40s)",
             best->quick.tflops, best->text);
  printf("%s# timed %d/%d, %.0f s, about %.0f s left; best %s%s",
         p->tty ? "\r" : "", done, total, seconds, left, best_text,
         p->tty && !last ? "   " : "\n");
  fflush(stdout);
}

int tune_print_shape_done(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                          const ts_tune_shape *r, const int *order) {
  const cli_opts *o = ((tune_printer *)ctx)->o;
  printf("# timed in %.1f s: %d runs each, then the best %d with the median "
         "of %d\n", r->time_seconds, QUICK_REPEATS, o->top, o->repeats);
  if (r->time_left_out)
    printf("# %d not timed: --time %d s ran out (the journal keeps what was "
           "timed; run again to go on)\n", r->time_left_out, o->time_limit);
  FILE *csv = o->csv ? fopen(o->csv, "a") : NULL;
  print_best(o, r, order, csv, ts_gpu_name(gpu));
  if (csv)
    fclose(csv);
  print_failures(r);
  print_shares(o, r);
  print_record(sp, r);
  print_reproduction(sp->space, r, order);
  return 0;
}

int tune_print_space_done(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                          const ts_tune_shape *runs, int n, double seconds) {
  tune_printer *p = ctx;
  const cli_opts *o = p->o;
  printf("\n# by knob, over every shape (first-pass TFLOP/s):");
  print_knob_tables(runs, n);
  printf("\n# %s: %.1f s in all\n", sp->name, seconds);
  if (!p->have_start)
    p->start = ts_gpu_read_sensors(gpu);
  if (o->json && !write_json(o->json, o, p->argc, p->argv, gpu, &p->start,
                             sp, runs, n)) {
    fprintf(stderr, "tessel: cannot write --json %s\n", o->json);
    return EXIT_FAIL;
  }
  return 0;
}
