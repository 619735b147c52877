/*
 * The gpu suites' check of a schedule: its kernel on random data, C
 * poisoned with NaN (or random, where beta reads it), against cuBLAS
 * within the definition's tolerance (ts_gemm_tolerance).
 */
#ifndef TS_TEST_GPU_CHECK_H
#define TS_TEST_GPU_CHECK_H

#include "helpers.h"

#include <math.h>
#include <stdio.h>

#include "base/dtype.h"
#include "base/random.h"
#include "base/relerr.h"

static inline void check_against_cublas(ts_gpu *gpu, ts_sched *s, ts_gemm g) {
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
  ts_kernel *k = ts_compile_sched(s, ts_gpu_arch(gpu));
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("%s: %s", name, ts_kernel_errmsg(k));
  if (ts_gpu_run(gpu, k, A, B, C) != TS_OK)
    fail_msg("%s: %s", name, ts_gpu_errmsg(gpu));
  ts_kernel_free(k);
  if (ts_gpu_cublas(gpu, &g, A, B, ref) != TS_OK)
    fail_msg("cuBLAS: %s", ts_gpu_errmsg(gpu));
  double e = ts_max_rel_err(C, ref, nc);
  printf("  %-10s %5lldx%5lldx%5lld %s alpha %5.2f beta %5.2f  rel err %.2e\n",
         name, (long long)g.m, (long long)g.n, (long long)g.k,
         ts_layout_name(g.layout), (double)g.alpha, (double)g.beta, e);
  if (!(e < ts_gemm_tolerance(&g)))
    fail_msg("%s at %lldx%lldx%lld %s %s: relative error %.3e (tolerance "
             "%.3e)", name, (long long)g.m, (long long)g.n, (long long)g.k,
             ts_layout_name(g.layout), ts_dtype_name(g.a_type), e,
             ts_gemm_tolerance(&g));
  free(A);
  free(B);
  free(C);
  free(ref);
}

#endif
