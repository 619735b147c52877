/*
 * stmatrix in C's shared stage: where C is 16-bit and each register pair
 * of the accumulators is an 8 x 8 matrix of the stage (wgmma's fragment),
 * lowering writes the stage by stmatrix.x4, one instruction for four
 * pairs; where the registers run along the columns (tf32 in NN computes
 * C's transpose) or C is fp32 it keeps the threads' stores.  The executor
 * runs stmatrix as the hardware does, and a mutation of wgstore's lowered
 * program that breaks it is a fault naming the instruction or the stage:
 * a row address off a 16-byte boundary, a lane left out, a write into a
 * panel the TMA's store still reads, two warps writing one row.
 */
#include "helpers.h"
#include "run_kernel.h"

#include "exec/executor.h"
#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"

/* wgstore at 128 x 256 x 512, NT unless `layout` says, C of c_type. */
static ts_program *lowered(ts_dtype type, ts_dtype c_type, ts_layout layout,
                           ts_sched **s) {
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = type;
  g.c_type = c_type;
  g.math = type == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
  g.layout = layout;
  *s = ts_builtin_schedule("wgstore", &g);
  ts_program *p = ts_lower(*s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_true(p->k.tma_store);
  return p;
}

typedef struct {
  int stmatrix, stage_stores;
} tally;

static bool count(ir_visitor *v, const ir_stmt *s) {
  tally *t = v->ctx;
  if (s->kind == S_STMATRIX)
    t->stmatrix++;
  if (s->kind == S_STORE && s->store.buf->overlay)
    t->stage_stores++;
  return true;
}

static tally tally_of(ts_dtype type, ts_dtype c_type, ts_layout layout) {
  ts_sched *s;
  ts_program *p = lowered(type, c_type, layout, &s);
  tally t = {0};
  ir_visitor v = {.stmt = count, .ctx = &t};
  ir_visit_stmt(&v, p->k.body);
  ts_program_free(p);
  ts_sched_free(s);
  return t;
}

/* 128 x 256 halves: 4 panels of 64 columns, each 16 register pairs a
 * lane, 4 stmatrix.x4 a panel (the IR's loop of 4 unrolled). */
static void test_a_16_bit_stage_is_written_by_stmatrix(void **state) {
  (void)state;
  for (int l = TS_NN; l <= TS_TT; l++) {
    tally t = tally_of(TS_F16, TS_F16, (ts_layout)l);
    assert_int_equal(t.stmatrix, 4);
    assert_int_equal(t.stage_stores, 0);
    t = tally_of(TS_BF16, TS_BF16, (ts_layout)l);
    assert_int_equal(t.stmatrix, 4);
    assert_int_equal(t.stage_stores, 0);
  }
  tally t = tally_of(TS_F32, TS_F16, TS_NT);
  assert_int_equal(t.stmatrix, 4);
  /* An fp32 C: stmatrix moves 16-bit elements only. */
  t = tally_of(TS_F16, TS_F32, TS_NT);
  assert_int_equal(t.stmatrix, 0);
  assert_true(t.stage_stores > 0);
  /* tf32 in NN: a pair's two registers lie in one column. */
  t = tally_of(TS_F32, TS_F16, TS_NN);
  assert_int_equal(t.stmatrix, 0);
  assert_true(t.stage_stores > 0);
}

static void test_cuda_packs_and_stores_four_matrices(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = lowered(TS_BF16, TS_BF16, TS_TT, &s);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  const char *has[] = {
      ("asm volatile(\"stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], "
       "{%1, %2, %3, %4};\\n\""),
      "__device__ __forceinline__ unsigned tessel_pack_bf16(",
      "tessel_stmatrix_x4(&C_shared[",
      "tessel_pack_bf16(__float2bfloat16_rn("};
  for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); i++)
    if (!strstr(src, has[i]))
      fail_msg("no \"%s\" in:\n%s", has[i], src);
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Against a plain C GEMM, every layout, alpha and beta, at shapes whose
 * tiles lie past C's edges: every lane stores, C is read only inside. */
static void test_checks_at_odd_shapes(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{37, 56, 29}, {300, 264, 100}, {1, 8, 1}};
  for (int i = 0; i < 3; i++)
    for (int l = TS_NN; l <= TS_TT; l++)
      for (int t = 0; t < 2; t++) {
        ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
        g.layout = (ts_layout)l;
        g.a_type = g.b_type = g.c_type = t ? TS_BF16 : TS_F16;
        g.alpha = 0.75f;
        g.beta = i == 2 ? 0.0f : 1.25f;
        ts_sched *s = ts_builtin_schedule("wgstore", &g);
        ts_program *p = ts_lower(s);
        assert_int_equal(ts_program_status(p), TS_OK);
        char *src = ts_program_cuda(p);
        assert_non_null(strstr(src, "tessel_stmatrix_x4(&"));
        free(src);
        char msg[1024];
        if (ts_program_check(p, 5, msg, sizeof(msg)) != TS_OK)
          fail_msg("%lldx%lldx%lld layout %d: %s", (long long)g.m,
                   (long long)g.n, (long long)g.k, l, msg);
        ts_program_free(p);
        ts_sched_free(s);
      }
}

