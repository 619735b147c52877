/*
 * Typed host matrices (ts_matrix): the executor on fp16 and bf16 bit
 * patterns gives, bit for bit, what it gives on the same values as floats;
 * a matrix of another type than the definition's, or without data, is
 * refused with a message that says which and how to fix it.
 */
#include "helpers.h"

#include "base/dtype.h"
#include "base/random.h"

enum { M = 37, N = 53, K = 29 };

/* n random values of t, as floats and as t stores them. */
static void draw(ts_dtype t, float *f, void *bits, int64_t n,
                 uint64_t *rng) {
  ts_fill_random(f, (size_t)n, rng);
  for (int64_t i = 0; i < n; i++) {
    f[i] = ts_round_to(t, f[i]);
    if (t == TS_F32)
      ((float *)bits)[i] = f[i];
    else
      ((uint16_t *)bits)[i] = t == TS_F16 ? dtype_f32_to_f16(f[i])
                                          : dtype_f32_to_bf16(f[i]);
  }
}

static float value(ts_dtype t, const void *bits, int64_t i) {
  if (t == TS_F32)
    return ((const float *)bits)[i];
  uint16_t b = ((const uint16_t *)bits)[i];
  return t == TS_F16 ? dtype_f16_to_f32(b) : dtype_bf16_to_f32(b);
}

static void test_typed_execution_matches_floats(void **state) {
  (void)state;
  static const ts_dtype types[] = {TS_F32, TS_F16, TS_BF16};
  for (int t = 0; t < 3; t++)
    for (int l = 0; l < 4; l++) {
      ts_dtype ty = types[t];
      ts_gemm g = ts_gemm_make(M, N, K);
      g.layout = (ts_layout)l;
      g.a_type = g.b_type = g.c_type = ty;
      g.alpha = 1.5f;
      g.beta = -0.5f;
      ts_sched *s = ts_builtin_schedule("smem32", &g);
      ts_program *p = ts_lower(s);
      ts_sched_free(s);
      assert_int_equal(ts_program_status(p), TS_OK);
      float fa[M * K], fb[K * N], fc[M * N];
      uint32_t ba[M * K], bb[K * N], bc[M * N]; /* room for either size */
      uint64_t rng = 7 + (uint64_t)t;
      draw(ty, fa, ba, M * K, &rng);
      draw(ty, fb, bb, K * N, &rng);
      draw(ty, fc, bc, M * N, &rng);
      char msg[512];
      assert_int_equal(ts_program_execute(p, fa, fb, fc, msg, sizeof(msg)),
                       TS_OK);
      ts_status st = ts_program_execute_matrices(
          p, (ts_matrix){ba, ty}, (ts_matrix){bb, ty}, (ts_matrix){bc, ty},
          msg, sizeof(msg));
      if (st != TS_OK)
        fail_msg("%s %s: %s", ts_dtype_name(ty), ts_layout_name(g.layout),
                 msg);
      for (int64_t i = 0; i < M * N; i++)
        if (value(ty, bc, i) != fc[i])
          fail_msg("%s %s: C[%lld] is %g, the float path's %g",
                   ts_dtype_name(ty), ts_layout_name(g.layout), (long long)i,
                   value(ty, bc, i), fc[i]);
      ts_program_free(p);
    }
}

static void test_other_types_and_null_data_refused(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(4, 4, 4);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule("naive", &g);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  float f[16] = {0};
  uint16_t h[16] = {0};
  char msg[512];
  /* A given as floats where the definition's A is f16 */
  assert_int_equal(ts_program_execute_matrices(
                       p, (ts_matrix){f, TS_F32}, (ts_matrix){h, TS_F16},
                       (ts_matrix){f, TS_F32}, msg, sizeof(msg)),
                   TS_ERR_BAD_ARG);
  assert_non_null(strstr(msg, "ts_program_execute_matrices: matrix A holds "
                              "f32 elements, and the definition's A is f16"));
  /* C as f16 where the definition's C is f32 */
  assert_int_equal(ts_program_execute_matrices(
                       p, (ts_matrix){h, TS_F16}, (ts_matrix){h, TS_F16},
                       (ts_matrix){h, TS_F16}, msg, sizeof(msg)),
                   TS_ERR_BAD_ARG);
  assert_non_null(strstr(msg, "matrix C holds f16"));
  assert_int_equal(ts_program_execute_matrices(
                       p, (ts_matrix){NULL, TS_F16}, (ts_matrix){h, TS_F16},
                       (ts_matrix){f, TS_F32}, msg, sizeof(msg)),
                   TS_ERR_NULL_ARG);
  assert_non_null(strstr(msg, "matrix A's data is NULL"));
  /* A GPU that could not open refuses them with its own error. */
  setenv("TESSEL_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  ts_gpu *gpu = ts_gpu_open();
  unsetenv("TESSEL_CUDA_DRIVER");
  ts_status no_gpu = ts_gpu_status(gpu);
  assert_int_not_equal(no_gpu, TS_OK);
  assert_int_equal(ts_gpu_cublas_matrices(gpu, &g, (ts_matrix){h, TS_F16},
                                          (ts_matrix){h, TS_F16},
                                          (ts_matrix){f, TS_F32}),
                   no_gpu);
  ts_gpu_close(gpu);
  ts_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_typed_execution_matches_floats),
      cmocka_unit_test(test_other_types_and_null_data_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
