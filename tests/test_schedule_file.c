/*
 * Schedule files: a C file of TS_SCHEDULE and TS_SPACE definitions
 * compiled with the system compiler, loaded, its schedules and its space's
 * configurations correct on the reference executor; the hash of its text;
 * the object cached by content (a second open runs no compiler) and by the
 * headers it includes (an edited header compiles it again, and changes the
 * hash), a compile
 * error with the compiler's diagnostics (whole, however long, and a hint
 * where the file does not include tessel.h), a file with neither schedule
 * nor space, a space named as a built-in is, a missing file; two files of
 * one text, and one file opened twice, each defining its own.
 */
#include "helpers.h"

#include <dirent.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static const char *two_schedules =
    "#include <tessel.h>\n"
    "TS_SCHEDULE(rows, \"a thread a row\") {\n"
    "  ts_loop *io, *ii;\n"
    "  ts_split(s, ts_get_loop(s, \"i\"), 32, &io, &ii);\n"
    "  ts_bind(s, io, TS_BLOCK_X);\n"
    "  ts_bind(s, ii, TS_THREAD_X);\n"
    "  return ts_sched_status(s);\n"
    "}\n"
    "TS_SCHEDULE(tiles, \"8x8 blocks\") {\n"
    "  ts_loop *io, *ii, *jo, *ji;\n"
    "  ts_split(s, ts_get_loop(s, \"i\"), 8, &io, &ii);\n"
    "  ts_split(s, ts_get_loop(s, \"j\"), 8, &jo, &ji);\n"
    "  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});\n"
    "  ts_bind(s, io, TS_BLOCK_Y);\n"
    "  ts_bind(s, jo, TS_BLOCK_X);\n"
    "  ts_bind(s, ii, TS_THREAD_Y);\n"
    "  ts_bind(s, ji, TS_THREAD_X);\n"
    "  return ts_sched_status(s);\n"
    "}\n";

/* A schedule and a space of 2 x 2 x 2 tiles, of which the 4-row thread
 * tiles of 4-row blocks are pruned by a constraint. */
