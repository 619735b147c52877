/*
 * The sampled check: correct schedules pass at odd and large shapes (a
 * swizzle-free tiling, warp tiles, split-K's two kernels), with little
 * memory; a fault planted in the last row of blocks (a wrong value, an
 * out-of-bounds store, a race with the row above) is caught; the budget
 * cuts the points and says so; the plan of a sample (ts_program_sample_plan)
 * is the sample run, and one that cannot fit in memory is refused.  The
 * TMA's stores of C's tile (wgstore, in a persistent grid too) are found
 * as writers of C, and a sample that compares nothing fails.
 */
#include "helpers.h"

#include "ir/program_ir.h"
#include "ir/visit.h"

static ts_program *lowered(const char *name, int64_t m, int64_t n,
                           int64_t k) {
  ts_gemm g = ts_gemm_make(m, n, k);
  ts_sched *s = ts_matmul(&g);
  assert_int_equal(ts_builtin_find(name)->apply(s), TS_OK);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  return p;
}

static ts_status sampled(ts_program *p, int random, ts_sample *smp,
                         char *msg, size_t len) {
  *smp = (ts_sample){.random = random};
  return ts_program_check_sampled(p, 7, smp, msg, len);
}

static void test_correct_schedules_pass(void **state) {
  (void)state;
  const char *names[] = {"naive", "smem32", "warptiled", "splitk",
                         "pipelined"};
  for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
    ts_program *p = lowered(names[i], 333, 517, 129);
    ts_sample smp;
    char msg[512];
    ts_status st = sampled(p, 3, &smp, msg, sizeof(msg));
    if (st != TS_OK)
      fail_msg("%s: %s: %s", names[i], ts_strerror(st), msg);
    assert_true(smp.elements > 0);
    assert_true(smp.blocks_run < smp.blocks_total);
    assert_int_equal(smp.points_run, 11);
    ts_program_free(p);
  }
}

/* At a shape whose matrices would take 30 GiB, a sample of naive's blocks
 * takes a few MiB. */
static void test_large_shape_in_little_memory(void **state) {
  (void)state;
  ts_program *p = lowered("naive", 50001, 50003, 61);
  ts_sample smp;
  char msg[512];
  ts_status st = sampled(p, 2, &smp, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("%s: %s", ts_strerror(st), msg);
  assert_true(smp.bytes < 64.0 * 1048576);
  assert_true(smp.blocks_run >= 4); /* the corners at least */
  assert_true(smp.elements >= 4 * 17 * 19);
  ts_program_free(p);
}

/* The store to C of kernel k, or NULL. */
static ir_stmt *c_store(ir_stmt *s, const ir_buffer *c) {
  switch (s->kind) {
  case S_STORE: return s->store.buf == c ? s : NULL;
  case S_FOR: return c_store(s->for_.body, c);
  case S_ALLOC: return c_store(s->alloc.body, c);
  case S_LANES: return c_store(s->lanes.expanded, c);
  case S_IF: {
    ir_stmt *t = c_store(s->if_.then_, c);
    return t ? t : s->if_.else_ ? c_store(s->if_.else_, c) : NULL;
  }
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) {
      ir_stmt *t = c_store(s->seq.items[i], c);
      if (t)
        return t;
    }
    return NULL;
  default: return NULL;
  }
}

/* naive binds C's rows to blockIdx.x: is this block in the last row? */
static ir_expr *in_last_row(ts_program *p) {
  ir_var *bx = ir_new_var(&p->arena, 0, "blockIdx.x", VAR_LAUNCH,
                          p->k.grid[0]);
  bx->tag = TS_BLOCK_X;
  return ir_binary(&p->arena, E_EQ, ir_varref(&p->arena, bx),
                   ir_int(&p->arena, p->k.grid[0] - 1));
}

/* Adds `by` to the store's row in the last row of blocks. */
static void shift_last_row(ts_program *p, int64_t by) {
  ir_stmt *s = c_store(p->k.body, p->k.C);
  assert_non_null(s);
  ir_expr *d = ir_select(&p->arena, in_last_row(p), ir_int(&p->arena, by),
                         ir_int(&p->arena, 0));
  s->store.idx[0] = ir_binary(&p->arena, E_ADD, s->store.idx[0], d);
}

