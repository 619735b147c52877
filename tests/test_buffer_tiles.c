/*
 * ts_double_buffer_tiles, double buffering with several k tiles a copy and
 * one barrier per copy: the golden IR (groups of tiles, the guard of a last
 * partial group, a tile staged in registers while the tile one copy before
 * it computes), the reference executor against a plain C GEMM at odd
 * shapes in every layout and type with 1..5 and 8 tiles, warptiled's
 * `bar_tiles` beside ts_partition and split-K, the groups' loop
 * partitioned, run twice by an enclosing loop and keeping the k loop's
 * marks, each refusal, lowering's refusal of stages at one loop with
 * different counts, and the trace.
 */
#include "tiles.h"

/* 8 x 8 x k in 4 x 4 tiles, A and B in shared memory at k.outer, each
 * double-buffered with `tiles` tiles a copy. */
static ts_sched *grouped(const ts_gemm *def, int tiles) {
  ts_stage *as, *bs;
  return shared_tiles(def, "grouped_tiles", ts_double_buffer_tiles, tiles, &as,
                      &bs, NULL);
}

/* K = 20: five tiles of 4 in groups of 2, so the last group has one tile
 * and a guard; tile t + 2 is staged while tile t computes on copy
 * g % 2 * 2 + q, and stored into the other group's copy. */
static void test_groups_of_tiles_ir(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 20);
  ts_sched *s = grouped(&g, 2);
  assert_ir(s,
            "for i.outer in 0..2 bound to blockIdx.y:\n"
            "  for j.outer in 0..2 bound to blockIdx.x:\n"
            "    for i.inner in 0..4 bound to threadIdx.y:\n"
            "      for j.inner in 0..4 bound to threadIdx.x:\n"
            "        local float acc[1][1]\n"
            "        acc[0, 0] = 0.0\n"
            "        shared float B.shared[4][4][4]\n"
            "        shared float A.shared[4][4][4]\n"
            "        local float B.shared.reg[1]\n"
            "        local float A.shared.reg[1]\n"
            "        for k.outer.first in 0..2 unrolled:\n"
            "          A.shared[k.outer.first, i.inner, j.inner] = "
            "A[i.outer*4 + i.inner, k.outer.first*4 + j.inner]\n"
            "          B.shared[k.outer.first, i.inner, j.inner] = "
            "B[k.outer.first*4 + i.inner, j.outer*4 + j.inner]\n"
            "        barrier\n"
            "        for k.outer.group in 0..3:\n"
            "          for k.outer.tile in 0..2 unrolled:\n"
            "            if k.outer.group*2 + k.outer.tile < 5:\n"
            "              if k.outer.group*2 + k.outer.tile + 2 < 5:\n"
            "                A.shared.reg[0] = A[i.outer*4 + i.inner, "
            "k.outer.group*8 + k.outer.tile*4 + j.inner + 8]\n"
            "                B.shared.reg[0] = B[k.outer.group*8 + "
            "k.outer.tile*4 + i.inner + 8, j.outer*4 + j.inner]\n"
            "              for k.inner in 0..4:\n"
            "                acc[0, 0] = acc[0, 0] + A.shared[k.outer.group "
            "% 2*2 + k.outer.tile, i.inner, k.inner] * "
            "B.shared[k.outer.group % 2*2 + k.outer.tile, k.inner, "
            "j.inner]\n"
            "              if k.outer.group*2 + k.outer.tile + 2 < 5:\n"
            "                A.shared[(k.outer.group + 1) % 2*2 + "
            "k.outer.tile, i.inner, j.inner] = A.shared.reg[0]\n"
            "                B.shared[(k.outer.group + 1) % 2*2 + "
            "k.outer.tile, i.inner, j.inner] = B.shared.reg[0]\n"
            "          barrier\n"
            "        C[i.outer*4 + i.inner, j.outer*4 + j.inner] = "
            "acc[0, 0]\n");
  ts_sched_free(s);
}

/* One tile a copy is ts_double_buffer's pipeline, loop for loop. */
static void test_one_tile_is_double_buffering(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 20);
  ts_sched *one = grouped(&g, 1);
  ts_stage *as, *bs;
  ts_sched *s = shared_tiles(&g, "grouped_tiles", NULL, 0, &as, &bs, NULL);
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  char *want = ts_cuda_source(s), *got = ts_cuda_source(one);
  assert_non_null(want);
  assert_string_equal(got, want);
  free(want);
  free(got);
  ts_sched_free(s);
  ts_sched_free(one);
}

static const int64_t odd_shapes[][3] = {
    {1, 1, 1}, {7, 5, 3}, {33, 17, 29}, {65, 63, 47}, {9, 12, 64}};

