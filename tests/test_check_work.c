/*
 * The check's estimate of its work (ts_check_steps, a sample plan's
 * steps) against the work the reference executor counts as it runs
 * (ts_program_check_counted, a sampled run's steps): within 2x on a table
 * of schedules (one thread an element, the README's 32x32 tiling, warp tiles,
 * split-K, tensor cores) and of skinny, long-K, odd and tiny shapes.  The
 * count is the executor's own, so the test does not depend on the
 * machine's speed.  And a sample whose one block alone passes the budget
 * (a block walking a very long K) is refused before it runs.
 */
#include "helpers.h"

/* coalesced is the README's user schedule, tiles32: 32x32 thread blocks,
 * a thread an element. */
static const char *const schedules[] = {"naive", "coalesced", "warptiled",
                                        "splitk", "tc64"};
enum { NSCHEDULES = sizeof(schedules) / sizeof(schedules[0]) };

static ts_program *lowered(const char *name, int64_t m, int64_t n,
                           int64_t k) {
  ts_gemm g = ts_gemm_make(m, n, k);
  if (strcmp(name, "tc64") == 0)
    g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_matmul(&g);
  assert_int_equal(ts_builtin_find(name)->apply(s), TS_OK);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  return p;
}

static void assert_within_2x(const char *what, const char *name,
                             const char *shape, double estimate,
                             double counted) {
  if (!(counted > 0 && estimate >= counted / 2 && estimate <= counted * 2))
    fail_msg("%s of %s at %s: estimated %.4g steps, the executor counted "
             "%.4g", what, name, shape, estimate, counted);
}

/* Full checks: skinny (every block's threads mostly past C's edge), a
 * long K, a wide skinny C, tiny and odd shapes. */
static void test_full_check_estimate_is_the_count(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{4, 4, 4000}, {8, 8192, 64}, {1, 1, 1},
                               {37, 53, 29}};
  for (int i = 0; i < NSCHEDULES; i++)
    for (size_t j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++) {
      const int64_t *d = shapes[j];
      char shape[64], msg[512];
      snprintf(shape, sizeof(shape), "%lldx%lldx%lld", (long long)d[0],
               (long long)d[1], (long long)d[2]);
      ts_program *p = lowered(schedules[i], d[0], d[1], d[2]);
      double steps;
      ts_status st = ts_program_check_counted(p, 3, &steps, msg, sizeof(msg));
      if (st != TS_OK)
        fail_msg("%s at %s: %s", schedules[i], shape, msg);
      assert_within_2x("a full check", schedules[i], shape,
                       ts_check_steps(p), steps);
      assert_true(ts_check_seconds(p) == ts_check_steps(p) / ts_check_rate());
      ts_program_free(p);
    }
}

/* Sampled checks: the plan's steps against the run's count. */
static void test_sample_estimate_is_the_count(void **state) {
  (void)state;
  for (int i = 0; i < NSCHEDULES; i++) {
    ts_program *p = lowered(schedules[i], 999, 1001, 1003);
    ts_sample plan = {.random = 2}, run = {.random = 2};
    char msg[512];
    assert_int_equal(ts_program_sample_plan(p, 5, &plan, msg, sizeof(msg)),
                     TS_OK);
    if (ts_program_check_sampled(p, 5, &run, msg, sizeof(msg)) != TS_OK)
      fail_msg("%s sampled: %s", schedules[i], msg);
    assert_int_equal(plan.blocks_run, run.blocks_run);
    assert_true(run.blocks_run < run.blocks_total);
    assert_within_2x("a sample", schedules[i], "999x1001x1003", plan.steps,
                     run.steps);
    ts_program_free(p);
  }
}

/* One block of 1024 threads walks K = 400000000: far past any budget, so
 * the sample is refused before anything runs, saying why and what to do. */
static void test_block_past_budget_refused(void **state) {
  (void)state;
  ts_program *p = lowered("coalesced", 4, 4, 400000000);
  assert_true(ts_check_seconds(p) > 3600);
  ts_sample smp = {.random = 8, .budget_s = 45};
  char msg[512];
  assert_int_equal(ts_program_sample_plan(p, 1, &smp, msg, sizeof(msg)),
                   TS_ERR_TOO_SLOW);
  assert_int_equal(smp.blocks_run, 1);
  assert_true(smp.seconds > 3600);
  assert_non_null(strstr(msg, "cannot stay within 45 s: the 1 block writing "
                              "C[0, 0] alone takes about"));
  assert_non_null(strstr(msg, "check a smaller K"));
  assert_int_equal(ts_program_check_sampled(p, 1, &smp, msg, sizeof(msg)),
                   TS_ERR_TOO_SLOW);
  ts_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_check_estimate_is_the_count),
      cmocka_unit_test(test_sample_estimate_is_the_count),
      cmocka_unit_test(test_block_past_budget_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
