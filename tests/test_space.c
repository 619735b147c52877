/*
 * Tuning spaces: knobs, the enumeration (dependent knobs, constraints,
 * refusals by primitives), configurations as text and back, and the seed003
 * space: its count, its first configuration being tvm_step2, and every
 * configuration correct at an odd shape on the reference executor.
 */
#include "helpers.h"

#include <stdbool.h>

/* A toy space over 8x8x8: knob a in {1, 2, 3}; b in {10, 20} only when a is
 * 2; c in {a, 2a}, pruned where c is 4; i split by c, j by a. */
static ts_status toy_apply(ts_sched *s, ts_config *c) {
  int64_t a = ts_knob(c, "a", 3, (int64_t[]){1, 2, 3});
  if (a == 2)
    ts_knob(c, "b", 2, (int64_t[]){10, 20});
  int64_t x = ts_knob(c, "c", 2, (int64_t[]){a, 2 * a});
  ts_knob_require(c, x != 4, "c is %lld", (long long)x);
  ts_loop *o, *i;
  ts_split(s, ts_get_loop(s, "i"), x, &o, &i);
  ts_split(s, ts_get_loop(s, "j"), a, &o, &i);
  return ts_sched_status(s);
}

static const ts_space toy = {"toy", "a test space", toy_apply, false, false};

/* A space whose knob reaches a primitive's refusal: a split by 0. */
static ts_status refusing_apply(ts_sched *s, ts_config *c) {
  int64_t f = ts_knob(c, "f", 2, (int64_t[]){4, 0});
  ts_loop *o, *i;
  ts_split(s, ts_get_loop(s, "i"), f, &o, &i);
  return ts_sched_status(s);
}

static const ts_space refusing = {"refusing", "a split by 0", refusing_apply,
                                  false, false};

/* Spaces that declare a knob wrongly: without values (then split by the 0
 * it gets), or more knobs than a configuration holds. */
static ts_status no_values_apply(ts_sched *s, ts_config *c) {
  int64_t f = ts_knob(c, "f", 0, (int64_t[]){4});
  ts_loop *o, *i;
  ts_split(s, ts_get_loop(s, "i"), f, &o, &i);
  return ts_sched_status(s);
}

static ts_status many_knobs_apply(ts_sched *s, ts_config *c) {
  for (int k = 0; k < 40; k++) {
    char name[16];
    snprintf(name, sizeof(name), "k%d", k);
    ts_knob(c, name, 1, (int64_t[]){1});
  }
  return ts_sched_status(s);
}

static const ts_space no_values = {"no_values", "a knob without values",
                                   no_values_apply, false, false};
static const ts_space many_knobs = {"many_knobs", "40 knobs",
                                    many_knobs_apply, false, false};

/* Knobs declared wrongly in one configuration: a name asked twice, a name
 * the command line cannot give, a value twice. */
static ts_status twice_apply(ts_sched *s, ts_config *c) {
  ts_knob(c, "bm", 3, (int64_t[]){32, 64, 128});
  ts_knob(c, "tm", 2, (int64_t[]){4, 8});
  ts_knob(c, "bm", 2, (int64_t[]){64, 128});
  return ts_sched_status(s);
}

static ts_status bad_name_apply(ts_sched *s, ts_config *c) {
  ts_knob(c, "b,m=", 2, (int64_t[]){32, 64});
  return ts_sched_status(s);
}

static ts_status same_value_apply(ts_sched *s, ts_config *c) {
  ts_knob_choice(c, "order", 3, (const char *[]){"ij", "ji", "ij"});
  return ts_sched_status(s);
}

static const ts_space twice = {"twice", "bm twice", twice_apply, false,
                               false};
static const ts_space bad_name = {"bad_name", "a knob \"b,m=\"",
                                  bad_name_apply, false, false};
static const ts_space same_value = {"same_value", "ij twice",
                                    same_value_apply, false, false};

static char *text_of(const ts_config *c) {
  char *t = ts_config_text(c);
  assert_non_null(t);
  return t;
}

