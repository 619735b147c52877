/*
 * tessel check: each schedule run on the CPU reference executor against a
 * plain C GEMM, in full or, where a full run would take too long or not
 * fit, sampled (src/exec/check_sample.c); each estimated first where it is
 * long.  With --all, every configuration of a space, each a row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const char *check_help =
    "usage: tessel check SCHEDULE... [--shape MxNxK]... [--layout L]\n"
    "                   [--alpha X] [--beta Y] [--dtype T] [--c-dtype T]\n"
    "                   [--seed N] [--arch sm_XX] [--tuned] [--blocks N]\n"
    "                   [--runtime[=N[,L]]]\n"
    "       tessel check SPACE... --all [--shape MxNxK]... [options]\n"
    "Runs each schedule on the CPU reference executor on random data and\n"
    "compares with a plain C GEMM; reports out-of-bounds accesses, races,\n"
    "divergent barriers and reads of unwritten memory.  --shape may\n"
    "repeat; default 37x53x29.  --tuned: spaces at their tuning records.\n"
    "A schedule that cannot run as asked (tensor cores without --dtype\n"
    "f16, bf16 or tf32) gets a row saying why, and the others run.\n"
    "  --runtime[=N[,L]]  M, N, K and the leading dimensions taken at\n"
    "             launch: one kernel for every shape, run and checked at the\n"
    "             --shape given (extents multiples of N, leading dimensions\n"
    "             of L, else of N; docs/launch.md)\n"
    "Where the whole run would take more than about 10 s or not fit in\n"
    "memory, or with --blocks N, check samples: the blocks that write C's\n"
    "four corners, a point on each edge and N random points inside\n"
    "(default 8) run with every check, on matrices never held whole, and\n"
    "the elements they write are compared; points are dropped, last\n"
    "first, to keep the run within about 45 s, and the result line says\n"
    "what was sampled.  A check first says its estimated time and memory\n"
    "where a full one passes 5 s or 1 GiB, and always where it samples;\n"
    "the time counts every thread of every block (those past C's edge\n"
    "too), every trip of every loop and each tensor-core instruction's\n"
    "multiply-adds.  A sample that would not fit in the memory\n"
    "available, or whose first block alone would pass 45 s (a block\n"
    "walking a very long K, or a persistent grid's looping over many\n"
    "tiles), is refused, saying why.\n"
    "--all: every configuration of each space (tessel tune --list, or\n"
    "FILE.c:SPACE) at each shape, as tune enumerates them, a row each;\n"
    "pruned ones say why and are counted, not failed; the whole set's\n"
    "estimated time is said first, each check samples where it would be\n"
    "long, and a line a space and shape counts those checked, pruned and\n"
    "failed.\n"
    "--arch sm_XX: a schedule whose kernels need a newer architecture\n"
    "(cp.async copies, tensor cores) fails, as compiling for it would.\n"
    CLI_ISOLATION_HELP
    "Exit status: 0 every check correct, 1 a mismatch, a fault or a\n"
    "schedule error, 2 a usage error.\n";

/* ---- check --------------------------------------------------------------------- */

/* A full check past this many seconds (estimated) samples instead. */
enum { SAMPLE_AFTER_S = 10, SAMPLE_BUDGET_S = 45, SAMPLE_POINTS = 8 };

static void print_duration(FILE *f, double seconds) {
  if (seconds < 120)
    fprintf(f, "%.0f s", seconds);
  else if (seconds < 7200)
    fprintf(f, "%.0f minutes", seconds / 60);
  else
    fprintf(f, "%.0f hours", seconds / 3600);
}

/* "about 12 s and 2.6 GiB of memory", "under 1 s and 6.7 MiB of memory" */
static void print_cost(FILE *f, double seconds, double bytes) {
  if (seconds < 1) {
    fputs("under 1 s", f);
  } else {
    fputs("about ", f);
    print_duration(f, seconds);
  }
  if (bytes >= 1073741824.0)
    fprintf(f, " and %.1f GiB of memory", bytes / 1073741824.0);
  else
    fprintf(f, " and %.1f MiB of memory", bytes / 1048576.0);
}

/* "s" after a count other than 1. */
static const char *plural(long long n) { return n == 1 ? "" : "s"; }

