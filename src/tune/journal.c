/*
 * The journal of a tuning run: what happens to each configuration is
 * appended as soon as it happens (src/tune/records.c keeps the file
 * beside the tuning records), and a later run of the same space and
 * definition on the same GPU takes those results instead of timing them
 * again, so an interrupted run resumes where it stopped.  Lines:
 *
 *   timing <TAB> configuration                  about to be timed
 *   timed <TAB> median ms <TAB> max relative error <TAB> configuration
 *   failed <TAB> configuration <TAB> why
 *   full <TAB> median ms <TAB> max relative error <TAB> configuration
 *   cublas <TAB> median ms                      cuBLAS in the same timing
 *
 * `timed` is the first pass's result and `full` the full count's.  The
 * last line about a configuration decides: one whose last line is
 * `timing` was in flight when its process died, and is timed alone (a
 * suspect) rather than with others.  A line that does not parse (the torn
 * last line of a killed run), of a kind this version does not know, or
 * naming a configuration the space no longer has is ignored, so journals
 * of earlier versions (timed and failed lines only) read as before.
 */
#include <stdlib.h>
#include <string.h>

#include "tune_impl.h"

static ts_tune_candidate *find(ts_tune_shape *r, const char *text) {
  for (int i = 0; i < r->n; i++)
    if (r->c[i].text && strcmp(r->c[i].text, text) == 0 &&
        !ts_config_pruned(r->c[i].config))
      return &r->c[i];
  return NULL;
}

static double tflops_at(const ts_gemm *g, double ms) {
  return 2.0 * (double)g->m * (double)g->n * (double)g->k / (ms * 1e-3) / 1e12;
}

/* A time and an error as a journal writes them; false unless the time is
 * a positive number. */
static bool parse_result(const ts_tune_shape *r, const char *ms, const char *err,
                         ts_bench_result *out) {
  char *end;
  *out = (ts_bench_result){.status = TS_OK, .median_ms = strtod(ms, &end)};
  if (*end || !(out->median_ms > 0))
    return false;
  out->max_rel_err = err ? strtod(err, NULL) : 0;
  out->tflops = tflops_at(&r->def, out->median_ms);
  return true;
}

/* A `timed` or `full` line's result applied to its candidate. */
static bool resume_result(ts_tune_shape *r, char **f, bool full) {
  ts_tune_candidate *c = find(r, f[3]);
  ts_bench_result b;
  if (!c || !parse_result(r, f[1], f[2], &b))
    return false;
  *(full ? &c->full : &c->quick) = b;
  *(full ? &c->has_full : &c->has_quick) = true;
  c->resumed = true;
  c->suspect = false;
  return true;
}

static bool resume_failure(ts_tune_shape *r, char **f) {
  ts_tune_candidate *c = find(r, f[1]);
  if (!c)
    return false;
  c->quick = (ts_bench_result){.status = TS_ERR_CUDA};
  snprintf(c->quick.message, sizeof(c->quick.message), "%s", f[2]);
  c->has_quick = c->resumed = true;
  c->has_full = c->suspect = false;
  return true;
}

/* One line of the journal applied to its candidate (or to the shape's
 * cuBLAS time); false when it does not parse or names no candidate. */
static bool resume_line(ts_tune_shape *r, char *line) {
  char *f[4] = {line};
  int n = 1;
  for (char *p = line; *p && n < 4; p++)
    if (*p == '\t') {
      *p = 0;
      f[n++] = p + 1;
    }
  if (strcmp(f[0], "timed") == 0 && n == 4)
    return resume_result(r, f, false);
  if (strcmp(f[0], "full") == 0 && n == 4)
    return resume_result(r, f, true);
  if (strcmp(f[0], "failed") == 0 && n == 3)
    return resume_failure(r, f);
  if (strcmp(f[0], "timing") == 0 && n == 2) {
    ts_tune_candidate *c = find(r, f[1]);
    if (c)
      c->suspect = true;
    return c != NULL;
  }
  if (strcmp(f[0], "cublas") == 0 && n == 2)
    return parse_result(r, f[1], NULL, &r->cublas);
  return false;
}

int tune_resume(const ts_gpu *gpu, const char *key, ts_tune_shape *r) {
  char *lines = ts_tune_journal_load(gpu, key, &r->def);
  for (char *p = lines, *nl; p && *p; p = nl + 1) {
    nl = strchr(p, '\n');
    if (!nl)
      break; /* a torn last line */
    *nl = 0;
    resume_line(r, p);
  }
  free(lines);
  int resumed = 0;
  for (int i = 0; i < r->n; i++)
    resumed += r->c[i].resumed;
  return resumed;
}

/* Appends one line, its newlines and tabs past the fields made spaces. */
static void append(const ts_gpu *gpu, const char *key, const ts_tune_shape *r,
                   char *line, int fields) {
  for (char *p = line; *p; p++)
    if (*p == '\n' || (*p == '\t' && --fields <= 0))
      *p = ' ';
  ts_tune_journal_add(gpu, key, &r->def, line);
}

void tune_journal_timing(const ts_gpu *gpu, const char *key,
                         const ts_tune_shape *r, const ts_tune_candidate *c) {
  char line[2048];
  snprintf(line, sizeof(line), "timing\t%s", c->text);
  append(gpu, key, r, line, 2);
}

void tune_journal_failure(const ts_gpu *gpu, const char *key,
                          const ts_tune_shape *r, const char *config,
                          const char *why) {
  char line[2048];
  snprintf(line, sizeof(line), "failed\t%.1000s\t%.900s", config, why);
  append(gpu, key, r, line, 3);
}

void tune_journal_note(const ts_gpu *gpu, const char *key,
                       const ts_tune_shape *r, const ts_tune_candidate *c, bool full) {
  const ts_bench_result *b = full ? &c->full : &c->quick;
  if (b->status != TS_OK || b->skipped) {
    tune_journal_failure(gpu, key, r, c->text, b->message);
    return;
  }
  char line[2048];
  snprintf(line, sizeof(line), "%s\t%.6f\t%.3e\t%s", full ? "full" : "timed",
           b->median_ms, b->max_rel_err, c->text);
  append(gpu, key, r, line, 4);
}

void tune_journal_cublas(const ts_gpu *gpu, const char *key,
                         const ts_tune_shape *r) {
  char line[64];
  snprintf(line, sizeof(line), "cublas\t%.6f", r->cublas.median_ms);
  append(gpu, key, r, line, 2);
}
