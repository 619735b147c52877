/*
 * ts_persistent: a grid of a few blocks a multiprocessor, each looping over
 * C's tiles.  Schedules of every kind made persistent (SIMT with plain,
 * double-buffered and cp.async caches, mma.sync, wgmma without the TMA,
 * the warp-specialized TMA pipeline of wgpers, and with ts_swizzle's
 * order) give the plain GEMM's C on the reference executor, whose grid
 * has TS_EXEC_MULTIPROCESSORS x blocks_per_sm blocks, so that each block
 * takes several tiles.  A warp-specialized pipeline counts its phases on
 * across the tiles: a consumer that does not release the last tile's
 * stages leaves the producer's next wait for ever.  The CUDA loops over
 * the tiles; the launch's grid comes from the device's multiprocessors;
 * and the primitive refuses what it cannot do with a message that says
 * what to do.
 */
#include "helpers.h"

#include "exec/executor.h"
#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"
#include "runtime/launch_limits.h"

/* Built-in `name` at m x n x k (16-bit A and B for tensor cores), with
 * its block loops `rows` and `cols` made persistent. */
static ts_sched *persistent(const char *name, int64_t m, int64_t n,
                            int64_t k, ts_layout layout, bool f16,
                            int blocks_per_sm) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.layout = layout;
  if (f16)
    g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule(name, &g);
  ts_persistent(s, ts_get_loop(s, "i.outer"), ts_get_loop(s, "j.outer"),
                blocks_per_sm);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

