/*
 * show --steps: the nest after each primitive as a diff against the one
 * before, checked whole on a small schedule, and over every built-in: as
 * many steps as the trace has records, and the last nest the schedule's.
 */
#include "helpers.h"

#include "ir/printer.h"
#include "schedule/sched.h"

/* Each step is headed by where its primitive was called, as a compiler
 * names the line of an error (an editor jumps there); a primitive called
 * as a plain function, (ts_unroll)(...), has no location to name. */
static void test_a_small_schedule_step_by_step(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul_named(&g, "small");
  ts_loop *io, *ii;
  int line = __LINE__ + 1;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  (ts_unroll)(s, ts_get_loop(s, "k"));
  char *steps = ts_print_steps(s);
  assert_non_null(steps);
  char want[2048];
  snprintf(
      want, sizeof(want),
      "// the nest of ts_matmul_named(&def, \"small\")\n"
      "  for i in 0..8:\n"
      "    for j in 0..8:\n"
      "      for k in 0..8:\n"
      "        C[i, j] += A[i, k] * B[k, j]\n"
      "\n"
      "%s:%d: step 1: ts_loop *i_outer, *i_inner;\n"
      "ts_split(s, i, 4, &i_outer, &i_inner);\n"
      "- for i in 0..8:\n"
      "-   for j in 0..8:\n"
      "-     for k in 0..8:\n"
      "-       C[i, j] += A[i, k] * B[k, j]\n"
      "+ for i.outer in 0..2:\n"
      "+   for i.inner in 0..4:\n"
      "+     for j in 0..8:\n"
      "+       for k in 0..8:\n"
      "+         C[i.outer*4 + i.inner, j] += A[i.outer*4 + i.inner, k] * "
      "B[k, j]\n"
      "\n"
      "%s:%d: step 2: ts_bind(s, i_outer, TS_BLOCK_X);\n"
      "- for i.outer in 0..2:\n"
      "+ for i.outer in 0..2 bound to blockIdx.x:\n"
      "    for i.inner in 0..4:\n"
      "  ...\n"
      "\n"
      "// step 3: ts_unroll(s, k);\n"
      "  ...\n"
      "      for j in 0..8:\n"
      "-       for k in 0..8:\n"
      "+       for k in 0..8 unrolled:\n"
      "          C[i.outer*4 + i.inner, j] += A[i.outer*4 + i.inner, k] * "
      "B[k, j]\n",
      __FILE__, line, __FILE__, line + 1);
  assert_string_equal(steps, want);
  free(steps);
  ts_sched_free(s);
}

/* A cache's indices print simplified: the loop's index less the tile's
 * origin, A.shared[i.inner, k.inner], not A.shared[i.outer*4 + i.inner -
 * (i.outer*4), ...]. */
static void test_cache_indices_print_simplified(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul_named(&g, "small");
  ts_loop *io, *ii, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_split(s, ts_get_loop(s, "k"), 4, &ko, &ki);
  ts_reorder(s, 5, (ts_loop *[]){io, ts_get_loop(s, "j"), ko, ii, ki});
  ts_stage *as;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  char *steps = ts_print_steps(s);
  assert_non_null(steps);
  if (!strstr(steps, "+           C[i.outer*4 + i.inner, j] += "
                     "A.shared[i.inner, k.inner] * B[k.outer*4 + k.inner, "
                     "j]\n"))
    fail_msg("no simplified cache index in:\n%s", steps);
  if (strstr(steps, " - ("))
    fail_msg("an index less its origin unsimplified in:\n%s", steps);
  free(steps);
  ts_sched_free(s);
}

/* Every built-in: a step per record of its trace, each named by the line
 * of the built-in's file that called its primitive; the lines the last
 * step leaves (unchanged and added) are the schedule's own nest. */
static void test_every_builtin_steps_to_its_nest(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  for (int b = 0; b < ts_builtin_count(); b++) {
    ts_sched *s = builtin_at(b, g);
    char *steps = ts_print_steps(s);
    assert_non_null(steps);
    int n = 0;
    for (const char *p = steps; (p = strstr(p, "\nsrc/builtins/")); p++)
      if (strstr(p, ": step ") < strchr(p + 1, '\n'))
        n++;
    assert_int_equal(n, s->ntrace);
    ts_buf want;
    ts_buf_init(&want);
    ir_print_stmt(&want, s->root, 0, NULL);
    /* Every line of the final nest appears in the output. */
    for (char *line = strtok(want.data, "\n"); line;
         line = strtok(NULL, "\n"))
      if (!strstr(steps, line))
        fail_msg("%s: the final nest's line \"%s\" is not in its steps",
                 ts_builtin_at(b)->name, line);
    ts_buf_free(&want);
    free(steps);
    ts_sched_free(s);
  }
}

/* --ir --provenance: each loop and buffer after the primitive that made
 * it; what the definition or lowering made says so. */
static void test_provenance_of_loops_and_caches(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul_named(&g, "small");
  ts_loop *io, *ii, *ko, *ki;
  int line = __LINE__ + 1;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  (ts_split)(s, ts_get_loop(s, "k"), 4, &ko, &ki);
  ts_reorder(s, 5, (ts_loop *[]){io, ts_get_loop(s, "j"), ko, ii, ki});
  ts_bind(s, io, TS_BLOCK_X);
  ts_stage *as;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_program *p = ts_lower(s);
  char *ir = ts_program_ir_provenance(p);
  assert_non_null(ir);
  char want[5][200];
  snprintf(want[0], sizeof(want[0]), "for i.outer in 0..2 bound to "
           "blockIdx.x:   # %s:%d: ts_split, step 1\n", __FILE__, line);
  snprintf(want[1], sizeof(want[1]), "for j in 0..8:   # ts_matmul\n");
  snprintf(want[2], sizeof(want[2]), /* called as a plain function */
           "for k.outer in 0..2:   # ts_split, step 2\n");
  snprintf(want[3], sizeof(want[3]), "shared float A.shared[4][4]   # "
           "%s:%d: ts_cache_read, step 5\n", __FILE__, line + 5);
  snprintf(want[4], sizeof(want[4]), "local float acc[4][1]   # "
           "lowering\n");
  for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++)
    if (!strstr(ir, want[w]))
      fail_msg("no \"%s\" in:\n%s", want[w], ir);
  free(ir);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_a_schedule_in_error_has_no_steps(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul(&g);
  ts_split(s, ts_get_loop(s, "i"), 0, &(ts_loop *){NULL},
           &(ts_loop *){NULL});
  assert_null(ts_print_steps(s));
  assert_null(ts_print_steps(NULL));
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_small_schedule_step_by_step),
      cmocka_unit_test(test_cache_indices_print_simplified),
      cmocka_unit_test(test_every_builtin_steps_to_its_nest),
      cmocka_unit_test(test_provenance_of_loops_and_caches),
      cmocka_unit_test(test_a_schedule_in_error_has_no_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
