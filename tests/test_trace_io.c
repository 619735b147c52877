/*
 * A schedule saved as text (ts_trace_save) and loaded onto a fresh one
 * (ts_trace_load) is the schedule saved: every built-in schedule and every
 * configuration of every built-in space, pruned ones included, gives the
 * same lowered IR, trace, steps, status, message and the locations of
 * the primitives' calls.  Text cut short loads as the
 * records it has; text of another definition or not a trace is refused;
 * saving into a short buffer works as snprintf does; ts_sched_fail keeps
 * the first error and its message whole.
 */
#include "helpers.h"

/* The text of s, malloc'd. */
static char *saved(const ts_sched *s, size_t *len) {
  *len = ts_trace_save(s, NULL, 0);
  char *text = malloc(*len + 1);
  assert_non_null(text);
  assert_int_equal(ts_trace_save(s, text, *len + 1), *len);
  assert_int_equal(strlen(text), *len);
  return text;
}

/* The same text of two strings, either of which may be NULL. */
static void assert_same_text(char *a, char *b, const char *what) {
  if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
    fail_msg("%s differs after the round trip:\n%s\n---\n%s", what,
             a ? a : "(none)", b ? b : "(none)");
  free(a);
  free(b);
}

/* s saved and loaded onto a fresh schedule of its definition and name is
 * the same schedule. */
static void assert_round_trip(ts_sched *s) {
  size_t len;
  char *text = saved(s, &len);
  ts_sched *back = ts_matmul_named(ts_sched_gemm(s), ts_sched_name(s));
  bool complete = false;
  assert_int_equal(ts_trace_load(back, text, len, &complete),
                   ts_sched_status(s));
  assert_true(complete);
  assert_int_equal(ts_sched_status(back), ts_sched_status(s));
  assert_string_equal(ts_sched_errmsg(back), ts_sched_errmsg(s));
  ts_location at = ts_sched_error_location(s);
  ts_location back_at = ts_sched_error_location(back);
  assert_true((at.file == NULL) == (back_at.file == NULL));
  if (at.file)
    assert_string_equal(back_at.file, at.file);
  assert_int_equal(back_at.line, at.line);
  assert_same_text(ts_print_steps(s), ts_print_steps(back), "the steps");
  assert_same_text(ts_print_ir(s), ts_print_ir(back), "the IR");
  assert_same_text(ts_print_trace(s), ts_print_trace(back), "the trace");
  size_t again_len;
  char *again = saved(back, &again_len);
  assert_string_equal(again, text);
  free(again);
  free(text);
  ts_sched_free(back);
}

/* The definition a schedule or space runs at: f16 where it tensorizes. */
static ts_gemm def_for(bool tensor_cores) {
  ts_gemm g = ts_gemm_make(67, 45, 21);
  g.layout = TS_TN;
  if (tensor_cores) {
    g = ts_gemm_make(256, 128, 64);
    g.a_type = g.b_type = TS_F16;
  }
  return g;
}

static void test_every_builtin(void **state) {
  (void)state;
  for (int i = 0; i < ts_builtin_count(); i++) {
    const ts_builtin *b = ts_builtin_at(i);
    ts_gemm g = def_for(b->tensor_cores);
    ts_sched *s = ts_builtin_schedule(b->name, &g);
    assert_int_equal(ts_sched_status(s), TS_OK);
    assert_round_trip(s);
    ts_sched_free(s);
  }
}

static void test_every_space_configuration(void **state) {
  (void)state;
  int total = 0;
  for (int i = 0; i < ts_space_count(); i++) {
    const ts_space *sp = ts_space_at(i);
    ts_gemm g = def_for(sp->tensor_cores);
    ts_config **cs;
    int n = ts_space_enumerate(sp, &g, 0, &cs);
    assert_true(n > 0);
    for (int c = 0; c < n; c++) {
      ts_sched *s = ts_space_schedule(sp, &g, cs[c]);
      assert_round_trip(s);
      ts_sched_free(s);
    }
    total += n;
    ts_space_free_configs(cs, n);
  }
  assert_true(total > ts_space_count());
}

/* A schedule whose primitive failed: the status and the whole message,
 * nest and all (longer than a formatted line), come back. */
static void test_error_comes_back(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 64, 64);
  ts_sched *s = ts_builtin_schedule("warptiled", &g);
  ts_loop *x, *y;
  assert_int_not_equal(ts_split(s, ts_get_loop(s, "k.outer"), 0, &x, &y),
                       TS_OK);
  assert_true(strlen(ts_sched_errmsg(s)) > 512);
  assert_round_trip(s);
  ts_sched_free(s);
}

/* Where each primitive was called comes back: the steps name the lines,
 * and the error its line, as a compiler's message does. */
