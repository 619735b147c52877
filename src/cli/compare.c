/*
 * tessel compare A.json B.json: two records of runs, row by row.  Rows
 * match by (name, shape, layout, types); each matched pair prints both
 * medians, the speedup of B over A (A's median / B's) and a 95% interval
 * for it from the repeat times, and says whether the change is beyond
 * noise.  cuBLAS's rows compare too: they show how much the machine
 * itself drifted between the runs.  Rows in one record only get a line.
 *
 * The interval is a percentile bootstrap: both sides' repeat times are
 * resampled with replacement, the ratio of the medians taken, 2000 times
 * with a fixed seed (so the output is reproducible).  Where a side has
 * fewer than 5 times (a tune record's first pass), the interval is the
 * whole range, A's min / B's max to A's max / B's min.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/random.h"
#include "options.h"
#include "record.h"

static const char *compare_help =
    "usage: tessel compare A.json B.json\n"
    "Compares two records of runs (bench or tune --json): for each row of\n"
    "the same schedule, shape, layout and types, A's and B's median ms, the\n"
    "speedup of B over A (A's median / B's: above 1, B is faster) and its\n"
    "95% interval from the repeat times (a bootstrap of the medians; the\n"
    "min..max range where a side has fewer than 5 repeats).  A change whose\n"
    "interval holds 1 is within noise.  cuBLAS's rows show the machine's own\n"
    "drift.  Rows in one record only get a line each; rows that failed, or\n"
    "whose results differ from cuBLAS's (not valid: their times are no\n"
    "speed), say so with the reason; a tune record's configurations\n"
    "compare where timed.  A warning says where\n"
    "the SM or memory clocks the runs ran at (their start and end) differ by\n"
    "more than 3%.\n"
    "Exit status: 0 compared, 1 a record unreadable, 2 a usage error.\n";

enum { RESAMPLES = 2000, MIN_BOOTSTRAP = 5 };

/* Clocks further apart than this (3%) move timings as much as many a
 * change does: compare says so. */
