/*
 * Schedule primitives: each rewrite against golden printed IR and through
 * the reference executor, each misuse with its own error, the sticky status
 * and the trace.
 */
#include "helpers.h"

#include "schedule/sched.h"

static void test_split_divisible_has_no_guard(void **state) {
  (void)state;
  ts_sched *s = sched_of(64, 8, 4);
  ts_loop *o, *i;
  assert_int_equal(ts_split(s, ts_get_loop(s, "i"), 16, &o, &i), TS_OK);
  assert_string_equal(ts_loop_name(o), "i.outer");
  assert_int_equal(ts_loop_extent(o), 4);
  assert_int_equal(ts_loop_extent(i), 16);
  assert_ir(s,
            "for i.outer in 0..4:\n"
            "  for i.inner in 0..16:\n"
            "    for j in 0..8:\n"
            "      local float acc[1][1]\n"
            "      acc[0, 0] = 0.0\n"
            "      for k in 0..4:\n"
            "        acc[0, 0] = acc[0, 0] + A[i.outer*16 + i.inner, k] * B[k, j]\n"
            "      C[i.outer*16 + i.inner, j] = acc[0, 0]\n");
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_split_remainder_is_guarded(void **state) {
  (void)state;
  ts_sched *s = sched_of(37, 5, 3);
  ts_loop *o, *i;
  assert_int_equal(ts_split(s, ts_get_loop(s, "i"), 8, &o, &i), TS_OK);
  assert_int_equal(ts_loop_extent(o), 5);
  assert_ir(s,
            "for i.outer in 0..5:\n"
            "  for i.inner in 0..8:\n"
            "    if i.outer*8 + i.inner < 37:\n"
            "      for j in 0..5:\n"
            "        local float acc[1][1]\n"
            "        acc[0, 0] = 0.0\n"
            "        for k in 0..3:\n"
            "          acc[0, 0] = acc[0, 0] + A[i.outer*8 + i.inner, k] * B[k, j]\n"
            "        C[i.outer*8 + i.inner, j] = acc[0, 0]\n");
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_split_factor_past_extent(void **state) {
  (void)state;
  ts_sched *s = sched_of(5, 3, 2);
  ts_loop *o, *i;
  assert_int_equal(ts_split(s, ts_get_loop(s, "j"), 64, &o, &i), TS_OK);
  assert_int_equal(ts_loop_extent(o), 1);
  assert_int_equal(ts_loop_extent(i), 64);
  assert_ir(s,
            "for i in 0..5:\n"
            "  for j.inner in 0..64:\n"
            "    if j.inner < 3:\n"
            "      local float acc[1][1]\n"
            "      acc[0, 0] = 0.0\n"
            "      for k in 0..2:\n"
            "        acc[0, 0] = acc[0, 0] + A[i, k] * B[k, j.inner]\n"
            "      C[i, j.inner] = acc[0, 0]\n");
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_fuse_divides_and_wraps(void **state) {
  (void)state;
  ts_sched *s = sched_of(7, 5, 3);
  ts_loop *f;
  assert_int_equal(ts_fuse(s, ts_get_loop(s, "i"), ts_get_loop(s, "j"), &f), TS_OK);
  assert_string_equal(ts_loop_name(f), "i.j.fused");
  assert_int_equal(ts_loop_extent(f), 35);
  assert_ir(s,
            "for i.j.fused in 0..35:\n"
            "  local float acc[1][1]\n"
            "  acc[0, 0] = 0.0\n"
            "  for k in 0..3:\n"
            "    acc[0, 0] = acc[0, 0] + A[i.j.fused/5, k] * B[k, i.j.fused % 5]\n"
            "  C[i.j.fused/5, i.j.fused % 5] = acc[0, 0]\n");
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_reorder_moves_k_out_and_tiles_acc(void **state) {
  (void)state;
  ts_sched *s = sched_of(3, 4, 5);
  ts_loop *i = ts_get_loop(s, "i"), *j = ts_get_loop(s, "j"), *k = ts_get_loop(s, "k");
  assert_int_equal(ts_reorder(s, 3, (ts_loop *[]){k, j, i}), TS_OK);
  assert_ir(s,
            "local float acc[3][4]\n"
            "for j in 0..4:\n"
            "  for i in 0..3:\n"
            "    acc[i, j] = 0.0\n"
            "for k in 0..5:\n"
            "  for j in 0..4:\n"
            "    for i in 0..3:\n"
            "      acc[i, j] = acc[i, j] + A[i, k] * B[k, j]\n"
            "for j in 0..4:\n"
            "  for i in 0..3:\n"
            "    C[i, j] = acc[i, j]\n");
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_bind_and_unroll_mark_loops(void **state) {
  (void)state;
  ts_sched *s = sched_of(4, 2, 3);
  assert_int_equal(ts_bind(s, ts_get_loop(s, "i"), TS_BLOCK_X), TS_OK);
  assert_int_equal(ts_bind(s, ts_get_loop(s, "j"), TS_THREAD_X), TS_OK);
  assert_int_equal(ts_unroll(s, ts_get_loop(s, "k")), TS_OK);
  assert_ir(s,
            "for i in 0..4 bound to blockIdx.x:\n"
            "  for j in 0..2 bound to threadIdx.x:\n"
            "    local float acc[1][1]\n"
            "    acc[0, 0] = 0.0\n"
            "    for k in 0..3 unrolled:\n"
            "      acc[0, 0] = acc[0, 0] + A[i, k] * B[k, j]\n"
            "    C[i, j] = acc[0, 0]\n");
  ts_launch_geometry l;
  assert_int_equal(ts_launch_dims(s, &l), TS_OK);
  assert_int_equal(l.grid[0], 4);
  assert_int_equal(l.block[0], 2);
  assert_int_equal(l.block[1], 1);
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_rename_shows_in_ir_and_codegen(void **state) {
  (void)state;
  ts_sched *s = sched_of(4, 2, 3);
  assert_int_equal(ts_rename(s, ts_get_loop(s, "k"), "kk"), TS_OK);
  char *cu = ts_cuda_source(s);
  assert_non_null(strstr(cu, "for (int kk = 0; kk < 3; ++kk)"));
  free(cu);
  ts_sched_free(s);
}

/* ---- Errors ---------------------------------------------------------------- */

/* The call failed with `code`, its message starts with `prefix`, and the
 * schedule's IR and loops are as they were. */
static void assert_failed(ts_sched *s, ts_status got, ts_status code,
                          const char *prefix, const ir_stmt *root, int nloops) {
  assert_int_equal(got, code);
  assert_int_equal(ts_sched_status(s), code);
  const char *msg = errmsg_text(s);
  if (strncmp(msg, prefix, strlen(prefix)) != 0)
    fail_msg("message \"%s\" does not start with \"%s\"", msg, prefix);
  assert_ptr_equal(s->root, root);
  assert_int_equal(s->nloops, nloops);
}

#define EXPECT_FAIL(call, code, prefix)                                       \
  do {                                                                        \
    const ir_stmt *root_ = s->root;                                           \
    int n_ = s->nloops;                                                       \
    assert_failed(s, (call), code, prefix, root_, n_);                        \
  } while (0)

/* A refused primitive's message starts where it was called, as a
 * compiler's error does; the record of an accepted one keeps its line. */
static void test_error_names_the_call(void **state) {
  (void)state;
  ts_loop *o, *i;
  ts_sched *s = sched_of(8, 8, 8);
  int line = __LINE__ + 1;
  assert_int_equal(ts_split(s, ts_get_loop(s, "i"), 2, &o, &i), TS_OK);
  assert_string_equal(s->trace[0].at.file, __FILE__);
  assert_int_equal(s->trace[0].at.line, line);
  assert_null(ts_sched_error_location(s).file); /* no error yet */
  assert_int_not_equal(ts_bind(s, ts_get_loop(s, "k"), TS_BLOCK_X), TS_OK);
  ts_location at = ts_sched_error_location(s);
  assert_string_equal(at.file, __FILE__);
  assert_int_equal(at.line, line + 4);
  char want[256];
  snprintf(want, sizeof(want), "%s:%d: error: ts_bind: loop \"k\"",
           __FILE__, line + 4);
  assert_int_equal(strncmp(ts_sched_errmsg(s), want, strlen(want)), 0);
  ts_sched_free(s);

  /* ts_get_loop's errors too. */
  s = sched_of(8, 8, 8);
  line = __LINE__ + 1;
  assert_null(ts_get_loop(s, "q"));
  assert_int_equal(ts_sched_error_location(s).line, line);
  ts_sched_free(s);
}

/* The primitives stay functions: called in parentheses or through a
 * pointer they work, and record no location. */
static void test_plain_calls_have_no_location(void **state) {
  (void)state;
  ts_loop *o, *i;
  ts_sched *s = sched_of(8, 8, 8);
  assert_int_equal((ts_split)(s, (ts_get_loop)(s, "i"), 2, &o, &i), TS_OK);
  ts_status (*bind)(ts_sched *, ts_loop *, ts_loop_kind) = ts_bind;
  assert_int_equal(bind(s, o, TS_BLOCK_X), TS_OK);
  assert_int_equal(s->ntrace, 2);
  assert_null(s->trace[0].at.file);
  assert_null(s->trace[1].at.file);
  assert_int_equal(bind(s, ts_get_loop(s, "k"), TS_BLOCK_Y),
                   TS_ERR_BIND_REDUCTION);
  assert_null(ts_sched_error_location(s).file);
  assert_int_equal(strncmp(ts_sched_errmsg(s), "ts_bind: ", 9), 0);
  ts_sched_free(s);

  /* An error of no primitive, after a located call, names no location. */
  s = sched_of(8, 8, 8);
  assert_int_equal(ts_split(s, ts_get_loop(s, "i"), 2, &o, &i), TS_OK);
  ts_sched_fail(s, TS_ERR_BAD_ARG, "the program's own error");
  assert_null(ts_sched_error_location(s).file);
  assert_string_equal(ts_sched_errmsg(s), "the program's own error");
  ts_sched_free(s);
}

static void test_split_errors(void **state) {
  (void)state;
  ts_loop *o, *i;
  ts_sched *s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_split(s, ts_get_loop(s, "i"), 0, &o, &i), TS_ERR_BAD_FACTOR,
              "ts_split: argument 3 'factor' must be >= 1 (got 0) for loop \"i\"");
  assert_non_null(strstr(errmsg_text(s), "for i in 0..8:   <-- here"));
  ts_sched_free(s);

  /* The split's iterations, outer * factor + inner, are an int's. */
  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_split(s, ts_get_loop(s, "i"), INT64_MAX, &o, &i),
              TS_ERR_INDEX_OVERFLOW, "ts_split: argument 3 'factor' "
              "9223372036854775807 makes loop \"i\" of 8 iterations 1 x "
              "9223372036854775807, past the 2147483647 a kernel's int index "
              "holds");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  assert_int_equal(ts_split(s, ts_get_loop(s, "i"), 0x7fffffff, &o, &i), TS_OK);
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_split(s, NULL, 2, &o, &i), TS_ERR_NULL_ARG,
              "ts_split: argument 2 'loop' is NULL");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_split(s, ts_get_loop(s, "i"), 2, NULL, &i), TS_ERR_NULL_ARG,
              "ts_split: argument 4 'outer' is NULL");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  ts_sched *other = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_split(s, ts_get_loop(other, "i"), 2, &o, &i),
              TS_ERR_FOREIGN_LOOP, "ts_split: argument 2 'loop' (loop \"i\") "
              "belongs to another schedule");
  ts_sched_free(other);
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  ts_loop *orig = ts_get_loop(s, "i");
  assert_int_equal(ts_split(s, orig, 2, &o, &i), TS_OK);
  EXPECT_FAIL(ts_split(s, orig, 2, &o, &i), TS_ERR_LOOP_REPLACED,
              "ts_split: argument 2 'loop': loop \"i\" was replaced");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  assert_int_equal(ts_bind(s, ts_get_loop(s, "i"), TS_BLOCK_X), TS_OK);
  EXPECT_FAIL(ts_split(s, ts_get_loop(s, "i"), 2, &o, &i), TS_ERR_ALREADY_BOUND,
              "ts_split: loop \"i\" is already bound to blockIdx.x");
  ts_sched_free(s);
}

static void test_get_loop_errors(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  assert_null(ts_get_loop(s, "q"));
  assert_int_equal(ts_sched_status(s), TS_ERR_UNKNOWN_LOOP);
  assert_non_null(strstr(errmsg_text(s),
                         "ts_get_loop: no loop named \"q\" in schedule "
                         "\"custom\""));
  ts_sched_free(s);
}

/* A misspelt loop name: the loops there are, in nest order, and the
 * nearest (a match but for case first, else a few edits away). */
static void test_get_loop_suggests_the_nearest(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *o, *i;
  ts_split(s, ts_get_loop(s, "i"), 2, &o, &i);
  assert_null(ts_get_loop(s, "i.outr"));
  assert_string_equal(errmsg_text(s),
                      "ts_get_loop: no loop named \"i.outr\" in schedule "
                      "\"custom\"; did you mean \"i.outer\"? (loops: i.outer, "
                      "i.inner, j, k)");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  assert_null(ts_get_loop(s, "I"));
  assert_non_null(strstr(errmsg_text(s),
                         "did you mean \"i\"? (loops: i, j, k)"));
  ts_sched_free(s);
  /* Nothing near: the list alone. */
  s = sched_of(8, 8, 8);
  assert_null(ts_get_loop(s, "q"));
  assert_string_equal(errmsg_text(s),
                      "ts_get_loop: no loop named \"q\" in schedule "
                      "\"custom\" (loops: i, j, k)");
  ts_sched_free(s);
}

/* The status's fixed text, the headline `tessel check` prints, names the
 * first cause: a split past an int's index is an overflow, not a bad
 * factor. */
static void test_headline_names_the_overflow(void **state) {
  (void)state;
  ts_sched *s = sched_of(2147483647, 1, 1);
  ts_loop *o, *i;
  ts_split(s, ts_get_loop(s, "i"), 32, &o, &i);
  assert_non_null(strstr(errmsg_text(s), "past the 2147483647 a kernel's "
                         "int index holds"));
  ts_program *p = ts_lower(s);
  const char *headline = ts_strerror(ts_program_status(p));
  if (!strstr(headline, "overflow"))
    fail_msg("the headline \"%s\" does not say overflow", headline);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_fuse_errors(void **state) {
  (void)state;
  ts_loop *f;
  ts_sched *s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_fuse(s, ts_get_loop(s, "j"), ts_get_loop(s, "k"), &f),
              TS_ERR_MIXED_AXES, "ts_fuse: loop \"j\" is a spatial loop and "
              "\"k\" a reduction loop");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_fuse(s, ts_get_loop(s, "j"), ts_get_loop(s, "i"), &f),
              TS_ERR_NOT_ADJACENT, "ts_fuse: loop \"i\" must be the only "
              "statement in the body of loop \"j\"");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_fuse(s, ts_get_loop(s, "i"), ts_get_loop(s, "i"), &f),
              TS_ERR_DUPLICATE_LOOP, "ts_fuse: loop \"i\" is given twice");
  ts_sched_free(s);
}