/* One stmatrix.x4 a warp's request, 4 wavefronts (a matrix's 8 rows of
 * 16 bytes each in other banks, as the 128-byte swizzle places them):
 * 8 warps x 16 per block. */
static void test_explain_counts_conflict_free_matrices(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = lowered(TS_F16, TS_F16, TS_NT, &s);
  ts_explain *e = ts_program_explain(p, NULL);
  assert_int_equal(e->status, TS_OK);
  int rows = 0;
  for (int i = 0; i < e->naccesses; i++) {
    const ts_access_report *r = &e->accesses[i];
    if (r->kind != TS_ACCESS_STMATRIX)
      continue;
    rows++;
    assert_string_equal(r->buffer, "C.shared");
    assert_true(r->requests == 8 * 4);
    assert_true(r->wavefronts == 4 * r->requests);
    assert_true(r->wavefronts == r->ideal_wavefronts);
  }
  assert_int_equal(rows, 4);
  ts_explain_free(e);
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- The executor's faults ----------------------------------------------- */

typedef enum {
  OFF_A_BOUNDARY,   /* the row address 2 elements further */
  A_LANE_LEFT_OUT,  /* under a condition lanes 3 and 19 of warp 0 fail */
  INTO_THE_STORED,  /* panel 1's matrices written into panel 0 */
  TWO_WARPS_A_ROW,  /* both warpgroups address the first one's rows */
} mutation;

typedef struct {
  mutation m;
  int seen; /* stmatrix met so far */
} mutating;

static ir_expr *shifted(ts_arena *a, ir_expr *e, int64_t by) {
  return ir_add(a, e, ir_int(a, by));
}

static ir_stmt *broken(ir_mutator *mu, ir_stmt *s) {
  mutating *m = mu->ctx;
  if (s->kind != S_STMATRIX)
    return ir_mutate_stmt_children(mu, s);
  ts_arena *a = mu->a;
  const ir_expr *dst = s->stsm.dst;
  ir_expr *idx[2] = {dst->load.idx[0], dst->load.idx[1]};
  int which = m->seen++;
  switch (m->m) {
  case OFF_A_BOUNDARY: idx[1] = shifted(a, idx[1], 2); break;
  case A_LANE_LEFT_OUT:
    return ir_new_if(a, ir_binary(a, E_NE, idx[0], ir_int(a, 3)), s, NULL);
  case INTO_THE_STORED:
    if (which == 1)
      idx[1] = shifted(a, idx[1], -64);
    break;
  case TWO_WARPS_A_ROW:
    idx[0] = ir_binary(a, E_MOD, idx[0], ir_int(a, 64));
    break;
  }
  return ir_new_stmatrix(a, ir_load(a, dst->load.buf, idx), s->stsm.value,
                         s->stsm.matrices);
}

static void assert_fault(mutation m, const char *const says[2]) {
  ts_sched *s;
  ts_program *p = lowered(TS_F16, TS_F16, TS_NT, &s);
  ir_kernel k = p->k;
  mutating ctx = {.m = m};
  ir_mutator mu = {.a = &p->arena, .stmt = broken, .ctx = &ctx};
  k.body = ir_mutate_stmt(&mu, p->k.body);
  assert_int_equal(ctx.seen, 4);
  assert_kernel_faults(p, &k, says, 2);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_a_row_off_a_16_byte_boundary(void **state) {
  (void)state;
  assert_fault(OFF_A_BOUNDARY, (const char *[]){
      "stmatrix: lane 0 addresses element", "of C.shared, not a 16-byte "
      "boundary"});
}

static void test_a_lane_left_out(void **state) {
  (void)state;
  assert_fault(A_LANE_LEFT_OUT, (const char *[]){
      "stmatrix.x4 reached by 30 of the 32 lanes of warp 0 (lane 3 is not "
      "there)", "the instruction needs the whole warp"});
}

static void test_a_write_into_a_panel_being_stored(void **state) {
  (void)state;
  assert_fault(INTO_THE_STORED, (const char *[]){
      "write into shared C.shared while the TMA store", "into C at (0, 0)"});
}

static void test_two_warps_writing_one_row(void **state) {
  (void)state;
  assert_fault(TWO_WARPS_A_ROW, (const char *[]){
      "race: two threads write shared C.shared", NULL});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_16_bit_stage_is_written_by_stmatrix),
      cmocka_unit_test(test_cuda_packs_and_stores_four_matrices),
      cmocka_unit_test(test_checks_at_odd_shapes),
      cmocka_unit_test(test_explain_counts_conflict_free_matrices),
      cmocka_unit_test(test_a_row_off_a_16_byte_boundary),
      cmocka_unit_test(test_a_lane_left_out),
      cmocka_unit_test(test_a_write_into_a_panel_being_stored),
      cmocka_unit_test(test_two_warps_writing_one_row),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