/* The reference executor runs every thread of every block, about
 * ts_check_rate() steps a second, and tracks every element: a full check
 * past about 5 s or 1 GiB says so first. */
static void announce_long_check(const cli_opts *o, const char *name,
                                const char *shape,
                                const ts_program *p, const ts_gemm *g) {
  double seconds = ts_check_seconds(p), bytes = ts_check_bytes(g);
  if (o->all || (seconds < 5 && bytes < 1073741824.0))
    return; /* --all said the whole set's first */
  fprintf(stderr, "tessel: checking %s at %s runs the whole kernel on the "
          "reference executor: ", name, shape);
  print_cost(stderr, seconds, bytes);
  fputs("\n", stderr);
  fflush(stderr);
}

/* Why a check samples and what the sample will cost, said before it
 * starts. */
static void announce_sample(const char *name, const char *shape,
                            const ts_program *p, const ts_gemm *g,
                            const char *why, const ts_sample *plan) {
  fprintf(stderr, "tessel: checking %s at %s samples blocks (%s; in full ",
          name, shape, why);
  print_cost(stderr, ts_check_seconds(p), ts_check_bytes(g));
  fprintf(stderr, "): %lld of %lld block%s, ", plan->blocks_run,
          plan->blocks_total, plural(plan->blocks_total));
  print_cost(stderr, plan->seconds, plan->bytes);
  fputs("\n", stderr);
  fflush(stderr);
}

/* A sampled check of one schedule's program at one shape, said first with
 * its estimate, refused where it cannot fit or stay within the budget;
 * the result's note in `note`. */
static ts_status check_sampled(const cli_opts *o, const char *name,
                               const char *shape, const ts_gemm *g,
                               const char *why, const ts_program *p,
                               char *msg, size_t msglen, char *note,
                               size_t notelen) {
  ts_sample smp = {.random = o->blocks ? o->blocks : SAMPLE_POINTS,
                   .budget_s = SAMPLE_BUDGET_S};
  ts_status st = ts_program_sample_plan(p, o->seed, &smp, msg, msglen);
  bool ran = st == TS_OK;
  if (!o->all && (ran || st == TS_ERR_NO_MEMORY || st == TS_ERR_TOO_SLOW))
    announce_sample(name, shape, p, g, why, &smp);
  if (ran)
    st = ts_program_check_sampled(p, o->seed, &smp, msg, msglen);
  if (!ran)
    return st; /* refused, or the program in error: nothing sampled */
  int n = snprintf(note, notelen, " (sampled: %lld of %lld block%s, %lld "
                   "element%s of C, %.1f MiB", smp.blocks_run,
                   smp.blocks_total, plural(smp.blocks_total), smp.elements,
                   plural(smp.elements), smp.bytes / 1048576.0);
  if (smp.points_run < smp.points_wanted && n > 0 && (size_t)n < notelen)
    n += snprintf(note + n, notelen - (size_t)n, "; %d of %d points, cut "
                  "to stay within %d s", smp.points_run, smp.points_wanted,
                  SAMPLE_BUDGET_S);
  if (n > 0 && (size_t)n < notelen)
    snprintf(note + n, notelen - (size_t)n, ")");
  return st;
}

/* --arch: a kernel that needs a newer architecture (cp.async, tensor
 * cores) is refused as ts_compile refuses it there; false with why. */
static bool runs_on_arch(const cli_opts *o, const ts_sched *s, char *msg,
                         size_t msglen) {
  if (!o->arch)
    return true;
  ts_program *p = ts_lower(s);
  bool ok = ts_program_status(p) == TS_OK;
  int need = ok ? ts_program_min_arch(p) : 0, have = atoi(o->arch + 3);
  bool specific = ok && ts_program_arch_specific(p);
  ts_program_free(p);
  if (specific && need != have) {
    snprintf(msg, msglen, "uses sm_%da's warpgroup instructions (wgmma), "
             "which only sm_%d has; --arch %s has not", need, need, o->arch);
    return false;
  }
  if (need <= have)
    return true;
  snprintf(msg, msglen, "needs sm_%d or newer (asynchronous copies or "
           "tensor-core instructions); --arch %s is older", need, o->arch);
  return false;
}

/* Why a check of p samples, or NULL for a full check: --blocks, the
 * matrices not fitting, or a full run estimated past SAMPLE_AFTER_S. */
