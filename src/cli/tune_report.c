/*
 * tessel tune's reports: the best configurations of a shape, the failures,
 * seed 003's tables by knob, the tuning record, the best as C, and the
 * --json record of the whole run (written by record.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "tune.h"

/* ---- Reporting ------------------------------------------------------------- */

void tune_print_best(const cli_opts *o, const shape_run *r, const int *order,
                     FILE *csv, const char *gpu) {
  char shape[64];
  tune_shape_text(&r->def, shape, sizeof(shape));
  printf("  %-4s %9s %9s %8s %9s  %s\n", "rank", "ms", "TFLOP/s", "cuBLAS",
         "max_err", "configuration");
  printf("  %-4s %9.4f %9.2f %7.1f%%\n", "-", r->cublas.median_ms,
         r->cublas.tflops, 100.0);
  for (int i = 0; i < r->n && i < o->top; i++) {
    const candidate *c = &r->c[order[i]];
    if (!tune_timed(c))
      break;
    const ts_bench_result *b = tune_result(c);
    printf("  %-4d %9.4f %9.2f %7.1f%% %9.1e  %s\n", i + 1, b->median_ms,
           b->tflops, 100.0 * b->ratio_to_cublas, b->max_rel_err, c->text);
  }
  for (int i = 0; csv && i < r->n; i++) {
    const candidate *c = &r->c[i];
    if (tune_timed(c))
      fprintf(csv, "\"%s\",%s,\"%s\",%s,%.6f,%.4f,%.4f,%s\n", gpu, shape,
              c->text, ts_layout_name(r->def.layout), tune_result(c)->median_ms,
              tune_result(c)->tflops, tune_result(c)->ratio_to_cublas,
              c->has_full ? "full" : "quick");
  }
}

/* Why candidate c of r failed to compile or run, or ran wrong (text may
 * hold the words); NULL when it did not fail. */
static const char *failure(const shape_run *r, const candidate *c,
                           char *text, size_t len) {
  if (c->kernel && ts_kernel_status(c->kernel) != TS_OK)
    return ts_kernel_errmsg(c->kernel);
  if (!c->has_quick && !c->has_full)
    return NULL;
  if (tune_result(c)->status != TS_OK)
    return tune_result(c)->message;
  if (!(tune_result(c)->max_rel_err < ts_gemm_tolerance(&r->def))) {
    snprintf(text, len, "differs from cuBLAS (max relative error %.2e, over "
             "%.2e)", tune_result(c)->max_rel_err, ts_gemm_tolerance(&r->def));
    return text;
  }
  return NULL;
}

/* Rows that failed to compile or run, or ran wrong: each with its reason;
 * returns how many. */
int tune_print_failures(const shape_run *r) {
  int failed = 0;
  for (int i = 0; i < r->n; i++) {
    char text[160];
    const char *why = failure(r, &r->c[i], text, sizeof(text));
    if (why) {
      printf("  FAIL %s: %.300s\n", r->c[i].text, why);
      failed++;
    }
  }
  return failed;
}

int tune_count_failures(const shape_run *r) {
  int failed = 0;
  for (int i = 0; i < r->n; i++) {
    char text[160];
    failed += failure(r, &r->c[i], text, sizeof(text)) != NULL;
  }
  return failed;
}

/* The value c gives the knob `name`, or NULL where c does not declare it
 * (a knob may depend on another's value: warptiled's bar_tiles exists only
 * with buffers=2, so knobs are matched by name, not by position). */
static const char *value_of(const ts_config *c, const char *name) {
  for (int k = 0; k < ts_config_knob_count(c); k++)
    if (strcmp(ts_config_knob_name(c, k), name) == 0)
      return ts_config_knob_value(c, k);
  return NULL;
}

/* Whether a candidate before candidate i of run s gives knob `name` the
 * value v. */
static bool seen_before(const shape_run *runs, int s, int i, const char *name,
                        const char *v) {
  for (int t = 0; t <= s; t++)
    for (int j = 0; j < (t == s ? i : runs[t].n); j++) {
      const char *w = value_of(runs[t].c[j].config, name);
      if (w && strcmp(w, v) == 0)
        return true;
    }
  return false;
}

/* One row of a knob's table: the first-pass TFLOP/s of every timed
 * candidate whose knob `name` has value v. */
static void print_knob_value(const shape_run *runs, int nruns,
                             const char *name, const char *v, int width) {
  int count = 0;
  double sum = 0, best = 0;
  for (int t = 0; t < nruns; t++)
    for (int j = 0; j < runs[t].n; j++) {
      const candidate *c = &runs[t].c[j];
      const char *w = value_of(c->config, name);
      if (!w || strcmp(w, v) != 0 || !c->has_quick ||
          c->quick.status != TS_OK || c->quick.skipped)
        continue;
      count++;
      sum += c->quick.tflops;
      best = c->quick.tflops > best ? c->quick.tflops : best;
    }
  printf("  %-*s %6d %10.2f %10.2f\n", width, v, count,
         count ? sum / count : 0.0, best);
}

/* The width of a knob's first column: its name and its longest value,
 * 20 at least. */
static int knob_width(const shape_run *runs, int nruns, const char *name) {
  int width = (int)strlen(name) > 20 ? (int)strlen(name) : 20;
  for (int s = 0; s < nruns; s++)
    for (int i = 0; i < runs[s].n; i++) {
      const char *v = value_of(runs[s].c[i].config, name);
      if (v && (int)strlen(v) > width)
        width = (int)strlen(v);
    }
  return width;
}