static void test_locations_come_back(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 64, 64);
  ts_sched *s = ts_matmul_named(&g, "located");
  ts_loop *io, *ii, *x, *y;
  int line = __LINE__ + 1;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  ts_bind(s, io, TS_BLOCK_Y);
  char *steps = ts_print_steps(s);
  assert_non_null(steps);
  ts_split(s, ts_get_loop(s, "j"), 0, &x, &y);
  size_t len;
  char *text = saved(s, &len);
  ts_sched *back = ts_matmul_named(&g, "located");
  assert_int_equal(ts_trace_load(back, text, len, NULL), TS_ERR_BAD_FACTOR);
  ts_location at = ts_sched_error_location(back);
  assert_non_null(at.file);
  assert_string_equal(at.file, __FILE__);
  assert_int_equal(at.line, line + 4);
  char want[512];
  snprintf(want, sizeof(want), "%s:%d: error: ts_split: argument 3 'factor' "
           "must be >= 1 (got 0) for loop \"j\"\n", __FILE__, line + 4);
  assert_int_equal(strncmp(ts_sched_errmsg(back), want, strlen(want)), 0);
  /* The steps of the records before the error, loaded back. */
  ts_sched *good = ts_matmul_named(&g, "located");
  char *cut = strstr(text, "status");
  assert_non_null(cut);
  assert_int_equal(ts_trace_load(good, text, (size_t)(cut - text), NULL),
                   TS_OK);
  char *back_steps = ts_print_steps(good);
  assert_non_null(back_steps);
  assert_string_equal(back_steps, steps);
  snprintf(want, sizeof(want), "\n%s:%d: step 2: ts_bind(s, i_outer, "
           "TS_BLOCK_Y);\n", __FILE__, line + 1);
  if (!strstr(back_steps, want))
    fail_msg("no \"%s\" in:\n%s", want, back_steps);
  free(back_steps);
  free(steps);
  free(text);
  ts_sched_free(good);
  ts_sched_free(back);
  ts_sched_free(s);
}

/* Every prefix of the text loads as the whole records in it, never an
 * error; only the whole text is complete. */
static void test_text_cut_short(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 128, 128);
  ts_sched *s = ts_builtin_schedule("smem32", &g);
  assert_int_equal(ts_sched_status(s), TS_OK);
  size_t len;
  char *text = saved(s, &len);
  int records = 0;
  for (size_t cut = 0; cut <= len; cut++) {
    ts_sched *back = ts_matmul_named(&g, "smem32");
    bool complete = true;
    assert_int_equal(ts_trace_load(back, text, cut, &complete), TS_OK);
    assert_int_equal(complete, cut == len);
    char *t = ts_print_trace(back);
    assert_non_null(t);
    int lines = 0;
    for (char *p = t; (p = strchr(p, '\n')); p++)
      lines++;
    assert_true(lines >= records); /* records only ever added */
    records = lines;
    free(t);
    ts_sched_free(back);
  }
  free(text);
  ts_sched_free(s);
}

static void assert_load_refused(ts_sched *onto, const char *text,
                                const char *why) {
  assert_int_equal(ts_trace_load(onto, text, strlen(text), NULL),
                   TS_ERR_BAD_ARG);
  if (!strstr(ts_sched_errmsg(onto), why))
    fail_msg("'%s' lacks '%s'", ts_sched_errmsg(onto), why);
  ts_sched_free(onto);
}

static void test_other_text_refused(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 64, 64), other = ts_gemm_make(64, 64, 32);
  ts_sched *s = ts_builtin_schedule("naive", &g);
  size_t len;
  char *text = saved(s, &len);
  assert_load_refused(ts_matmul(&other), text, "of onto's definition "
                      "(64x64x32 NN)");
  assert_load_refused(ts_matmul(&g), "hello\n", "not a trace");
  char *bad = malloc(len + 16);
  assert_non_null(bad);
  char *second = strchr(text, '\n') + 1;
  snprintf(bad, len + 16, "%.*sr x\n%s", (int)(second - text), text, second);
  assert_load_refused(ts_matmul(&g), bad, "line 2 is not a record");
  free(bad);
  ts_sched *used = ts_builtin_schedule("naive", &g);
  assert_load_refused(used, text, "must be a fresh ts_matmul schedule");
  assert_int_equal(ts_trace_load(NULL, text, len, NULL), TS_ERR_NULL_ARG);
  free(text);
  ts_sched_free(s);
}

/* snprintf's way: the whole length returned, a prefix written. */
static void test_save_into_a_short_buffer(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 64, 64);
  ts_sched *s = ts_builtin_schedule("coalesced", &g);
  size_t len;
  char *text = saved(s, &len);
  char small[20];
  assert_int_equal(ts_trace_save(s, small, sizeof(small)), len);
  assert_int_equal(strlen(small), sizeof(small) - 1);
  assert_memory_equal(small, text, sizeof(small) - 1);
  assert_int_equal(ts_trace_save(NULL, small, sizeof(small)), 0);
  assert_string_equal(small, "");
  free(text);
  ts_sched_free(s);
}

static void test_sched_fail(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 64, 64);
  ts_sched *s = ts_matmul(&g);
  assert_int_equal(ts_sched_fail(s, TS_ERR_SCHEDULE_FAULT, "it crashed"),
                   TS_ERR_SCHEDULE_FAULT);
  assert_int_equal(ts_sched_fail(s, TS_ERR_BAD_ARG, "later"),
                   TS_ERR_SCHEDULE_FAULT);
  assert_string_equal(ts_sched_errmsg(s), "it crashed");
  ts_loop *x, *y;
  assert_int_equal(ts_split(s, ts_get_loop(s, "i"), 4, &x, &y),
                   TS_ERR_SCHEDULE_FAULT);
  ts_sched_free(s);
  s = ts_matmul(&g);
  assert_int_equal(ts_sched_fail(s, TS_OK, NULL), TS_ERR_BAD_ARG);
  assert_string_equal(ts_sched_errmsg(s), ts_strerror(TS_ERR_BAD_ARG));
  ts_sched_free(s);
  assert_int_equal(ts_sched_fail(NULL, TS_ERR_BAD_ARG, "x"), TS_ERR_NULL_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_builtin),
      cmocka_unit_test(test_every_space_configuration),
      cmocka_unit_test(test_error_comes_back),
      cmocka_unit_test(test_locations_come_back),
      cmocka_unit_test(test_text_cut_short),
      cmocka_unit_test(test_other_text_refused),
      cmocka_unit_test(test_save_into_a_short_buffer),
      cmocka_unit_test(test_sched_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