static const char *why_sample(const cli_opts *o, const ts_program *p,
                              const ts_gemm *g, char *buf, size_t len) {
  if (o->blocks)
    return "--blocks";
  /* ts_check_fits's message advises a library caller to sample; the
   * command samples, and says why in its own words. */
  char scratch[1];
  if (ts_check_fits(g, scratch, sizeof(scratch)) != TS_OK) {
    snprintf(buf, len, "the matrices do not fit in the %.1f GiB of memory "
             "available", ts_memory_available() / 1073741824.0);
    return buf;
  }
  if (ts_check_seconds(p) > SAMPLE_AFTER_S) {
    snprintf(buf, len, "a full check would take more than %d s",
             SAMPLE_AFTER_S);
    return buf;
  }
  return NULL;
}

/* One schedule at one shape: a full check, or a sampled one where the
 * full one would be slow or not fit, or --blocks asks. */
static ts_status check_one(const cli_opts *o, const char *name,
                           const char *shape, const ts_gemm *g, ts_sched *s,
                           char *msg, size_t msglen, char *note,
                           size_t notelen) {
  note[0] = 0;
  if (!runs_on_arch(o, s, msg, msglen))
    return TS_ERR_BAD_ARCH;
  ts_program *p = ts_lower(s);
  char buf[96];
  const char *why = why_sample(o, p, g, buf, sizeof(buf));
  ts_status st;
  if (!why) {
    announce_long_check(o, name, shape, p, g);
    st = ts_program_check(p, o->seed, msg, msglen);
  } else {
    st = check_sampled(o, name, shape, g, why, p, msg, msglen, note,
                       notelen);
  }
  ts_program_free(p);
  return st;
}

/* One row of the table: the check of s at g (the name as the row gives
 * it), its result and, on failure, the message below it; the status. */
static ts_status check_row(const cli_opts *o, int width, const char *name,
                           const ts_gemm *g, ts_sched *s) {
  /* The schedule's error whole (lowering puts a few words before it), or
   * room for a check's own message. */
  size_t msglen = strlen(ts_sched_errmsg(s)) + 1024;
  char *msg = malloc(msglen), shape[64], note[256];
  if (!msg) {
    printf("%-*s FAIL: out of memory\n", width, name);
    return TS_ERR_NO_MEMORY;
  }
  snprintf(shape, sizeof(shape), "%lldx%lldx%lld", (long long)g->m,
           (long long)g->n, (long long)g->k);
  ts_status st = check_one(o, name, shape, g, s, msg, msglen, note,
                           sizeof(note));
  /* runs_on_arch's refusal is about --arch, not NVRTC */
  const char *what = st == TS_OK            ? ""
                     : st == TS_ERR_BAD_ARCH ? "needs a newer --arch"
                                             : ts_strerror(st);
  printf("%-*s %-16s %-6s %s%s%s%s\n", width, name, shape,
         ts_layout_name(g->layout), st == TS_OK ? "ok" : "FAIL: ", what,
         st != TS_OK && note[0] ? ": " : "", note);
  if (st != TS_OK)
    printf("    %s\n", msg);
  free(msg);
  return st;
}

/* A row that says why the schedule does not run at g. */
static void print_reason_row(int width, const char *name, const ts_gemm *g,
                             const char *what, const char *why) {
  char shape[64];
  snprintf(shape, sizeof(shape), "%lldx%lldx%lld", (long long)g->m,
           (long long)g->n, (long long)g->k);
  printf("%-*s %-16s %-6s %s%s\n", width, name, shape,
         ts_layout_name(g->layout), what, why);
}

/* ---- --all: every configuration of a space ------------------------------ */

/* A space's configurations at one shape, each named as a row gives it
 * (SPACE:knob=v,...). */
typedef struct {
  const ts_space *sp;
  const char *name; /* the space as the command line named it */
  const ts_gemm *g;
  ts_config **configs;
  char **rows;
  int n;            /* configurations; -1 when there were too many */
  const char *cannot; /* cli_cannot_run's reason, or NULL */
} space_set;

static void free_set(space_set *set) {
  for (int i = 0; set->rows && i < set->n; i++)
    free(set->rows[i]);
  free(set->rows);
  if (set->n > 0)
    ts_space_free_configs(set->configs, set->n);
}