static void assert_checks_as(ts_sched *s, const char *what) {
  char msg[1024];
  const ts_gemm *g = ts_sched_gemm(s);
  if (ts_check(s, 7, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s %lldx%lldx%lld %s: %s", what, (long long)g->m,
             (long long)g->n, (long long)g->k, ts_layout_name(g->layout),
             msg);
}

/* The last: one k tile (of most built-ins), where only the barrier
 * between tiles keeps a block's next tile from its last one's caches. */
static const int64_t shapes[][3] = {{1, 1, 1}, {37, 53, 29},
                                    {261, 263, 129}, {261, 263, 8}};

/* Each built-in made persistent, at each shape and layout (a sweep:
 * sweep_point_runs). */
static void check_everywhere(const char *name, bool f16, int blocks_per_sm) {
  for (int i = 0; i < 4; i++)
    for (int l = TS_NN; l <= TS_TT; l++) {
      ts_sched *s = persistent(name, shapes[i][0], shapes[i][1], shapes[i][2],
                               (ts_layout)l, f16, blocks_per_sm);
      if (sweep_point_runs())
        assert_checks_as(s, name);
      else
        assert_lowers(s);
      ts_sched_free(s);
    }
}

/* SIMT with plain caches (blocktile2d), double-buffered (warptiled, at
 * 2 blocks a multiprocessor) and cp.async's (pipelined); naive, which
 * binds i.outer to blockIdx.x (the rows vary fastest), at 3; mma.sync
 * with cp.async (tc64); wgmma with cp.async, no TMA (wg128). */
static void test_builtins_made_persistent(void **state) {
  (void)state;
  const struct {
    const char *name;
    bool f16;
    int blocks_per_sm;
  } cases[] = {{"blocktile2d", false, 1}, {"warptiled", false, 2},
               {"pipelined", false, 1},   {"naive", false, 3},
               {"tc64", true, 1},         {"wg128", true, 1}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
    check_everywhere(cases[c].name, cases[c].f16, cases[c].blocks_per_sm);
}

/* tc64 swizzled in groups of 3 rows, then persistent: the tiles in the
 * swizzle's order. */
static void test_composes_with_swizzle(void **state) {
  (void)state;
  for (int i = 0; i < 4; i++) {
    ts_gemm g = ts_gemm_make(shapes[i][0] + 300, shapes[i][1] + 200,
                             shapes[i][2]);
    g.a_type = g.b_type = TS_F16;
    ts_sched *s = ts_builtin_schedule("tc64", &g);
    ts_loop *io = ts_get_loop(s, "i.outer"), *jo = ts_get_loop(s, "j.outer");
    ts_swizzle(s, io, jo, 3);
    ts_persistent(s, io, jo, 1);
    ts_program *p = ts_lower(s);
    assert_int_equal(ts_program_status(p), TS_OK);
    char *src = ts_program_cuda(p);
    assert_non_null(strstr(src, "% 3"));
    assert_non_null(strstr(src, "gridDim.x"));
    free(src);
    ts_program_free(p);
    assert_checks_as(s, "tc64 swizzled");
    assert_replays(s);
    ts_sched_free(s);
  }
}

/* wgpers at m x n x k in `type` and `layout`. */
static ts_sched *wgpers(int64_t m, int64_t n, int64_t k, ts_dtype type,
                        ts_layout layout) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = type;
  g.layout = layout;
  return ts_builtin_schedule("wgpers", &g);
}

/* wgpers: the TMA's pipeline, warp-specialized, across tiles, in every
 * layout; 1000^3 takes 8 tiles a block, each of 16 k tiles in 4 stages;
 * 520 x 1040 x 264 has tiles partly outside C and 5 k tiles, which the
 * stages do not divide: a stage's fills alternate between tiles. */
static void test_wgpers_every_layout(void **state) {
  (void)state;
  const int64_t at[][3] = {{1, 1, 1}, {37, 53, 29}, {520, 1040, 264},
                           {136, 264, 200}, {1000, 1000, 1000}};
  for (int i = 0; i < 5; i++)
    for (int l = TS_NN; l <= TS_TT; l++) {
      if (i == 4 && l != TS_NT)
        continue; /* one layout at the large shape: seconds each */
      ts_sched *s = wgpers(at[i][0], at[i][1], at[i][2], TS_F16,
                           (ts_layout)l);
      assert_checks_as(s, "wgpers");
      ts_sched_free(s);
    }
}

/* wgpers at 999 x 1001 x 1003 (rows not 16-byte aligned: A and B packed
 * first, the TMA copying the packed copies) and bf16. */
static void test_wgpers_odd_and_bf16(void **state) {
  (void)state;
  ts_sched *s = wgpers(999, 1001, 1003, TS_F16, TS_NN);
  assert_checks_as(s, "wgpers");
  ts_sched_free(s);
  s = wgpers(264, 520, 136, TS_BF16, TS_TN);
  assert_checks_as(s, "wgpers bf16");
  ts_sched_free(s);
}

/* The launch: C's tiles on blockIdx.x, one block a multiprocessor; the
 * executor runs 4 blocks for 16 tiles, so that each takes 4 (C is right
 * only if they did). */
static void test_blocks_take_several_tiles(void **state) {
  (void)state;
  ts_sched *s = wgpers(512, 1024, 320, TS_F16, TS_NT);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  ts_launch_geometry l;
  assert_int_equal(ts_program_launch(p, &l), TS_OK);
  assert_int_equal(l.grid[0], 16);
  assert_int_equal(l.grid[1] * l.grid[2], 1);
  assert_int_equal(l.persistent, 1);
  int64_t grid[3];
  ir_kernel_grid(&p->k, TS_EXEC_MULTIPROCESSORS, grid);
  assert_int_equal(grid[0], TS_EXEC_MULTIPROCESSORS);
  char msg[1024];
  if (ts_program_check(p, 5, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s", msg);
  ts_program_free(p);
  ts_sched_free(s);
  /* Fewer tiles than blocks: the grid is the tiles. */
  s = persistent("tc64", 100, 60, 40, TS_NN, true, 8);
  p = ts_lower(s);
  ir_kernel_grid(&p->k, TS_EXEC_MULTIPROCESSORS, grid);
  assert_int_equal(grid[0], 2);
  ts_program_free(p);
  assert_checks_as(s, "tc64 2 tiles");
  ts_sched_free(s);
}

/* The runtime's grid: min(tiles, multiprocessors x blocks a
 * multiprocessor), the device's count. */
static void test_launch_grid_from_multiprocessors(void **state) {
  (void)state;
  gpu_limits h100 = {.multiprocessors = 132};
  ts_launch_geometry l = {.grid = {512, 1, 1}, .block = {128, 3, 1}, .persistent = 1};
  int64_t grid[3];
  launch_grid(&h100, &l, grid);
  assert_int_equal(grid[0], 132);
  l.persistent = 2;
  launch_grid(&h100, &l, grid);
  assert_int_equal(grid[0], 264);
  l.grid[0] = 100;
  launch_grid(&h100, &l, grid);
  assert_int_equal(grid[0], 100);
  l = (ts_launch_geometry){.grid = {512, 4, 2}, .block = {128, 1, 1}};
  launch_grid(&h100, &l, grid);
  assert_int_equal(grid[0] * grid[1] * grid[2], 512 * 8);
  /* Clusters of 2 (ts_cluster): whole clusters on any count of
   * multiprocessors, as __cluster_dims__ needs. */
  gpu_limits odd = {.multiprocessors = 131};
  l = (ts_launch_geometry){.grid = {512, 1, 1}, .block = {128, 3, 1}, .persistent = 1,
                  .cluster = 2};
  launch_grid(&odd, &l, grid);
  assert_int_equal(grid[0], 130);
  launch_grid(&h100, &l, grid);
  assert_int_equal(grid[0], 132);
  l.grid[0] = 2;
  launch_grid(&odd, &l, grid);
  assert_int_equal(grid[0], 2);
}

/* Drops each mbarrier arrive outside the k loops: the releases of the
 * last tile's stages. */
static ir_stmt *drop_tail_release(ir_mutator *mu, ir_stmt *s) {
  if (s->kind == S_FOR && s->for_.loop->reduce)
    return s;
  if (s->kind == S_MBARRIER && s->pipe.op == MBAR_ARRIVE)
    return ir_new_seq(mu->a, NULL, 0);
  return ir_mutate_stmt_children(mu, s);
}

static void test_phases_run_on_across_tiles(void **state) {
  (void)state;
  ts_sched *s = wgpers(512, 1024, 320, TS_F16, TS_NT);
  const ts_gemm *g = ts_sched_gemm(s);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  /* One pipeline around the tile loop: its barriers set up once. */
  const ir_stmt *b = p->k.body;
  while (b->kind == S_ALLOC)
    b = b->alloc.body;
  assert_int_equal(b->kind, S_PIPELINE);
  assert_int_equal(b->pipe.body->kind, S_FOR);
  assert_true(b->pipe.body->for_.loop->persistent);
  ir_mutator m = {.a = &p->arena, .stmt = drop_tail_release};
  ir_kernel k = p->k;
  k.body = ir_mutate_stmt(&m, p->k.body);
  assert_ptr_not_equal(k.body, p->k.body);
  float *A = calloc((size_t)(g->m * g->k), sizeof(float));
  float *B = calloc((size_t)(g->k * g->n), sizeof(float));
  float *C = calloc((size_t)(g->m * g->n), sizeof(float));
  assert_true(A && B && C);
  char msg[1024];
  assert_false(ir_execute(&k, A, B, C, false, msg, sizeof(msg)));
  assert_non_null(strstr(msg, "waits on empty"));
  assert_non_null(strstr(msg, "never completes"));
  free(A);
  free(B);
  free(C);
  ts_program_free(p);
  ts_sched_free(s);
}

/* tessel show --cuda wgpers: the tile loop, the TMA's copies, mbarriers
 * and setmaxnreg, the producer's part looping over the tiles too. */
static void test_cuda_loops_over_tiles(void **state) {
  (void)state;
  ts_sched *s = wgpers(4096, 4096, 4096, TS_F16, TS_NN);
  ts_program *p = ts_lower(s);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  const char *loop = "for (int wave = 0; blockIdx.x + wave * gridDim.x < "
                     "512; ++wave)";
  const char *dec = strstr(src, "setmaxnreg.dec.sync.aligned.u32 40;");
  const char *inc = strstr(src, "setmaxnreg.inc.sync.aligned.u32 232;");
  assert_true(dec && inc && dec < inc);
  const char *producer_loop = strstr(dec, loop);
  assert_true(producer_loop && producer_loop < inc);
  /* Only the issuing thread runs the producer's tile loop: the others
   * leave before it. */
  const char *leave = strstr(dec, "threadIdx.x != 256) return;");
  assert_true(leave && leave < producer_loop);
  assert_non_null(strstr(inc, loop));
  /* The producer's part: fills and waits on empty barriers, no wgmma, no
   * accumulators zeroed, no C; the consumers' part: no copy. The executor
   * runs both roles in one lockstep order, so only this says the GPU's
   * producer warpgroup keeps to its own statements. */
  char *producer = strndup(dec, (size_t)(inc - dec));
  assert_non_null(strstr(producer, "tessel_tma_2d("));
  assert_null(strstr(producer, "wgmma"));
  assert_null(strstr(producer, "= 0.0f;"));
  assert_null(strstr(producer, "&C["));
  assert_null(strstr(producer, "tessel_mbar_arrive("));
  free(producer);
  assert_null(strstr(inc, "tessel_tma_2d("));
  assert_null(strstr(inc, "tessel_mbar_expect_tx("));
  assert_non_null(strstr(inc, "&C["));
  assert_non_null(strstr(inc, "tessel_mbar_arrive(&tessel_empty0[3]);"));
  assert_non_null(strstr(src, "cp.async.bulk.tensor"));
  assert_non_null(strstr(src, "mbarrier.try_wait.parity"));
  assert_non_null(strstr(src, "tessel_mbar_wait(&tessel_empty0"));
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* A sampled check finds the blocks that write its points through the
 * tile loop and the pipeline around it: each block's tiles span C, so it
 * runs every block, and compares what they wrote. */
static void test_sampled_check_runs_the_blocks(void **state) {
  (void)state;
  ts_sched *s = wgpers(520, 1040, 264, TS_F16, TS_NT);
  ts_program *p = ts_lower(s);
  ts_sample sample = {.random = 2};
  char msg[1024];
  if (ts_program_check_sampled(p, 3, &sample, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s", msg);
  assert_int_equal(sample.blocks_run, TS_EXEC_MULTIPROCESSORS);
  assert_int_equal(sample.blocks_total, TS_EXEC_MULTIPROCESSORS);
  assert_int_equal(sample.elements, 520 * 1040);
  ts_program_free(p);
  ts_sched_free(s);
}

/* tessel explain: the grid on an H100's 132 multiprocessors, 512 tiles
 * at 4096^3: 132 blocks, 3 full waves and a last of 116 tiles. */
static void test_explain_reports_the_waves(void **state) {
  (void)state;
  ts_sched *s = wgpers(4096, 4096, 4096, TS_F16, TS_NN);
  ts_program *p = ts_lower(s);
  ts_explain *e = ts_program_explain(p, NULL);
  assert_int_equal(e->status, TS_OK);
  const ts_persistent_report *r = &e->kernels[0].persistent;
  assert_int_equal(r->blocks_per_sm, 1);
  assert_int_equal(r->multiprocessors, 132);
  assert_int_equal(r->tiles, 512);
  assert_int_equal(r->blocks, 132);
  assert_int_equal(r->full_waves, 3);
  assert_int_equal(r->last_wave, 116);
  char *text = ts_explain_text(e);
  assert_non_null(strstr(text, "132 blocks loop over the grid's 512 tiles"));
  assert_non_null(strstr(text, "3.88 waves, 3 full and a last of 116 tiles "
                               "(88% of the blocks)"));
  free(text);
  ts_explain_free(e);
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- Refusals -------------------------------------------------------------- */

/* The naive nest at 64^3 with i on blockIdx.y and j on blockIdx.x. */
static ts_sched *bound_nest(ts_loop **i, ts_loop **j) {
  ts_sched *s = sched_of(64, 64, 64);
  *i = ts_get_loop(s, "i");
  *j = ts_get_loop(s, "j");
  ts_bind(s, *i, TS_BLOCK_Y);
  ts_bind(s, *j, TS_BLOCK_X);
  return s;
}

static void test_refuses_loops_not_bound(void **state) {
  (void)state;
  ts_sched *s = sched_of(64, 64, 64);
  ts_loop *i = ts_get_loop(s, "i"), *j = ts_get_loop(s, "j");
  ts_bind(s, j, TS_BLOCK_X);
  assert_refused_with(s, ts_persistent(s, i, j, 1), TS_ERR_BAD_ARG,
                      "ts_persistent: argument 2 'rows' must be a loop bound "
                      "to blockIdx (loop \"i\" is serial); bind it first");
}

static void test_refuses_blocks_out_of_range(void **state) {
  (void)state;
  const int bad[] = {0, 33, -1};
  for (int b = 0; b < 3; b++) {
    ts_loop *i, *j;
    ts_sched *s = bound_nest(&i, &j);
    assert_refused_with(s, ts_persistent(s, i, j, bad[b]), TS_ERR_BAD_ARG,
                        "argument 4 'blocks_per_sm' must be in 1..32");
  }
}

static void test_refuses_one_loop_twice_and_twice(void **state) {
  (void)state;
  ts_loop *i, *j;
  ts_sched *s = bound_nest(&i, &j);
  assert_refused_with(s, ts_persistent(s, i, i, 1), TS_ERR_DUPLICATE_LOOP,
                      "rows and cols are both loop \"i\"");
  s = bound_nest(&i, &j);
  assert_int_equal(ts_persistent(s, i, j, 1), TS_OK);
  assert_refused_with(s, ts_persistent(s, i, j, 2), TS_ERR_ALREADY_BOUND,
                      "the grid is already persistent");
}

static void test_refuses_split_k(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 128, 256);
  ts_sched *s = ts_builtin_schedule("splitk", &g);
  assert_refused_with(s, ts_persistent(s, ts_get_loop(s, "i.outer"),
                                       ts_get_loop(s, "j.outer"), 1),
                      TS_ERR_BAD_ARG, "not with ts_split_k");
}

/* wgtma's TMA pipeline is not warp-specialized: refused at lowering,
 * saying to add the producer warpgroup. */
static void test_refuses_tma_without_producer(void **state) {
  (void)state;
  ts_sched *s = persistent("wgtma", 256, 256, 256, TS_NN, true, 1);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_ARG);
  const char *msg = ts_program_errmsg(p);
  if (!strstr(msg, "needs a producer warpgroup: add ts_warp_specialize"))
    fail_msg("%s", msg);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_refuses_swizzle_of_other_loops(void **state) {
  (void)state;
  ts_sched *s = sched_of(64, 64, 64);
  ts_loop *i = ts_get_loop(s, "i"), *j = ts_get_loop(s, "j"), *io, *ii;
  ts_split(s, i, 8, &io, &ii);
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, ii, TS_BLOCK_Z);
  ts_bind(s, j, TS_BLOCK_X);
  assert_refused_with(s, ts_persistent(s, io, j, 1), TS_ERR_BAD_ARG,
                      "loop \"i.inner\" is bound to blockIdx.z too");
  s = bound_nest(&i, &j);
  ts_swizzle(s, j, i, 2);
  ts_persistent(s, i, j, 1);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_program_errmsg(p), "give both the same rows "
                                               "and cols"));
  ts_program_free(p);
  ts_sched_free(s);
}

/* The trace prints and replays the call. */
static void test_trace(void **state) {
  (void)state;
  ts_sched *s = persistent("tc64", 128, 128, 64, TS_NN, true, 2);
  char *t = ts_print_trace(s);
  assert_non_null(strstr(t, "ts_persistent(s, i_outer, j_outer, 2);"));
  free(t);
  assert_replays(s);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_builtins_made_persistent),
      cmocka_unit_test(test_composes_with_swizzle),
      cmocka_unit_test(test_wgpers_every_layout),
      cmocka_unit_test(test_wgpers_odd_and_bf16),
      cmocka_unit_test(test_blocks_take_several_tiles),
      cmocka_unit_test(test_launch_grid_from_multiprocessors),
      cmocka_unit_test(test_phases_run_on_across_tiles),
      cmocka_unit_test(test_cuda_loops_over_tiles),
      cmocka_unit_test(test_explain_reports_the_waves),
      cmocka_unit_test(test_sampled_check_runs_the_blocks),
      cmocka_unit_test(test_refuses_loops_not_bound),
      cmocka_unit_test(test_refuses_blocks_out_of_range),
      cmocka_unit_test(test_refuses_one_loop_twice_and_twice),
      cmocka_unit_test(test_refuses_split_k),
      cmocka_unit_test(test_refuses_tma_without_producer),
      cmocka_unit_test(test_refuses_swizzle_of_other_loops),
      cmocka_unit_test(test_trace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