static void test_reorder_errors(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *i = ts_get_loop(s, "i");
  EXPECT_FAIL(ts_reorder(s, 2, (ts_loop *[]){i, i}), TS_ERR_DUPLICATE_LOOP,
              "ts_reorder: loop \"i\" is given twice (loops[0] and loops[1])");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_reorder(s, 0, (ts_loop *[]){NULL}), TS_ERR_BAD_ARG,
              "ts_reorder: argument 2 'n' must be in 1..16 (got 0)");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  i = ts_get_loop(s, "i");
  ts_loop *j = ts_get_loop(s, "j");
  assert_int_equal(ts_bind(s, i, TS_THREAD_X), TS_OK);
  assert_int_equal(ts_bind(s, j, TS_BLOCK_X), TS_ERR_THREAD_OUTSIDE_BLOCK);
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  i = ts_get_loop(s, "i");
  j = ts_get_loop(s, "j");
  assert_int_equal(ts_bind(s, i, TS_BLOCK_X), TS_OK);
  assert_int_equal(ts_bind(s, j, TS_THREAD_X), TS_OK);
  EXPECT_FAIL(ts_reorder(s, 2, (ts_loop *[]){j, i}), TS_ERR_THREAD_OUTSIDE_BLOCK,
              "ts_reorder: block loop \"i\" would lie inside thread loop \"j\"");
  ts_sched_free(s);
}