/* One knob's table: a row per value, in the order the values first
 * appear. */
static void print_knob_table(const shape_run *runs, int nruns,
                             const char *name) {
  int width = knob_width(runs, nruns, name);
  printf("\n  %-*s %6s %10s %10s\n", width, name, "count", "mean", "best");
  for (int s = 0; s < nruns; s++)
    for (int i = 0; i < runs[s].n; i++) {
      const char *v = value_of(runs[s].c[i].config, name);
      if (v && !seen_before(runs, s, i, name, v))
        print_knob_value(runs, nruns, name, v, width);
    }
}

/* Whether a configuration before candidate i of run s that was not pruned
 * declares knob `name`. */
static bool named_before(const shape_run *runs, int s, int i,
                         const char *name) {
  for (int t = 0; t <= s; t++)
    for (int j = 0; j < (t == s ? i : runs[t].n); j++) {
      const ts_config *c = runs[t].c[j].config;
      if (!ts_config_pruned(c) && value_of(c, name))
        return true;
    }
  return false;
}

/* Seed 003's tables: for each knob, each value's mean and best TFLOP/s over
 * every timed configuration of every shape (first-pass times, which every
 * candidate has), the knobs in the order configurations that were not
 * pruned declare them, and their values in the order they first appear. */
void tune_print_knob_tables(const shape_run *runs, int nruns) {
  for (int s = 0; s < nruns; s++)
    for (int i = 0; i < runs[s].n; i++) {
      const ts_config *c = runs[s].c[i].config;
      for (int k = 0; !ts_config_pruned(c) && k < ts_config_knob_count(c); k++)
        if (!named_before(runs, s, i, ts_config_knob_name(c, k)))
          print_knob_table(runs, nruns, ts_config_knob_name(c, k));
    }
}

/* The best configuration becomes the tuning record of this GPU, space and
 * definition, unless it ran wrong. */
void tune_record_best(ts_gpu *gpu, const ts_space *sp, const shape_run *r,
                        const int *order) {
  const candidate *best = r->n ? &r->c[order[0]] : NULL;
  if (!best || !tune_timed(best) ||
      !(tune_result(best)->max_rel_err < ts_gemm_tolerance(&r->def)))
    return;
  char shape[64];
  tune_shape_text(&r->def, shape, sizeof(shape));
  if (ts_tune_record_save(gpu, cli_space_key(sp), &r->def, best->text,
                          tune_result(best)->tflops) == TS_OK)
    printf("# recorded for this GPU: `tessel bench %s --tuned --shape %s` "
           "uses it\n", cli_space_name(sp), shape);
  else
    printf("# not recorded: the cache directory is off or not writable\n");
}

void tune_print_reproduction(const ts_space *sp, const shape_run *r,
                               const int *order) {
  if (r->n && tune_timed(&r->c[order[0]])) {
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
static const char *candidate_state(const shape_run *r, const candidate *c) {
  char text[160];
  return ts_config_pruned(c->config)    ? "pruned"
         : c->left_out                  ? "left out"
         : !c->has_quick && !c->has_full ? "not timed"
         : tune_result(c)->status != TS_OK ? "failed"
         : failure(r, c, text, sizeof(text)) ? "differs"
                                           : "timed";
}

/* One configuration of r: its text, then what became of it (why not
 * timed, or its timings: the first pass's and the full count's, and the
 * result's error against cuBLAS). */
static json_t *candidate_json(const shape_run *r, const candidate *c) {
  json_t *j = json_object();
  const char *pruned = ts_config_pruned(c->config);
  const char *why = pruned ? pruned : c->left_out;
  bool timed = c->has_quick || c->has_full;
  char text[160];
  bool ok = j && record_set(j, "config", json_string(c->text)) &&
            record_set(j, "state", json_string(candidate_state(r, c)));
  if (ok && !why && timed)
    why = failure(r, c, text, sizeof(text));
  if (ok && why)
    ok = record_set(j, "why", json_string(why));
  if (ok && !pruned && !c->left_out && timed &&
      tune_result(c)->status == TS_OK)
    ok = (!c->has_quick ||
          record_set(j, "first_pass", record_timing(&c->quick, NULL, 0))) &&
         (!c->has_full || record_set(j, "full", record_timing(&c->full, NULL, 0))) &&
         record_set(j, "max_rel_err",
                    record_error_json(tune_result(c)->max_rel_err));
  if (ok && !pruned && !c->left_out && timed)
    ok = record_set(j, "resumed", json_boolean(c->resumed));
  if (!ok) {
    json_decref(j);
    return NULL;
  }
  return j;
}

static bool add_shape(json_t *rec, const shape_run *r) {
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

bool tune_write_json(const char *path, const cli_opts *o, int argc,
                     char **argv, ts_gpu *gpu, const ts_gpu_sensors *start,
                     const ts_space *sp, const shape_run *runs, int nruns) {
  record_machine m = record_machine_of(gpu);
  m.start = *start;
  json_t *rec = record_new("tune", argc, argv, &m, o);
  /* As the command line names it, so that its configurations' names
   * (SPACE:CONFIG) are what bench takes and names its rows. */
  bool ok = rec && record_set(rec, "space", json_string(cli_space_name(sp)));
  for (int s = 0; ok && s < nruns; s++)
    ok = add_shape(rec, &runs[s]);
  ok = ok && record_end_sensors(rec, gpu) && record_write(rec, path);
  json_decref(rec);
  return ok;
}
