/*
 * The schedule fuzzer on every test run: TS_FUZZ_CASES cases (default
 * 10000) from TS_FUZZ_SEED (default fixed, so that a run is reproducible;
 * set it to explore), in shards the suite runs in parallel (main's
 * arguments).  A failing case prints its seed and itself as a C
 * program; TS_FUZZ_SEED=<case seed> TS_FUZZ_CASES=1 runs that case alone.
 * The run ends with what the cases met and the CPU time they took.
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fuzz/gen.h"
#include "helpers.h"
#include "base/random.h"

/* The element types, TS_F32 to TS_BF16. */
enum { NTYPES = TS_BF16 + 1 };

static uint64_t current_seed;

/* A crash names the case and prints it: the report a failure would give. */
static void print_crashed_case(void) {
  char head[96];
  int n = snprintf(head, sizeof(head), "\nfuzz case 0x%016llx crashed; the "
                   "case as C:\n", (unsigned long long)current_seed);
  const char *prog = fz_current_program();
  if (write(2, head, (size_t)n) < 0 || write(2, prog, strlen(prog)) < 0)
    return;
}

static void on_crash(int sig) {
  print_crashed_case();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* With ASan, its report ends the process through this callback. */
void __sanitizer_set_death_callback(void (*callback)(void))
    __attribute__((weak));

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 0) : fallback;
}

/* Case i's seed: the base itself for the first case, so that a reported
 * seed replays with TS_FUZZ_CASES=1. */
static uint64_t case_seed(uint64_t base, uint64_t i) {
  uint64_t state = base + i;
  return i == 0 ? base : ts_random_next(&state);
}

/* What a run met: outcomes, of all cases and of those that drew knobs,
 * the schedules' statuses, and the time each kind of case took. */
typedef struct tally {
  long counts[FZ_OUTCOMES], knob_counts[FZ_OUTCOMES];
  long tensorized[FZ_OUTCOMES]; /* of the cases whose schedule calls ts_tensorize */
  long tma[FZ_OUTCOMES], warpspec[FZ_OUTCOMES], in_flight[FZ_OUTCOMES]; /* ts_tma, ts_warp_specialize,
                                             ts_wgmma_in_flight */
  long persistent[FZ_OUTCOMES], persistent_ws[FZ_OUTCOMES]; /* ts_persistent, and with a
                                           producer warpgroup */
  long tma_store[FZ_OUTCOMES]; /* C stored through shared memory by the TMA */
  long ring[FZ_OUTCOMES];      /* ... in a persistent grid: a ring of panels */
  long cluster[FZ_OUTCOMES];   /* 2-block clusters multicasting (ts_cluster) */
  long pingpong[FZ_OUTCOMES];  /* ping-pong consumers (ts_pingpong) */
  long runtime[FZ_OUTCOMES];   /* extents taken at launch (ts_gemm.runtime) */
  long stmatrix[FZ_OUTCOMES];  /* ... of a 16-bit C: written by stmatrix */
  long store_refused; /* refused at lowering for C's shared stage */
  long transposed[FZ_OUTCOMES], transposed_tf32[FZ_OUTCOMES]; /* wgmma on C's transpose, and
                                           * in tf32 (B in registers where
                                           * it lies n-major) */
  /* TMA and warp-specialized cases checked correct, by layout and A's
   * type */
  long tma_checked[4][NTYPES], ws_checked[4][NTYPES];
  long statuses[TS_STATUS_COUNT];
  double seconds[3]; /* primitive cases, knob cases, Hopper cases */
  long hopper;        /* Hopper cases */
  double slowest;
  uint64_t slowest_seed;
} tally;