static void test_bind_errors(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_bind(s, ts_get_loop(s, "k"), TS_THREAD_X), TS_ERR_BIND_REDUCTION,
              "ts_bind: loop \"k\" iterates the reduction axis k");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  assert_int_equal(ts_bind(s, ts_get_loop(s, "i"), TS_BLOCK_X), TS_OK);
  EXPECT_FAIL(ts_bind(s, ts_get_loop(s, "j"), TS_BLOCK_X), TS_ERR_TAG_BOUND_TWICE,
              "ts_bind: blockIdx.x is already bound to loop \"i\"");
  ts_sched_free(s);

  s = sched_of(64, 32, 8);
  assert_int_equal(ts_bind(s, ts_get_loop(s, "i"), TS_THREAD_Y), TS_OK);
  EXPECT_FAIL(ts_bind(s, ts_get_loop(s, "j"), TS_THREAD_X), TS_ERR_TOO_MANY_THREADS,
              "ts_bind: binding loop \"j\" to threadIdx.x makes 2048 threads "
              "per block, over the limit of 1024");
  ts_sched_free(s);

  s = sched_of(2000, 8, 8);
  EXPECT_FAIL(ts_bind(s, ts_get_loop(s, "i"), TS_THREAD_X), TS_ERR_LAUNCH_LIMIT,
              "ts_bind: loop \"i\" has extent 2000, over the limit of 1024 for "
              "threadIdx.x");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_bind(s, ts_get_loop(s, "i"), TS_UNROLLED), TS_ERR_BAD_TAG,
              "ts_bind: argument 3 'tag' must be TS_BLOCK_X/Y/Z or "
              "TS_THREAD_X/Y/Z (got 1)");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  ts_loop *i = ts_get_loop(s, "i"), *k = ts_get_loop(s, "k");
  assert_int_equal(ts_reorder(s, 2, (ts_loop *[]){k, i}), TS_OK);
  EXPECT_FAIL(ts_bind(s, ts_get_loop(s, "j"), TS_THREAD_X),
              TS_ERR_BOUND_INSIDE_REDUCTION,
              "ts_bind: bound loop \"j\" would lie inside reduction loop \"k\"");
  ts_sched_free(s);

  s = sched_of(8, 8, 8);
  assert_int_equal(ts_unroll(s, ts_get_loop(s, "k")), TS_OK);
  EXPECT_FAIL(ts_unroll(s, ts_get_loop(s, "k")), TS_ERR_ALREADY_BOUND,
              "ts_unroll: loop \"k\" is already unrolled");
  ts_sched_free(s);
}

