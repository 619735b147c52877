/*
 * Thread-block clusters (ts_cluster): two blocks take neighbouring tiles
 * of C, and the TMA copies the tile of the operand they share once, into
 * both (multicast), by the block whose turn the k tile is; each consumer
 * warp releases a stage in both blocks, and a block's producer waits in
 * its last tile for each stage's last release, so that no peer reaches
 * a block that has left.  Lowered from the warpgroup space, checked
 * against a plain GEMM at odd shapes in every layout (a tile count that
 * is odd along the pair's direction gives a block past C's edge, which
 * computes its partner's tile and stores nothing), printed as CUDA, and
 * mutated into the faults the executor must find.
 */
#include "helpers.h"
#include "run_kernel.h"
#include "warpgroup.h"

#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"
#include "schedule/sched.h"

/* ---- What lowering makes ---------------------------------------------------- */

typedef struct {
  const ir_pipeline *pipe;
  int multicast_boxes, boxes, multicast_arrives, arrives, empty_waits;
} census;

static bool count_pipe(ir_visitor *v, const ir_stmt *s) {
  census *c = v->ctx;
  if (s->kind == S_PIPELINE)
    c->pipe = s->pipe.pipe;
  if (s->kind == S_TMA) {
    c->boxes++;
    c->multicast_boxes += s->pipe.multicast;
  }
  if (s->kind == S_MBARRIER && s->pipe.op == MBAR_ARRIVE) {
    c->arrives++;
    c->multicast_arrives += s->pipe.multicast;
  }
  if (s->kind == S_MBARRIER && s->pipe.op == MBAR_WAIT &&
      s->pipe.bar == MBAR_EMPTY)
    c->empty_waits++;
  return true;
}

static census census_of(const ir_kernel *k) {
  census c = {0};
  visit_body(k, count_pipe, &c);
  return c;
}

/* 300 x 520 in 128 x 256 tiles: 3 block rows (one past C's edge to pair
 * them) by 3 columns; B's boxes multicast, A's each block's own. */