/* The process's CPU time: a case's cost whatever else the machine runs. */
static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void count_case(tally *t, const fz_result *r, double seconds) {
  t->counts[r->outcome]++;
  t->knob_counts[r->outcome] += r->knobs;
  t->tensorized[r->outcome] += r->tensorized;
  t->tma[r->outcome] += r->tma;
  t->runtime[r->outcome] += r->runtime;
  t->warpspec[r->outcome] += r->warpspec;
  t->in_flight[r->outcome] += r->in_flight;
  t->persistent[r->outcome] += r->persistent;
  t->persistent_ws[r->outcome] += r->persistent && r->warpspec;
  t->tma_store[r->outcome] += r->tma_store;
  t->ring[r->outcome] += r->tma_store && r->persistent;
  t->cluster[r->outcome] += r->cluster;
  t->pingpong[r->outcome] += r->pingpong;
  t->stmatrix[r->outcome] += r->tma_store && r->c_type != TS_F32;
  t->store_refused += r->store_refused;
  t->transposed[r->outcome] += r->transposed;
  t->transposed_tf32[r->outcome] += r->transposed && r->a_type == TS_F32;
  if (r->outcome == FZ_PASS_CHECKED && r->layout >= 0 && r->layout < 4 &&
      r->a_type >= 0 && r->a_type < NTYPES) {
    t->tma_checked[r->layout][r->a_type] += r->tma;
    t->ws_checked[r->layout][r->a_type] += r->warpspec;
  }
  if (r->status >= 0 && r->status < TS_STATUS_COUNT)
    t->statuses[r->status]++;
  t->seconds[r->hopper ? 2 : r->knobs] += seconds;
  t->hopper += r->hopper;
  if (seconds > t->slowest) {
    t->slowest = seconds;
    t->slowest_seed = current_seed;
  }
}

/* The outcomes of the cases whose schedules make a call, where the
 * schedule was accepted. */
static void print_calls(const long n[FZ_OUTCOMES], const char *what) {
  printf("  of which %ld %s: %ld refused at lowering, %ld checked correct, "
         "%ld failed\n", n[FZ_PASS_REFUSED] + n[FZ_PASS_CHECKED] + n[FZ_FAIL],
         what, n[FZ_PASS_REFUSED], n[FZ_PASS_CHECKED], n[FZ_FAIL]);
}

/* TMA and warp-specialized cases checked correct in each layout and
 * type (f32: tf32, its operands packed). */
static void print_hopper_coverage(const tally *t) {
  printf("  TMA / warp-specialized cases checked correct:");
  for (int l = 0; l < 4; l++)
    for (int d = TS_F32; d <= TS_BF16; d++)
      printf(" %s %s %ld/%ld", ts_layout_name((ts_layout)l),
             ts_dtype_name((ts_dtype)d), t->tma_checked[l][d],
             t->ws_checked[l][d]);
  printf("\n");
}

static long sum(const long n[FZ_OUTCOMES]) {
  long all = 0;
  for (int o = 0; o < FZ_OUTCOMES; o++)
    all += n[o];
  return all;
}

/* Which of the cases a run takes: all, those that draw no knobs, or a
 * shard of those that do (nearly all of the time a run takes). */
typedef enum { RUN_ALL, RUN_OTHERS, RUN_KNOBS } run_kind;

typedef struct run {
  run_kind kind;
  uint64_t base, cases;   /* the seed and the cases of all runs */
  uint64_t shard, shards; /* RUN_KNOBS: knob case i where i % shards == shard */
} run;

static const char *const kind_names[] = {
    "every case", "the cases without knobs", "knob cases"};

static bool in_run(const run *r, fz_source src, uint64_t i) {
  if (r->kind == RUN_ALL)
    return true;
  bool knobs = fz_draws_knobs(src);
  return r->kind == RUN_OTHERS ? !knobs : knobs && i % r->shards == r->shard;
}