static void test_enumeration_follows_dependent_knobs(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_config **cs;
  int n = ts_space_enumerate(&toy, &g, 0, &cs);
  const char *want[] = {"a=1,c=1",      "a=1,c=2",      "a=2,b=10,c=2",
                        "a=2,b=10,c=4", "a=2,b=20,c=2", "a=2,b=20,c=4",
                        "a=3,c=3",      "a=3,c=6"};
  assert_int_equal(n, 8);
  for (int i = 0; i < n; i++) {
    char *t = text_of(cs[i]);
    assert_string_equal(t, want[i]);
    free(t);
    bool c4 = strstr(want[i], "c=4") != NULL;
    if (c4)
      assert_string_equal(ts_config_pruned(cs[i]), "c is 4");
    else
      assert_null(ts_config_pruned(cs[i]));
  }
  assert_int_equal(ts_config_knob_count(cs[2]), 3);
  assert_string_equal(ts_config_knob_name(cs[2], 1), "b");
  assert_string_equal(ts_config_knob_value(cs[2], 1), "10");
  assert_null(ts_config_knob_name(cs[2], 3));
  /* A pruned configuration's schedule is in error, naming the reason. */
  ts_sched *s = ts_space_schedule(&toy, &g, cs[3]);
  assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
  assert_string_equal(ts_sched_errmsg(s), "ts_space_schedule: toy: c is 4");
  ts_sched_free(s);
  ts_space_free_configs(cs, n);
  /* Past the limit, nothing. */
  assert_int_equal(ts_space_enumerate(&toy, &g, 7, &cs), -1);
  assert_null(cs);
}

static void test_a_primitive_refusal_prunes(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_config **cs;
  int n = ts_space_enumerate(&refusing, &g, 0, &cs);
  assert_int_equal(n, 2);
  assert_null(ts_config_pruned(cs[0]));
  assert_non_null(strstr(ts_config_pruned(cs[1]), "ts_split: argument 3 "
                                                  "'factor'"));
  ts_space_free_configs(cs, n);
}

/* A constraint's reason longer than a line or two is kept whole. */
static char long_reason[2001];

static ts_status long_reason_apply(ts_sched *s, ts_config *c) {
  ts_knob_require(c, 0, "%s", long_reason);
  return ts_sched_status(s);
}

static void test_a_long_reason_is_whole(void **state) {
  (void)state;
  memset(long_reason, 'r', sizeof(long_reason) - 1);
  const ts_space sp = {"long_reason", "a long reason", long_reason_apply,
                       false, false};
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_config **cs;
  assert_int_equal(ts_space_enumerate(&sp, &g, 0, &cs), 1);
  assert_string_equal(ts_config_pruned(cs[0]), long_reason);
  ts_space_free_configs(cs, 1);
}

/* A knob declared wrongly is the space's error, not a constraint: the
 * schedule says TS_ERR_BAD_KNOB with the reason, not the error of the
 * primitive that got the bad value; the configuration is pruned. */