static void check_or_fail(ts_sched *s, const ts_gemm *g, int tiles) {
  char msg[1024];
  ts_status st = ts_check(s, 9, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("%d tiles a copy at %lldx%lldx%lld %s %s: %s", tiles,
             (long long)g->m, (long long)g->n, (long long)g->k,
             ts_layout_name(g->layout), ts_dtype_name(g->a_type), msg);
}

/* Groups longer than the loop, groups that divide it and groups that
 * leave a partial last one, in every layout and type, alpha and beta. */
static void test_groups_compute_the_gemm(void **state) {
  (void)state;
  const ts_dtype types[] = {TS_F32, TS_F16};
  const int counts[] = {1, 2, 3, 4, 5, 8};
  for (size_t i = 0; i < sizeof(odd_shapes) / sizeof(odd_shapes[0]); i++)
    for (int l = TS_NN; l <= TS_TT; l++)
      for (int t = 0; t < 2; t++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
          ts_gemm g = ts_gemm_make(odd_shapes[i][0], odd_shapes[i][1],
                                   odd_shapes[i][2]);
          g.layout = (ts_layout)l;
          g.a_type = g.b_type = types[t];
          g.alpha = 1.5f;
          g.beta = 0.25f;
          ts_sched *s = grouped(&g, counts[c]);
          check_or_fail(s, &g, counts[c]);
          ts_sched_free(s);
        }
}

/* warptiled's tiles with 2 or 4 tiles a copy: with its k tail partitioned
 * off (the groups' loop is the one split), with split-K, and both. */
static void test_warptiled_bar_tiles(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{37, 53, 129}, {67, 45, 200}, {40, 36, 33},
                               {9, 130, 301}};
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
    for (int layout = TS_NN; layout <= TS_TT; layout++)
      for (int v = 0; v < 4; v++) {
        ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
        g.layout = (ts_layout)layout;
        g.beta = 0.5f;
        ts_sched *s = ts_matmul_named(&g, "wt");
        warp_tiling t = {.bm = 64, .bn = 32, .wm = 32, .wn = 32, .bk = 8,
                         .buffers = 2, .parts = 1 + v / 2 * 2,
                         .partition = v % 2, .bar_tiles = 2 + v % 2 * 2};
        assert_int_equal(warptiled_with(s, &t), TS_OK);
        check_or_fail(s, &g, (int)t.bar_tiles);
        ts_sched_free(s);
      }
}

/* ts_partition of the attach loop partitions the groups' loop: the steady
 * groups without the k guard, the last (partial) group as the tail. */
static void test_partitioned_groups(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 37); /* 10 tiles of 4, the last partial */
  ts_stage *as, *bs;
  ts_loop *ko;
  ts_sched *s = shared_tiles(&g, "partitioned_groups", ts_double_buffer_tiles,
                             3, &as, &bs, &ko);
  assert_int_equal(ts_partition(s, ko), TS_OK);
  char *ir = ts_print_ir(s);
  /* Groups 0 and 1 stage tiles 3..8, all whole; groups 2 and 3 stage past
   * the end or hold the partial tile 9. */
  assert_non_null(strstr(ir, "for k.outer.group in 0..2:"));
  assert_non_null(strstr(ir, "for k.outer.group.tail in 0..2:"));
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
}

/* The grouped pipeline inside a serial loop that runs it twice: the
 * barrier that ends its last group keeps the next prologue off the tiles
 * still in use (the executor would report the race). */
static void test_groups_run_twice(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 20);
  ts_stage *bs;
  ts_sched *s = b_cached_twice(&g, &bs);
  assert_int_equal(ts_double_buffer_tiles(s, bs, 2), TS_OK);
  char *ir = ts_print_ir(s);
  assert_int_equal(count(ir, "barrier"), 2); /* prologue's, each group's */
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
}

/* The groups' loop keeps the k loop's marks: wgmma batches in flight at a
 * loop whose body has no wgmma are refused as with one tile a copy. */
static void test_groups_keep_the_loops_marks(void **state) {
  (void)state;
  for (int tiles = 1; tiles <= 2; tiles++) {
    ts_gemm g = ts_gemm_make(8, 8, 16);
    ts_stage *as, *bs;
    ts_loop *ko;
    ts_sched *s = shared_tiles(&g, "marks", ts_double_buffer_tiles, tiles, &as,
                               &bs, &ko);
    if (ts_wgmma_in_flight(s, ko, 1) != TS_OK) { /* refused already */
      ts_sched_free(s);
      continue;
    }
    ts_program *p = ts_lower(s);
    assert_int_not_equal(ts_program_status(p), TS_OK);
    if (!strstr(ts_program_errmsg(p), "wgmma"))
      fail_msg("%d tiles a copy: \"%s\" does not name wgmma", tiles,
               ts_program_errmsg(p));
    ts_program_free(p);
    ts_sched_free(s);
  }
}

