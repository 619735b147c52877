/*
 * What the runtime says when it cannot do its work: no driver, a library
 * that is not a driver, an architecture NVRTC does not know, source NVRTC
 * rejects, a launch over the device's limits.  Each a status and a message
 * that names the cause; none crashes.  Needs NVRTC, not a GPU.
 */
#include <stdio.h>

#include "helpers.h"
#include "src/compile/kernel.h"
#include "runtime/launch_limits.h"

static void assert_contains(const char *text, const char *part) {
  if (!strstr(text, part))
    fail_msg("\"%s\" lacks \"%s\"", text, part);
}

/* A GPU that could not open refuses every use with its own error. */
static void assert_unusable(ts_gpu *g, ts_status want) {
  ts_gemm def = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_builtin_schedule("naive", &def);
  ts_kernel *k = ts_compile_sched(s, "sm_90");
  float A[64] = {0}, B[64] = {0}, C[64] = {0};
  assert_int_equal(ts_gpu_run(g, k, A, B, C), want);
  assert_int_equal(ts_gpu_cublas(g, &def, A, B, C), want);
  ts_bench_result r, blas;
  ts_bench_opts o = {.warmup = 1, .repeats = 1, .seed = 1};
  assert_int_equal(ts_bench(g, &k, 1, &o, &r, &blas), want);
  ts_kernel_free(k);
  ts_sched_free(s);
}

static void test_no_driver(void **state) {
  (void)state;
  setenv("TESSEL_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  ts_gpu *g = ts_gpu_open();
  unsetenv("TESSEL_CUDA_DRIVER");
  assert_int_equal(ts_gpu_status(g), TS_ERR_NO_GPU);
  assert_contains(ts_gpu_errmsg(g), "no CUDA driver: /nonexistent/libcuda.so.1 "
                  "could not be loaded");
  assert_unusable(g, TS_ERR_NO_GPU);
  ts_gpu_close(g);
}

static void test_library_that_is_not_a_driver(void **state) {
  (void)state;
  setenv("TESSEL_CUDA_DRIVER", "libm.so.6", 1);
  ts_gpu *g = ts_gpu_open();
  unsetenv("TESSEL_CUDA_DRIVER");
  assert_int_equal(ts_gpu_status(g), TS_ERR_NO_GPU);
  assert_contains(ts_gpu_errmsg(g), "libm.so.6 is not a CUDA driver");
  assert_unusable(g, TS_ERR_NO_GPU);
  ts_gpu_close(g);
}

/* This machine's own driver: a GPU opens, or the reason it does not is
 * TS_ERR_NO_GPU with a message. */
static void test_this_machine(void **state) {
  (void)state;
  ts_gpu *g = ts_gpu_open();
  if (ts_gpu_status(g) == TS_OK) {
    assert_contains(ts_gpu_arch(g), "sm_");
  } else {
    assert_int_equal(ts_gpu_status(g), TS_ERR_NO_GPU);
    assert_true(strlen(ts_gpu_errmsg(g)) > 10);
  }
  ts_gpu_close(g);
}

static void test_unknown_architecture(void **state) {
  (void)state;
  ts_gemm def = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_builtin_schedule("naive", &def);
  const struct {
    const char *arch, *says;
  } cases[] = {
      {"sm_13", "ts_compile: NVRTC does not know architecture sm_13; it "
                "supports sm_"},
      {"sm_999", "NVRTC does not know architecture sm_999"},
      {"compute_90", "ts_compile: architecture \"compute_90\" is not of the "
                     "form sm_XX"},
      {"sm_", "is not of the form sm_XX"},
      {"sm_90x", "is not of the form sm_XX"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_kernel *k = ts_compile_sched(s, cases[i].arch);
    assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_ARCH);
    assert_contains(ts_kernel_errmsg(k), cases[i].says);
    ts_kernel_free(k);
  }
  ts_sched_free(s);
}

static void test_nvrtc_error_carries_its_log(void **state) {
  (void)state;
  ts_kernel *k = kernel_from_source(
      "extern \"C\" __global__ void broken(float *x) { x[0] = ; }\n", "broken",
      "sm_90");
  assert_int_equal(ts_kernel_status(k), TS_ERR_NVRTC);
  assert_contains(ts_kernel_errmsg(k), "nvrtcCompileProgram for sm_90");
  assert_contains(ts_kernel_log(k), "error");
  assert_contains(ts_kernel_errmsg(k), ts_kernel_log(k));
  ts_kernel_free(k);
  /* A NULL schedule and a schedule in error are refused before NVRTC. */
  k = ts_compile_sched(NULL, "sm_90");
  assert_int_equal(ts_kernel_status(k), TS_ERR_NULL_ARG);
  ts_kernel_free(k);
  ts_gemm def = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul(&def);
  int line = __LINE__ + 1;
  ts_split(s, ts_get_loop(s, "i"), 0, NULL, NULL);
  k = ts_compile_sched(s, "sm_90");
  assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_FACTOR);
  char want[256]; /* the schedule's message, the call's place first */
  snprintf(want, sizeof(want), "ts_lower: the schedule is in error: "
           "%s:%d: error: ts_split:", __FILE__, line);
  assert_contains(ts_kernel_errmsg(k), want);
  ts_kernel_free(k);
  ts_sched_free(s);
}

