/*
 * The journal of a tuning run: each configuration's first-pass result is
 * appended as soon as it is timed (runtime/tune_record.c keeps the file
 * beside the tuning records), and a later run of the same space and
 * definition on the same GPU takes those results instead of timing them
 * again, so an interrupted run resumes where it stopped.  Lines:
 *
 *   timed <TAB> median ms <TAB> max relative error <TAB> configuration
 *   failed <TAB> configuration <TAB> why
 *
 * A line that does not parse (the torn last line of a killed run) or names
 * a configuration the space no longer has is ignored.
 */
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static candidate *find(shape_run *r, const char *text, size_t len) {
  for (int i = 0; i < r->n; i++)
    if (r->c[i].text && strlen(r->c[i].text) == len &&
        strncmp(r->c[i].text, text, len) == 0 &&
        !ts_config_pruned(r->c[i].config))
      return &r->c[i];
  return NULL;
}

static double tflops_at(const ts_gemm *g, double ms) {
  return 2.0 * (double)g->m * (double)g->n * (double)g->k / (ms * 1e-3) / 1e12;
}

/* One line of the journal applied to its candidate; false when it does
 * not parse or names no candidate. */
static bool resume_line(shape_run *r, char *line) {
  char *f[4] = {line};
  int n = 1;
  for (char *p = line; *p && n < 4; p++)
    if (*p == '\t') {
      *p = 0;
      f[n++] = p + 1;
    }
  bool timed = strcmp(f[0], "timed") == 0 && n == 4;
  bool failed = strcmp(f[0], "failed") == 0 && n == 3;
  const char *text = timed ? f[3] : f[1];
  candidate *c = timed || failed ? find(r, text, strlen(text)) : NULL;
  if (!c)
    return false;
  char *end;
  c->quick = (ts_bench_result){.status = timed ? TS_OK : TS_ERR_CUDA};
  if (timed) {
    c->quick.median_ms = strtod(f[1], &end);
    c->quick.max_rel_err = strtod(f[2], NULL);
    if (*end || !(c->quick.median_ms > 0))
      return false;
    c->quick.tflops = tflops_at(&r->def, c->quick.median_ms);
  } else {
    snprintf(c->quick.message, sizeof(c->quick.message), "%s", f[2]);
  }
  c->has_quick = c->resumed = true;
  return true;
}

int tune_resume(const ts_gpu *gpu, const ts_space *sp, shape_run *r) {
  char *lines = ts_tune_journal_load(gpu, sp->name, &r->def);
  int resumed = 0;
  for (char *p = lines, *nl; p && *p; p = nl ? nl + 1 : p + strlen(p)) {
    nl = strchr(p, '\n');
    if (!nl)
      break; /* a torn last line */
    *nl = 0;
    resumed += resume_line(r, p);
  }
  free(lines);
  return resumed;
}

void tune_journal_note(const ts_gpu *gpu, const ts_space *sp,
                       const shape_run *r, const candidate *c) {
  char line[2048];
  const ts_bench_result *b = &c->quick;
  if (b->status == TS_OK && !b->skipped)
    snprintf(line, sizeof(line), "timed\t%.6f\t%.3e\t%s", b->median_ms,
             b->max_rel_err, c->text);
  else
    snprintf(line, sizeof(line), "failed\t%s\t%.900s", c->text, b->message);
  for (char *p = line; *p; p++)
    if (*p == '\n')
      *p = ' ';
  ts_tune_journal_add(gpu, sp->name, &r->def, line);
}
