/*
 * The one table of device limits (src/base/limits.h): whole and consistent
 * with the bounds the schedule, the compiler and explain take from it.
 */
#include "helpers.h"
#include "explain/explain_impl.h"
#include "base/limits.h"
#include "schedule/sched.h"

/* By compute capability, each block's shared memory between the static
 * 48 KiB and the largest, which one architecture has. */
static void test_table_is_ordered_and_bounded(void **state) {
  (void)state;
  int n;
  const ts_arch_limits *t = ts_arch_table(&n);
  assert_true(n > 0);
  int largest = 0;
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof(name), "sm_%d", t[i].cc);
    assert_string_equal(t[i].name, name);
    if (i)
      assert_true(t[i - 1].cc < t[i].cc);
    assert_true(t[i].shared_block >= TS_STATIC_SHARED);
    largest = t[i].shared_block > largest ? t[i].shared_block : largest;
  }
  assert_int_equal(largest, TS_SHARED_BLOCK_MAX);
  assert_int_equal(SCHED_SHARED_LIMIT, TS_SHARED_BLOCK_MAX);
}

/* Every architecture explain reports has its multiprocessor's limits, and
 * explain names exactly those. */
static void test_explained_entries_are_complete(void **state) {
  (void)state;
  int n;
  const ts_arch_limits *t = ts_arch_table(&n);
  char names[256] = "";
  for (int i = 0; i < n; i++) {
    if (!t[i].explained)
      continue;
    assert_true(t[i].registers >= TS_REGISTERS_PER_BLOCK);
    assert_true(t[i].shared >= t[i].shared_block);
    assert_true(t[i].threads > 0 && t[i].blocks > 0);
    size_t used = strlen(names);
    snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
             t[i].name);
  }
  assert_string_equal(names, explain_arch_list());
}

/* The schedule's occupancy bounds are sm_80's and sm_90's. */
static void test_targets_match_the_schedule_bounds(void **state) {
  (void)state;
  for (int cc = 80; cc <= 90; cc += 10) {
    const ts_arch_limits *a = ts_arch_limits_of(cc);
    assert_non_null(a);
    assert_int_equal(a->blocks, SCHED_MAX_BLOCKS_PER_SM);
    assert_int_equal(a->threads, SCHED_MAX_THREADS_PER_SM);
  }
}

/* The compiler's limit: the table's, else the static 48 KiB. */
static void test_shared_block_lookup(void **state) {
  (void)state;
  assert_int_equal(ts_arch_shared_block(86), 99 * 1024);
  assert_int_equal(ts_arch_shared_block(90), 227 * 1024);
  assert_int_equal(ts_arch_shared_block(61), 48 * 1024);
  assert_null(ts_arch_limits_of(61));
}

/* The registers a thread may have at launch under __launch_bounds__(
 * threads, blocks), as ptxas bounds them (NVRTC's ptxas on kernels that
 * ask setmaxnreg for 256, which it grants up to the bound): the block's
 * share of 65536 rounded down to 8, then at most 255. */
static void test_launch_register_cap(void **state) {
  (void)state;
  const struct {
    int64_t threads, blocks;
    int cap;
  } cases[] = {{256, 1, 255}, {384, 1, 168}, {512, 1, 128}, {256, 2, 128},
               {384, 2, 80},  {256, 3, 80},  {128, 1, 255}, {0, 1, 0}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_int_equal(ts_launch_register_cap(cases[i].threads,
                                            cases[i].blocks),
                     cases[i].cap);
}

/* Explain holds its register estimate to that cap, as the register split
 * is: wgws's 384 threads (about 184 without it) to 168, the split's count
 * at launch; wg128's 256 at 2 blocks a multiprocessor to 128. */
static void test_explain_holds_registers_to_the_cap(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(1024, 1024, 1024);
  g.a_type = g.b_type = TS_F16;
  const struct {
    const char *name;
    int blocks, registers;
  } cases[] = {{"wgws", 0, 168}, {"wg128", 2, 128}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_sched *s = ts_builtin_schedule(cases[i].name, &g);
    if (cases[i].blocks)
      ts_min_blocks_per_sm(s, cases[i].blocks);
    ts_program *p = ts_lower(s);
    assert_int_equal(ts_program_status(p), TS_OK);
    ts_explain *e = ts_program_explain(p, NULL);
    assert_non_null(e);
    const ts_kernel_report *k = &e->kernels[0];
    int blocks = cases[i].blocks ? cases[i].blocks : 1;
    assert_int_equal(k->registers, cases[i].registers);
    assert_int_equal(k->registers,
                     ts_launch_register_cap(k->threads, blocks));
    if (k->pipeline.producer_threads)
      assert_int_equal(k->pipeline.launch_registers, k->registers);
    ts_explain_free(e);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_is_ordered_and_bounded),
      cmocka_unit_test(test_explained_entries_are_complete),
      cmocka_unit_test(test_targets_match_the_schedule_bounds),
      cmocka_unit_test(test_shared_block_lookup),
      cmocka_unit_test(test_launch_register_cap),
      cmocka_unit_test(test_explain_holds_registers_to_the_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