/* An H100's or H200's limits. */
static const gpu_limits hopper = {
    .max_threads_per_block = 1024,
    .max_block = {1024, 1024, 64},
    .max_grid = {2147483647, 65535, 65535},
    .max_registers_per_block = 65536,
    .max_shared_per_block = 49152,
    .max_shared_optin = 232448,
};

static void expect_refused(ts_launch_geometry l, ts_ptxas_info use, const char *says) {
  char msg[512];
  assert_false(resources_fit(&hopper, "GPU", "tessel_k", &l, &use, msg,
                             sizeof(msg)));
  assert_contains(msg, says);
}

static void test_resources_before_launch(void **state) {
  (void)state;
  char msg[512];
  ts_launch_geometry fits = {.grid = {32, 32, 1}, .block = {32, 4, 1}};
  ts_ptxas_info use = {.registers = 255, .shared_bytes = 33280, .valid = 1};
  assert_true(resources_fit(&hopper, "GPU", "tessel_k", &fits, &use, msg,
                            sizeof(msg)));
  ts_launch_geometry big = {.grid = {1, 1, 1}, .block = {32, 32, 1}};
  expect_refused(big, (ts_ptxas_info){.registers = 129, .valid = 1},
                 "kernel tessel_k on GPU: 129 registers x 1024 threads = "
                 "132096 registers per block, over the device's 65536 by "
                 "66560");
  expect_refused(fits, (ts_ptxas_info){.registers = 32, .shared_bytes = 50000},
                 "50000 bytes of static shared memory per block, over the "
                 "device's 49152 by 848");
  ts_launch_geometry dynamic = {.grid = {8, 8, 1}, .block = {16, 16, 1},
                       .dynamic_shared = 131072};
  ts_ptxas_info none = {.registers = 64, .valid = 1};
  assert_true(resources_fit(&hopper, "GPU", "tessel_k", &dynamic, &none, msg,
                            sizeof(msg)));
  dynamic.dynamic_shared = 240000;
  expect_refused(dynamic, none, "240000 bytes of shared memory per block "
                 "(240000 dynamic), over the device's 232448 by 7552");
  expect_refused((ts_launch_geometry){.grid = {1, 70000, 1}, .block = {32, 1, 1}}, use,
                 "grid.y is 70000, over the device's 65535 by 4465");
  expect_refused((ts_launch_geometry){.grid = {1, 1, 1}, .block = {1, 1, 128}}, use,
                 "block.z is 128, over the device's 64 by 64");
  expect_refused((ts_launch_geometry){.grid = {1, 1, 1}, .block = {64, 32, 1}}, use,
                 "2048 threads per block, over the device's 1024 by 1024");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_driver),
      cmocka_unit_test(test_library_that_is_not_a_driver),
      cmocka_unit_test(test_this_machine),
      cmocka_unit_test(test_unknown_architecture),
      cmocka_unit_test(test_nvrtc_error_carries_its_log),
      cmocka_unit_test(test_resources_before_launch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
