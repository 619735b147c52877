/*
 * The check's estimate of its work (ts_check_steps, a sample plan's
 * steps) against the work the reference executor counts as it runs
 * (ts_program_check_counted, a sampled run's steps): within 2x on a table
 * of schedules (one thread an element, the README's 32x32 tiling, warp tiles,
 * split-K, tensor cores) and of skinny, long-K, odd and tiny shapes; and
 * on the tensor-core built-ins in f16 (mma.sync, wgmma, TMA pipelines,
 * warp-specialized and persistent), whose instructions each do a tile's
 * work.  The count is the executor's own, so the test does not depend on
 * the machine's speed.  And a sample whose one block alone passes the
 * budget (a block walking a very long K, a persistent grid's block
 * looping over many tiles) is refused before it runs.
 */
#include "helpers.h"

/* coalesced is the README's user schedule, tiles32: 32x32 thread blocks,
 * a thread an element. */
static const char *const schedules[] = {"naive", "coalesced", "warptiled",
                                        "splitk", "tc64"};
enum { NSCHEDULES = sizeof(schedules) / sizeof(schedules[0]) };

/* mma.sync, wgmma from cp.async stages, from TMA pipelines, warp-
 * specialized, in a persistent grid, C stored by the TMA. */
static const char *const tensor_schedules[] = {"tc128", "wg128", "wgtma",
                                               "wgws", "wgpers", "wgskinny",
                                               "wgstore"};
enum { NTENSOR = sizeof(tensor_schedules) / sizeof(tensor_schedules[0]) };

static bool tensor_core(const char *name) {
  return strncmp(name, "tc", 2) == 0 || strncmp(name, "wg", 2) == 0;
}