static const char *schedule_and_space =
    "#include <tessel.h>\n"
    "static ts_status tiled(ts_sched *s, int64_t bm, int64_t bn, int64_t tm) {\n"
    "  ts_loop *io, *ir, *ty, *ti, *jo, *tx;\n"
    "  ts_split(s, ts_get_loop(s, \"i\"), bm, &io, &ir);\n"
    "  ts_split(s, ir, tm, &ty, &ti);\n"
    "  ts_split(s, ts_get_loop(s, \"j\"), bn, &jo, &tx);\n"
    "  ts_reorder(s, 5, (ts_loop *[]){io, jo, ty, tx, ti});\n"
    "  ts_bind(s, io, TS_BLOCK_Y);\n"
    "  ts_bind(s, jo, TS_BLOCK_X);\n"
    "  ts_bind(s, ty, TS_THREAD_Y);\n"
    "  ts_bind(s, tx, TS_THREAD_X);\n"
    "  ts_unroll(s, ti);\n"
    "  return ts_sched_status(s);\n"
    "}\n"
    "TS_SCHEDULE(tile8, \"8x8 blocks, 2 rows a thread\") {\n"
    "  return tiled(s, 8, 8, 2);\n"
    "}\n"
    "TS_SPACE(tiles, \"tile8's tiles\") {\n"
    "  int64_t bm = ts_knob(c, \"bm\", 2, (int64_t[]){8, 4});\n"
    "  int64_t bn = ts_knob(c, \"bn\", 2, (int64_t[]){8, 16});\n"
    "  int64_t tm = ts_knob(c, \"tm\", 2, (int64_t[]){2, 4});\n"
    "  ts_knob_require(c, bm / tm >= 2, \"%lld rows of threads\",\n"
    "                  (long long)(bm / tm));\n"
    "  return tiled(s, bm, bn, tm);\n"
    "}\n";

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/tessel-test-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  char cache[128];
  snprintf(cache, sizeof(cache), "%s/cache", dir);
  setenv("TESSEL_CACHE_DIR", cache, 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* dir/name with the text; its path in a static buffer. */
static const char *write_file(const char *name, const char *text) {
  static char path[128];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static void assert_schedule_runs(const ts_builtin *def, int64_t m, int64_t n,
                                 int64_t k) {
  assert_non_null(def);
  ts_gemm g = ts_gemm_make(m, n, k);
  ts_sched *s = ts_matmul_named(&g, def->name);
  assert_int_equal(def->apply(s), TS_OK);
  assert_checks(s, 5);
  ts_sched_free(s);
}

static void test_schedules_of_a_file(void **state) {
  (void)state;
  const char *path = write_file("two.c", two_schedules);
  ts_schedule_file *f = ts_schedule_file_open(path);
  if (ts_schedule_file_status(f) != TS_OK)
    fail_msg("%s", ts_schedule_file_errmsg(f));
  assert_int_equal(ts_schedule_file_count(f), 2);
  assert_string_equal(ts_schedule_file_at(f, 0)->name, "rows");
  assert_string_equal(ts_schedule_file_at(f, 1)->summary, "8x8 blocks");
  assert_null(ts_schedule_file_find(f, "cols"));
  assert_schedule_runs(ts_schedule_file_find(f, "rows"), 37, 53, 29);
  assert_schedule_runs(ts_schedule_file_find(f, "tiles"), 1, 1, 1);
  assert_schedule_runs(ts_schedule_file_find(f, "tiles"), 17, 9, 3);
  ts_schedule_file_close(f);
}

static bool is_hex16(const char *h) {
  if (strlen(h) != 16)
    return false;
  for (int i = 0; i < 16; i++)
    if (!strchr("0123456789abcdef", h[i]))
      return false;
  return true;
}

/* A file's space: found by name, its first configuration the file's fixed
 * schedule, every configuration enumerated (the constraint prunes two) and
 * correct on the reference executor at an odd shape. */
static void test_a_space_in_a_file(void **state) {
  (void)state;
  const char *path = write_file("space.c", schedule_and_space);
  ts_schedule_file *f = ts_schedule_file_open(path);
  if (ts_schedule_file_status(f) != TS_OK)
    fail_msg("%s", ts_schedule_file_errmsg(f));
  assert_int_equal(ts_schedule_file_count(f), 1);
  assert_int_equal(ts_schedule_file_space_count(f), 1);
  const ts_space *sp = ts_schedule_file_space_find(f, "tiles");
  assert_non_null(sp);
  assert_ptr_equal(ts_schedule_file_space_at(f, 0), sp);
  assert_null(ts_schedule_file_space_at(f, 1));
  assert_null(ts_schedule_file_space_find(f, "tile8"));
  assert_null(ts_schedule_file_find(f, "tiles"));
  assert_string_equal(sp->summary, "tile8's tiles");
  assert_true(is_hex16(ts_schedule_file_hash(f)));

  ts_gemm g = ts_gemm_make(19, 23, 7);
  ts_sched *first = ts_space_schedule(sp, &g, NULL);
  ts_sched *fixed = ts_matmul_named(&g, "tiles");
  assert_int_equal(ts_schedule_file_find(f, "tile8")->apply(fixed), TS_OK);
  char *a = ts_print_ir(first), *b = ts_print_ir(fixed);
  assert_non_null(a);
  assert_string_equal(a, b);
  free(a);
  free(b);
  ts_sched_free(first);
  ts_sched_free(fixed);

  ts_config **cs;
  int n = ts_space_enumerate(sp, &g, 0, &cs);
  assert_int_equal(n, 8);
  int pruned = 0;
  for (int i = 0; i < n; i++) {
    ts_sched *s = ts_space_schedule(sp, &g, cs[i]);
    const char *why = ts_config_pruned(cs[i]);
    if (why) {
      pruned++;
      assert_string_equal(why, "1 rows of threads");
      assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
    } else {
      assert_checks(s, 3);
    }
    ts_sched_free(s);
  }
  assert_int_equal(pruned, 2);
  ts_space_free_configs(cs, n);
  ts_schedule_file_close(f);
}

/* The hash is of the text: an edit changes it, the same text under another
 * name does not. */
static void test_hash_follows_the_text(void **state) {
  (void)state;
  ts_schedule_file *f = ts_schedule_file_open(write_file("h1.c",
                                              schedule_and_space));
  ts_schedule_file *same = ts_schedule_file_open(write_file("h2.c",
                                                 schedule_and_space));
  char edited[4096];
  snprintf(edited, sizeof(edited), "%s/* tried bm=16 */\n",
           schedule_and_space);
  ts_schedule_file *other = ts_schedule_file_open(write_file("h3.c", edited));
  assert_int_equal(ts_schedule_file_status(other), TS_OK);
  assert_string_equal(ts_schedule_file_hash(f), ts_schedule_file_hash(same));
  assert_string_not_equal(ts_schedule_file_hash(f),
                          ts_schedule_file_hash(other));
  ts_schedule_file_close(f);
  ts_schedule_file_close(same);
  ts_schedule_file_close(other);
}

/* A space alone is enough; a space named as a built-in space or schedule
 * is refused, naming which. */
static void test_space_names(void **state) {
  (void)state;
  const char *body = "{ (void)c; return ts_sched_status(s); }\n";
  const char *cases[][2] = {
      {"lonely", NULL},
      {"warptiled", "defines a space 'warptiled', the name of a built-in "
                    "space; rename it"},
      {"naive", "defines a space 'naive', the name of a built-in schedule; "
                "rename it"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char text[512], file[64];
    snprintf(text, sizeof(text), "#include <tessel.h>\nTS_SPACE(%s, \"x\") "
             "%s", cases[i][0], body);
    snprintf(file, sizeof(file), "named_%s.c", cases[i][0]);
    ts_schedule_file *f = ts_schedule_file_open(write_file(file, text));
    if (!cases[i][1]) {
      assert_int_equal(ts_schedule_file_status(f), TS_OK);
      assert_int_equal(ts_schedule_file_count(f), 0);
      assert_int_equal(ts_schedule_file_space_count(f), 1);
    } else {
      assert_int_equal(ts_schedule_file_status(f), TS_ERR_BAD_ARG);
      assert_non_null(strstr(ts_schedule_file_errmsg(f), cases[i][1]));
      assert_int_equal(ts_schedule_file_space_count(f), 0);
    }
    ts_schedule_file_close(f);
  }
}

/* The inode of the one object in the cache (0 for none, -1 for more). */
static long cached_object(void) {
  char path[160];
  snprintf(path, sizeof(path), "%s/cache/schedules", dir);
  DIR *d = opendir(path);
  assert_non_null(d);
  long ino = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".so"))
      ino = ino ? -1 : (long)e->d_ino;
  closedir(d);
  return ino;
}

/* The second open loads the object the first compiled (the same file, no
 * compile: a compile renames a new file into place); the compiler is part
 * of the key. */
static void test_object_cached_by_content(void **state) {
  (void)state;
  char cmd[160];
  snprintf(cmd, sizeof(cmd), "rm -rf %s/cache", dir);
  assert_int_equal(system(cmd), 0);
  const char *path = write_file("cached.c", two_schedules);
  ts_schedule_file *f = ts_schedule_file_open(path);
  assert_int_equal(ts_schedule_file_status(f), TS_OK);
  ts_schedule_file_close(f);
  long first = cached_object();
  assert_true(first > 0);
  f = ts_schedule_file_open(path);
  assert_int_equal(ts_schedule_file_status(f), TS_OK);
  assert_int_equal(ts_schedule_file_count(f), 2);
  ts_schedule_file_close(f);
  assert_int_equal(cached_object(), first);
  setenv("CC", "/nonexistent/cc", 1);
  f = ts_schedule_file_open(path);
  unsetenv("CC");
  assert_int_equal(ts_schedule_file_status(f), TS_ERR_IO);
  assert_non_null(strstr(ts_schedule_file_errmsg(f),
                         "cannot run the C compiler '/nonexistent/cc'"));
  ts_schedule_file_close(f);
}

/* The trace of the file's only schedule at 64^3. */
static char *trace_of_file(ts_schedule_file *f) {
  if (ts_schedule_file_status(f) != TS_OK)
    fail_msg("%s", ts_schedule_file_errmsg(f));
  ts_gemm g = ts_gemm_make(64, 64, 64);
  ts_sched *s = ts_matmul_named(&g, "tiled");
  assert_int_equal(ts_schedule_file_at(f, 0)->apply(s), TS_OK);
  char *t = ts_print_trace(s);
  ts_sched_free(s);
  return t;
}

/* A header the file includes keys its object and its hash: edited, the
 * file compiles again with it (the object cached for the old text is not
 * loaded), and the hash names another version; put back, the first. */
static void test_included_header_keys_the_object(void **state) {
  (void)state;
  write_file("tile.h", "#define TILE 32\n");
  char path[128];
  snprintf(path, sizeof(path), "%s", write_file("tiled.c",
      "#include <tessel.h>\n"
      "#include \"tile.h\"\n"
      "TS_SCHEDULE(tiled, \"TILE rows a block\") {\n"
      "  ts_loop *io, *ii;\n"
      "  ts_split(s, ts_get_loop(s, \"i\"), TILE, &io, &ii);\n"
      "  return ts_sched_status(s);\n"
      "}\n"));
  char hashes[3][17];
  const char *tiles[] = {"32", "16", "32"};
  for (int i = 0; i < 3; i++) {
    char header[64];
    snprintf(header, sizeof(header), "#define TILE %s\n", tiles[i]);
    write_file("tile.h", header);
    ts_schedule_file *f = ts_schedule_file_open(path);
    char *t = trace_of_file(f), want[64];
    snprintf(want, sizeof(want), "ts_split(s, i, %s, ", tiles[i]);
    if (!strstr(t, want))
      fail_msg("with TILE %s the trace reads:\n%s", tiles[i], t);
    free(t);
    snprintf(hashes[i], sizeof(hashes[i]), "%s", ts_schedule_file_hash(f));
    ts_schedule_file_close(f);
  }
  assert_string_not_equal(hashes[0], hashes[1]);
  assert_string_equal(hashes[0], hashes[2]);
}

static void test_compile_error_shows_diagnostics(void **state) {
  (void)state;
  const char *path = write_file("bad.c", "#include <tessel.h>\n"
                                         "TS_SCHEDULE(oops, \"x\") {\n"
                                         "  ts_split(s);\n"
                                         "  return 0;\n"
                                         "}\n");
  ts_schedule_file *f = ts_schedule_file_open(path);
  assert_int_equal(ts_schedule_file_status(f), TS_ERR_BAD_ARG);
  const char *msg = ts_schedule_file_errmsg(f);
  assert_non_null(strstr(msg, "bad.c did not compile"));
  assert_non_null(strstr(msg, "bad.c:3"));
  assert_non_null(strstr(msg, "ts_split"));
  assert_int_equal(ts_schedule_file_count(f), 0);
  assert_null(ts_schedule_file_at(f, 0));
  ts_schedule_file_close(f);
}

/* The compiler's diagnostics about tessel's names, in a file that does
 * not include tessel.h, end with a hint to include it; they are whole
 * however long (here 40 errors, each of a 300-character line, past what a
 * compiler's error limit stops at). */
static void test_compile_error_hints_the_include(void **state) {
  (void)state;
  char text[32768], pad[301];
  memset(pad, 'x', 300);
  pad[300] = 0;
  size_t n = 0;
  for (int i = 0; i < 40; i++)
    n += (size_t)snprintf(text + n, sizeof(text) - n, "static int f%d(ts_sched "
                          "*%s) { return 0; }\n", i, pad);
  snprintf(text + n, sizeof(text) - n, "TS_SCHEDULE(oops, \"x\") {\n"
           "  return 0;\n}\n");
  const char *path = write_file("noinclude.c", text);
  ts_schedule_file *f = ts_schedule_file_open(path);
  assert_int_equal(ts_schedule_file_status(f), TS_ERR_BAD_ARG);
  const char *msg = ts_schedule_file_errmsg(f);
  assert_true(strlen(msg) > 8192);
  char hint[256];
  snprintf(hint, sizeof(hint), "\nhint: %s does not include <tessel.h>; "
           "add `#include <tessel.h>` at its top", path);
  assert_string_equal(msg + strlen(msg) - strlen(hint), hint);
  ts_schedule_file_close(f);
}

/* Two files of one text in one directory are two objects, and a file
 * opened while it is open already (its object loaded) loads again: each
 * defines its own schedules. */
static void test_one_text_twice(void **state) {
  (void)state;
  char a[128], b[128];
  snprintf(a, sizeof(a), "%s", write_file("twin_a.c", two_schedules));
  snprintf(b, sizeof(b), "%s", write_file("twin_b.c", two_schedules));
  ts_schedule_file *fa = ts_schedule_file_open(a);
  ts_schedule_file *fb = ts_schedule_file_open(b);
  ts_schedule_file *again = ts_schedule_file_open(a);
  ts_schedule_file *files[] = {fa, fb, again};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ts_schedule_file_status(files[i]), TS_OK);
    assert_int_equal(ts_schedule_file_count(files[i]), 2);
    assert_non_null(ts_schedule_file_find(files[i], "tiles"));
  }
  assert_schedule_runs(ts_schedule_file_find(again, "tiles"), 16, 16, 8);
  ts_schedule_file_close(fa);
  assert_schedule_runs(ts_schedule_file_find(again, "rows"), 64, 8, 8);
  ts_schedule_file_close(again);
  ts_schedule_file_close(fb);
}

