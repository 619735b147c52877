/*
 * The gpu suite: every built-in schedule on the GPU against cuBLAS on random
 * data, C poisoned with NaN (or random, where beta reads it), at shapes that
 * divide the tiles and shapes that do not, in every layout, with alpha and
 * beta other than 1 and 0.  The relative error (max |x - ref| / max |ref|)
 * must stay under 1e-5.  Exits 77 (skipped, saying why) without a GPU.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>

#include "random.h"
#include "relerr.h"

static ts_gpu *gpu;

static void check_against_cublas(ts_sched *s, ts_gemm g) {
  const char *name = ts_sched_name(s);
  size_t na = (size_t)(g.m * g.k), nb = (size_t)(g.k * g.n), nc = (size_t)(g.m * g.n);
  float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4);
  float *ref = malloc(nc * 4);
  assert_true(A && B && C && ref);
  uint64_t rng = (uint64_t)(g.m * 131 + g.n * 7 + g.k);
  ts_fill_random(A, na, &rng);
  ts_fill_random(B, nb, &rng);
  if (g.beta != 0.0f)
    ts_fill_random(C, nc, &rng);
  else
    for (size_t i = 0; i < nc; i++)
      C[i] = NAN;
  memcpy(ref, C, nc * 4);
  assert_int_equal(ts_sched_status(s), TS_OK);
  if (ts_gpu_run(gpu, s, A, B, C) != TS_OK)
    fail_msg("%s: %s", name, ts_gpu_errmsg(gpu));
  if (ts_gpu_cublas(gpu, &g, A, B, ref) != TS_OK)
    fail_msg("cuBLAS: %s", ts_gpu_errmsg(gpu));
  double e = ts_max_rel_err(C, ref, nc);
  printf("  %-10s %5lldx%5lldx%5lld %s alpha %5.2f beta %5.2f  rel err %.2e\n",
         name, (long long)g.m, (long long)g.n, (long long)g.k,
         ts_layout_name(g.layout), (double)g.alpha, (double)g.beta, e);
  if (!(e < 1e-5))
    fail_msg("%s at %lldx%lldx%lld: relative error %.3e", name,
             (long long)g.m, (long long)g.n, (long long)g.k, e);
  free(A);
  free(B);
  free(C);
  free(ref);
}

static void against_cublas(const char *name, ts_gemm g) {
  ts_sched *s = ts_builtin_schedule(name, &g);
  check_against_cublas(s, g);
  ts_sched_free(s);
}

static void test_examples_match_cublas(void **state) {
  (void)state;
  const struct {
    int64_t m, n, k;
    ts_layout layout;
    float alpha, beta;
  } cases[] = {
      {512, 512, 512, TS_NN, 1.0f, 0.0f},
      {1000, 1500, 777, TS_NN, 1.0f, 0.0f}, /* divides no tile */
      {37, 53, 29, TS_TT, 1.5f, -0.5f},
      {513, 257, 129, TS_NT, 0.5f, 2.0f},
      {256, 384, 200, TS_TN, 1.0f, 1.0f},
  };
  for (int b = 0; b < ts_builtin_count(); b++)
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
      ts_gemm g = ts_gemm_make(cases[i].m, cases[i].n, cases[i].k);
      g.layout = cases[i].layout;
      g.alpha = cases[i].alpha;
      g.beta = cases[i].beta;
      against_cublas(ts_builtin_at(b)->name, g);
    }
}

/* 128 KiB of dynamic shared memory per block, with the opt-in. */
static void test_dynamic_shared_memory(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{512, 512, 512}, {1000, 1500, 777}, {37, 53, 29}};
  for (int i = 0; i < 3; i++) {
    ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
    g.layout = i == 2 ? TS_TT : TS_NN;
    g.beta = i == 2 ? 0.5f : 0.0f;
    ts_sched *s = big_shared_schedule(&g);
    check_against_cublas(s, g);
    ts_sched_free(s);
  }
}

/* A has 2^31 elements: offsets past int's range.  The data is made and
 * cuBLAS run once; each schedule is compared with that. */
static void test_large_shape(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(131072, 64, 16384);
  size_t na = (size_t)(g.m * g.k), nb = (size_t)(g.k * g.n), nc = (size_t)(g.m * g.n);
  float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4);
  float *ref = malloc(nc * 4);
  assert_true(A && B && C && ref);
  uint64_t rng = 2026;
  ts_fill_random(A, na, &rng);
  ts_fill_random(B, nb, &rng);
  for (size_t i = 0; i < nc; i++)
    ref[i] = NAN;
  if (ts_gpu_cublas(gpu, &g, A, B, ref) != TS_OK)
    fail_msg("cuBLAS: %s", ts_gpu_errmsg(gpu));
  const char *names[] = {"naive", "coalesced", "warptiled"};
  for (int i = 0; i < 3; i++) {
    for (size_t e = 0; e < nc; e++)
      C[e] = NAN;
    ts_sched *s = ts_builtin_schedule(names[i], &g);
    char *cu = ts_cuda_source(s);
    assert_non_null(strstr(cu, "long long")); /* 64-bit offsets */
    free(cu);
    if (ts_gpu_run(gpu, s, A, B, C) != TS_OK)
      fail_msg("%s: %s", names[i], ts_gpu_errmsg(gpu));
    double err = ts_max_rel_err(C, ref, nc);
    printf("  %-10s 131072x64x16384 NN (A has 2^31 elements)  rel err %.2e\n",
           names[i], err);
    if (!(err < 1e-5))
      fail_msg("%s at 131072x64x16384: relative error %.3e", names[i], err);
    ts_sched_free(s);
  }
  free(A);
  free(B);
  free(C);
  free(ref);
}

static void test_bench_reports_every_variant(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(512, 512, 512);
  ts_sched *s[2] = {ts_builtin_schedule("naive", &g),
                    ts_builtin_schedule("coalesced", &g)};
  ts_bench_result r[2], blas;
  ts_bench_opts o = {.warmup = 2, .repeats = 5, .seed = 3};
  if (ts_bench(gpu, s, 2, &o, r, &blas) != TS_OK)
    fail_msg("ts_bench: %s", ts_gpu_errmsg(gpu));
  assert_true(blas.median_ms > 0);
  for (int i = 0; i < 2; i++) {
    assert_true(r[i].median_ms > 0);
    assert_true(r[i].max_rel_err < 1e-5);
    assert_true(r[i].ptxas.valid);
    ts_sched_free(s[i]);
  }
}

/* An argument runs only the tests whose names match it (cmocka's filter,
 * with * as wildcard): for compute-sanitizer runs of one test. */
int main(int argc, char **argv) {
  if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  gpu = ts_gpu_open();
  if (ts_gpu_status(gpu) != TS_OK) {
    printf("gpu suite skipped: %s\n", ts_gpu_errmsg(gpu));
    ts_gpu_close(gpu);
    return 77;
  }
  printf("gpu suite on %s (%s)\n", ts_gpu_name(gpu), ts_gpu_arch(gpu));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_examples_match_cublas),
      cmocka_unit_test(test_bench_reports_every_variant),
      cmocka_unit_test(test_dynamic_shared_memory),
      cmocka_unit_test(test_large_shape),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ts_gpu_close(gpu);
  return rc;
}
