/*
 * Ping-pong consumers (ts_pingpong): two consumer warpgroups of a
 * producer warpgroup's pipeline take a persistent grid's tiles in turn,
 * each a whole tile, one's epilogue beside the other's main loop, and an
 * order barrier pair hands the ring of stages from one to the other.
 * Lowered from the warpgroup space, checked against a plain GEMM at odd
 * shapes in every layout and type (a block's tiles alternate between
 * the teams, its k tiles wrap the ring across them), printed as CUDA,
 * and mutated into the faults the executor must find.
 */
#include "helpers.h"
#include "run_kernel.h"
#include "warpgroup.h"

#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"
#include "schedule/sched.h"

#define PINGPONG "bm=64,persistent=1,pingpong=1"

/* ---- What lowering makes ---------------------------------------------------- */

typedef struct {
  const ir_pipeline *pipe;
  int order_waits, order_arrives;
} census;

static bool count_pipe(ir_visitor *v, const ir_stmt *s) {
  census *c = v->ctx;
  if (s->kind == S_PIPELINE)
    c->pipe = s->pipe.pipe;
  if (s->kind == S_MBARRIER && s->pipe.bar == MBAR_ORDER) {
    c->order_waits += s->pipe.op == MBAR_WAIT;
    c->order_arrives += s->pipe.op == MBAR_ARRIVE;
  }
  return true;
}

static census census_of(const ir_kernel *k) {
  census c = {0};
  visit_body(k, count_pipe, &c);
  return c;
}

/* 64 x 256 tiles of one warpgroup each, two teams and the producer on
 * threadIdx.z; each stage released by one team's 4 warps. */