static ts_program *lowered(const char *name, int64_t m, int64_t n,
                           int64_t k) {
  ts_gemm g = ts_gemm_make(m, n, k);
  if (tensor_core(name))
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

static void shape_name(char *out, size_t len, const int64_t *d) {
  snprintf(out, len, "%lldx%lldx%lld", (long long)d[0], (long long)d[1],
           (long long)d[2]);
}

/* Whether p copies its tiles by the TMA (the TMA built-ins do at every
 * shape: where a row of A or B is not 16-byte aligned, from packed
 * copies). */
static bool copies_by_tma(const ts_program *p) {
  char *ir = ts_program_ir(p);
  assert_non_null(ir);
  bool tma = strstr(ir, "tma &") != NULL;
  free(ir);
  return tma;
}

/* A full check of `name` at shape d: its estimate against its count. */
static void assert_full_check_counted(const char *name, const int64_t *d) {
  char shape[64], msg[512];
  shape_name(shape, sizeof(shape), d);
  ts_program *p = lowered(name, d[0], d[1], d[2]);
  double steps;
  ts_status st = ts_program_check_counted(p, 3, &steps, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("%s at %s: %s", name, shape, msg);
  assert_within_2x("a full check", name, shape, ts_check_steps(p), steps);
  assert_true(ts_check_seconds(p) == ts_check_steps(p) / ts_check_rate());
  ts_program_free(p);
}

/* A sampled check of `name` at shape d: the plan's steps against the
 * run's count. */
static void assert_sample_counted(const char *name, const int64_t *d) {
  char shape[64], msg[512];
  shape_name(shape, sizeof(shape), d);
  ts_program *p = lowered(name, d[0], d[1], d[2]);
  ts_sample plan = {.random = 2}, run = {.random = 2};
  assert_int_equal(ts_program_sample_plan(p, 5, &plan, msg, sizeof(msg)),
                   TS_OK);
  if (ts_program_check_sampled(p, 5, &run, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s sampled at %s: %s", name, shape, msg);
  assert_int_equal(plan.blocks_run, run.blocks_run);
  assert_true(run.blocks_run < run.blocks_total);
  assert_within_2x("a sample", name, shape, plan.steps, run.steps);
  ts_program_free(p);
}

/* Full checks: skinny (every block's threads mostly past C's edge), a
 * long K, a wide skinny C, tiny and odd shapes. */
static void test_full_check_estimate_is_the_count(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{4, 4, 4000}, {8, 8192, 64}, {1, 1, 1},
                               {37, 53, 29}};
  for (int i = 0; i < NSCHEDULES; i++)
    for (size_t j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++)
      assert_full_check_counted(schedules[i], shapes[j]);
}

/* Sampled checks: the plan's steps against the run's count. */
static void test_sample_estimate_is_the_count(void **state) {
  (void)state;
  const int64_t shape[3] = {999, 1001, 1003};
  for (int i = 0; i < NSCHEDULES; i++)
    assert_sample_counted(schedules[i], shape);
}

/* The tensor-core built-ins: odd shapes whose rows are not 16-byte aligned
 * (the TMA built-ins copy packed A and B there), odd ones whose rows are
 * (copied by the TMA: a box a copy, issued by one thread), a skinny C of
 * several blocks.  A wgmma does a 64xNx16 tile's multiply-adds, a copy a
 * box's elements: each counts its work, not one step. */
static void test_tensor_core_estimate_is_the_count(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{37, 53, 29}, {40, 72, 24}, {8, 1032, 136}};
  for (int i = 0; i < NTENSOR; i++)
    for (size_t j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++)
      assert_full_check_counted(tensor_schedules[i], shapes[j]);
  /* The aligned shapes do exercise the TMA pipelines. */
  for (int i = 2; i < NTENSOR; i++) {
    ts_program *p = lowered(tensor_schedules[i], 40, 72, 24);
    if (!copies_by_tma(p))
      fail_msg("%s at 40x72x24 copies no tile by the TMA", tensor_schedules[i]);
    ts_program_free(p);
  }
}

/* Samples of the tensor-core built-ins, a TMA pipeline among them.  (A
 * sample of wgws, wgpers, wgskinny or wgstore runs every block: the
 * swizzled grid's bounds, and the persistent grid's few blocks, each
 * cover all of C's tiles; the full checks above count those.) */
static void test_tensor_core_sample_estimate_is_the_count(void **state) {
  (void)state;
  const int64_t shape[3] = {776, 1032, 72};
  for (int i = 0; i < NTENSOR; i++)
    if (strcmp(tensor_schedules[i], "wgws") != 0 &&
        strcmp(tensor_schedules[i], "wgpers") != 0 &&
        strcmp(tensor_schedules[i], "wgskinny") != 0 &&
        strcmp(tensor_schedules[i], "wgstore") != 0)
      assert_sample_counted(tensor_schedules[i], shape);
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

/* A persistent grid's 4 blocks each loop over 128 of C's 512 tiles at
 * 4096^3: minutes of wgmma and TMA copies, refused before anything runs,
 * saying so. */
static void test_persistent_past_budget_refused(void **state) {
  (void)state;
  ts_program *p = lowered("wgpers", 4096, 4096, 4096);
  ts_sample smp = {.random = 8, .budget_s = 45};
  char msg[512];
  assert_int_equal(ts_program_sample_plan(p, 1, &smp, msg, sizeof(msg)),
                   TS_ERR_TOO_SLOW);
  assert_true(smp.seconds > 45);
  assert_non_null(strstr(msg, "each of their threads loops over up to 128 "
                              "of C's 512 tiles and for each walks K = 4096"));
  assert_non_null(strstr(msg, "check a smaller shape, a schedule with no "
                              "persistent grid"));
  ts_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_check_estimate_is_the_count),
      cmocka_unit_test(test_sample_estimate_is_the_count),
      cmocka_unit_test(test_tensor_core_estimate_is_the_count),
      cmocka_unit_test(test_tensor_core_sample_estimate_is_the_count),
      cmocka_unit_test(test_block_past_budget_refused),
      cmocka_unit_test(test_persistent_past_budget_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
