/*
 * The schedule fuzzer on every test run: TS_FUZZ_CASES cases (default
 * 10000) from TS_FUZZ_SEED (default fixed, so that a run is reproducible;
 * set it to explore).  A failing case prints its seed and itself as a C
 * program; TS_FUZZ_SEED=<case seed> TS_FUZZ_CASES=1 runs that case alone.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz/gen.h"
#include "helpers.h"
#include "random.h"

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

static void test_fuzz_schedules(void **state) {
  (void)state;
  uint64_t base = env_u64("TS_FUZZ_SEED", 0x7e55e1f022ull);
  uint64_t cases = env_u64("TS_FUZZ_CASES", 10000);
  long counts[4] = {0};
  long statuses[TS_STATUS_COUNT] = {0};
  int failures = 0;
  signal(SIGSEGV, on_crash);
  signal(SIGABRT, on_crash);
  signal(SIGFPE, on_crash);
  if (__sanitizer_set_death_callback)
    __sanitizer_set_death_callback(print_crashed_case);
  for (uint64_t i = 0; i < cases && failures < 3; i++) {
    current_seed = case_seed(base, i);
    fz_source src = {.rng = current_seed};
    fz_result r = fz_run_case(&src, current_seed);
    counts[r.outcome]++;
    if (r.status >= 0 && r.status < TS_STATUS_COUNT)
      statuses[r.status]++;
    if (r.outcome == FZ_FAIL) {
      fprintf(stderr, "%s\n", r.report ? r.report : "(no report: out of memory)");
      failures++;
    }
    free(r.report);
  }
  printf("fuzz: seed 0x%llx, %llu cases: %ld refused by a primitive, %ld "
         "refused at lowering, %ld checked correct, %ld failed\n",
         (unsigned long long)base, (unsigned long long)cases, counts[0],
         counts[1], counts[2], counts[3]);
  for (int st = 0; st < TS_STATUS_COUNT; st++)
    if (statuses[st])
      printf("  %6ld  %s\n", statuses[st], ts_strerror((ts_status)st));
  assert_int_equal(failures, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuzz_schedules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