static void test_rename_errors(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_rename(s, ts_get_loop(s, "i"), "9x"), TS_ERR_BAD_NAME,
              "ts_rename: argument 3 'name' must be a letter");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_rename(s, ts_get_loop(s, "i"), "j"), TS_ERR_NAME_TAKEN,
              "ts_rename: name \"j\" is reserved or taken");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_rename(s, ts_get_loop(s, "i"), "acc"), TS_ERR_NAME_TAKEN,
              "ts_rename: name \"acc\" is reserved or taken");
  ts_sched_free(s);
}

/* ts_matmul of g refuses it with `code` and exactly `msg`. */
static void expect_bad_definition(ts_gemm g, ts_status code, const char *msg) {
  ts_sched *s = ts_matmul(&g);
  assert_int_equal(ts_sched_status(s), code);
  assert_string_equal(errmsg_text(s), msg);
  ts_sched_free(s);
}

static void test_definition_errors(void **state) {
  (void)state;
  expect_bad_definition(ts_gemm_make(0, 5, 5), TS_ERR_BAD_SHAPE,
                        "ts_matmul: def->m must be in 1..2147483647 (got 0)");
  ts_gemm g = ts_gemm_make(5, 5, 5);
  g.layout = (ts_layout)7;
  expect_bad_definition(g, TS_ERR_BAD_LAYOUT, "ts_matmul: def->layout must "
                        "be TS_NN, TS_NT, TS_TN or TS_TT (got 7)");
  ts_sched *s = ts_matmul(NULL);
  assert_int_equal(ts_sched_status(s), TS_ERR_NULL_ARG);
  ts_sched_free(s);
  ts_sched_free(NULL);
  g = ts_gemm_make(5, 5, 5);
  g.acc_type = TS_F16;
  expect_bad_definition(g, TS_ERR_BAD_ARG, "ts_matmul: def->acc_type must be "
                        "TS_F32: products are summed in fp32 (got 1)");
  g = ts_gemm_make(5, 5, 5);
  g.b_type = (ts_dtype)3;
  expect_bad_definition(g, TS_ERR_BAD_ARG, "ts_matmul: def->b_type must be "
                        "TS_F32, TS_F16 or TS_BF16 (got 3)");
}