/* The set's configurations enumerated and named; false when out of
 * memory. */
static bool enumerate_set(space_set *set) {
  set->n = ts_space_enumerate(set->sp, set->g, 0, &set->configs);
  if (set->n <= 0)
    return true; /* none, or too many: check_set's row says so */
  set->rows = calloc((size_t)set->n, sizeof(*set->rows));
  for (int i = 0; set->rows && i < set->n; i++) {
    char *knobs = ts_config_text(set->configs[i]);
    size_t len = strlen(set->name) + (knobs ? strlen(knobs) : 0) + 2;
    set->rows[i] = knobs ? malloc(len) : NULL;
    if (set->rows[i])
      snprintf(set->rows[i], len, "%s:%s", set->name, knobs);
    free(knobs);
    if (!set->rows[i])
      return false;
  }
  return set->rows != NULL;
}

/* The estimated seconds and memory of checking configuration i as
 * check_one would (in full, or the sample it would run). */
static double config_cost(const cli_opts *o, const space_set *set, int i,
                          double *bytes) {
  ts_sched *s = ts_space_schedule(set->sp, set->g, set->configs[i]);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  char buf[96];
  const char *why = why_sample(o, p, set->g, buf, sizeof(buf));
  double seconds = 0;
  *bytes = 0;
  if (ts_program_status(p) == TS_OK && !why) {
    seconds = ts_check_seconds(p);
    *bytes = ts_check_bytes(set->g);
  } else if (ts_program_status(p) == TS_OK) {
    ts_sample smp = {.random = o->blocks ? o->blocks : SAMPLE_POINTS,
                     .budget_s = SAMPLE_BUDGET_S};
    char msg[1024];
    ts_status st = ts_program_sample_plan(p, o->seed, &smp, msg, sizeof(msg));
    seconds = st == TS_OK ? smp.seconds : 0; /* refused: nothing runs */
    *bytes = smp.bytes;
  }
  ts_program_free(p);
  return seconds;
}

/* The whole set's time (and the most memory one check holds), said
 * before any runs. */
static void announce_sets(const cli_opts *o, const space_set *sets,
                          int nsets) {
  double seconds = 0, bytes = 0;
  int checks = 0, pruned = 0;
  for (int k = 0; k < nsets; k++)
    for (int i = 0; !sets[k].cannot && i < sets[k].n; i++) {
      if (ts_config_pruned(sets[k].configs[i])) {
        pruned++;
        continue;
      }
      double b;
      seconds += config_cost(o, &sets[k], i, &b);
      bytes = b > bytes ? b : bytes;
      checks++;
    }
  fputs("tessel: checking every configuration of ", stderr);
  for (int i = 0; i < o->nnames; i++)
    fprintf(stderr, "%s%s", i ? ", " : "", o->names[i]);
  fputs(" at ", stderr);
  for (int j = 0; j < o->nshapes; j++)
    fprintf(stderr, "%s%lldx%lldx%lld", j ? ", " : "",
            (long long)o->shapes[j].m, (long long)o->shapes[j].n,
            (long long)o->shapes[j].k);
  fprintf(stderr, " runs %d check%s on the reference executor (%d "
          "configuration%s pruned, not run; each check sampled where it "
          "would be long): ", checks, plural(checks), pruned,
          plural(pruned));
  print_cost(stderr, seconds, bytes);
  fputs(" at most at once\n", stderr);
  fflush(stderr);
}

/* The set's rows; its counts of checked, pruned and failed into c. */
static void check_set(const cli_opts *o, int width, const space_set *set,
                      int c[3]) {
  if (set->cannot || set->n < 0) {
    print_reason_row(width, set->name, set->g, "FAIL: ", set->cannot
        ? set->cannot
        : "more than 100000 configurations (or memory ran out)");
    c[2]++;
    return;
  }
  for (int i = 0; i < set->n; i++) {
    const char *why = ts_config_pruned(set->configs[i]);
    if (why) {
      print_reason_row(width, set->rows[i], set->g, "pruned: ", why);
      c[1]++;
      continue;
    }
    ts_sched *s = ts_space_schedule(set->sp, set->g, set->configs[i]);
    c[0]++;
    c[2] += check_row(o, width, set->rows[i], set->g, s) != TS_OK;
    ts_sched_free(s);
  }
}