static void print_tally(const tally *t, const run *r) {
  const long *c = t->counts, *k = t->knob_counts;
  printf("fuzz: seed 0x%llx, %s (shard %llu of %llu): %ld cases of %llu: "
         "%ld refused by a primitive, %ld refused at lowering, %ld checked "
         "correct, %ld failed\n",
         (unsigned long long)r->base, kind_names[r->kind],
         (unsigned long long)r->shard + 1, (unsigned long long)r->shards,
         sum(c), (unsigned long long)r->cases,
         c[FZ_PASS_ERROR], c[FZ_PASS_REFUSED], c[FZ_PASS_CHECKED], c[FZ_FAIL]);
  printf("  of which %ld drew a space's knobs: %ld refused (pruned or "
         "unparsable), %ld refused at lowering, %ld checked correct, %ld "
         "failed\n", sum(k), k[FZ_PASS_ERROR], k[FZ_PASS_REFUSED],
         k[FZ_PASS_CHECKED], k[FZ_FAIL]);
  print_calls(t->tensorized, "tensorized (mma.sync, wgmma)");
  print_calls(t->tma, "filled caches by the TMA (ts_tma)");
  print_calls(t->warpspec, "warp-specialized (ts_warp_specialize)");
  print_calls(t->in_flight, "left wgmma in flight (ts_wgmma_in_flight)");
  print_calls(t->persistent, "made the grid persistent (ts_persistent)");
  print_calls(t->persistent_ws, "made a warp-specialized grid persistent");
  print_calls(t->tma_store, "stored C's tile by the TMA (ts_cache_write(C, "
              "TS_SHARED))");
  printf("    of which %ld refused at lowering for C's shared stage\n",
         t->store_refused);
  print_calls(t->ring, "did so in a persistent grid (a ring of panels)");
  print_calls(t->stmatrix, "did so with a 16-bit C (stmatrix)");
  print_calls(t->cluster, "multicast in 2-block clusters (ts_cluster)");
  print_calls(t->pingpong, "had ping-pong consumers (ts_pingpong)");
  print_calls(t->transposed, "tensorized C's transpose (wgmma's a from B)");
  print_calls(t->transposed_tf32, "did so in tf32");
  print_calls(t->runtime, "took the extents at launch (checked at a second "
              "shape too)");
  print_hopper_coverage(t);
  long all = sum(c), knobs = sum(k);
  printf("  CPU time: %.2f ms a case, %.2f ms a knob case, %.2f ms a Hopper "
         "case (%ld); slowest %.0f ms (0x%016llx)\n",
         1e3 * (t->seconds[0] + t->seconds[1] + t->seconds[2]) /
         (double)(all ? all : 1), 1e3 * t->seconds[1] /
         (double)(knobs ? knobs : 1), 1e3 * t->seconds[2] /
         (double)(t->hopper ? t->hopper : 1), t->hopper, 1e3 * t->slowest,
         (unsigned long long)t->slowest_seed);
  for (int st = 0; st < TS_STATUS_COUNT; st++)
    if (t->statuses[st])
      printf("  %6ld  %s\n", t->statuses[st], ts_strerror((ts_status)st));
}

/* A run of the default size checks correct some cases of tensor cores, of
 * the TMA and of a producer warpgroup in every layout and 16-bit type,
 * and in tf32 (packed operands, one Hopper case in ten), and some with
 * wgmma in flight or a persistent grid (a warp-specialized one among
 * them) or on C's transpose (in tf32 among them) or C stored by the TMA
 * (in a persistent grid's ring, and of a 16-bit C by stmatrix, among them)
 * or clusters multicasting a tile, or ping-pong consumers;
 * and meets the TMA refused at lowering (rows not 16-byte aligned, a
 * breakage of a Hopper case), C's store among them. */
static void assert_hopper_coverage(const tally *t) {
  assert_true(t->tensorized[FZ_PASS_CHECKED] > 0);
  assert_true(t->in_flight[FZ_PASS_CHECKED] > 0);
  assert_true(t->persistent[FZ_PASS_CHECKED] > 0);
  assert_true(t->persistent_ws[FZ_PASS_CHECKED] > 0);
  assert_true(t->tma_store[FZ_PASS_CHECKED] > 0);
  assert_true(t->ring[FZ_PASS_CHECKED] > 0);
  assert_true(t->stmatrix[FZ_PASS_CHECKED] > 0);
  assert_true(t->cluster[FZ_PASS_CHECKED] > 0);
  assert_true(t->pingpong[FZ_PASS_CHECKED] > 0);
  assert_true(t->store_refused > 0);
  assert_true(t->transposed[FZ_PASS_CHECKED] > 0);
  assert_true(t->transposed_tf32[FZ_PASS_CHECKED] > 0);
  assert_true(t->tma[FZ_PASS_REFUSED] > 0);
  long tf32_tma = 0, tf32_ws = 0;
  for (int l = 0; l < 4; l++) {
    tf32_tma += t->tma_checked[l][TS_F32];
    tf32_ws += t->ws_checked[l][TS_F32];
  }
  if (tf32_tma == 0 || tf32_ws == 0)
    fail_msg("no tf32 case filled by the TMA (%ld) or warp-specialized "
             "(%ld) checked correct", tf32_tma, tf32_ws);
  for (int l = 0; l < 4; l++)
    for (int d = TS_F16; d <= TS_BF16; d++)
      if (t->tma_checked[l][d] == 0 || t->ws_checked[l][d] == 0)
        fail_msg("no TMA or no warp-specialized case checked correct in "
                 "layout %s, %s", ts_layout_name((ts_layout)l),
                 ts_dtype_name((ts_dtype)d));
}

