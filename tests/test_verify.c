/*
 * The verifier of lowered kernels on hand-built ones: a vectorized loop
 * expanded into its lanes passes, and each rule of the expansion broken once
 * is reported with the node that breaks it.
 */
#include "helpers.h"

#include "lower/lower.h"

typedef struct {
  ts_arena a;
  ir_kernel k;
  ts_loop *tx, *v; /* a thread loop and a vectorized one of 4 lanes */
  ir_buffer *temp; /* a vector temporary of 4 lanes */
} fixture;

#define TX ir_varref(&f->a, f->tx->var)
#define V ir_varref(&f->a, f->v->var)
#define I(n) ir_int(&f->a, n)
#define ADD(x, y) ir_binary(&f->a, E_ADD, x, y)
#define MUL(x, y) ir_binary(&f->a, E_MUL, x, y)

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  ts_arena_init(&f->a);
  int64_t row[2] = {1, 8}, four = 4;
  f->k.A = ir_new_buffer(&f->a, "A", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->k.B = ir_new_buffer(&f->a, "B", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->k.C = ir_new_buffer(&f->a, "C", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->temp = ir_new_buffer(&f->a, "A.v0", SCOPE_LOCAL, TS_F32, 1, &four, NULL);
  f->temp->vector = true;
  f->tx = ir_new_loop(&f->a, 0, "tx", 2, false, NULL);
  f->tx->kind = TS_THREAD_X;
  f->v = ir_new_loop(&f->a, 1, "v", 4, false, NULL);
  f->v->kind = TS_VECTORIZED;
  f->k.nvars = 2;
  *state = f;
  return 0;
}

/* buf[0, idx], `lanes` wide. */
static ir_expr *at(fixture *f, ir_buffer *b, ir_expr *idx, int lanes) {
  ir_expr *e = ir_load(&f->a, b, (ir_expr *[]){I(0), idx});
  e->load.lanes = lanes;
  return e;
}

static ir_stmt *put(fixture *f, ir_buffer *b, ir_expr *idx, ir_expr *value,
                    int lanes) {
  ir_stmt *s = ir_new_store(&f->a, b, (ir_expr *[]){I(0), idx}, value);
  s->store.lanes = lanes;
  return s;
}

/* The temporary's lanes 0..n-1 as a vector. */
static ir_expr *temp_lanes(fixture *f, int n) {
  ir_expr *lanes[4];
  for (int l = 0; l < n; l++)
    lanes[l] = ir_load(&f->a, f->temp, (ir_expr *[]){I(l)});
  return ir_vector(&f->a, lanes, n);
}

/* The temporary filled from A at `from`, around `body`. */
static ir_stmt *with_temp(fixture *f, ir_expr *from, ir_stmt *body) {
  ir_stmt *s = ir_new_alloc(&f->a, f->temp, body);
  s->alloc.init = from;
  return s;
}

/* vec4(C[0, tx*4 + v]) = vec4(A[0, tx*4 + v]) as scheduled, and lanes. */
static const char *verify(fixture *f, ir_stmt *lanes) {
  ir_expr *base = MUL(TX, I(4));
  ir_stmt *body = put(f, f->k.C, ADD(base, V),
                      at(f, f->k.A, ADD(base, V), 4), 4);
  f->k.body = ir_new_for(&f->a, f->tx, ir_new_lanes(&f->a, f->v, body, lanes));
  return lower_verify(&f->a, &f->k);
}

/* The expansion lowering makes. */
static ir_stmt *expanded(fixture *f) {
  ir_expr *base = MUL(TX, I(4));
  return with_temp(f, at(f, f->k.A, base, 4),
                   put(f, f->k.C, base, temp_lanes(f, 4), 4));
}

static void test_lanes_pass(void **state) {
  fixture *f = *state;
  assert_null(verify(f, expanded(f)));
}

static void test_vectorized_loop_left(void **state) {
  fixture *f = *state;
  ir_stmt *body = put(f, f->k.C, V, at(f, f->k.A, V, 1), 1);
  f->k.body = ir_new_for(&f->a, f->tx, ir_new_for(&f->a, f->v, body));
  assert_string_equal(lower_verify(&f->a, &f->k),
                      "vectorized loop not expanded into lanes: \"v\"");
}

static void test_lanes_use_the_loop_variable(void **state) {
  fixture *f = *state;
  ir_stmt *lanes = put(f, f->k.C, V, at(f, f->k.A, V, 1), 1);
  assert_string_equal(verify(f, lanes),
                      "variable used outside its loop: \"v\"");
}

static void test_vector_used_as_a_scalar(void **state) {
  fixture *f = *state;
  ir_expr *base = MUL(TX, I(4));
  ir_stmt *lanes = put(f, f->k.C, base, at(f, f->k.A, base, 4), 1);
  assert_string_equal(verify(f, lanes), "vector used as a scalar: \"load\"");
}

static void test_store_to_a_vector_temporary(void **state) {
  fixture *f = *state;
  ir_expr *base = MUL(TX, I(4));
  ir_stmt *st = ir_new_store(&f->a, f->temp, (ir_expr *[]){I(0)},
                             ir_float(&f->a, 1));
  assert_string_equal(verify(f, with_temp(f, at(f, f->k.A, base, 4), st)),
                      "store to a vector temporary: \"A.v0\"");
}

static void test_vector_temporary_not_filled(void **state) {
  fixture *f = *state;
  ir_expr *base = MUL(TX, I(4));
  ir_stmt *use = put(f, f->k.C, base, temp_lanes(f, 4), 4);
  const char *want = "vector temporary not filled by one vector load of its "
                     "type: \"A.v0\"";
  assert_string_equal(verify(f, ir_new_alloc(&f->a, f->temp, use)), want);
  /* Nor by a load of two lanes. */
  assert_string_equal(verify(f, with_temp(f, at(f, f->k.A, base, 2), use)),
                      want);
}

static void test_vector_store_of_other_lanes(void **state) {
  fixture *f = *state;
  ir_expr *base = MUL(TX, I(4));
  ir_stmt *use = put(f, f->k.C, base, temp_lanes(f, 2), 4);
  assert_string_equal(verify(f, with_temp(f, at(f, f->k.A, base, 4), use)),
                      "vector store of another number of lanes: \"C\"");
}

static void test_temporary_read_at_a_variable_lane(void **state) {
  fixture *f = *state;
  ir_expr *base = MUL(TX, I(4));
  ir_stmt *use = put(f, f->k.C, base,
                     ir_load(&f->a, f->temp, (ir_expr *[]){TX}), 1);
  assert_string_equal(verify(f, with_temp(f, at(f, f->k.A, base, 4), use)),
                      "vector temporary read at no constant lane: \"A.v0\"");
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, free_arena_fixture)
  const struct CMUnitTest tests[] = {
      T(test_lanes_pass),
      T(test_vectorized_loop_left),
      T(test_lanes_use_the_loop_variable),
      T(test_vector_used_as_a_scalar),
      T(test_store_to_a_vector_temporary),
      T(test_vector_temporary_not_filled),
      T(test_vector_store_of_other_lanes),
      T(test_temporary_read_at_a_variable_lane),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