static void test_errors_are_sticky(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *i = ts_get_loop(s, "i"), *o, *n;
  assert_int_equal(ts_split(s, i, -3, &o, &n), TS_ERR_BAD_FACTOR);
  const char *first = errmsg_text(s);
  /* A valid call after the error does nothing and keeps the first error. */
  assert_int_equal(ts_split(s, i, 2, &o, &n), TS_ERR_BAD_FACTOR);
  assert_null(o);
  assert_int_equal(ts_bind(s, i, TS_BLOCK_X), TS_ERR_BAD_FACTOR);
  assert_int_equal(i->kind, TS_SERIAL);
  assert_ptr_equal(errmsg_text(s), first);
  assert_null(ts_print_ir(s));
  assert_null(ts_cuda_source(s));
  char msg[256];
  assert_int_equal(ts_check(s, 1, msg, sizeof(msg)), TS_ERR_BAD_FACTOR);
  ts_sched_free(s);
}

/* ---- Trace ------------------------------------------------------------------- */

/* alpha and beta print as C float literals (2.0f, not 2f). */
static void test_trace_prints_alpha_and_beta_as_c(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  g.alpha = 2.0f;
  g.beta = -0.5f;
  ts_sched *s = ts_matmul(&g);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "def.alpha = 2.0f;\ndef.beta = -0.5f;\n"));
  free(trace);
  ts_sched_free(s);
}

