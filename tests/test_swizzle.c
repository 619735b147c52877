/*
 * ts_swizzle: its refusals, the index expressions lowering gives the block
 * loops, the trace, and the map being a permutation of the grid (every
 * element of C written once, by one block) at shapes that leave a short
 * last group, checked against a plain GEMM on the reference executor.
 */
#include "helpers.h"

#include <stdbool.h>

typedef struct {
  ts_sched *s;
  ts_loop *rows, *cols, *ty, *tx;
} tiled;

/* Tiles of 8 x 8: i.outer on blockIdx.y, j.outer on blockIdx.x (or the
 * other way round), 8 x 8 threads. */
static tiled tiles8(int64_t m, int64_t n, int64_t k, bool rows_on_x) {
  tiled t = {.s = sched_of(m, n, k)};
  ts_split(t.s, ts_get_loop(t.s, "i"), 8, &t.rows, &t.ty);
  ts_split(t.s, ts_get_loop(t.s, "j"), 8, &t.cols, &t.tx);
  ts_reorder(t.s, 4, (ts_loop *[]){t.rows, t.cols, t.ty, t.tx});
  ts_bind(t.s, t.rows, rows_on_x ? TS_BLOCK_X : TS_BLOCK_Y);
  ts_bind(t.s, t.cols, rows_on_x ? TS_BLOCK_Y : TS_BLOCK_X);
  ts_bind(t.s, t.ty, TS_THREAD_Y);
  ts_bind(t.s, t.tx, TS_THREAD_X);
  assert_int_equal(ts_sched_status(t.s), TS_OK);
  return t;
}

static void test_refusals(void **state) {
  (void)state;
  tiled t = tiles8(64, 64, 8, false);
  assert_refused_with(t.s, ts_swizzle(t.s, t.rows, t.rows, 4), TS_ERR_DUPLICATE_LOOP,
                 "are both loop \"i.outer\"");
  t = tiles8(64, 64, 8, false);
  assert_refused_with(t.s, ts_swizzle(t.s, t.rows, t.cols, 0), TS_ERR_BAD_FACTOR,
                 "'group' must be >= 1 (got 0)");
  t = tiles8(64, 64, 8, false);
  assert_refused_with(t.s, ts_swizzle(t.s, t.ty, t.cols, 2), TS_ERR_BAD_ARG,
                 "argument 2 'rows' must be a loop bound to blockIdx (loop "
                 "\"i.inner\" is threadIdx.y)");
  t = tiles8(64, 64, 8, false);
  assert_refused_with(t.s, ts_swizzle(t.s, t.rows, NULL, 2), TS_ERR_NULL_ARG,
                 "cols");
  t = tiles8(64, 64, 8, false);
  assert_int_equal(ts_swizzle(t.s, t.rows, t.cols, 2), TS_OK);
  assert_refused_with(t.s, ts_swizzle(t.s, t.rows, t.cols, 4), TS_ERR_ALREADY_BOUND,
                 "already swizzled (loops \"i.outer\" and \"j.outer\", "
                 "groups of 2)");
  /* An unbound loop, before binding. */
  ts_sched *s = sched_of(64, 64, 8);
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  assert_refused_with(s, ts_swizzle(s, io, ts_get_loop(s, "j"), 2), TS_ERR_BAD_ARG,
                 "bind it first");
}

/* 9 block rows in groups of 4: two full groups of 28 blocks, then a last
 * group of one row from block 56 on. */
static void test_index_expressions(void **state) {
  (void)state;
  tiled t = tiles8(70, 50, 9, false);
  assert_int_equal(ts_swizzle(t.s, t.rows, t.cols, 4), TS_OK);
  char *ir = ir_body(t.s);
  const char *rows =
      "for i.outer in 0..9 bound to swizzle(blockIdx.y*7 < 56 ? "
      "(blockIdx.y*7 + blockIdx.x)/28*4 + (blockIdx.y*7 + blockIdx.x) % 28 % "
      "4 : 8):\n"
      "  for j.outer in 0..7 bound to swizzle(blockIdx.y*7 < 56 "
      "? (blockIdx.y*7 + blockIdx.x) % 28/4 : blockIdx.y*7 + blockIdx.x - "
      "56):\n";
  assert_memory_equal(ir, rows, strlen(rows));
  free(ir);
  char *cu = ts_cuda_source(t.s);
  assert_non_null(strstr(cu, "  const int i_outer = blockIdx.y*7 < 56 ? "
                             "(blockIdx.y*7 + blockIdx.x)/28*4"));
  assert_non_null(strstr(cu, "  // 0..6, blocks swizzled\n"));
  free(cu);
  /* The grid is the one it was. */
  ts_launch_geometry l;
  assert_int_equal(ts_launch_dims(t.s, &l), TS_OK);
  assert_int_equal(l.grid[0], 7);
  assert_int_equal(l.grid[1], 9);
  ts_sched_free(t.s);
}

/* Groups that divide the rows need no last-group select. */
static void test_dividing_groups_need_no_select(void **state) {
  (void)state;
  tiled t = tiles8(64, 24, 9, false);
  assert_int_equal(ts_swizzle(t.s, t.rows, t.cols, 4), TS_OK);
  char *ir = ir_body(t.s);
  const char *rows =
      "for i.outer in 0..8 bound to swizzle((blockIdx.y*3 + blockIdx.x)/12*4 "
      "+ (blockIdx.y*3 + blockIdx.x) % 12 % 4):\n";
  assert_memory_equal(ir, rows, strlen(rows));
  free(ir);
  ts_sched_free(t.s);
}

static void test_trace_replays(void **state) {
  (void)state;
  tiled t = tiles8(70, 50, 9, true);
  assert_int_equal(ts_swizzle(t.s, t.rows, t.cols, 3), TS_OK);
  char *trace = ts_print_trace(t.s);
  assert_non_null(strstr(trace, "ts_swizzle(s, i_outer, j_outer, 3);\n"));
  free(trace);
  ts_gemm g = ts_gemm_make(70, 50, 9);
  ts_sched *again = ts_matmul(&g);
  assert_int_equal(ts_replay(t.s, again), TS_OK);
  char *a = ts_print_ir(t.s), *b = ts_print_ir(again);
  assert_string_equal(a, b);
  free(a);
  free(b);
  ts_sched_free(again);
  ts_sched_free(t.s);
}

/* Every element once, by one block, right: a map that sent two blocks to
 * one tile would race on C (the executor reports it) and leave another
 * tile unwritten (a mismatch). */
static void test_permutation_at_odd_shapes(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{1, 1, 1},  {7, 5, 3},   {70, 50, 9},
                               {33, 130, 5}, {130, 9, 4}, {200, 65, 2}};
  const int64_t groups[] = {1, 2, 3, 4, 8, 100};
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
    for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
      for (int on_x = 0; on_x < 2; on_x++) {
        const int64_t *sh = shapes[i];
        tiled t = tiles8(sh[0], sh[1], sh[2], on_x);
        assert_int_equal(ts_swizzle(t.s, t.rows, t.cols, groups[g]), TS_OK);
        char msg[512];
        if (ts_check(t.s, 7, msg, sizeof(msg)) != TS_OK)
          fail_msg("%lldx%lldx%lld, groups of %lld, rows on %s: %s",
                   (long long)sh[0], (long long)sh[1], (long long)sh[2],
                   (long long)groups[g], on_x ? "x" : "y", msg);
        ts_sched_free(t.s);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_index_expressions),
      cmocka_unit_test(test_dividing_groups_need_no_select),
      cmocka_unit_test(test_trace_replays),
      cmocka_unit_test(test_permutation_at_odd_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
