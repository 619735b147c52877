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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_is_ordered_and_bounded),
      cmocka_unit_test(test_explained_entries_are_complete),
      cmocka_unit_test(test_targets_match_the_schedule_bounds),
      cmocka_unit_test(test_shared_block_lookup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