static void test_file_without_schedules(void **state) {
  (void)state;
  const char *path = write_file("none.c", "#include <tessel.h>\n");
  ts_schedule_file *f = ts_schedule_file_open(path);
  assert_int_equal(ts_schedule_file_status(f), TS_ERR_UNKNOWN_SCHEDULE);
  assert_non_null(strstr(ts_schedule_file_errmsg(f),
                         "none.c defines no schedule and no space; write "
                         "TS_SCHEDULE"));
  ts_schedule_file_close(f);
}

static void test_missing_file(void **state) {
  (void)state;
  ts_schedule_file *f = ts_schedule_file_open("/nonexistent/x.c");
  assert_int_equal(ts_schedule_file_status(f), TS_ERR_IO);
  assert_non_null(strstr(ts_schedule_file_errmsg(f),
                         "cannot read /nonexistent/x.c: No such file"));
  ts_schedule_file_close(f);
  f = ts_schedule_file_open(NULL);
  assert_int_equal(ts_schedule_file_status(f), TS_ERR_NULL_ARG);
  ts_schedule_file_close(f);
  ts_schedule_file_close(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schedules_of_a_file),
      cmocka_unit_test(test_a_space_in_a_file),
      cmocka_unit_test(test_hash_follows_the_text),
      cmocka_unit_test(test_space_names),
      cmocka_unit_test(test_object_cached_by_content),
      cmocka_unit_test(test_included_header_keys_the_object),
      cmocka_unit_test(test_compile_error_shows_diagnostics),
      cmocka_unit_test(test_compile_error_hints_the_include),
      cmocka_unit_test(test_one_text_twice),
      cmocka_unit_test(test_file_without_schedules),
      cmocka_unit_test(test_missing_file),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
