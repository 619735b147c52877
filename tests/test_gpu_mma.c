/*
 * The gpu suite's check of the tensor-core instructions: the hand-built
 * program of tests/mma_program.h, compiled for the GPU's architecture and
 * run there in fp16, bf16 and tf32, must match a double-precision GEMM of
 * the rounded inputs and the reference executor's result.  This is what
 * says that the fragment tables of src/ir/mma.c are the hardware's: a
 * wrong table passes on the CPU (the executor and the program would agree
 * with each other) but not here.  Exits 77 (skipped) without a GPU.
 */
#include "helpers.h"

#include <math.h>

#include "base/dtype.h"
#include "mma_program.h"
#include "base/random.h"

static ts_gpu *gpu;

static void run_on_gpu(ts_dtype ab) {
  ts_program *p = mma_program(ab, MMA_RIGHT);
  float A[MMA_M * MMA_K], B[MMA_K * MMA_N], C[MMA_M * MMA_N];
  float X[MMA_M * MMA_N];
  double ref[MMA_M * MMA_N];
  uint64_t seed = 11;
  ts_fill_random(A, MMA_M * MMA_K, &seed);
  ts_fill_random(B, MMA_K * MMA_N, &seed);
  mma_reference(ab, A, B, ref);
  char msg[512];
  assert_int_equal(ts_program_execute(p, A, B, X, msg, sizeof(msg)), TS_OK);
  ts_kernel *k = ts_compile(p, ts_gpu_arch(gpu));
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("%s", ts_kernel_errmsg(k));
  memset(C, 0, sizeof(C));
  ts_status st = ts_gpu_run(gpu, k, A, B, C);
  if (st != TS_OK)
    fail_msg("%s: %s", ts_strerror(st), ts_gpu_errmsg(gpu));
  double big = 0, to_ref = 0, to_exec = 0;
  for (int i = 0; i < MMA_M * MMA_N; i++) {
    big = fmax(big, fabs(ref[i]));
    to_ref = fmax(to_ref, fabs(C[i] - ref[i]));
    to_exec = fmax(to_exec, fabs((double)C[i] - X[i]));
  }
  printf("%s: max error %.2e of the largest element against the reference, "
         "%.2e against the executor\n", ts_dtype_name(ab), to_ref / big,
         to_exec / big);
  assert_true(to_ref / big < 1e-6);
  assert_true(to_exec / big < 1e-6);
  ts_kernel_free(k);
  ts_program_free(p);
}

static void test_f16_matches(void **state) {
  (void)state;
  run_on_gpu(TS_F16);
}

static void test_bf16_matches(void **state) {
  (void)state;
  run_on_gpu(TS_BF16);
}

static void test_tf32_matches(void **state) {
  (void)state;
  run_on_gpu(TS_F32);
}

int main(int argc, char **argv) {
  gpu = open_gpu_or_skip(argc, argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_matches),
      cmocka_unit_test(test_bf16_matches),
      cmocka_unit_test(test_tf32_matches),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ts_gpu_close(gpu);
  return rc;
}