static void test_trace_prints_c_and_replays(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(37, 53, 29);
  g.layout = TS_NT;
  ts_sched *s = ts_builtin_schedule("coalesced", &g);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_loop *k = ts_get_loop(s, "k"), *ko, *ki;
  assert_int_equal(ts_split(s, k, 4, &ko, &ki), TS_OK);
  assert_int_equal(ts_unroll(s, ki), TS_OK);
  assert_int_equal(ts_rename(s, ko, "kt"), TS_OK);
  char *trace = ts_print_trace(s);
  assert_string_equal(trace,
      "/* schedule \"coalesced\" */\n"
      "ts_gemm def = ts_gemm_make(37, 53, 29);\n"
      "def.layout = TS_NT;\n"
      "ts_sched *s = ts_matmul_named(&def, \"coalesced\");\n"
      "ts_loop *i = ts_get_loop(s, \"i\");\n"
      "ts_loop *j = ts_get_loop(s, \"j\");\n"
      "ts_loop *k = ts_get_loop(s, \"k\");\n"
      "ts_loop *i_outer, *i_inner;\n"
      "ts_split(s, i, 32, &i_outer, &i_inner);\n"
      "ts_loop *j_outer, *j_inner;\n"
      "ts_split(s, j, 32, &j_outer, &j_inner);\n"
      "ts_reorder(s, 4, (ts_loop *[]){i_outer, j_outer, i_inner, j_inner});\n"
      "ts_bind(s, i_outer, TS_BLOCK_Y);\n"
      "ts_bind(s, j_outer, TS_BLOCK_X);\n"
      "ts_bind(s, i_inner, TS_THREAD_Y);\n"
      "ts_bind(s, j_inner, TS_THREAD_X);\n"
      "ts_loop *k_outer, *k_inner;\n"
      "ts_split(s, k, 4, &k_outer, &k_inner);\n"
      "ts_unroll(s, k_inner);\n"
      "ts_rename(s, k_outer, \"kt\");\n");
  free(trace);
  assert_replays(s);
  ts_sched_free(s);
}