static void test_buffer_tiles_errors(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_stage *as, *ra, *cw;
  ts_sched *s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_double_buffer_tiles(NULL, as, 2), TS_ERR_NULL_ARG);
  EXPECT_FAIL(ts_double_buffer_tiles(s, NULL, 2), TS_ERR_NULL_ARG,
              "ts_double_buffer_tiles: argument 2");
  ts_sched_free(s);

  const int bad[] = {0, 9, -1};
  for (int i = 0; i < 3; i++) {
    s = tiled(&ko, &ki);
    ts_cache_read(s, "A", TS_SHARED, ko, &as);
    char want[128];
    snprintf(want, sizeof(want), "ts_double_buffer_tiles: argument 3 "
             "'tiles' must be in 1..8 (got %d)", bad[i]);
    EXPECT_FAIL(ts_double_buffer_tiles(s, as, bad[i]), TS_ERR_BAD_ARG, want);
    ts_sched_free(s);
  }

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  EXPECT_FAIL(ts_double_buffer_tiles(s, ra, 2), TS_ERR_NOT_SHARED,
              "ts_double_buffer_tiles: \"A.shared.local\" is in registers");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_write(s, "C", TS_LOCAL, ts_get_loop(s, "j.inner"), &cw);
  EXPECT_FAIL(ts_double_buffer_tiles(s, cw, 2), TS_ERR_BAD_ARG,
              "ts_double_buffer_tiles: \"C.local\" holds C's accumulators");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_double_buffer(s, as), TS_OK);
  EXPECT_FAIL(ts_double_buffer_tiles(s, as, 2), TS_ERR_STAGE_USED,
              "ts_double_buffer_tiles: \"A.shared\" is already "
              "double-buffered");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_pipeline(s, as, 3), TS_OK);
  EXPECT_FAIL(ts_double_buffer_tiles(s, as, 2), TS_ERR_STAGE_USED,
              "ts_double_buffer_tiles: \"A.shared\" is already pipelined "
              "(ts_pipeline, 3 stages)");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_double_buffer_tiles(s, as, 2), TS_OK);
  EXPECT_FAIL(ts_pipeline(s, as, 3), TS_ERR_STAGE_USED,
              "ts_pipeline: \"A.shared\" is double-buffered");
  ts_sched_free(s);
}

/* 2 x tiles copies must fit in shared memory: 128 x 64 tiles of A and B
 * are 32 KiB each, so 2 x 3 copies of both pass the limit. */
static void test_buffer_tiles_shared_limit(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  ts_sched *s = ts_matmul(&g);
  ts_stage *as, *bs;
  vectorized_tiles(s, 128, 64, &as, &bs);
  assert_int_equal(ts_double_buffer_tiles(s, as, 3), TS_OK);
  EXPECT_FAIL(ts_double_buffer_tiles(s, bs, 3), TS_ERR_SHARED_LIMIT,
              "ts_double_buffer_tiles: 6 copies of \"B.shared\" bring the "
              "shared caches to 393216 bytes, over the limit of 232448");
  ts_sched_free(s);
}

/* The shared stages of one loop share its barriers: one count. */
static void test_stages_at_one_loop_group_alike(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_stage *as, *bs;
  ts_sched *s = shared_tiles(&g, "alike", NULL, 0, &as, &bs, NULL);
  ts_double_buffer_tiles(s, as, 2);
  ts_double_buffer_tiles(s, bs, 4);
  expect_lowering_error(s, "ts_lower: \"A.shared\" and \"B.shared\" are "
                           "double-buffered at the same loop \"k.outer\" "
                           "with 2 and 4 tiles a copy");
  ts_sched_free(s);

  s = shared_tiles(&g, "alike", NULL, 0, &as, &bs, NULL);
  ts_double_buffer_tiles(s, as, 2);
  expect_lowering_error(s, "ts_lower: \"A.shared\" is double-buffered and "
                           "\"B.shared\", attached at the same loop, is not");
  ts_sched_free(s);
}

static void test_buffer_tiles_trace_replays(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 40);
  ts_sched *s = grouped(&g, 3);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_double_buffer_tiles(s, A_shared, 3);\n"
                                "ts_double_buffer_tiles(s, B_shared, 3);\n"));
  free(trace);
  assert_replays(s);
  ts_sched_free(s);

  s = grouped(&g, 1); /* one tile a copy: the call a user would write */
  trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_double_buffer(s, A_shared);\n"));
  free(trace);
  assert_replays(s);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_of_tiles_ir),
      cmocka_unit_test(test_one_tile_is_double_buffering),
      cmocka_unit_test(test_groups_compute_the_gemm),
      cmocka_unit_test(test_warptiled_bar_tiles),
      cmocka_unit_test(test_partitioned_groups),
      cmocka_unit_test(test_groups_run_twice),
      cmocka_unit_test(test_groups_keep_the_loops_marks),
      cmocka_unit_test(test_buffer_tiles_errors),
      cmocka_unit_test(test_buffer_tiles_shared_limit),
      cmocka_unit_test(test_stages_at_one_loop_group_alike),
      cmocka_unit_test(test_buffer_tiles_trace_replays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