static void test_the_pipeline_a_cluster_shares(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = warpgroup_lowered("cluster=2",
                                    300, 520, 256, TS_F16, TS_NT, &s);
  assert_int_equal(p->k.cluster, 2);
  assert_int_equal(p->k.grid[0], 4 * 3);
  assert_int_equal(p->k.persistent, 0);
  census c = census_of(&p->k);
  assert_non_null(c.pipe);
  assert_int_equal(c.pipe->cluster, 2);
  assert_int_equal(c.pipe->consumers, 2 * 8);
  /* The first 4 fills and the refill: A's box and B's, B's multicast. */
  assert_int_equal(c.boxes, 2 * 5);
  assert_int_equal(c.multicast_boxes, 5);
  assert_int_equal(c.arrives, c.multicast_arrives);
  assert_true(c.arrives >= 2);
  /* The refills' and first fills' waits, and the 4 last releases. */
  assert_int_equal(c.empty_waits, 5 + 4);
  int64_t grid[3];
  ir_kernel_grid(&p->k, 132, grid);
  assert_int_equal(grid[0], 12);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  assert_non_null(strstr(src, "__cluster_dims__(2, 1, 1)"));
  assert_non_null(strstr(src, "clusters of 2 blocks along x"));
  assert_int_equal(count_in(src, "tessel_tma_2d_multicast(&B_shared"), 5);
  assert_int_equal(count_in(src, "tessel_tma_2d_multicast(&A_shared"), 0);
  assert_non_null(strstr(src, ".multicast::cluster"));
  assert_non_null(strstr(src, "mapa.shared::cluster.u32"));
  assert_non_null(strstr(src, "barrier.cluster.arrive.release.aligned"));
  assert_non_null(strstr(src, "tessel_cluster_sync();"));
  assert_non_null(strstr(src, "if (blockIdx.x % 2 == "));
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* A persistent grid of clusters: the launch keeps whole clusters. */
static void test_a_persistent_grid_of_clusters(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = warpgroup_lowered("cluster=2,persistent=1",
                                    4096, 4096, 128, TS_F16, TS_NN, &s);
  assert_int_equal(p->k.cluster, 2);
  assert_int_equal(p->k.persistent, 1);
  int64_t grid[3];
  ir_kernel_grid(&p->k, 133, grid);
  assert_int_equal(grid[0], 132);
  ir_kernel_grid(&p->k, 132, grid);
  assert_int_equal(grid[0], 132);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Without the swizzle's groups the pair is two neighbours on blockIdx.x,
 * the block columns, which share A's tile. */
static void test_launch_order_pairs_columns(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = warpgroup_lowered("cluster=2,swizzle=0",
                                    300, 520, 64, TS_BF16, TS_TN, &s);
  census c = census_of(&p->k);
  assert_true(c.multicast_boxes > 0);
  char *src = ts_program_cuda(p);
  assert_true(count_in(src, "tessel_tma_2d_multicast(&A_shared") > 0);
  assert_int_equal(count_in(src, "tessel_tma_2d_multicast(&B_shared"), 0);
  free(src);
  /* 3 block rows by 3 columns, the columns made 4. */
  assert_int_equal(p->k.grid[0], 3 * 4);
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- Correct, at odd shapes ------------------------------------------------- */

static void has_clusters(const ts_program *p) {
  assert_int_equal(p->k.cluster, 2);
}

static void check_shapes(const char *config) {
  const int64_t shapes[][3] = {
      {300, 520, 100}, {129, 264, 64}, {1, 8, 1}, {37, 56, 29}};
  warpgroup_check_shapes(config, shapes, 4, has_clusters);
}

static void test_clusters_check_at_odd_shapes(void **state) {
  (void)state;
  check_shapes("cluster=2");
}

static void test_persistent_clusters_check_at_odd_shapes(void **state) {
  (void)state;
  check_shapes("cluster=2,persistent=1");
}

static void test_clusters_of_columns_check_at_odd_shapes(void **state) {
  (void)state;
  check_shapes("cluster=2,swizzle=0,persistent=1");
}

static void test_clusters_with_the_tma_store_check(void **state) {
  (void)state;
  check_shapes("cluster=2,store=1");
  check_shapes("cluster=2,store=1,persistent=1,bm=64");
}

/* ---- Mutants ------------------------------------------------------------------ */

typedef enum {
  RELEASES_COUNTED_ONCE, /* empty barriers count one block's warps */
  NO_LAST_RELEASES,      /* the producer leaves without its last waits */
  BOTH_BLOCKS_ISSUE,     /* the turn's test dropped: both multicast */
  NOT_MULTICAST,         /* the turn's block copies into itself only */
} mutation;

typedef struct {
  mutation m;
  ir_pipeline *copy;
  int changed;
} mutant;

static bool holds_empty_waits_only(const ir_stmt *s) {
  if (s->kind != S_SEQ || !s->seq.n)
    return false;
  for (int i = 0; i < s->seq.n; i++)
    if (s->seq.items[i]->kind != S_MBARRIER ||
        s->seq.items[i]->pipe.op != MBAR_WAIT ||
        s->seq.items[i]->pipe.bar != MBAR_EMPTY)
      return false;
  return true;
}

/* `if (producer && last tile) waits...` */
static bool is_last_releases(const ir_stmt *s) {
  return s->kind == S_IF && holds_empty_waits_only(s->if_.then_);
}

static bool is_turn(const ir_stmt *s) {
  return s->kind == S_IF && s->if_.then_->kind == S_TMA &&
         s->if_.then_->pipe.multicast;
}

static ir_stmt *mutate(ir_mutator *mu, ir_stmt *s) {
  mutant *x = mu->ctx;
  if (x->m == NO_LAST_RELEASES && is_last_releases(s)) {
    x->changed++;
    return ir_new_seq(mu->a, NULL, 0);
  }
  if (x->m == BOTH_BLOCKS_ISSUE && is_turn(s)) {
    x->changed++;
    return s->if_.then_;
  }
  ir_stmt *n = ir_mutate_stmt_children(mu, s);
  if (x->m == NOT_MULTICAST && n->kind == S_TMA && n->pipe.multicast) {
    n = stmt_copy(mu->a, n);
    n->pipe.multicast = false;
    x->changed++;
  }
  if (x->m == RELEASES_COUNTED_ONCE) {
    n = with_consumers(mu->a, n, &x->copy, 1, 2);
    x->changed += n->kind == S_PIPELINE;
  }
  return n;
}

static void assert_mutant_faults(mutation m, int changed,
                                 const char *const says[2]) {
  ts_sched *s;
  ts_program *p = warpgroup_lowered("cluster=2",
                                    300, 264, 512, TS_F16, TS_NT, &s);
  ir_kernel k = p->k;
  mutant x = {.m = m};
  ir_mutator mu = {.a = &p->arena, .stmt = mutate, .ctx = &x};
  k.body = ir_mutate_stmt(&mu, p->k.body);
  assert_int_equal(x.changed, changed);
  assert_kernel_faults(p, &k, says, 2);
  ts_program_free(p);
  ts_sched_free(s);
}

/* An empty barrier that completes on one block's releases lets its
 * producer multicast into the peer's stage before the peer's consumers
 * are done with it. */
static void test_a_multicast_into_a_stage_the_peer_holds(void **state) {
  (void)state;
  assert_mutant_faults(RELEASES_COUNTED_ONCE, 1,
                       (const char *[]){"cluster peer", "not released"});
}

static void test_a_block_leaving_before_its_peer_is_done(void **state) {
  (void)state;
  assert_mutant_faults(NO_LAST_RELEASES, 1,
                       (const char *[]){"cluster peer", "leaves"});
}

/* Both blocks multicast each box (the first 4 fills' and the loop's
 * refill): twice the bytes each full barrier expects. */
static void test_both_blocks_multicasting(void **state) {
  (void)state;
  assert_mutant_faults(BOTH_BLOCKS_ISSUE, 5,
                       (const char *[]){"pass what full[", NULL});
}

/* The turn's block copies only into itself: the other block's full
 * barrier waits for bytes that never come. */
static void test_a_box_not_multicast(void **state) {
  (void)state;
  assert_mutant_faults(NOT_MULTICAST, 5,
                       (const char *[]){"never completes", NULL});
}

/* ---- Refused ---------------------------------------------------------------- */

static void test_the_primitive_checks_its_arguments(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(512, 512, 512);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule("wg128", &g); /* cp.async, no TMA */
  ts_loop *io = ts_get_loop(s, "i.outer"), *jo = ts_get_loop(s, "j.outer");
  ts_stage *bs = sched_find_stage(s, "B.shared");
  assert_non_null(bs);
  assert_int_equal(ts_cluster(s, io, jo, bs, 2), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_sched_errmsg(s), "not filled by the TMA with a "
                         "producer warpgroup"));
  ts_sched_free(s);
  s = ts_builtin_schedule("wgws", &g);
  io = ts_get_loop(s, "i.outer");
  jo = ts_get_loop(s, "j.outer");
  bs = sched_find_stage(s, "B.shared");
  assert_int_equal(ts_cluster(s, io, jo, bs, 4), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_sched_errmsg(s), "'blocks' must be 2"));
  ts_sched_free(s);
  s = ts_builtin_schedule("wgws", &g);
  io = ts_get_loop(s, "i.outer");
  jo = ts_get_loop(s, "j.outer");
  bs = sched_find_stage(s, "B.shared");
  assert_int_equal(ts_cluster(s, io, jo, bs, 2), TS_OK);
  assert_int_equal(ts_cluster(s, io, jo, bs, 2), TS_ERR_ALREADY_BOUND);
  ts_sched_free(s);
}

/* The swizzle's groups pair block rows: A's tile is not shared. */
static void test_the_operand_the_pair_does_not_share(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(512, 512, 512);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule("wgws", &g);
  assert_int_equal(ts_cluster(s, ts_get_loop(s, "i.outer"),
                              ts_get_loop(s, "j.outer"),
                              sched_find_stage(s, "A.shared"), 2), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_program_errmsg(p), "the pair does not share "
                         "it"));
  ts_program_free(p);
  ts_sched_free(s);
}