static const double CLOCK_TOLERANCE = 0.03;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *x, int n) {
  qsort(x, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* The median of n draws from x (into scratch). */
static double resampled_median(const double *x, int n, double *scratch,
                               uint64_t *rng) {
  for (int i = 0; i < n; i++)
    scratch[i] = x[ts_random_next(rng) % (uint64_t)n];
  return median_of(scratch, n);
}

/* The 95% interval of A's median / B's median; false when out of memory. */
static bool interval(const record_row *a, const record_row *b, double *lo,
                     double *hi) {
  if (a->ntimes < MIN_BOOTSTRAP || b->ntimes < MIN_BOOTSTRAP) {
    bool known = a->min_ms > 0 && b->min_ms > 0 && a->max_ms > 0 &&
                 b->max_ms > 0;
    *lo = known ? a->min_ms / b->max_ms : NAN;
    *hi = known ? a->max_ms / b->min_ms : NAN;
    return true;
  }
  double *ratios = malloc(sizeof(double) * RESAMPLES);
  double *scratch = malloc(sizeof(double) * (size_t)(a->ntimes + b->ntimes));
  if (!ratios || !scratch) {
    free(ratios);
    free(scratch);
    return false;
  }
  uint64_t rng = 1;
  for (int i = 0; i < RESAMPLES; i++)
    ratios[i] = resampled_median(a->times, a->ntimes, scratch, &rng) /
                resampled_median(b->times, b->ntimes, scratch, &rng);
  qsort(ratios, RESAMPLES, sizeof(double), cmp_double);
  *lo = ratios[RESAMPLES * 25 / 1000];
  *hi = ratios[RESAMPLES * 975 / 1000 - 1];
  free(ratios);
  free(scratch);
  return true;
}

static bool same_row(const record_row *a, const record_row *b) {
  return a->cublas == b->cublas && strcmp(a->name, b->name) == 0 &&
         strcmp(a->shape, b->shape) == 0 &&
         strcmp(a->layout, b->layout) == 0 && strcmp(a->types, b->types) == 0;
}

/* Whether the row takes part: a tune record's configurations only where
 * timed (most are pruned), every row of a bench record. */
static bool counts(const record_data *d, const record_row *r) {
  return r->timed || !d->space;
}

static const record_row *find_row(const record_data *d, const record_row *r) {
  for (int i = 0; i < d->nrows; i++)
    if (counts(d, &d->rows[i]) && same_row(&d->rows[i], r))
      return &d->rows[i];
  return NULL;
}

static void print_key(const record_row *r, int width) {
  printf("%-*s %-16s %-6s %-12s", width, r->name, r->shape, r->layout,
         r->types);
}

/* The name column's width: the longest name of a row printed (a pair's,
 * A's side), 24 at least. */
static int name_width(const record_data *a, const record_data *b) {
  int width = 24;
  for (int i = 0; i < a->nrows; i++) {
    const record_row *r = &a->rows[i];
    int len = (int)strlen(r->name);
    if (counts(a, r) && find_row(b, r) && len > width)
      width = len;
  }
  return width;
}

/* Geometric means of the speedups, schedules and cuBLAS apart. */
typedef struct {
  double log_sum[2];
  int count[2];
} means;

/* Why a row has no speed to compare: it failed, was skipped, or ran but
 * its result differs from cuBLAS's (its time is then no speed). */
static const char *not_valid(const record_row *r) {
  if (strcmp(r->state, "differs") == 0)
    return "differs from cuBLAS";
  if (strcmp(r->state, "skipped") == 0 || strcmp(r->state, "left out") == 0 ||
      strcmp(r->state, "pruned") == 0)
    return r->state;
  return "failed";
}

/* A pair where a side has no valid timing: what became of each, and why. */
static void print_not_valid(const record_row *a, const record_row *b) {
  if (!a->valid && !b->valid && strcmp(not_valid(a), not_valid(b)) == 0)
    printf(" %s in both\n", not_valid(a));
  else if (!a->valid && !b->valid)
    printf(" %s in A, %s in B\n", not_valid(a), not_valid(b));
  else
    printf(" %s in %s\n", not_valid(a->valid ? b : a), a->valid ? "B" : "A");
  for (int s = 0; s < 2; s++) {
    const record_row *r = s ? b : a;
    if (!r->valid && r->error[0])
      printf("    %s: %.300s\n", s ? "B" : "A", r->error);
  }
}

/* One matched pair; false when out of memory. */
static bool print_pair(const record_row *a, const record_row *b, int width,
                       means *m) {
  print_key(a, width);
  if (!a->valid || !b->valid) {
    print_not_valid(a, b);
    return true;
  }
  double speedup = a->median_ms / b->median_ms, lo, hi;
  if (!interval(a, b, &lo, &hi))
    return false;
  printf(" %10.4f %10.4f %7.3fx [%.3f, %.3f] %s\n", a->median_ms,
         b->median_ms, speedup, lo, hi,
         isnan(lo)  ? "no noise estimate (no min and max)"
         : lo > 1   ? "faster"
         : hi < 1   ? "slower"
                    : "within noise");
  m->log_sum[a->cublas] += log(speedup);
  m->count[a->cublas]++;
  return true;
}


/* The readings of one clock (SM or memory) in d, start then end. */
static void print_readings(const record_data *d, bool memory) {
  const record_clocks *c = &d->clocks;
  for (int i = 0; i < 2; i++)
    if (c->read[i])
      printf("%s%d", i && c->read[0] ? ".." : "",
             memory ? c->memory_mhz[i] : c->sm_mhz[i]);
}

static void print_header(const char *label, const char *path,
                         const record_data *d) {
  const json_t *tessel = json_object_get(d->root, "tessel");
  printf("# %s: %s: %s%s%s on %s, %s (tessel %s, %s)\n", label, path, d->kind,
         d->space ? " " : "", d->space ? d->space : "", d->gpu, d->date,
         json_string_value(json_object_get(tessel, "version")),
         json_string_value(json_object_get(tessel, "git")));
  if (d->clocks.read[0] || d->clocks.read[1]) {
    printf("#    clocks: SM ");
    print_readings(d, false);
    printf(" MHz, memory ");
    print_readings(d, true);
    printf(" MHz (start..end)\n");
  }
}

/* The lowest and highest reading of one clock in d; false: none. */
static bool clock_range(const record_data *d, bool memory, int *lo, int *hi) {
  bool any = false;
  for (int i = 0; i < 2; i++) {
    if (!d->clocks.read[i])
      continue;
    int v = memory ? d->clocks.memory_mhz[i] : d->clocks.sm_mhz[i];
    *lo = any && *lo < v ? *lo : v;
    *hi = any && *hi > v ? *hi : v;
    any = true;
  }
  return any;
}

/* A warning where the clocks the two runs ran at (start and end of each)
 * are more than CLOCK_TOLERANCE apart: then a speedup may be the clocks'.
 * Where a record has no reading, a note says the clocks went unchecked. */
static void check_clocks(const record_data *a, const record_data *b) {
  const record_data *side[2] = {a, b};
  for (int s = 0; s < 2; s++)
    if (!side[s]->clocks.read[0] && !side[s]->clocks.read[1]) {
      printf("# clocks not compared: %s has no reading of them (%s)\n",
             s ? "B" : "A", side[s]->clocks.unavailable
                                ? side[s]->clocks.unavailable
                                : "a record older than gpu.sensors");
      return;
    }
  for (int memory = 0; memory < 2; memory++) {
    int alo, ahi, blo, bhi;
    clock_range(a, memory, &alo, &ahi);
    clock_range(b, memory, &blo, &bhi);
    int lo = alo < blo ? alo : blo, hi = ahi > bhi ? ahi : bhi;
    if (lo <= 0 || (double)hi / lo - 1 <= CLOCK_TOLERANCE)
      continue;
    printf("# warning: the %s clocks differ by %.0f%% (A ran at ",
           memory ? "memory" : "SM", 100.0 * ((double)hi / lo - 1));
    print_readings(a, memory);
    printf(" MHz, B at ");
    print_readings(b, memory);
    printf(" MHz, start..end): the timings may differ by that alone\n");
  }
}

/* Rows of `from` that `other` lacks. */
static void print_only(const char *label, const record_data *from,
                       const record_data *other) {
  for (int i = 0; i < from->nrows; i++) {
    const record_row *r = &from->rows[i];
    if (counts(from, r) && !find_row(other, r))
      printf("# only in %s: %s %s %s %s\n", label, r->name, r->shape,
             r->layout, r->types);
  }
}

static int compare(const char *pa, const record_data *a, const char *pb,
                   const record_data *b) {
  print_header("A", pa, a);
  print_header("B", pb, b);
  check_clocks(a, b);
  int width = name_width(a, b);
  printf("%-*s %-16s %-6s %-12s %10s %10s %8s %16s %s\n", width, "schedule",
         "shape", "layout", "types", "A ms", "B ms", "speedup", "95% interval",
         "verdict");
  means m = {{0, 0}, {0, 0}};
  for (int i = 0; i < a->nrows; i++) {
    const record_row *r = &a->rows[i], *other;
    if (!counts(a, r) || !(other = find_row(b, r)))
      continue;
    if (!print_pair(r, other, width, &m)) {
      fprintf(stderr, "tessel: compare: out of memory\n");
      return EXIT_FAIL;
    }
  }
  print_only("A", a, b);
  print_only("B", b, a);
  if (m.count[0])
    printf("# geometric mean speedup of %d schedule row%s: %.3fx\n",
           m.count[0], m.count[0] == 1 ? "" : "s",
           exp(m.log_sum[0] / m.count[0]));
  if (m.count[1])
    printf("# geometric mean of %d cuBLAS row%s (the machine's drift): "
           "%.3fx\n", m.count[1], m.count[1] == 1 ? "" : "s",
           exp(m.log_sum[1] / m.count[1]));
  return 0;
}

int cli_compare(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(compare_help, stdout);
      return 0;
    }
  if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
    fprintf(stderr, "tessel: compare takes two records, A.json B.json (got "
            "%d argument%s; see tessel compare --help)\n", argc - 1,
            argc == 2 ? "" : "s");
    return EXIT_USAGE;
  }
  char err[512];
  record_data *a = record_read(argv[1], err, sizeof(err));
  if (!a) {
    fprintf(stderr, "tessel: compare: %s\n", err);
    return EXIT_FAIL;
  }
  record_data *b = record_read(argv[2], err, sizeof(err));
  if (!b) {
    fprintf(stderr, "tessel: compare: %s\n", err);
    record_data_free(a);
    return EXIT_FAIL;
  }
  int rc = compare(argv[1], a, argv[2], b);
  record_data_free(a);
  record_data_free(b);
  return rc;
}