/* Every name a space as such (not a schedule or a configuration); false
 * with a message. */
static bool all_spaces(const cli_opts *o) {
  for (int i = 0; i < o->nnames; i++) {
    const ts_space *sp = cli_space(o->names[i]);
    if (!sp || strcmp(o->names[i], cli_space_name(sp)) != 0) {
      fprintf(stderr, "tessel: check --all checks every configuration of a "
              "space; '%s' is %s (tessel tune --list shows the spaces; "
              "FILE.c:SPACE names a file's)\n", o->names[i],
              sp ? "a configuration" : "a schedule");
      return false;
    }
  }
  return true;
}

/* tessel check SPACE... --all: each space's configurations at each
 * shape, a row each (pruned ones say why and are counted apart), the
 * whole set's time said first, a line of counts for each space and
 * shape last. */
static int check_all(const cli_opts *o) {
  if (!all_spaces(o))
    return EXIT_USAGE;
  int nsets = o->nnames * o->nshapes, width = 16;
  space_set *sets = calloc((size_t)nsets, sizeof(*sets));
  bool ok = sets != NULL;
  for (int k = 0; ok && k < nsets; k++) {
    space_set *set = &sets[k];
    set->name = o->names[k / o->nshapes];
    set->sp = cli_space(set->name);
    set->g = &o->shapes[k % o->nshapes];
    set->cannot = cli_cannot_run(o, set->name);
    ok = set->cannot || enumerate_set(set);
    for (int i = 0; ok && i < set->n; i++)
      width = (int)strlen(set->rows[i]) > width ? (int)strlen(set->rows[i])
                                                : width;
  }
  int rc = ok ? 0 : EXIT_FAIL;
  if (!ok)
    fprintf(stderr, "tessel: out of memory enumerating the spaces\n");
  if (ok) {
    announce_sets(o, sets, nsets);
    printf("%-*s %-16s %-6s %s\n", width, "configuration", "shape",
           "layout", "result");
  }
  int (*counts)[3] = ok ? calloc((size_t)nsets, sizeof(*counts)) : NULL;
  for (int k = 0; counts && k < nsets; k++)
    check_set(o, width, &sets[k], counts[k]);
  for (int k = 0; counts && k < nsets; k++) {
    printf("%s at %lldx%lldx%lld: %d checked, %d pruned, %d failed\n",
           sets[k].name, (long long)sets[k].g->m, (long long)sets[k].g->n,
           (long long)sets[k].g->k, counts[k][0], counts[k][1],
           counts[k][2]);
    rc = counts[k][2] ? EXIT_FAIL : rc;
  }
  if (ok && !counts) {
    fprintf(stderr, "tessel: out of memory\n");
    rc = EXIT_FAIL;
  }
  free(counts);
  for (int k = 0; sets && k < nsets; k++)
    free_set(&sets[k]);
  free(sets);
  return rc;
}

int cli_check(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(argc, argv, check_help, CLI_CHECK, &o);
  if (rc >= 0)
    return rc;
  cli_finish_shapes(&o, 37, 53, 29);
  if (o.all)
    return check_all(&o);
  ts_gpu *gpu = cli_gpu_for_records(&o);
  rc = 0;
  int width = 16; /* the schedule column: as wide as the longest name */
  for (int i = 0; i < o.nnames; i++)
    width = (int)strlen(o.names[i]) > width ? (int)strlen(o.names[i]) : width;
  printf("%-*s %-16s %-6s %s\n", width, "schedule", "shape", "layout",
         "result");
  for (int i = 0; i < o.nnames; i++) {
    const char *cannot = cli_cannot_run(&o, o.names[i]);
    for (int j = 0; j < o.nshapes; j++) {
      const ts_gemm *g = &o.shapes[j];
      if (cannot) { /* its row says why; the others run */
        print_reason_row(width, o.names[i], g, "FAIL: ", cannot);
        rc = EXIT_FAIL;
        continue;
      }
      ts_sched *s = cli_schedule(&o, o.names[i], g, gpu);
      if (check_row(&o, width, o.names[i], g, s) != TS_OK)
        rc = EXIT_FAIL;
      ts_sched_free(s);
    }
  }
  ts_gpu_close(gpu);
  return rc;
}
