/*
 * The reference executor on hand-built kernels: a correct one runs clean,
 * and each planted fault (out of bounds, races in shared and global memory,
 * a barrier in divergent code, reads of unwritten memory, misaligned
 * vector accesses) is caught.
 */
#include "helpers.h"

#include <math.h>

#include "exec/executor.h"

typedef struct {
  ts_arena a;
  ir_kernel k;
  ts_loop *tx, *bx;
  ir_buffer *shared, *local;
  float A[8], B[8], C[8];
  char msg[512];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  ts_arena_init(&f->a);
  int64_t row[2] = {1, 8}, one[1] = {1}, four[1] = {4};
  f->k.A = ir_new_buffer(&f->a, "A", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->k.B = ir_new_buffer(&f->a, "B", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->k.C = ir_new_buffer(&f->a, "C", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->shared = ir_new_buffer(&f->a, "S", SCOPE_SHARED, TS_F32, 1, four, NULL);
  f->local = ir_new_buffer(&f->a, "L", SCOPE_LOCAL, TS_F32, 1, one, NULL);
  f->tx = ir_new_loop(&f->a, 0, "tx", 4, false, NULL);
  f->tx->kind = TS_THREAD_X;
  f->bx = ir_new_loop(&f->a, 1, "bx", 2, false, NULL);
  f->bx->kind = TS_BLOCK_X;
  for (int d = 0; d < 3; d++)
    f->k.grid[d] = f->k.block[d] = 1;
  f->k.block[0] = 4;
  f->k.nvars = 2;
  for (int i = 0; i < 8; i++)
    f->A[i] = (float)i + 1;
  *state = f;
  return 0;
}

#define TX ir_varref(&f->a, f->tx->var)
#define BX ir_varref(&f->a, f->bx->var)
#define I(n) ir_int(&f->a, n)

/* buf[0, idx] for the 2-D globals, buf[idx] for the rest. */
static ir_expr *at(fixture *f, ir_buffer *b, ir_expr *idx) {
  ir_expr *two[2] = {I(0), idx};
  return ir_load(&f->a, b, b->ndim == 2 ? two : &idx);
}

static ir_stmt *put(fixture *f, ir_buffer *b, ir_expr *idx, ir_expr *v) {
  ir_expr *two[2] = {I(0), idx};
  return ir_new_store(&f->a, b, b->ndim == 2 ? two : &idx, v);
}

static ir_stmt *seq2(fixture *f, ir_stmt *x, ir_stmt *y) {
  ir_stmt *items[2] = {x, y};
  return ir_new_seq(&f->a, items, 2);
}

static bool run(fixture *f, ir_stmt *per_thread, bool c_defined) {
  f->k.body = ir_new_for(&f->a, f->tx, per_thread);
  assert_true(ir_kernel_set_params(&f->a, &f->k));
  return ir_execute(&f->k, f->A, f->B, f->C, c_defined, f->msg, sizeof(f->msg));
}

static void test_correct_copy_runs_clean(void **state) {
  fixture *f = *state;
  assert_true(run(f, put(f, f->k.C, TX, at(f, f->k.A, TX)), false));
  for (int i = 0; i < 4; i++)
    assert_true(f->C[i] == f->A[i]);
}

static void test_out_of_bounds_store(void **state) {
  fixture *f = *state;
  ir_expr *idx = ir_binary(&f->a, E_MUL, TX, I(3)); /* thread 3 -> 9 */
  assert_false(run(f, put(f, f->k.C, idx, at(f, f->k.A, TX)), false));
  assert_non_null(strstr(f->msg, "out-of-bounds store of global C[0, 9]"));
  assert_non_null(strstr(f->msg, "thread (3, 0, 0)"));
}

static void test_out_of_bounds_load(void **state) {
  fixture *f = *state;
  ir_expr *idx = ir_binary(&f->a, E_SUB, TX, I(1));
  assert_false(run(f, put(f, f->k.C, TX, at(f, f->k.A, idx)), false));
  assert_non_null(strstr(f->msg, "out-of-bounds load of global A[0, -1]"));
}

static ir_stmt *shared_exchange(fixture *f, bool barrier) {
  ir_expr *next = ir_binary(&f->a, E_MOD, ir_binary(&f->a, E_ADD, TX, I(1)), I(4));
  ir_stmt *fill = put(f, f->shared, TX, at(f, f->k.A, TX));
  ir_stmt *use = put(f, f->k.C, TX, at(f, f->shared, next));
  ir_stmt *body = barrier ? seq2(f, seq2(f, fill, ir_new_barrier(&f->a)), use)
                          : seq2(f, fill, use);
  return ir_new_alloc(&f->a, f->shared, body);
}

static void test_shared_read_after_write_needs_barrier(void **state) {
  fixture *f = *state;
  assert_false(run(f, shared_exchange(f, false), false));
  assert_non_null(strstr(f->msg, "race: read of shared S"));
  assert_true(run(f, shared_exchange(f, true), false));
  assert_true(f->C[3] == f->A[0]);
}

static void test_shared_write_write_race(void **state) {
  fixture *f = *state;
  ir_stmt *all_to_one = put(f, f->shared, I(0), at(f, f->k.A, TX));
  assert_false(run(f, ir_new_alloc(&f->a, f->shared, all_to_one), false));
  assert_non_null(strstr(f->msg, "race: two threads write shared S"));
}

static void test_shared_write_after_read_race(void **state) {
  fixture *f = *state;
  /* Everyone reads S[0] (after a barrier), then thread 0 overwrites it. */
  ir_stmt *init = put(f, f->shared, TX, at(f, f->k.A, TX));
  ir_stmt *read = put(f, f->k.C, TX, at(f, f->shared, I(0)));
  ir_stmt *over = ir_new_if(&f->a, ir_binary(&f->a, E_EQ, TX, I(0)),
                            put(f, f->shared, I(0), at(f, f->k.A, I(5))), NULL);
  ir_stmt *body = seq2(f, seq2(f, init, ir_new_barrier(&f->a)), seq2(f, read, over));
  assert_false(run(f, ir_new_alloc(&f->a, f->shared, body), false));
  assert_non_null(strstr(f->msg, "that another thread read"));
}

static void test_barrier_in_divergent_code(void **state) {
  fixture *f = *state;
  ir_stmt *s = ir_new_if(&f->a, ir_binary(&f->a, E_LT, TX, I(2)),
                         ir_new_barrier(&f->a), NULL);
  assert_false(run(f, seq2(f, s, put(f, f->k.C, TX, at(f, f->k.A, TX))), false));
  assert_non_null(strstr(f->msg, "barrier in divergent code"));
}

static void test_read_of_unwritten_local(void **state) {
  fixture *f = *state;
  ir_stmt *s = put(f, f->k.C, TX, at(f, f->local, I(0)));
  assert_false(run(f, ir_new_alloc(&f->a, f->local, s), false));
  assert_non_null(strstr(f->msg, "read of local L at element 0, which nothing wrote"));
}

static void test_read_of_c_when_beta_is_zero(void **state) {
  fixture *f = *state;
  ir_stmt *s = put(f, f->k.C, TX, at(f, f->k.C, TX));
  assert_false(run(f, s, false));
  assert_non_null(strstr(f->msg, "read of global C"));
  assert_true(run(f, s, true)); /* with beta != 0, C holds data */
}

static void test_blocks_writing_one_element_race(void **state) {
  fixture *f = *state;
  f->k.grid[0] = 2;
  ir_stmt *s = ir_new_for(&f->a, f->bx, put(f, f->k.C, TX, at(f, f->k.A, BX)));
  assert_false(run(f, s, false));
  assert_non_null(strstr(f->msg, "race: two threads write global C"));
  assert_non_null(strstr(f->msg, "of block (1, 0, 0)"));
}

/* C in fp16: a store rounds to nearest even, as __float2half_rn does.
 * Thread t stores A[t] + its offset: 1 + 2^-11 is a tie between 1 and
 * 1 + 2^-10 and goes to the even 1; 1 + 3 * 2^-11 goes up to 1 + 2^-9;
 * just past the tie rounds up; 65520 overflows to infinity. */
static void test_store_to_fp16_rounds_to_nearest_even(void **state) {
  fixture *f = *state;
  f->k.C->dtype = TS_F16;
  const float in[4] = {1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 1 + 0x1p-11f + 0x1p-20f,
                       65520.0f};
  const float want[4] = {1.0f, 1 + 0x1p-9f, 1 + 0x1p-10f, INFINITY};
  for (int i = 0; i < 4; i++)
    f->A[i] = in[i];
  assert_true(run(f, put(f, f->k.C, TX, at(f, f->k.A, TX)), false));
  for (int i = 0; i < 4; i++)
    assert_true(f->C[i] == want[i]);
}

/* A cast to bf16 and back in fp32 arithmetic: the value is rounded where
 * the cast is, not only at the store. */
static void test_cast_rounds_within_an_expression(void **state) {
  fixture *f = *state;
  f->A[0] = 1 + 0x1p-8f;     /* a tie: to 1 */
  f->A[1] = 1 + 3 * 0x1p-8f; /* a tie: up to 1 + 2^-6 */
  f->A[2] = 0x1.8p-133f; /* between bf16 subnormals 2^-133 and 2^-132: even */
  f->A[3] = 1 + 0x1p-9f;     /* below the tie: to 1 */
  ir_expr *x = at(f, f->k.A, TX);
  ir_expr *narrowed = ir_cast(&f->a, TS_BF16, x);
  assert_int_equal(narrowed->kind, E_CAST);
  assert_ptr_equal(ir_cast(&f->a, TS_BF16, narrowed), narrowed);
  /* narrowed + 0 in fp32: the constructor widens the bf16 operand. */
  ir_expr *sum = ir_binary(&f->a, E_ADD, narrowed, ir_float(&f->a, 0));
  assert_int_equal(sum->op.a->kind, E_CAST);
  assert_int_equal(sum->op.a->dtype, TS_F32);
  assert_true(run(f, put(f, f->k.C, TX, sum), false));
  assert_true(f->C[0] == 1.0f);
  assert_true(f->C[1] == 1 + 0x1p-6f);
  assert_true(f->C[2] == 0x1p-132f);
  assert_true(f->C[3] == 1.0f);
}

/* ---- Vector accesses, as the lanes pass makes them ------------------------ */

/* vec4(buf[.., idx]): the 4 elements from there on. */
static ir_expr *vec4_at(fixture *f, ir_buffer *b, ir_expr *idx) {
  ir_expr *e = at(f, b, idx);
  e->load.lanes = 4;
  return e;
}

/* A vector temporary T filled by `from`, and vec4(C[0, to]) = vec4(2 * T[0],
 * ..., 2 * T[3]). */
static ir_stmt *vector_copy(fixture *f, ir_expr *from, ir_expr *to) {
  int64_t four = 4;
  ir_buffer *t = ir_new_buffer(&f->a, "T", SCOPE_LOCAL, TS_F32, 1, &four,
                               NULL);
  t->vector = true;
  ir_expr *lanes[4];
  for (int l = 0; l < 4; l++)
    lanes[l] = ir_binary(&f->a, E_MUL, ir_float(&f->a, 2), at(f, t, I(l)));
  ir_stmt *store = put(f, f->k.C, to, ir_vector(&f->a, lanes, 4));
  store->store.lanes = 4;
  ir_stmt *alloc = ir_new_alloc(&f->a, t, store);
  alloc->alloc.init = from;
  return alloc;
}

/* Two threads, four lanes each: all of A and C. */
static bool run_two(fixture *f, ir_stmt *per_thread) {
  f->tx->extent = 2;
  f->k.block[0] = 2;
  return run(f, per_thread, false);
}

static void test_vector_copy_runs_clean(void **state) {
  fixture *f = *state;
  ir_expr *four_tx = ir_binary(&f->a, E_MUL, TX, I(4));
  assert_true(run_two(f, vector_copy(f, vec4_at(f, f->k.A, four_tx), four_tx)));
  for (int i = 0; i < 8; i++)
    assert_true(f->C[i] == 2 * f->A[i]);
}

/* A vector load from A, then a vector store to C, starting off the width. */
static void test_misaligned_vector_accesses(void **state) {
  fixture *f = *state;
  ir_expr *four_tx = ir_binary(&f->a, E_MUL, TX, I(4));
  ir_expr *off = ir_binary(&f->a, E_ADD, four_tx, I(1));
  assert_false(run_two(f, vector_copy(f, vec4_at(f, f->k.A, off), four_tx)));
  assert_non_null(strstr(f->msg, "misaligned 4-wide vector access to global "
                                 "A at element 1, by thread (0, 0, 0)"));
  assert_false(run_two(f, vector_copy(f, vec4_at(f, f->k.A, four_tx), off)));
  assert_non_null(strstr(f->msg, "misaligned 4-wide vector access to global "
                                 "C at element 1, by thread (0, 0, 0)"));
}

static void test_vector_access_past_the_end(void **state) {
  fixture *f = *state;
  int64_t six = 6;
  ir_buffer *s6 = ir_new_buffer(&f->a, "S", SCOPE_SHARED, TS_F32, 1, &six,
                                NULL);
  ir_stmt *copy = vector_copy(f, vec4_at(f, s6, I(4)), TX);
  assert_false(run_two(f, ir_new_alloc(&f->a, s6, copy)));
  assert_non_null(strstr(f->msg, "4-wide vector access to shared S at "
                                 "element 4 passes its end, element 6"));
}

/* C as a slice of a wider matrix: 2 rows of 3 elements, 4 apart (ldc 4).
 * A vector store of 4 from a row's start reaches the element between the
 * rows, which is the caller's: a fault naming it, though the store's
 * indices lie inside C. */
static void test_write_between_rows_of_c(void **state) {
  fixture *f = *state;
  f->k.C = ir_new_buffer(&f->a, "C", SCOPE_GLOBAL, TS_F32, 2,
                         (int64_t[]){2, 3}, (int64_t[]){4, 1});
  ir_expr *four_tx = ir_binary(&f->a, E_MUL, TX, I(4));
  assert_false(run_two(f, vector_copy(f, vec4_at(f, f->k.A, four_tx), I(0))));
  assert_non_null(strstr(f->msg, "write of global C at element 3, between "
                                 "its rows: they are 3 elements, 4 apart "
                                 "(its leading dimension), and the 1 between "
                                 "belong to the caller, by thread (0, 0, 0)"));
}

/* A's rows 4 apart, 2 elements each: a vector load of 4 reads the
 * caller's elements past a row. */
static void test_read_between_rows_of_a(void **state) {
  fixture *f = *state;
  f->k.A = ir_new_buffer(&f->a, "A", SCOPE_GLOBAL, TS_F32, 2,
                         (int64_t[]){2, 2}, (int64_t[]){4, 1});
  ir_expr *four_tx = ir_binary(&f->a, E_MUL, TX, I(4));
  assert_false(run_two(f, vector_copy(f, vec4_at(f, f->k.A, I(0)), four_tx)));
  assert_non_null(strstr(f->msg, "read of global A at element 2, between "
                                 "its rows: they are 2 elements, 4 apart"));
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, free_arena_fixture)
  const struct CMUnitTest tests[] = {
      T(test_correct_copy_runs_clean),
      T(test_out_of_bounds_store),
      T(test_out_of_bounds_load),
      T(test_shared_read_after_write_needs_barrier),
      T(test_shared_write_write_race),
      T(test_shared_write_after_read_race),
      T(test_barrier_in_divergent_code),
      T(test_read_of_unwritten_local),
      T(test_read_of_c_when_beta_is_zero),
      T(test_blocks_writing_one_element_race),
      T(test_store_to_fp16_rounds_to_nearest_even),
      T(test_cast_rounds_within_an_expression),
      T(test_vector_copy_runs_clean),
      T(test_misaligned_vector_accesses),
      T(test_vector_access_past_the_end),
      T(test_write_between_rows_of_c),
      T(test_read_between_rows_of_a),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