static void test_wrong_value_in_last_row_of_blocks(void **state) {
  (void)state;
  ts_program *p = lowered("naive", 1001, 999, 17);
  ir_stmt *s = c_store(p->k.body, p->k.C);
  s->store.value = ir_select(&p->arena, in_last_row(p),
                             ir_binary(&p->arena, E_ADD, s->store.value,
                                       ir_float(&p->arena, 1)),
                             s->store.value);
  ts_sample smp;
  char msg[512];
  assert_int_equal(sampled(p, 0, &smp, msg, sizeof(msg)), TS_ERR_MISMATCH);
  long long row;
  assert_int_equal(sscanf(msg, "C[%lld,", &row), 1);
  assert_true(row >= 992 && row <= 1000);
  ts_program_free(p);
}

static void test_out_of_bounds_in_last_row_of_blocks(void **state) {
  (void)state;
  ts_program *p = lowered("naive", 1001, 999, 17);
  shift_last_row(p, 32);
  ts_sample smp;
  char msg[512];
  assert_int_equal(sampled(p, 0, &smp, msg, sizeof(msg)), TS_ERR_EXEC_FAULT);
  assert_non_null(strstr(msg, "out-of-bounds store of global C[1024"));
  assert_non_null(strstr(msg, "of block (31, "));
  ts_program_free(p);
}

/* The last row of blocks writes the row above's elements: the bound of
 * its stores covers both rows, so the row above runs too, and the race is
 * found although no point was chosen there. */
static void test_race_with_the_row_above(void **state) {
  (void)state;
  ts_program *p = lowered("naive", 1001, 999, 17);
  shift_last_row(p, -32);
  ts_sample smp;
  char msg[512];
  assert_int_equal(sampled(p, 0, &smp, msg, sizeof(msg)), TS_ERR_EXEC_FAULT);
  assert_non_null(strstr(msg, "race: two threads write global C"));
  ts_program_free(p);
}

static void test_budget_cuts_the_points(void **state) {
  (void)state;
  ts_program *p = lowered("naive", 4096, 4096, 4096);
  /* time for one block of the 4096 and not two */
  double block = ts_check_seconds(p) / (double)(p->k.grid[0] * p->k.grid[1]);
  ts_sample smp = {.random = 8, .budget_s = 1.5 * block};
  char msg[512];
  assert_int_equal(ts_program_check_sampled(p, 1, &smp, msg, sizeof(msg)),
                   TS_OK);
  assert_int_equal(smp.points_wanted, 16);
  assert_int_equal(smp.points_run, 1);
  assert_int_equal(smp.blocks_run, 1);
  assert_int_equal(smp.elements, 32 * 32);
  ts_program_free(p);
}

/* The plan is the sample that runs: its blocks, points, elements and time,
 * and memory estimated at no less than the run takes. */
static void test_plan_is_the_run(void **state) {
  (void)state;
  const char *names[] = {"naive", "splitk"};
  for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
    ts_program *p = lowered(names[i], 2049, 1025, 515);
    ts_sample plan = {.random = 3}, run;
    char msg[512];
    assert_int_equal(ts_program_sample_plan(p, 7, &plan, msg, sizeof(msg)),
                     TS_OK);
    assert_int_equal(sampled(p, 3, &run, msg, sizeof(msg)), TS_OK);
    assert_int_equal(plan.blocks_run, run.blocks_run);
    assert_int_equal(plan.blocks_total, run.blocks_total);
    assert_int_equal(plan.points_run, run.points_run);
    assert_int_equal(plan.elements, run.elements);
    assert_true(plan.seconds == run.seconds && plan.seconds > 0);
    assert_true(plan.steps > 0.5 * run.steps && plan.steps < 2 * run.steps);
    /* C's pages (and split-K's workspace) and the inputs compared. */
    assert_true(plan.bytes >= run.bytes);
    assert_true(plan.bytes < 64 * run.bytes + 515.0 * 4 * 4096);
    ts_program_free(p);
  }
}

