/*
 * ts_partition: the steady loop and its tail against golden IR, results
 * through the reference executor at odd shapes (a plain nest, and the
 * warptiled schedule with its register double buffer and with cp.async
 * stages, in every layout), the vector loads the steady loop gains where
 * rows are aligned and the scalar lanes it keeps where not, the loop left
 * alone when no guard fails near its end, each refusal, and the trace.
 */
#include "helpers.h"

/* i over 2-thread blocks, k split by 4: loops k.outer and k.inner. */
static ts_sched *k_split(int64_t m, int64_t n, int64_t k, ts_loop **ko) {
  ts_sched *s = sched_of(m, n, k);
  ts_loop *io, *ii, *ki;
  ts_split(s, ts_get_loop(s, "i"), 2, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  ts_split(s, ts_get_loop(s, "k"), 4, ko, &ki);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

/* K = 10 in steps of 4: two whole steps without a guard, then the last,
 * partial one as the tail. */
static void test_steady_loop_and_tail(void **state) {
  (void)state;
  ts_loop *ko;
  ts_sched *s = k_split(6, 5, 10, &ko);
  assert_int_equal(ts_partition(s, ko), TS_OK);
  assert_ir(s,
            "for i.outer in 0..3 bound to blockIdx.x:\n"
            "  for i.inner in 0..2 bound to threadIdx.x:\n"
            "    for j in 0..5:\n"
            "      local float acc[1][1]\n"
            "      acc[0, 0] = 0.0\n"
            "      for k.outer in 0..2:\n"
            "        for k.inner in 0..4:\n"
            "          acc[0, 0] = acc[0, 0] + A[i.outer*2 + i.inner, "
            "k.outer*4 + k.inner] * B[k.outer*4 + k.inner, j]\n"
            "      for k.outer.tail in 0..1:\n"
            "        for k.inner in 0..4:\n"
            "          if k.outer.tail*4 + k.inner + 8 < 10:\n"
            "            acc[0, 0] = acc[0, 0] + A[i.outer*2 + i.inner, "
            "k.outer.tail*4 + k.inner + 8] * B[k.outer.tail*4 + k.inner + 8, "
            "j]\n"
            "      C[i.outer*2 + i.inner, j] = acc[0, 0]\n");
  assert_checks(s, 11);
  ts_sched_free(s);
}

/* The partitioned loop need not be the one the guard's bound splits: k
 * in 2s, those in 3s, the outer one partitioned; its tail keeps the inner
 * loops and the guard, its variable offset by the steady iterations. */
static void test_partition_of_an_outer_loop(void **state) {
  (void)state;
  ts_loop *ko, *ki, *kz, *kw;
  ts_sched *s = sched_of(3, 3, 23);
  ts_split(s, ts_get_loop(s, "k"), 2, &ko, &ki);
  ts_split(s, ko, 3, &kz, &kw);
  assert_int_equal(ts_partition(s, kz), TS_OK);
  char *ir = ir_body(s);
  assert_non_null(strstr(ir,
      "    for k.outer.outer in 0..3:\n"
      "      for k.outer.inner in 0..3:\n"
      "        for k.inner in 0..2:\n"
      "          acc[0, 0] = acc[0, 0] + A[i, k.outer.outer*6 + "
      "k.outer.inner*2 + k.inner] * B[k.outer.outer*6 + k.outer.inner*2 + "
      "k.inner, j]\n"
      "    for k.outer.outer.tail in 0..1:\n"
      "      for k.outer.inner in 0..3:\n"
      "        for k.inner in 0..2:\n"
      "          if k.outer.outer.tail*6 + k.outer.inner*2 + k.inner + 18 < "
      "23:\n"));
  free(ir);
  assert_checks(s, 11);
  ts_sched_free(s);
}

/* K a multiple of the step: no guard to prove, the loop as it was. */
static void test_no_failing_guard_leaves_the_loop(void **state) {
  (void)state;
  ts_loop *ko;
  ts_sched *s = k_split(6, 5, 12, &ko);
  char *before = ir_body(s);
  assert_int_equal(ts_partition(s, ko), TS_OK);
  char *after = ir_body(s);
  /* The same nest; the loop keeps the mark. */
  char *mark = strstr(after, " partitioned:");
  assert_non_null(mark);
  memmove(mark, mark + strlen(" partitioned"), strlen(mark + 12) + 1);
  assert_string_equal(before, after);
  free(before);
  free(after);
  ts_sched_free(s);
}

/* Every shape from 1x1x1 up to ones no tile divides, in every layout,
 * with each way warptiled fills its shared tiles. */
static void test_warptiled_at_odd_shapes(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{1, 1, 1}, {37, 53, 29}, {67, 45, 21},
                               {40, 36, 33}, {9, 130, 47}};
  const int64_t fills[] = {2, 1, 3};
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
    for (int layout = TS_NN; layout <= TS_TT; layout++)
      for (int f = 0; f < 3; f++) {
        ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
        g.layout = (ts_layout)layout;
        g.alpha = 1.5f;
        g.beta = 0.5f;
        ts_sched *s = ts_matmul_named(&g, "wt");
        warp_tiling t = {.bm = 64, .bn = 32, .wm = 32, .wn = 32, .bk = 8,
                         .buffers = fills[f], .parts = 1, .partition = 1};
        assert_int_equal(warptiled_with(s, &t), TS_OK);
        assert_checks(s, 11);
        ts_sched_free(s);
      }
}

/* The text between the steady loop's header and the tail's. */
static char *steady_loop_of(const char *cu) {
  const char *from = strstr(cu, "for (int k_outer = 0;");
  const char *to = from ? strstr(from, "k_outer_tail") : NULL;
  assert_non_null(to);
  char *text = strndup(from, (size_t)(to - from));
  assert_non_null(text);
  return text;
}

static char *warptiled_cuda(int64_t m, int64_t n, int64_t k) {
  ts_gemm g = ts_gemm_make(m, n, k);
  ts_sched *s = ts_matmul_named(&g, "wt");
  assert_int_equal(example_warptiled(s), TS_OK);
  char *cu = ts_cuda_source(s);
  assert_non_null(cu);
  ts_sched_free(s);
  return cu;
}

/* Rows of B of 1000 floats are 16-byte aligned: the steady loop loads
 * them as float4 with no test of k; rows of 1001 are not, and stay scalar
 * lanes each with its own guard. */
static void test_steady_loop_loads_vectors_where_rows_align(void **state) {
  (void)state;
  char *cu = warptiled_cuda(1000, 1000, 1003);
  char *steady = steady_loop_of(cu);
  assert_non_null(strstr(steady, "const float4 B_v0 = *reinterpret_cast"));
  assert_null(strstr(steady, "< 1003"));
  /* The last two iterations, which load and then use the partial tile of
   * k, are the tail. */
  assert_non_null(strstr(cu, "for (int k_outer = 0; k_outer < 61; "));
  assert_non_null(strstr(cu, "for (int k_outer_tail = 0; k_outer_tail < 2; "));
  free(steady);
  free(cu);
  cu = warptiled_cuda(999, 1001, 1003);
  steady = steady_loop_of(cu);
  assert_null(strstr(steady, "const float4 B_v0"));
  assert_non_null(strstr(steady, "j_outer*128 + lane*4 + 3 < 1001"));
  assert_null(strstr(steady, "< 1003"));
  free(steady);
  free(cu);
}

static void test_refusals(void **state) {
  (void)state;
  ts_loop *ko;
  assert_int_equal(ts_partition(NULL, NULL), TS_ERR_NULL_ARG);
  ts_sched *s = k_split(6, 5, 10, &ko);
  assert_refused_with(s, ts_partition(s, NULL), TS_ERR_NULL_ARG, "ts_partition");
  s = k_split(6, 5, 10, &ko);
  assert_refused_with(s, ts_partition(s, ts_get_loop(s, "i.outer")),
                 TS_ERR_ALREADY_BOUND,
                 "ts_partition: loop \"i.outer\" is already bound to "
                 "blockIdx.x");
  s = k_split(6, 5, 10, &ko);
  ts_partition(s, ko);
  assert_refused_with(s, ts_partition(s, ko), TS_ERR_ALREADY_BOUND,
                 "ts_partition: loop \"k.outer\" is partitioned; call "
                 "ts_partition after every other primitive on the loop");
  s = k_split(6, 5, 10, &ko);
  ts_partition(s, ko);
  ts_loop *x, *y;
  assert_refused_with(s, ts_split(s, ko, 2, &x, &y), TS_ERR_ALREADY_BOUND,
                 "ts_split: loop \"k.outer\" is partitioned");
  s = k_split(6, 5, 10, &ko);
  ts_partition(s, ko);
  assert_refused_with(s, ts_unroll(s, ko), TS_ERR_ALREADY_BOUND,
                 "ts_unroll: loop \"k.outer\" is partitioned");
  /* A loop of another schedule. */
  ts_sched *other = k_split(6, 5, 10, &ko);
  s = sched_of(6, 5, 10);
  assert_refused_with(s, ts_partition(s, ko), TS_ERR_FOREIGN_LOOP, "ts_partition");
  ts_sched_free(other);
}

/* The schedule's nest marks the loop; the trace replays it. */
static void test_mark_and_trace(void **state) {
  (void)state;
  ts_loop *ko;
  ts_sched *s = k_split(6, 5, 10, &ko);
  ts_partition(s, ko);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_partition(s, k_outer);\n"));
  free(trace);
  assert_replays(s);
  ts_loop *x, *y;
  ts_split(s, ko, 2, &x, &y); /* refused: the message shows the nest */
  assert_non_null(strstr(ts_sched_errmsg(s), "for k.outer in 0..3 partitioned"));
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_steady_loop_and_tail),
      cmocka_unit_test(test_partition_of_an_outer_loop),
      cmocka_unit_test(test_no_failing_guard_leaves_the_loop),
      cmocka_unit_test(test_warptiled_at_odd_shapes),
      cmocka_unit_test(test_steady_loop_loads_vectors_where_rows_align),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_mark_and_trace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
