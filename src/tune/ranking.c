/*
 * Ranking a shape's candidates: a candidate's result (the full count's
 * where it has one, else the first pass's), whether it was timed and ran
 * right, the order (those that ran right fastest first, then those whose
 * C differs from cuBLAS's, so that a wrong kernel is never the best), and
 * why one failed (a compile error, a launch's, or a C that differs).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tune_impl.h"

const ts_bench_result *ts_tune_result(const ts_tune_candidate *c) {
  return c->has_full ? &c->full : &c->quick;
}

bool ts_tune_timed(const ts_tune_candidate *c) {
  return (c->has_quick || c->has_full) && ts_tune_result(c)->status == TS_OK &&
         !ts_tune_result(c)->skipped;
}

bool ts_tune_correct(const ts_tune_shape *r, const ts_tune_candidate *c) {
  return ts_tune_timed(c) &&
         ts_tune_result(c)->max_rel_err < ts_gemm_tolerance(&r->def);
}

/* 2 timed and right, 1 timed but differing from cuBLAS, 0 not timed. */
static int standing(const ts_tune_shape *r, const ts_tune_candidate *c) {
  return ts_tune_correct(r, c) ? 2 : ts_tune_timed(c) ? 1 : 0;
}

static const ts_tune_shape *sort_run;
static int by_time(const void *a, const void *b) {
  const ts_tune_candidate *x = &sort_run->c[*(const int *)a];
  const ts_tune_candidate *y = &sort_run->c[*(const int *)b];
  int sx = standing(sort_run, x), sy = standing(sort_run, y);
  if (sx != sy)
    return sx > sy ? -1 : 1;
  if (!sx)
    return 0;
  double tx = ts_tune_result(x)->median_ms, ty = ts_tune_result(y)->median_ms;
  return tx < ty ? -1 : tx > ty;
}

int *ts_tune_ranking(const ts_tune_shape *r) {
  int *order = malloc(sizeof(*order) * (size_t)(r->n ? r->n : 1));
  if (!order)
    return NULL;
  for (int i = 0; i < r->n; i++)
    order[i] = i;
  sort_run = r;
  qsort(order, (size_t)r->n, sizeof(*order), by_time);
  return order;
}

const char *ts_tune_failure(const ts_tune_shape *r, const ts_tune_candidate *c,
                            char *text, size_t len) {
  if (c->kernel && ts_kernel_status(c->kernel) != TS_OK)
    return ts_kernel_errmsg(c->kernel);
  if (!c->has_quick && !c->has_full)
    return NULL;
  if (ts_tune_result(c)->status != TS_OK)
    return ts_tune_result(c)->message;
  if (!(ts_tune_result(c)->max_rel_err < ts_gemm_tolerance(&r->def))) {
    snprintf(text, len, "differs from cuBLAS (max relative error %.2e, over "
             "%.2e)", ts_tune_result(c)->max_rel_err, ts_gemm_tolerance(&r->def));
    return text;
  }
  return NULL;
}

int tune_count_failures(const ts_tune_shape *r) {
  int failed = 0;
  for (int i = 0; i < r->n; i++) {
    char text[160];
    failed += ts_tune_failure(r, &r->c[i], text, sizeof(text)) != NULL;
  }
  return failed;
}