static run the_run;

static void test_fuzz_schedules(void **state) {
  (void)state;
  const run *r = &the_run;
  tally t = {0};
  int failures = 0;
  signal(SIGSEGV, on_crash);
  signal(SIGABRT, on_crash);
  signal(SIGFPE, on_crash);
  if (__sanitizer_set_death_callback)
    __sanitizer_set_death_callback(print_crashed_case);
  for (uint64_t i = 0; i < r->cases && failures < 3; i++) {
    current_seed = case_seed(r->base, i);
    fz_source src = {.rng = current_seed};
    if (!in_run(r, src, i))
      continue;
    double start = cpu_seconds();
    fz_result res = fz_run_case(&src, current_seed);
    count_case(&t, &res, cpu_seconds() - start);
    if (res.outcome == FZ_FAIL) {
      fprintf(stderr, "%s\n", res.report ? res.report : "(no report: out of memory)");
      failures++;
    }
    free(res.report);
  }
  print_tally(&t, r);
  assert_int_equal(failures, 0);
  if (r->cases < 10000)
    return;
  /* The Hopper cases' warpgroup schedules: a run of the default size
   * checks some of each Hopper primitive without the knob cases; each
   * shard of the knob cases checks some of its cases on the executor. */
  if (r->kind != RUN_KNOBS)
    assert_hopper_coverage(&t);
  if (r->kind != RUN_OTHERS && t.knob_counts[FZ_PASS_CHECKED] == 0)
    fail_msg("no knob case checked correct");
  if (t.runtime[FZ_PASS_CHECKED] == 0)
    fail_msg("no case taking its extents at launch checked correct at two "
             "shapes");
}

static uint64_t arg_u64(const char *arg, const char *what) {
  char *end;
  unsigned long long v = strtoull(arg, &end, 0);
  if (!*arg || *end || v == 0) {
    fprintf(stderr, "test_fuzz: %s must be a positive number (got '%s')\n",
            what, arg);
    exit(2);
  }
  return v;
}

/* test_fuzz [others | knobs SHARD SHARDS]: every case, the cases that draw
 * no knobs, or shard SHARD (1 to SHARDS) of the knob cases; the suite runs
 * them as tests of their own, in parallel. */
int main(int argc, char **argv) {
  run *r = &the_run;
  *r = (run){.kind = RUN_ALL, .base = env_u64("TS_FUZZ_SEED", 0x7e55e1f022ull),
             .cases = env_u64("TS_FUZZ_CASES", 10000), .shard = 0,
             .shards = 1};
  if (argc == 2 && strcmp(argv[1], "others") == 0) {
    r->kind = RUN_OTHERS;
  } else if (argc == 4 && strcmp(argv[1], "knobs") == 0) {
    r->kind = RUN_KNOBS;
    r->shards = arg_u64(argv[3], "SHARDS");
    r->shard = arg_u64(argv[2], "SHARD") - 1;
    if (r->shard >= r->shards) {
      fprintf(stderr, "test_fuzz: SHARD must be 1 to %llu (got %s)\n",
              (unsigned long long)r->shards, argv[2]);
      return 2;
    }
  } else if (argc != 1) {
    fprintf(stderr, "usage: test_fuzz [others | knobs SHARD SHARDS]\n");
    return 2;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuzz_schedules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
