/*
 * ts_sched_diagnostic: a refused primitive's error as a compiler prints
 * one, its column and underline found in the file (the call with libclang,
 * the primitive's name without: TESSEL_LIBCLANG=off), a tab before the
 * call kept under it; the message as it is where the place is not known
 * or the call not found.  With TS_NO_CALL_LOCATIONS the primitives are
 * plain functions, and the _at forms take a location given by hand.
 */
#define TS_NO_CALL_LOCATIONS
#include "helpers.h"

#include "builtins/call_site.h"
#include "schedule/sched.h"

/* A source file whose line 3 calls ts_split, a tab before the call. */
static const char source[] =
    "#include <tessel.h>\n"
    "void f(ts_sched *s, ts_loop *a, ts_loop *b) {\n"
    "\tts_split(s, ts_get_loop(s, \"i\"), 0, &a, &b);\n"
    "}\n";

static int make_source(void **state) {
  static char path[64];
  if (make_temp_file(path, sizeof(path), "tessel-diagnostic") != 0)
    return -1;
  FILE *fp = fopen(path, "w");
  if (!fp || fputs(source, fp) < 0 || fclose(fp) != 0)
    return -1;
  *state = path;
  return 0;
}

static int remove_source(void **state) {
  unlink(*state);
  return 0;
}

/* The diagnostic of ts_split(..., 0, ...) called at `file`'s line 3. */
static char *diagnostic_at(const char *file) {
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul(&g);
  ts_loop *a, *b;
  ts_split_at(file, 3, s, ts_get_loop(s, "i"), 0, &a, &b);
  char *text = ts_sched_diagnostic(s);
  ts_sched_free(s);
  assert_non_null(text);
  return text;
}

static void assert_diagnostic(const char *file, const char *underline) {
  char want[1024];
  snprintf(want, sizeof(want),
           "%s:3:2: error: ts_split: argument 3 'factor' must be >= 1 (got "
           "0) for loop \"i\"\n"
           "    3 | \tts_split(s, ts_get_loop(s, \"i\"), 0, &a, &b);\n"
           "      | \t%s\n"
           "  for i in 0..8:   <-- here\n"
           "    for j in 0..8:\n"
           "      for k in 0..8:\n"
           "        C[i, j] += A[i, k] * B[k, j]",
           file, underline);
  char *text = diagnostic_at(file);
  assert_string_equal(text, want);
  free(text);
}

static void test_without_libclang_the_name(void **state) {
  setenv("TESSEL_LIBCLANG", "off", 1);
  assert_diagnostic(*state, "^~~~~~~~");
  unsetenv("TESSEL_LIBCLANG");
}

/* Where the machine has libclang (scripts/setup.sh installs it); skipped,
 * and reported so, where it has none. */
static void test_with_libclang_the_call(void **state) {
  unsetenv("TESSEL_LIBCLANG");
  if (!call_site_has_libclang()) {
    print_message("libclang is not installed (libclang1-14): skipped\n");
    skip();
  }
  char underline[64] = "^"; /* the call's 43 characters */
  for (int c = 1; c < 43; c++)
    strcat(underline, "~");
  assert_diagnostic(*state, underline);
}

/* No place, no file or no call there: the message as it is. */
static void test_the_message_as_it_is(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul(&g);
  assert_null(ts_sched_diagnostic(s)); /* not in error */
  assert_null(ts_sched_diagnostic(NULL));
  ts_loop *a, *b;
  ts_split(s, ts_get_loop(s, "i"), 0, &a, &b); /* a plain call */
  assert_null(s->err_at.file);
  char *text = ts_sched_diagnostic(s);
  assert_string_equal(text, ts_sched_errmsg(s));
  free(text);
  ts_sched_free(s);
  text = diagnostic_at("/nonexistent/tessel-diagnostic.c");
  assert_int_equal(strncmp(text, "/nonexistent/tessel-diagnostic.c:3: "
                           "error: ts_split: ", 53), 0);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_without_libclang_the_name,
                                      make_source, remove_source),
      cmocka_unit_test_setup_teardown(test_with_libclang_the_call,
                                      make_source, remove_source),
      cmocka_unit_test(test_the_message_as_it_is),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