static void test_two_teams_and_their_order_barriers(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = warpgroup_lowered(PINGPONG, 512, 512, 256, TS_F16, TS_NT, &s);
  assert_int_equal(p->k.block[0], 128);
  assert_int_equal(p->k.block[1], 1);
  assert_int_equal(p->k.block[2], 3);
  assert_int_equal(p->k.persistent, 1);
  assert_int_equal(p->k.registers.consumer, 232);
  assert_int_equal(p->k.registers.producer, 40);
  census c = census_of(&p->k);
  assert_non_null(c.pipe);
  assert_int_equal(c.pipe->pingpong, 2);
  assert_int_equal(c.pipe->consumers, 4);
  assert_int_equal(c.pipe->producer, 256);
  assert_int_equal(c.order_waits, 1);
  assert_int_equal(c.order_arrives, 1);
  char *ir = ts_program_ir(p);
  assert_non_null(ir);
  assert_non_null(strstr(ir, "ping-pong: 2 consumer warpgroups"));
  assert_non_null(strstr(ir, "mbarrier.wait order[wave % 2] parity "
                         "((wave + 1)/2 + 1) % 2"));
  assert_non_null(strstr(ir, "mbarrier.arrive order[(wave + 1) % 2]"));
  free(ir);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  assert_non_null(strstr(src, "tessel_order0[2]"));
  assert_non_null(strstr(src, "tessel_mbar_init(&tessel_order0[s], 4);"));
  assert_non_null(strstr(src, "tessel_mbar_init(&tessel_empty0[s], 4);"));
  assert_non_null(strstr(src, "const int tessel_team = __shfl_sync("
                         "0xffffffffu, (int)threadIdx.z, 0);"));
  assert_non_null(strstr(src, "if (tessel_team == wave % 2) {"));
  assert_non_null(strstr(src, "setmaxnreg.inc.sync.aligned.u32 232"));
  assert_non_null(strstr(src, "__launch_bounds__(384, 1)"));
  /* The wgmma's test is the team's alone, which ptxas can prove uniform:
   * threadIdx.z is read once, by the broadcast. */
  assert_int_equal(count_in(src, "threadIdx.z*128 + threadIdx.y*128 < 256"),
                   0);
  const char *consumers = strstr(src, "setmaxnreg.inc");
  assert_non_null(consumers);
  assert_int_equal(count_in(consumers, "threadIdx.z"), 1);
  /* The team's test holds the k loop once, outside it: tested in each
   * iteration, ptxas serializes the wgmma (C7515). */
  assert_non_null(strstr(consumers, "if (tessel_team == wave % 2) {\n"
                         "      for (int k_outer = 0; k_outer < 4; "
                         "++k_outer) {\n        tessel_mbar_wait("
                         "&tessel_full0["));
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- Correct, at odd shapes ------------------------------------------------- */

static void has_teams(const ts_program *p) {
  assert_int_equal(p->k.block[2], 3);
}

/* A block's tiles alternate between the teams; at K = 700, 11 k tiles,
 * each tile's wrap the ring. */
static void check_shapes(const char *config) {
  const int64_t shapes[][3] = {
      {300, 520, 100}, {129, 264, 64}, {1, 8, 1}, {37, 56, 29},
      {200, 300, 700}};
  warpgroup_check_shapes(config, shapes, 5, has_teams);
}

static void test_pingpong_checks_at_odd_shapes(void **state) {
  (void)state;
  check_shapes(PINGPONG);
}

/* 64 x 128 tiles, 2 stages (a block's k tiles wrap the ring within a
 * tile), launch order, no batch in flight (the last stage released in
 * the loop). */
static void test_other_tiles_and_rings_check(void **state) {
  (void)state;
  check_shapes(PINGPONG ",bn=128,stages=2,swizzle=0,inflight=0");
  check_shapes(PINGPONG ",bn=64,stages=6,inflight=2");
}

/* ---- Mutants ------------------------------------------------------------------ */

typedef enum {
  NO_ORDER_WAIT,       /* a team enters the ring without the turn */
  NO_HAND_OVER,        /* a team keeps the turn */
  RELEASES_BY_BOTH,    /* empty barriers count both teams' warps */
} mutation;

typedef struct {
  mutation m;
  ir_pipeline *copy;
  int changed;
} mutant;

static bool is_order(const ir_stmt *s, ir_mbar_op op) {
  return s->kind == S_MBARRIER && s->pipe.bar == MBAR_ORDER &&
         s->pipe.op == op;
}

static ir_stmt *mutate(ir_mutator *mu, ir_stmt *s) {
  mutant *x = mu->ctx;
  if ((x->m == NO_ORDER_WAIT && is_order(s, MBAR_WAIT)) ||
      (x->m == NO_HAND_OVER && is_order(s, MBAR_ARRIVE))) {
    x->changed++;
    return ir_new_seq(mu->a, NULL, 0);
  }
  ir_stmt *n = ir_mutate_stmt_children(mu, s);
  if (x->m == RELEASES_BY_BOTH) {
    n = with_consumers(mu->a, n, &x->copy, 2, 1);
    x->changed += n->kind == S_PIPELINE;
  }
  return n;
}

static void assert_mutant_faults(mutation m, const char *const says[2]) {
  ts_sched *s;
  ts_program *p = warpgroup_lowered(PINGPONG, 300, 520, 256, TS_F16, TS_NT, &s);
  ir_kernel k = p->k;
  mutant x = {.m = m};
  ir_mutator mu = {.a = &p->arena, .stmt = mutate, .ctx = &x};
  k.body = ir_mutate_stmt(&mu, p->k.body);
  assert_int_equal(x.changed, 1);
  assert_kernel_faults(p, &k, says, 2);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_a_team_entering_the_ring_without_the_turn(void **state) {
  (void)state;
  assert_mutant_faults(NO_ORDER_WAIT,
                       (const char *[]){"ping-pong consumer team",
                                        "without the turn"});
}

/* The other team's order barrier never completes its phase. */
static void test_a_team_that_keeps_the_turn(void **state) {
  (void)state;
  assert_mutant_faults(NO_HAND_OVER,
                       (const char *[]){"order[", "never completes"});
}

/* Each stage is read by one team: an empty barrier that waits for both
 * teams' warps never completes, and the producer's wait never returns. */
static void test_releases_counted_for_both_teams(void **state) {
  (void)state;
  assert_mutant_faults(RELEASES_BY_BOTH,
                       (const char *[]){"empty[", "never completes"});
}

/* ---- Refused ---------------------------------------------------------------- */

static void test_the_primitive_checks_its_arguments(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(512, 512, 512);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule("wgtma", &g); /* no producer warpgroup */
  ts_stage *as = sched_find_stage(s, "A.shared");
  assert_non_null(as);
  assert_int_equal(ts_pingpong(s, as), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_sched_errmsg(s), "ts_pingpong: \"A.shared\" is "
                         "not filled by a producer warpgroup"));
  ts_sched_free(s);
  s = ts_builtin_schedule("wgpers", &g);
  as = sched_find_stage(s, "A.shared");
  assert_int_equal(ts_pingpong(s, as), TS_OK);
  assert_int_equal(ts_pingpong(s, as), TS_ERR_STAGE_USED);
  ts_sched_free(s);
}

/* Lowering's refusals, each naming what to change. */
static void assert_lowering_refuses(const char *builtin, bool both,
                                    const char *says) {
  ts_gemm g = ts_gemm_make(512, 512, 512);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule(builtin, &g);
  assert_int_equal(ts_pingpong(s, sched_find_stage(s, "A.shared")), TS_OK);
  if (both)
    assert_int_equal(ts_pingpong(s, sched_find_stage(s, "B.shared")), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_not_equal(ts_program_status(p), TS_OK);
  if (!strstr(ts_program_errmsg(p), says))
    fail_msg("%s: %s", builtin, ts_program_errmsg(p));
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_lowering_refuses_what_it_cannot_run(void **state) {
  (void)state;
  assert_lowering_refuses("wgws", true, "call ts_persistent");
  assert_lowering_refuses("wgpers", true, "are two teams of one warpgroup, "
                          "128 threads");
  assert_lowering_refuses("wgpers", false, "has no ts_pingpong: call it on both");
}

/* The trace prints the call and replays it. */
static void test_the_trace_replays_it(void **state) {
  (void)state;
  ts_sched *s = warpgroup_sched(PINGPONG, 300, 520, 64, TS_F16, TS_NT);
  char *trace = ts_print_trace(s);
  assert_non_null(trace);
  assert_non_null(strstr(trace, "ts_pingpong(s, A_shared);"));
  assert_non_null(strstr(trace, "ts_pingpong(s, B_shared);"));
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
  assert_int_equal(census_of(&p->k).pipe->pingpong, 2);
  ts_program_free(p);
  ts_sched_free(u);
  ts_sched_free(t);
  ts_sched_free(s);
}

/* The space prunes what lowering would refuse. */
static void test_the_space_prunes_what_cannot_pingpong(void **state) {
  (void)state;
  const char *pruned[] = {"pingpong=1,bm=64", "pingpong=1,persistent=1",
                          PINGPONG ",cluster=2", PINGPONG ",store=1"};
  for (int i = 0; i < 4; i++) {
    ts_sched *s = warpgroup_sched(pruned[i], 512, 512, 512, TS_F16, TS_NT);
    assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
    if (!strstr(ts_sched_errmsg(s), "pingpong=1 with"))
      fail_msg("%s: %s", pruned[i], ts_sched_errmsg(s));
    ts_sched_free(s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_teams_and_their_order_barriers),
      cmocka_unit_test(test_pingpong_checks_at_odd_shapes),
      cmocka_unit_test(test_other_tiles_and_rings_check),
      cmocka_unit_test(test_a_team_entering_the_ring_without_the_turn),
      cmocka_unit_test(test_a_team_that_keeps_the_turn),
      cmocka_unit_test(test_releases_counted_for_both_teams),
      cmocka_unit_test(test_the_primitive_checks_its_arguments),
      cmocka_unit_test(test_lowering_refuses_what_it_cannot_run),
      cmocka_unit_test(test_the_trace_replays_it),
      cmocka_unit_test(test_the_space_prunes_what_cannot_pingpong),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