/* A sample whose one block reads rows of A and columns of B 2^31 - 1 long
 * (512 GiB to compare them) is refused before anything runs, with the
 * numbers and what to do. */
static void test_sample_past_memory_refused(void **state) {
  (void)state;
  assert_true(ts_memory_available() > 0);
  ts_program *p = lowered("naive", 256, 256, 2147483647);
  ts_sample smp = {.random = 1};
  char msg[512];
  assert_int_equal(ts_program_sample_plan(p, 7, &smp, msg, sizeof(msg)),
                   TS_ERR_NO_MEMORY);
  assert_non_null(strstr(msg, "needs about 512.0 GiB"));
  assert_non_null(strstr(msg, "GiB available; check a smaller K"));
  assert_true(smp.bytes > 500.0 * 1073741824);
  assert_int_equal(sampled(p, 1, &smp, msg, sizeof(msg)), TS_ERR_NO_MEMORY);
  assert_non_null(strstr(msg, "check a smaller K"));
  ts_program_free(p);
}

/* wgstore, or with `knobs` that configuration of the warpgroup space, in
 * f16 with an f16 C, lowered. */
static ts_program *lowered_f16(const char *knobs, int64_t m, int64_t n,
                               int64_t k) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = g.c_type = TS_F16;
  g.layout = TS_NT;
  g.beta = 0.5f;
  ts_sched *s;
  if (knobs) {
    char err[256];
    ts_config *c = ts_config_parse(knobs, err, sizeof(err));
    assert_non_null(c);
    s = ts_space_schedule(ts_space_find("warpgroup"), &g, c);
    ts_config_free(c);
  } else {
    s = ts_builtin_schedule("wgstore", &g);
  }
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_true(p->k.tma_store);
  return p;
}

static void test_tma_stores_are_found(void **state) {
  (void)state;
  const char *knobs[] = {NULL, "persistent=1,store=1"};
  for (size_t i = 0; i < sizeof(knobs) / sizeof(*knobs); i++) {
    ts_program *p = lowered_f16(knobs[i], 333, 520, 129);
    ts_sample smp;
    char msg[512];
    ts_status st = sampled(p, 3, &smp, msg, sizeof(msg));
    if (st != TS_OK)
      fail_msg("%s: %s: %s", knobs[i] ? knobs[i] : "wgstore",
               ts_strerror(st), msg);
    assert_int_equal(smp.points_run, 11);
    assert_true(smp.blocks_run > 0);
    assert_true(smp.elements > 0);
    ts_program_free(p);
  }
}

static ir_stmt *no_tma_store(ir_mutator *m, ir_stmt *s) {
  return s->kind == S_TMA_STORE ? ir_new_seq(m->a, NULL, 0)
                                : ir_mutate_stmt_children(m, s);
}

/* Without its stores the kernel writes none of C: no block is found for
 * the points, and the sample, which would compare nothing, fails. */
static void test_a_sample_that_compares_nothing_fails(void **state) {
  (void)state;
  ts_program *p = lowered_f16(NULL, 333, 520, 129);
  ir_mutator m = {.a = &p->arena, .stmt = no_tma_store};
  p->k.body = ir_mutate_stmt(&m, p->k.body);
  ts_sample smp;
  char msg[512];
  assert_int_equal(sampled(p, 3, &smp, msg, sizeof(msg)), TS_ERR_MISMATCH);
  assert_int_equal(smp.blocks_run, 0);
  assert_non_null(strstr(msg, "nothing was compared"));
  ts_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_correct_schedules_pass),
      cmocka_unit_test(test_large_shape_in_little_memory),
      cmocka_unit_test(test_wrong_value_in_last_row_of_blocks),
      cmocka_unit_test(test_out_of_bounds_in_last_row_of_blocks),
      cmocka_unit_test(test_race_with_the_row_above),
      cmocka_unit_test(test_budget_cuts_the_points),
      cmocka_unit_test(test_plan_is_the_run),
      cmocka_unit_test(test_sample_past_memory_refused),
      cmocka_unit_test(test_tma_stores_are_found),
      cmocka_unit_test(test_a_sample_that_compares_nothing_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