static void test_a_knob_declared_wrongly(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  char err[64];
  ts_config *c = ts_config_parse("", err, sizeof(err));
  ts_sched *s = ts_space_schedule(&no_values, &g, c);
  assert_int_equal(ts_sched_status(s), TS_ERR_BAD_KNOB);
  assert_string_equal(ts_sched_errmsg(s), "ts_space_schedule: no_values: a "
                      "knob needs a name and at least one value (got \"f\", "
                      "0)");
  assert_non_null(ts_config_pruned(c));
  ts_sched_free(s);
  s = ts_space_schedule(&many_knobs, &g, c);
  assert_int_equal(ts_sched_status(s), TS_ERR_BAD_KNOB);
  assert_string_equal(ts_sched_errmsg(s), "ts_space_schedule: many_knobs: "
                      "more than 32 knobs (at \"k32\")");
  ts_sched_free(s);
  /* Each of these is refused in each configuration, the first too. */
  const struct {
    const ts_space *space;
    const char *why;
  } refused[] = {
      {&twice, "ts_space_schedule: twice: knob \"bm\" is declared twice in "
               "one configuration: as knob 1 (32, 64, 128) and again as "
               "knob 3 (64, 128); give each knob a name of its own, or keep "
               "the first's value in a variable"},
      {&bad_name, "ts_space_schedule: bad_name: knob \"b,m=\" is not a name "
                  "the command line can give (name=value,...): use letters, "
                  "digits and '_', not starting with a digit"},
      {&same_value, "ts_space_schedule: same_value: knob \"order\" has the "
                    "value ij twice (ij, ji, ij); give each value once"},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    s = ts_space_schedule(refused[i].space, &g, c);
    assert_int_equal(ts_sched_status(s), TS_ERR_BAD_KNOB);
    assert_string_equal(ts_sched_errmsg(s), refused[i].why);
    ts_sched_free(s);
    ts_config **cs;
    int n = ts_space_enumerate(refused[i].space, &g, 0, &cs);
    for (int k = 0; k < n; k++)
      assert_non_null(ts_config_pruned(cs[k]));
    ts_space_free_configs(cs, n);
  }
  /* A constraint stays TS_ERR_PRUNED, after a bad knob on the same c. */
  ts_config_free(c);
  c = ts_config_parse("a=2,b=10,c=4", err, sizeof(err));
  s = ts_space_schedule(&toy, &g, c);
  assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
  ts_sched_free(s);
  ts_config_free(c);
}

