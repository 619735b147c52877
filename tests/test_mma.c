/*
 * Tensor-core instructions below lowering: the fragment tables (every
 * element of a tile held by exactly one lane's register), tf32 rounding,
 * and a hand-built program of mma statements (tests/mma_program.h) run by
 * the reference executor against a plain GEMM, printed as IR and CUDA, and
 * compiled by NVRTC.  Each planted mistake is caught: lanes mapped wrong
 * (a wrong answer), a lane left out of the instruction, accumulators never
 * set (faults).
 */
#include "helpers.h"

#include <math.h>

#include "base/dtype.h"
#include "lower/lower.h"
#include "mma_program.h"
#include "base/random.h"

static const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};

static void test_fragments_cover_each_tile_once(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
    const mma_instr *in = mma_instr_for(types[i]);
    assert_non_null(in);
    int rows[3] = {in->m, in->m, in->k}, cols[3] = {in->n, in->k, in->n};
    for (int w = 0; w < 3; w++) {
      int seen[16][16] = {{0}};
      const mma_fragment *f = &in->frag[w];
      assert_int_equal(f->regs * MMA_LANES, rows[w] * cols[w]);
      for (int lane = 0; lane < MMA_LANES; lane++)
        for (int r = 0; r < f->regs; r++) {
          int row, col;
          mma_coord(f, lane, r, &row, &col);
          assert_in_range(row, 0, rows[w] - 1);
          assert_in_range(col, 0, cols[w] - 1);
          seen[row][col]++;
        }
      for (int row = 0; row < rows[w]; row++)
        for (int col = 0; col < cols[w]; col++)
          assert_int_equal(seen[row][col], 1);
    }
  }
  assert_null(mma_instr_for((ts_dtype)TS_DTYPE_COUNT));
}

static void test_tf32_rounds_to_nearest_ties_away(void **state) {
  (void)state;
  float ulp = ldexpf(1.0f, -10), half = ldexpf(1.0f, -11);
  assert_true(mma_round_tf32(1.0f + half) == 1.0f + ulp);      /* a tie: away */
  assert_true(mma_round_tf32(-(1.0f + half)) == -(1.0f + ulp));
  assert_true(mma_round_tf32(1.0f + ldexpf(1.0f, -12)) == 1.0f); /* below */
  assert_true(mma_round_tf32(1.0f + half + ldexpf(1.0f, -20)) == 1.0f + ulp);
  assert_true(mma_round_tf32(3.0f) == 3.0f);                     /* exact */
  assert_true(isinf(mma_round_tf32(INFINITY)));
  assert_true(isnan(mma_round_tf32(NAN)));
}

/* The program's C on the executor; its status, and the largest error
 * relative to the largest reference element in *err. */
static ts_status execute(ts_program *p, ts_dtype ab, char *msg, size_t len,
                         double *err) {
  float A[MMA_M * MMA_K], B[MMA_K * MMA_N], C[MMA_M * MMA_N];
  double ref[MMA_M * MMA_N];
  uint64_t seed = 7;
  ts_fill_random(A, MMA_M * MMA_K, &seed);
  ts_fill_random(B, MMA_K * MMA_N, &seed);
  ts_status st = ts_program_execute(p, A, B, C, msg, len);
  mma_reference(ab, A, B, ref);
  double worst = 0, big = 0;
  for (int i = 0; i < MMA_M * MMA_N; i++) {
    worst = fmax(worst, fabs(C[i] - ref[i]));
    big = fmax(big, fabs(ref[i]));
  }
  *err = worst / big;
  return st;
}

static void test_program_runs_right(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
    ts_program *p = mma_program(types[i], MMA_RIGHT);
    assert_int_equal(p->status, TS_OK);
    assert_null(lower_verify(&p->arena, &p->k));
    char msg[512];
    double err;
    ts_status st = execute(p, types[i], msg, sizeof(msg), &err);
    if (st != TS_OK)
      fail_msg("%s: %s", ts_dtype_name(types[i]), msg);
    assert_true(err < 1e-6);
    ts_program_free(p);
  }
}

static void test_lanes_mapped_wrong_give_a_wrong_answer(void **state) {
  (void)state;
  ts_program *p = mma_program(TS_F16, MMA_WRONG_ROW_A);
  char msg[512];
  double err;
  assert_int_equal(execute(p, TS_F16, msg, sizeof(msg), &err), TS_OK);
  assert_true(err > 0.05);
  ts_program_free(p);
}

static void test_lane_left_out_is_a_fault(void **state) {
  (void)state;
  ts_program *p = mma_program(TS_BF16, MMA_LANE_LEFT_OUT);
  char msg[512];
  double err;
  assert_int_not_equal(execute(p, TS_BF16, msg, sizeof(msg), &err), TS_OK);
  assert_non_null(strstr(msg, "mma.m16n8k16 reached by 31 of the 32 lanes "
                              "of warp 0 (lane 31 is not there)"));
  ts_program_free(p);
}

static void test_unset_accumulator_is_a_fault(void **state) {
  (void)state;
  ts_program *p = mma_program(TS_F32, MMA_NO_INIT);
  char msg[512];
  double err;
  assert_int_not_equal(execute(p, TS_F32, msg, sizeof(msg), &err), TS_OK);
  assert_non_null(strstr(msg, "read of local acc at element 0, which nothing "
                              "wrote"));
  ts_program_free(p);
}

static void test_ir_and_cuda_name_the_instruction(void **state) {
  (void)state;
  static const char *const ir_words[] = {
      "mma.m16n8k16.f16 acc[mi, nj, 0:+4] += a[0:+8] * b[0:+4]",
      "mma.m16n8k16.bf16 acc[mi, nj, 0:+4] += a[0:+8] * b[0:+4]",
      "mma.m16n8k8.tf32 acc[mi, nj, 0:+4] += a[0:+4] * b[0:+2]"};
  static const char *const ptx[] = {
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}",
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}"};
  static const char *const call[] = {
      "tessel_mma_m16n8k16_f16(&acc[mi][nj][0], &a[0], &b[0]);",
      "tessel_mma_m16n8k16_bf16(&acc[mi][nj][0], &a[0], &b[0]);",
      "tessel_mma_m16n8k8_tf32(&acc[mi][nj][0], &a[0], &b[0]);"};
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
    ts_program *p = mma_program(types[i], MMA_RIGHT);
    char *ir = ts_program_ir(p), *cu = ts_program_cuda(p);
    assert_non_null(ir);
    assert_non_null(cu);
    if (!strstr(ir, ir_words[i]))
      fail_msg("no \"%s\" in\n%s", ir_words[i], ir);
    if (!strstr(cu, ptx[i]) || !strstr(cu, call[i]))
      fail_msg("no \"%s\" or \"%s\" in\n%s", ptx[i], call[i], cu);
    ts_kernel *k = ts_compile(p, "sm_80");
    if (ts_kernel_status(k) != TS_OK)
      fail_msg("%s\n%s", ts_kernel_errmsg(k), cu);
    ts_kernel_free(k);
    free(ir);
    free(cu);
    ts_program_free(p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fragments_cover_each_tile_once),
      cmocka_unit_test(test_tf32_rounds_to_nearest_ties_away),
      cmocka_unit_test(test_program_runs_right),
      cmocka_unit_test(test_lanes_mapped_wrong_give_a_wrong_answer),
      cmocka_unit_test(test_lane_left_out_is_a_fault),
      cmocka_unit_test(test_unset_accumulator_is_a_fault),
      cmocka_unit_test(test_ir_and_cuda_name_the_instruction),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