/* 64x64x8 with ti x tj threads a block, the blocks bound or not. */
static ts_sched *thread_tiles(int64_t ti, int64_t tj, bool blocks) {
  ts_sched *s = sched_of(64, 64, 8);
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), ti, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), tj, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  if (blocks) {
    ts_bind(s, io, TS_BLOCK_Y);
    ts_bind(s, jo, TS_BLOCK_X);
  }
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

/* Blocks per multiprocessor: __launch_bounds__'s second argument, in the
 * trace, checked against the threads a multiprocessor holds. */
static void test_min_blocks_per_sm(void **state) {
  (void)state;
  ts_sched *s = thread_tiles(4, 16, true);
  char *cu = ts_cuda_source(s);
  assert_non_null(strstr(cu, "__launch_bounds__(64)\n"));
  free(cu);
  EXPECT_FAIL(ts_min_blocks_per_sm(s, 0), TS_ERR_BAD_ARG,
              "ts_min_blocks_per_sm: argument 2 'blocks' must be in 1..32 "
              "(got 0)");
  ts_sched_free(s);
  s = sched_of(64, 64, 8);
  EXPECT_FAIL(ts_min_blocks_per_sm(s, 33), TS_ERR_BAD_ARG,
              "ts_min_blocks_per_sm: argument 2 'blocks' must be in 1..32 "
              "(got 33)");
  ts_sched_free(s);
  s = thread_tiles(4, 16, false);
  assert_int_equal(ts_min_blocks_per_sm(s, 3), TS_OK);
  assert_int_equal(ts_min_blocks_per_sm(s, 2), TS_OK); /* the last holds */
  cu = ts_cuda_source(s);
  assert_non_null(strstr(cu, "__launch_bounds__(64, 2)\n"));
  char *t = ts_print_trace(s);
  assert_non_null(strstr(t, "ts_min_blocks_per_sm(s, 2);\n"));
  ts_sched *r = sched_of(64, 64, 8);
  assert_int_equal(ts_replay(s, r), TS_OK);
  char *again = ts_cuda_source(r);
  assert_string_equal(strchr(cu, '\n'), strchr(again, '\n'));
  free(again);
  free(t);
  free(cu);
  assert_checks(s, 7);
  ts_sched_free(r);
  ts_sched_free(s);
  /* 3 blocks of 1024 threads do not fit: refused when lowered. */
  s = thread_tiles(32, 32, false);
  ts_min_blocks_per_sm(s, 3);
  assert_null(ts_print_ir(s));
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_RESOURCES);
  assert_string_equal(ts_program_errmsg(p),
                      "ts_lower: ts_min_blocks_per_sm asks for 3 blocks of "
                      "1024 threads on one multiprocessor, 3072 threads; it "
                      "holds at most 2048");
  /* Lowering's refusal is the program's; the schedule stays as it was. */
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_program_free(p);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_loop_suggests_the_nearest),
      cmocka_unit_test(test_headline_names_the_overflow),
      cmocka_unit_test(test_split_divisible_has_no_guard),
      cmocka_unit_test(test_split_remainder_is_guarded),
      cmocka_unit_test(test_split_factor_past_extent),
      cmocka_unit_test(test_fuse_divides_and_wraps),
      cmocka_unit_test(test_reorder_moves_k_out_and_tiles_acc),
      cmocka_unit_test(test_bind_and_unroll_mark_loops),
      cmocka_unit_test(test_rename_shows_in_ir_and_codegen),
      cmocka_unit_test(test_error_names_the_call),
      cmocka_unit_test(test_plain_calls_have_no_location),
      cmocka_unit_test(test_split_errors),
      cmocka_unit_test(test_get_loop_errors),
      cmocka_unit_test(test_fuse_errors),
      cmocka_unit_test(test_reorder_errors),
      cmocka_unit_test(test_bind_errors),
      cmocka_unit_test(test_rename_errors),
      cmocka_unit_test(test_definition_errors),
      cmocka_unit_test(test_errors_are_sticky),
      cmocka_unit_test(test_trace_prints_c_and_replays),
      cmocka_unit_test(test_trace_prints_alpha_and_beta_as_c),
      cmocka_unit_test(test_min_blocks_per_sm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