static void test_configurations_as_text(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  char err[256];
  ts_config *c = ts_config_parse("a=2,c=4,b=20", err, sizeof(err));
  assert_non_null(c);
  ts_sched *s = ts_space_schedule(&toy, &g, c);
  assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
  char *t = text_of(c); /* in the order the space declares them */
  assert_string_equal(t, "a=2,b=20,c=4");
  free(t);
  ts_sched_free(s);
  ts_config_free(c);

  c = ts_config_parse("a=3,c=6", err, sizeof(err));
  s = ts_space_schedule(&toy, &g, c);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_sched_free(s);
  ts_config_free(c);

  c = ts_config_parse("a=5", err, sizeof(err));
  s = ts_space_schedule(&toy, &g, c);
  assert_string_equal(ts_sched_errmsg(s), "ts_space_schedule: toy: a=5 is "
                      "not one of its values (1, 2, 3)");
  ts_sched_free(s);
  ts_config_free(c);

  /* A name the space does not declare: TS_ERR_UNKNOWN_KNOB, the knobs it
   * declared listed, the nearest suggested, before a constraint that the
   * values left at their first break (c=2 with a=2 would be 4). */
  c = ts_config_parse("a=1,d=2", err, sizeof(err));
  s = ts_space_schedule(&toy, &g, c);
  assert_int_equal(ts_sched_status(s), TS_ERR_UNKNOWN_KNOB);
  assert_string_equal(ts_sched_errmsg(s), "ts_space_schedule: toy: the "
                      "space has no knob \"d\" (its knobs: a, c)");
  ts_sched_free(s);
  ts_config_free(c);
  c = ts_config_parse("a=2,bx=10,c=4", err, sizeof(err));
  s = ts_space_schedule(&toy, &g, c);
  assert_int_equal(ts_sched_status(s), TS_ERR_UNKNOWN_KNOB);
  assert_string_equal(ts_sched_errmsg(s), "ts_space_schedule: toy: the "
                      "space has no knob \"bx\"; did you mean \"b\"? (its "
                      "knobs: a, b, c)");
  ts_sched_free(s);
  ts_config_free(c);

  const char *bad[][2] = {
      {"a", "ts_config_parse: \"a\" is not name=value"},
      {"a=1,,c=2", "ts_config_parse: \"\" is not name=value"},
      {"=1", "ts_config_parse: \"=1\" is not name=value"},
      {"a=", "ts_config_parse: \"a=\" is not name=value"},
      {"a=1,a=2", "ts_config_parse: knob \"a\" given twice"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_null(ts_config_parse(bad[i][0], err, sizeof(err)));
    assert_string_equal(err, bad[i][1]);
  }
  c = ts_config_parse("", err, sizeof(err)); /* every knob's first value */
  assert_non_null(c);
  ts_config_free(c);
  /* Without a configuration, knobs take their first value. */
  assert_int_equal(ts_knob(NULL, "x", 2, (int64_t[]){7, 8}), 7);
  assert_int_equal(ts_knob_choice(NULL, "y", 2, (const char *[]){"p", "q"}), 0);
  assert_true(ts_knob_require(NULL, 0, "ignored") == 0);
}

/* The space's first configuration makes the built-in of the same
 * schedule, call for call. */
static void assert_first_is_builtin(const ts_space *sp, ts_config *first,
                                    const char *builtin, const ts_gemm *g) {
  ts_sched *s = ts_space_schedule(sp, g, first);
  ts_sched *b = ts_builtin_schedule(builtin, g);
  char *ts = ts_print_trace(s), *tb = ts_print_trace(b);
  assert_non_null(ts);
  assert_non_null(tb);
  assert_string_equal(strstr(ts, "ts_loop *i ="), strstr(tb, "ts_loop *i ="));
  free(ts);
  free(tb);
  ts_sched_free(b);
  ts_sched_free(s);
}

/* Every configuration not pruned checks correctly on the executor; returns
 * how many there were. */
static int check_unpruned(const ts_space *sp, const ts_gemm *g,
                          ts_config **cs, int n) {
  int valid = 0;
  for (int i = 0; i < n; i++) {
    if (ts_config_pruned(cs[i]))
      continue;
    valid++;
    ts_sched *s = ts_space_schedule(sp, g, cs[i]);
    char msg[512];
    if (ts_check(s, 5, msg, sizeof(msg)) != TS_OK) {
      char *text = ts_config_text(cs[i]);
      fail_msg("%s %s: %s", sp->name, text, msg);
    }
    ts_sched_free(s);
  }
  return valid;
}

static void test_seed003_space(void **state) {
  (void)state;
  const ts_space *sp = ts_space_find("seed003");
  assert_non_null(sp);
  assert_ptr_equal(ts_space_at(0), sp);
  assert_null(ts_space_find("nope"));
  assert_null(ts_space_at(ts_space_count()));
  ts_gemm g = ts_gemm_make(33, 65, 17);
  ts_config **cs;
  int n = ts_space_enumerate(sp, &g, 0, &cs);
  assert_int_equal(n, 75); /* 5 block tiles x 5 thread tiles x 3 orders */
  char *t = text_of(cs[0]);
  assert_string_equal(t, "block=32x32x32,thread=8x4,order=k_innermost");
  free(t);
  assert_first_is_builtin(sp, cs[0], "tvm_step2", &g);
  /* Every configuration is valid and correct at an odd shape. */
  assert_int_equal(check_unpruned(sp, &g, cs, n), n);
  ts_space_free_configs(cs, n);
}

/* The warptiled space: the built-in first, the constraints' counts, and
 * every tile it keeps correct at a shape that no tile divides. */
static void test_warptiled_space(void **state) {
  (void)state;
  const ts_space *sp = ts_space_find("warptiled");
  assert_non_null(sp);
  ts_gemm g = ts_gemm_make(67, 45, 21);
  g.layout = TS_TN;
  ts_config **cs;
  int n = ts_space_enumerate(sp, &g, 0, &cs);
  /* 4 bm x 4 bn x 4 warp tiles x 2 column layouts x 2 bk x 4 ways to
   * fill the tiles x partitioned or not (K = 21 leaves a k tail) */
  assert_int_equal(n, 2048);
  char *t = text_of(cs[0]);
  assert_string_equal(t, "bm=128,bn=128,warp=64x64,cols=blocked,bk=16,"
                         "buffers=2,partition=1");
  free(t);
  assert_first_is_builtin(sp, cs[0], "warptiled", &g);
  int divides = 0, warps = 0, registers = 0;
  for (int i = 0; i < n; i++) {
    const char *why = ts_config_pruned(cs[i]);
    divides += why && strstr(why, "do not divide") != NULL;
    warps += why && strstr(why, "warps in a block") != NULL;
    registers += why && strstr(why, "registers a thread") != NULL;
  }
  /* The constraints again, in the order the space applies them; each
   * pruned tiling counts once per column layout, bk, buffer count and
   * partition (32). */
  int want_divides = 0, want_warps = 0, want_registers = 0;
  const int64_t tiles[] = {128, 64, 256, 32}, wt[][2] = {
      {64, 64}, {32, 64}, {64, 32}, {32, 32}};
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      for (int w = 0; w < 4; w++) {
        int64_t bm = tiles[a], bn = tiles[b], wm = wt[w][0], wn = wt[w][1];
        int64_t nw = (bm / wm) * (bn / wn);
        int64_t regs = (wm / 8) * (wn / 4) + wm / 8 + wn / 4 + 40;
        if (bm % wm || bn % wn)
          want_divides += 32;
        else if (nw > 16)
          want_warps += 32;
        else if (regs * nw * 32 > 65536)
          want_registers += 32;
      }
  assert_int_equal(divides, want_divides);
  assert_int_equal(warps, want_warps);
  assert_int_equal(registers, want_registers);
  int valid = check_unpruned(sp, &g, cs, n);
  assert_int_equal(valid, n - divides - warps - registers);
  ts_space_free_configs(cs, n);
}

/* With 16 block rows and columns or more, the space may swizzle them; a
 * grid of 17 x 17 small tiles, the last group of one row. */
static void test_warptiled_space_swizzles(void **state) {
  (void)state;
  const ts_space *sp = ts_space_find("warptiled");
  ts_gemm g = ts_gemm_make(520, 515, 9);
  char err[256];
  ts_config *c = ts_config_parse("bm=32,bn=32,warp=32x32,bk=8,buffers=2,"
                                 "swizzle=8", err, sizeof(err));
  assert_non_null(c);
  ts_sched *s = ts_space_schedule(sp, &g, c);
  assert_int_equal(ts_sched_status(s), TS_OK);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_swizzle(s, i_outer, j_outer, 8);"));
  free(trace);
  char msg[512];
  if (ts_check(s, 3, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s", msg);
  ts_sched_free(s);
  ts_config_free(c);
  /* Where the grid is smaller, the knob does not exist. */
  g = ts_gemm_make(100, 515, 9);
  c = ts_config_parse("bm=32,bn=32,warp=32x32,bk=8,buffers=2,swizzle=8", err,
                      sizeof(err));
  s = ts_space_schedule(sp, &g, c);
  assert_int_equal(ts_sched_status(s), TS_ERR_UNKNOWN_KNOB);
  assert_non_null(strstr(ts_sched_errmsg(s), "no knob \"swizzle\""));
  ts_sched_free(s);
  ts_config_free(c);
}

/* With fewer than 256 blocks and K of 512 or more, the space may split K
 * across blocks: correct at an odd shape, K not a multiple of the parts. */
static void test_warptiled_space_splits_k(void **state) {
  (void)state;
  const ts_space *sp = ts_space_find("warptiled");
  ts_gemm g = ts_gemm_make(99, 130, 1101);
  char err[256];
  ts_config *c = ts_config_parse("bm=64,bn=128,warp=64x32,bk=16,buffers=2,"
                                 "splitk=4", err, sizeof(err));
  assert_non_null(c);
  ts_sched *s = ts_space_schedule(sp, &g, c);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_kernel_count(p), 2);
  ts_program_free(p);
  char msg[512];
  if (ts_check(s, 3, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s", msg);
  ts_sched_free(s);
  ts_config_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enumeration_follows_dependent_knobs),
      cmocka_unit_test(test_a_primitive_refusal_prunes),
      cmocka_unit_test(test_a_knob_declared_wrongly),
      cmocka_unit_test(test_a_long_reason_is_whole),
      cmocka_unit_test(test_configurations_as_text),
      cmocka_unit_test(test_seed003_space),
      cmocka_unit_test(test_warptiled_space),
      cmocka_unit_test(test_warptiled_space_swizzles),
      cmocka_unit_test(test_warptiled_space_splits_k),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