/* The trace prints the call and replays it. */
static void test_the_trace_replays_it(void **state) {
  (void)state;
  ts_sched *s = warpgroup_sched("cluster=2", 300, 520, 64, TS_F16, TS_NT);
  char *trace = ts_print_trace(s);
  assert_non_null(trace);
  assert_non_null(strstr(trace, "ts_cluster(s, i_outer, j_outer, B_shared, "
                         "2);"));
  free(trace);
  ts_gemm g = *ts_sched_gemm(s);
  ts_sched *t = ts_matmul_named(&g, "again");
  assert_int_equal(ts_replay(s, t), TS_OK);
  char buf[8192];
  size_t n = ts_trace_save(s, buf, sizeof(buf));
  assert_true(n < sizeof(buf));
  ts_sched *u = ts_matmul_named(&g, "warpgroup");
  bool complete = false;
  assert_int_equal(ts_trace_load(u, buf, n, &complete), TS_OK);
  assert_true(complete);
  ts_program *p = ts_lower(u);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_int_equal(p->k.cluster, 2);
  ts_program_free(p);
  ts_sched_free(u);
  ts_sched_free(t);
  ts_sched_free(s);
}

/* The space prunes a cluster without a producer warpgroup's pipeline. */
static void test_the_space_prunes_clusters_without_a_producer(void **state) {
  (void)state;
  ts_sched *s = warpgroup_sched("cluster=2,warpspec=0", 512, 512, 512, TS_F16,
                            TS_NT);
  assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
  assert_non_null(strstr(ts_sched_errmsg(s), "cluster=2 without a producer"));
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_pipeline_a_cluster_shares),
      cmocka_unit_test(test_a_persistent_grid_of_clusters),
      cmocka_unit_test(test_launch_order_pairs_columns),
      cmocka_unit_test(test_clusters_check_at_odd_shapes),
      cmocka_unit_test(test_persistent_clusters_check_at_odd_shapes),
      cmocka_unit_test(test_clusters_of_columns_check_at_odd_shapes),
      cmocka_unit_test(test_clusters_with_the_tma_store_check),
      cmocka_unit_test(test_a_multicast_into_a_stage_the_peer_holds),
      cmocka_unit_test(test_a_block_leaving_before_its_peer_is_done),
      cmocka_unit_test(test_both_blocks_multicasting),
      cmocka_unit_test(test_a_box_not_multicast),
      cmocka_unit_test(test_the_primitive_checks_its_arguments),
      cmocka_unit_test(test_the_operand_the_pair_does_not_share),
      cmocka_unit_test(test_the_trace_replays_it),
      cmocka_unit_test(test_the_space_prunes_clusters_without_a_producer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
