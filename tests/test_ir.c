/*
 * The IR layer: the simplifier's canonical forms, interval analysis and
 * regions, and the expression printer's parentheses.
 */
#include "helpers.h"

#include "ir/analysis.h"
#include "ir/printer.h"

typedef struct {
  ts_arena a;
  ir_var *io, *ii, *j; /* extents 5, 8, 53 */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  ts_arena_init(&f->a);
  f->io = ir_new_var(&f->a, 0, "io", VAR_LOOP, 5);
  f->ii = ir_new_var(&f->a, 1, "ii", VAR_LOOP, 8);
  f->j = ir_new_var(&f->a, 2, "j", VAR_LOOP, 53);
  *state = f;
  return 0;
}

static void assert_prints(const ir_expr *e, const char *want) {
  ts_buf b;
  ts_buf_init(&b);
  ir_print_expr(&b, e, &ir_pseudo_style);
  char *got = ts_buf_take(&b);
  assert_string_equal(got, want);
  free(got);
}

#define V(x) ir_varref(&f->a, f->x)
#define I(n) ir_int(&f->a, n)
#define BIN(k, x, y) ir_binary(&f->a, k, x, y)

static void test_linear_terms_cancel(void **state) {
  fixture *f = *state;
  ir_expr *i = BIN(E_ADD, BIN(E_MUL, V(io), I(16)), V(ii));
  ir_expr *d = BIN(E_SUB, i, BIN(E_MUL, V(io), I(16)));
  assert_prints(ir_simplify_expr(&f->a, d), "ii");
  ir_expr *twice = BIN(E_ADD, BIN(E_ADD, V(j), I(3)), BIN(E_SUB, V(j), I(5)));
  assert_prints(ir_simplify_expr(&f->a, twice), "j*2 - 2");
}

static void test_div_mod_split_divisible_terms(void **state) {
  fixture *f = *state;
  ir_expr *x = BIN(E_ADD, BIN(E_MUL, V(io), I(8)), V(ii));
  assert_prints(ir_simplify_expr(&f->a, BIN(E_DIV, x, I(8))), "io");
  assert_prints(ir_simplify_expr(&f->a, BIN(E_MOD, x, I(8))), "ii");
  /* j spans 0..52: j / 8 stays, (io*16 + j) / 8 keeps j's part. */
  ir_expr *y = BIN(E_ADD, BIN(E_MUL, V(io), I(16)), V(j));
  assert_prints(ir_simplify_expr(&f->a, BIN(E_DIV, y, I(8))), "io*2 + j/8");
  assert_prints(ir_simplify_expr(&f->a, BIN(E_MOD, y, I(8))), "j % 8");
}

static void test_conditions_proven_by_bounds(void **state) {
  fixture *f = *state;
  ir_expr *i = BIN(E_ADD, BIN(E_MUL, V(io), I(8)), V(ii)); /* 0..39 */
  assert_true(ir_is_true(ir_simplify_expr(&f->a, BIN(E_LT, i, I(40)))));
  assert_true(ir_is_false(ir_simplify_expr(&f->a, BIN(E_LT, i, I(0)))));
  ir_expr *kept = ir_simplify_expr(&f->a, BIN(E_LT, i, I(37)));
  assert_prints(kept, "io*8 + ii < 37");
  /* Below a bound that is a multiple of 8, ii (0..7) cannot change the
   * truth: one test for all eight values, as a vector's lanes want. */
  assert_prints(ir_simplify_expr(&f->a, BIN(E_LT, i, I(32))), "io*8 < 32");
  ir_expr *both = BIN(E_AND, BIN(E_LT, i, I(40)), BIN(E_LT, V(j), I(50)));
  assert_prints(ir_simplify_expr(&f->a, both), "j < 50");
}

static void test_bounds(void **state) {
  fixture *f = *state;
  int64_t lo, hi;
  ir_expr *e = BIN(E_SUB, BIN(E_MUL, V(io), I(8)), V(ii));
  assert_true(ir_bounds(e, &lo, &hi));
  assert_int_equal(lo, -7);
  assert_int_equal(hi, 32);
  assert_true(ir_bounds(BIN(E_MOD, V(j), I(8)), &lo, &hi));
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 7);
  assert_true(ir_bounds(BIN(E_DIV, V(j), I(8)), &lo, &hi));
  assert_int_equal(hi, 6);
}

static bool inner_is_ii(const ir_var *v, void *ctx) { return v == ctx; }

static void test_region_of_split_index(void **state) {
  fixture *f = *state;
  ir_expr *i = BIN(E_ADD, BIN(E_MUL, V(io), I(8)), V(ii));
  ir_expr *base;
  int64_t extent;
  assert_true(ir_region(&f->a, i, inner_is_ii, f->ii, &base, &extent));
  assert_int_equal(extent, 8);
  assert_prints(ir_simplify_expr(&f->a, base), "io*8");
  /* Nothing inner: a single element at the index itself. */
  assert_true(ir_region(&f->a, V(j), inner_is_ii, f->ii, &base, &extent));
  assert_int_equal(extent, 1);
}

static void test_printer_parentheses(void **state) {
  fixture *f = *state;
  assert_prints(BIN(E_MUL, BIN(E_ADD, V(io), V(ii)), I(3)), "(io + ii)*3");
  assert_prints(BIN(E_SUB, V(io), BIN(E_SUB, V(ii), V(j))), "io - (ii - j)");
  assert_prints(BIN(E_ADD, BIN(E_SUB, V(io), V(ii)), V(j)), "io - ii + j");
  assert_prints(BIN(E_DIV, V(j), BIN(E_MUL, V(io), I(2))), "j/(io*2)");
  assert_prints(BIN(E_OR, BIN(E_AND, BIN(E_LT, V(io), I(1)), BIN(E_LT, V(j), I(2))),
                    BIN(E_LT, V(ii), I(3))),
                "io < 1 && j < 2 || ii < 3");
}

static void test_substitution_keeps_unchanged_nodes(void **state) {
  fixture *f = *state;
  ir_expr *e = BIN(E_ADD, V(io), V(j));
  assert_ptr_equal(ir_subst_expr(&f->a, e, f->ii, I(0)), e);
  ir_expr *s = ir_subst_expr(&f->a, e, f->io, I(4));
  assert_ptr_not_equal(s, e);
  assert_prints(ir_simplify_expr(&f->a, s), "j + 4");
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, free_arena_fixture)
  const struct CMUnitTest tests[] = {
      T(test_linear_terms_cancel),
      T(test_div_mod_split_divisible_terms),
      T(test_conditions_proven_by_bounds),
      T(test_bounds),
      T(test_region_of_split_index),
      T(test_printer_parentheses),
      T(test_substitution_keeps_unchanged_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
