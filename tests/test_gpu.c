/*
 * The gpu suite: every built-in schedule on the GPU against cuBLAS on random
 * data, C poisoned with NaN (or random, where beta reads it), at shapes that
 * divide the tiles and shapes that do not, in every layout, with alpha and
 * beta other than 1 and 0.  The relative error (max |x - ref| / max |ref|)
 * must stay under the definition's tolerance (ts_gemm_tolerance: 1e-5 in
 * fp32; tensor-core built-ins run fp32 in tf32, and fp16 and bf16).
 * Exits 77 (skipped, saying why) without a GPU.
 */
#include "helpers.h"

#include <math.h>
#include <stdio.h>

#include "base/dtype.h"
#include "base/random.h"
#include "base/relerr.h"
#include "gpu_check.h"
#include "ir/program_ir.h"

static ts_gpu *gpu;

static void against_cublas(const char *name, ts_gemm g) {
  g = def_for_builtin(ts_builtin_find(name), g);
  ts_sched *s = ts_builtin_schedule(name, &g);
  check_against_cublas(gpu, s, g);
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
      /* Schedules written for 4096^3 at shapes smaller than their tiles. */
      {255, 257, 129, TS_NN, 1.0f, 0.0f},
      {255, 257, 129, TS_NT, 1.0f, 0.0f},
      {255, 257, 129, TS_TN, 1.0f, 0.5f},
      {255, 257, 129, TS_TT, 1.0f, 0.0f},
      {31, 33, 35, TS_NN, 1.0f, 0.0f},
      {5, 300, 7, TS_TN, 1.0f, 0.0f},
      {300, 5, 7, TS_NT, 1.0f, 0.0f},
      {1, 64, 64, TS_NN, 1.0f, 0.0f},
      {1, 1, 1, TS_NN, 1.0f, 0.0f},
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

/* The tensor-core built-ins in fp16, bf16 and tf32 (fp32 C, and C of
 * their type with alpha and beta) at odd shapes in every layout (K 777:
 * rows of fp16 not 16-byte aligned, where the TMA built-ins pack A and B
 * first). */
static void test_tensor_cores_match_cublas(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{999, 1001, 1003}, {37, 53, 29}, {1, 1, 1},
                               {256, 384, 200}, {2049, 1023, 777}};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int b = 0; b < ts_builtin_count(); b++)
    for (int t = 0; t < 3 && ts_builtin_at(b)->tensor_cores; t++)
      for (int i = 0; i < 5; i++)
        for (int l = TS_NN; l <= TS_TT; l++) {
          ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
          g.layout = (ts_layout)l;
          g.a_type = g.b_type = types[t];
          g.math = types[t] == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
          if (l == TS_TT) {
            g.c_type = types[t];
            g.alpha = 1.5f;
            g.beta = -0.5f;
          }
          against_cublas(ts_builtin_at(b)->name, g);
        }
}

/* The TMA built-ins where one operand's rows are 16-byte aligned and the
 * other's are not (one of M, N, K odd), so that one operand is packed and
 * the other copied as it lies: in NN and TN, A alone packed at K or M
 * odd, B alone at N odd; in TT, A alone at M odd, B alone at K odd. */
static void test_one_operand_packed_matches_cublas(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{1000, 1001, 1000}, {1000, 1000, 1001},
                               {1001, 1000, 1000}};
  const char *names[] = {"wgtma", "wgws", "wgpers", "wgskinny"};
  const ts_dtype types[] = {TS_F16, TS_BF16};
  for (int b = 0; b < 4; b++)
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < 3; i++)
        for (int l = TS_NN; l <= TS_TT; l++) {
          ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
          g.layout = (ts_layout)l;
          g.a_type = g.b_type = types[t];
          against_cublas(names[b], g);
        }
}

/* wgstore at g stores C by the TMA (it falls back to wgws's stores where
 * C's rows are not 16-byte aligned). */
static void assert_tma_stores(ts_gemm g) {
  g = def_for_builtin(ts_builtin_find("wgstore"), g);
  ts_sched *s = ts_builtin_schedule("wgstore", &g);
  char *cu = ts_cuda_source(s);
  assert_non_null(cu);
  assert_non_null(strstr(cu, "cp.async.bulk.tensor.2d.global.shared::cta"));
  free(cu);
  ts_sched_free(s);
}

/* The wgmma built-ins where every tile is whole, so that neighbouring
 * lanes exchange registers and store 4 elements each (lower_exchange.c),
 * with a 16-bit and an fp32 C, in every layout, with alpha and beta. */
static void test_exchanged_epilogue_matches_cublas(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{256, 512, 192}, {384, 768, 64}};
  const char *names[] = {"wg128", "wgtma", "wgws", "wgpers", "wgskinny",
                         "wgstore"};
  const ts_dtype types[] = {TS_F16, TS_BF16};
  for (int b = 0; b < 6; b++)
    for (int t = 0; t < 4; t++)
      for (int i = 0; i < 2; i++)
        for (int l = TS_NN; l <= TS_TT; l++) {
          ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
          g.layout = (ts_layout)l;
          g.a_type = g.b_type = types[t % 2];
          g.c_type = t < 2 ? types[t] : TS_F32;
          g.alpha = i ? 1.5f : 1.0f;
          g.beta = i ? -0.5f : 0.0f;
          if (!strcmp(names[b], "wgstore"))
            assert_tma_stores(g);
          against_cublas(names[b], g);
        }
}

/* wgstore where C's rows are 16-byte aligned (N a multiple of 8) and M
 * and K are odd, so that its TMA stores are clipped at C's last rows and
 * the operands packed or copied as they lie: every layout and type, an
 * fp32 C and one of the operands' type with alpha and beta. */
static void test_tma_stores_match_cublas(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{999, 1000, 1003}, {37, 56, 29},
                               {2049, 1024, 777}, {129, 264, 64}};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < 4; i++)
      for (int l = TS_NN; l <= TS_TT; l++)
        for (int c = 0; c < 2; c++) {
          ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
          g.layout = (ts_layout)l;
          g.a_type = g.b_type = types[t];
          g.math = types[t] == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
          if (c) {
            g.c_type = types[t];
            g.alpha = 1.5f;
            g.beta = -0.5f;
          }
          assert_tma_stores(g);
          against_cublas("wgstore", g);
        }
}

/* The warpgroup space's persistent=1,store=1: C's stage a ring of two
 * panels beside the stages; at 8192 x 1024 (256 tiles on the device's
 * 132 or so multiprocessors) each block's ring runs over two tiles, at
 * the other shapes a block has one; every layout and type (not tf32 NN,
 * which the space prunes), an fp32 C and one of the operands' type with
 * alpha and beta. */
static void test_persistent_tma_stores_match_cublas(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{999, 1000, 1003}, {37, 56, 29},
                               {8192, 1024, 777}, {129, 264, 64}};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  char err[128];
  ts_config *knobs = ts_config_parse("persistent=1,store=1", err, sizeof(err));
  assert_non_null(knobs);
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < 4; i++)
      for (int l = TS_NN; l <= TS_TT; l++)
        for (int c = 0; c < 2; c++) {
          if (types[t] == TS_F32 && l == TS_NN)
            continue;
          ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
          g.layout = (ts_layout)l;
          g.a_type = g.b_type = types[t];
          g.math = types[t] == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
          if (c) { /* cuBLAS has no tf32 GEMM into a 16-bit C */
            g.c_type = types[t];
            g.alpha = 1.5f;
            g.beta = -0.5f;
          }
          ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &g,
                                          knobs);
          ts_program *p = ts_lower(s);
          assert_int_equal(ts_program_status(p), TS_OK);
          assert_true(p->k.tma_store && p->k.persistent);
          ts_program_free(p);
          check_against_cublas(gpu, s, g);
          ts_sched_free(s);
        }
  ts_config_free(knobs);
}

/* The TMA built-ins in tf32 where an operand is k-major with 16-byte
 * aligned rows, so that wgmma reads it as it lies, truncated (the other,
 * m- or n-major, packed and rounded; NT: both as they lie), against
 * cuBLAS within ts_gemm_tolerance, which covers truncated inputs; and at
 * the odd shapes, where both are packed. */
static void test_tf32_read_as_it_lies_matches_cublas(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{37, 53, 32}, {999, 1001, 1004},
                               {1000, 1000, 1000}, {37, 53, 29},
                               {999, 1001, 1003}};
  const char *names[] = {"wgtma", "wgws", "wgpers", "wgskinny"};
  for (int b = 0; b < 4; b++)
    for (int i = 0; i < 5; i++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
        g.layout = (ts_layout)l;
        g.math = TS_MATH_TF32;
        if (l == TS_NT) {
          g.alpha = 1.5f;
          g.beta = -0.5f;
        }
        against_cublas(names[b], g);
      }
}

/* warptiled's tiles double-buffered with 2 and 4 k tiles a copy
 * (ts_double_buffer_tiles), with a partitioned k tail and with split-K, at
 * odd shapes in every layout. */
static void test_buffer_tiles_match_cublas(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{999, 1001, 1003}, {37, 53, 300}, {1, 1, 1},
                               {256, 384, 200}};
  for (int i = 0; i < 4; i++)
    for (int l = TS_NN; l <= TS_TT; l++)
      for (int v = 0; v < 3; v++) {
        ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
        g.layout = (ts_layout)l;
        g.alpha = l == TS_TT ? 1.5f : 1.0f;
        g.beta = l == TS_TT ? -0.5f : 0.0f;
        ts_sched *s = ts_matmul_named(&g, "bar_tiles");
        warp_tiling t = {.bm = 128, .bn = 128, .wm = 64, .wn = 32, .bk = 16,
                         .buffers = 2, .parts = v == 2 ? 2 : 1,
                         .partition = v == 1, .bar_tiles = v ? 2 : 4};
        assert_int_equal(warptiled_with(s, &t), TS_OK);
        check_against_cublas(gpu, s, g);
        ts_sched_free(s);
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
    check_against_cublas(gpu, s, g);
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
    ts_program *p = ts_lower(s);
    char *cu = ts_program_cuda(p);
    assert_non_null(strstr(cu, "long long")); /* 64-bit offsets */
    free(cu);
    ts_kernel *k = ts_compile(p, ts_gpu_arch(gpu));
    ts_program_free(p);
    if (ts_gpu_run(gpu, k, A, B, C) != TS_OK)
      fail_msg("%s: %s", names[i], ts_gpu_errmsg(gpu));
    ts_kernel_free(k);
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

/* Compiles the built-ins named at g, in parallel. */
static void compile_builtins(const char *const names[], int n, ts_gemm g,
                             ts_kernel *k[]) {
  ts_program *p[8];
  for (int i = 0; i < n; i++) {
    ts_sched *s = ts_builtin_schedule(names[i], &g);
    p[i] = ts_lower(s);
    ts_sched_free(s);
  }
  assert_int_equal(ts_compile_all(p, n, ts_gpu_arch(gpu), 0, k), TS_OK);
  for (int i = 0; i < n; i++)
    ts_program_free(p[i]);
}

static void test_bench_reports_every_variant(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(512, 512, 512);
  const char *names[] = {"naive", "coalesced"};
  ts_kernel *k[2];
  compile_builtins(names, 2, g, k);
  ts_bench_result r[2], blas;
  ts_bench_opts o = {.warmup = 2, .repeats = 5, .seed = 3};
  if (ts_bench(gpu, k, 2, &o, r, &blas) != TS_OK)
    fail_msg("ts_bench: %s", ts_gpu_errmsg(gpu));
  assert_true(blas.median_ms > 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(r[i].status, TS_OK);
    assert_true(r[i].median_ms > 0);
    assert_true(r[i].max_rel_err < 1e-5);
    assert_true(r[i].ptxas.valid);
    ts_kernel_free(k[i]);
  }
}

/* A schedule in error (a pruned configuration) first, or alone: its row
 * says why and cuBLAS is timed at its definition, with the others (its
 * kernel once had no shape, which divided by zero). */
static void test_bench_with_a_failed_schedule_first(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  char err[64];
  ts_config *c = ts_config_parse("bm=32,bn=32,warp=64x64", err, sizeof(err));
  assert_non_null(c);
  ts_sched *bad = ts_space_schedule(ts_space_find("warptiled"), &g, c);
  ts_config_free(c);
  assert_int_not_equal(ts_sched_status(bad), TS_OK);
  ts_kernel *k[2] = {ts_compile_sched(bad, ts_gpu_arch(gpu)), NULL};
  ts_sched_free(bad);
  compile_builtins((const char *[]){"naive"}, 1, g, &k[1]);
  ts_bench_result r[2], blas;
  ts_bench_opts o = {.warmup = 1, .repeats = 3, .seed = 3};
  assert_int_not_equal(ts_bench(gpu, k, 2, &o, r, &blas), TS_OK);
  assert_int_equal(blas.status, TS_OK);
  assert_int_not_equal(r[0].status, TS_OK);
  assert_non_null(strstr(r[0].message, "the schedule is in error"));
  assert_true(r[1].status == TS_OK && r[1].median_ms > 0);
  /* Alone: cuBLAS at the schedule's definition, its row saying why. */
  assert_int_not_equal(ts_bench(gpu, k, 1, &o, r, &blas), TS_OK);
  assert_int_equal(blas.status, TS_OK);
  assert_true(blas.median_ms > 0);
  assert_non_null(strstr(r[0].message, "the schedule is in error"));
  assert_int_equal(ts_gpu_status(gpu), TS_OK);
  ts_kernel_free(k[0]);
  ts_kernel_free(k[1]);
}

/* A candidate that cannot be lowered and one of another shape are each
 * reported in their rows; the others are still timed, and the GPU stays
 * usable. */
static void test_bench_times_the_rest(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256), other = ts_gemm_make(64, 64, 64);
  ts_kernel *k[4];
  const char *names[] = {"naive", "warptiled"};
  compile_builtins(names, 2, g, k);
  ts_sched *bad = ts_builtin_schedule("warptiled", &g);
  ts_min_blocks_per_sm(bad, 32); /* 32 blocks of 256 threads: refused */
  k[2] = ts_compile_sched(bad, ts_gpu_arch(gpu));
  ts_sched_free(bad);
  ts_sched *o64 = ts_builtin_schedule("naive", &other);
  k[3] = ts_compile_sched(o64, ts_gpu_arch(gpu));
  ts_sched_free(o64);
  ts_bench_result r[4], blas;
  double times[5 * 3]; /* cuBLAS's and each row's 3 launches */
  ts_bench_opts o = {.warmup = 1, .repeats = 3, .seed = 3, .times = times};
  ts_status st = ts_bench(gpu, k, 4, &o, r, &blas);
  assert_int_equal(blas.status, TS_OK);
  assert_int_equal(ts_gpu_status(gpu), TS_OK);
  /* the first row that failed: more threads than a multiprocessor holds */
  assert_int_equal(st, TS_ERR_RESOURCES);
  for (int i = 0; i < 2; i++)
    assert_true(r[i].status == TS_OK && r[i].median_ms > 0 &&
                r[i].max_rel_err < 1e-5);
  /* Each timed row's launches lie between its min and max, the median
   * (of 3) one of them; the rows not timed have NaN. */
  const ts_bench_result *timed[3] = {&blas, &r[0], &r[1]};
  for (int row = 0; row < 3; row++) {
    const double *t = times + 3 * row;
    int median = 0;
    for (int j = 0; j < 3; j++) {
      assert_true(t[j] >= timed[row]->min_ms && t[j] <= timed[row]->max_ms);
      median += t[j] == timed[row]->median_ms;
    }
    assert_true(median >= 1);
    assert_true(timed[row]->min_ms > 0);
  }
  for (int j = 9; j < 15; j++)
    assert_true(isnan(times[j]));
  assert_int_equal(r[2].status, TS_ERR_RESOURCES);
  assert_non_null(strstr(r[2].message, "ts_min_blocks_per_sm asks for 32"));
  assert_true(r[2].median_ms == 0);
  assert_int_equal(r[3].status, TS_ERR_BAD_ARG);
  assert_non_null(strstr(r[3].message, "another definition"));
  for (int i = 0; i < 4; i++)
    ts_kernel_free(k[i]);
}

/* ---- Hand-written baselines (tessel bench --cu) ------------------------- */

/* A file of bench/handwritten: the gpu suite runs from the source root
 * (scripts/gpu-check.sh), or TESSEL_HANDWRITTEN_DIR names the folder. */
static char *read_baseline(const char *file) {
  const char *dir = getenv("TESSEL_HANDWRITTEN_DIR");
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir ? dir : "bench/handwritten", file);
  return read_text(path);
}

/* Times one kernel beside cuBLAS at g; returns its result. */
static ts_bench_result bench_kernel(ts_gpu *on, const char *file, ts_gemm g,
                                    ts_status want) {
  ts_cuda_kernel src = {.name = file, .source = read_baseline(file)};
  ts_kernel *k = ts_compile_cuda(&src, &g, ts_gpu_arch(on));
  ts_bench_result r, blas;
  ts_bench_opts o = {.warmup = 1, .repeats = 3, .seed = 5};
  ts_status st = ts_bench(on, &k, 1, &o, &r, &blas);
  if (st != want)
    fail_msg("%s: %s (wanted %s)", file, r.message, ts_strerror(want));
  free((char *)src.source);
  ts_kernel_free(k);
  return r;
}

static void test_baselines_match_cublas(void **state) {
  (void)state;
  const struct {
    const char *file;
    ts_gemm g;
  } cases[] = {
      {"seed001_smem32.cu", ts_gemm_make(100, 75, 37)},
      {"seed001_smem32.cu", ts_gemm_make(256, 128, 96)},
      {"seed004_smem16.cu", ts_gemm_make(256, 128, 96)},
      {"seed000_matmul3.cu", ts_gemm_make(128, 192, 64)},
      {"seed000_matmul4.cu", ts_gemm_make(128, 192, 64)},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    for (int beta = 0; beta < 2; beta++) {
      ts_gemm g = cases[i].g;
      g.layout = strncmp(cases[i].file, "seed000", 7) == 0 ? TS_NT : TS_NN;
      g.alpha = beta ? 1.5f : 1.0f;
      g.beta = beta ? -0.5f : 0.0f;
      ts_bench_result r = bench_kernel(gpu, cases[i].file, g, TS_OK);
      printf("  %-20s %4lldx%4lldx%4lld %s beta %4.1f  rel err %.2e\n",
             cases[i].file, (long long)g.m, (long long)g.n, (long long)g.k,
             ts_layout_name(g.layout), (double)g.beta, r.max_rel_err);
      assert_int_equal(r.status, TS_OK);
      assert_int_equal(r.skipped, 0);
      assert_true(r.median_ms > 0);
      assert_true(r.max_rel_err < 1e-5);
    }
  }
}

/* A shape the kernel cannot take skips it, with the reason, and the
 * schedules of the same run are timed. */
static void test_baseline_skipped_at_other_shapes(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(100, 75, 37);
  ts_sched *s = ts_builtin_schedule("smem16", &g);
  ts_cuda_kernel src = {.name = "seed004",
                        .source = read_baseline("seed004_smem16.cu")};
  ts_kernel *k[2] = {ts_compile_sched(s, ts_gpu_arch(gpu)),
                     ts_compile_cuda(&src, &g, ts_gpu_arch(gpu))};
  ts_bench_result r[2], blas;
  ts_bench_opts o = {.warmup = 1, .repeats = 3, .seed = 5};
  assert_int_equal(ts_bench(gpu, k, 2, &o, r, &blas), TS_ERR_BAD_SHAPE);
  assert_int_equal(blas.status, TS_OK);
  assert_int_equal(r[0].status, TS_OK);
  assert_true(r[0].median_ms > 0 && r[0].max_rel_err < 1e-5);
  assert_int_equal(r[1].status, TS_ERR_BAD_SHAPE);
  assert_int_equal(r[1].skipped, 1);
  assert_string_equal(r[1].message, "kernel \"seed004\" needs M to be a "
                      "multiple of 16 (tessel_multiple); M is 100");
  assert_true(r[1].median_ms == 0);
  free((char *)src.source);
  ts_kernel_free(k[0]);
  ts_kernel_free(k[1]);
  ts_sched_free(s);
}

/* Each refusal is reported in the kernel's row; the GPU stays usable. */
static void expect_refused(const char *source, ts_status want,
                           const char *says) {
  ts_cuda_kernel src = {.name = "bad", .source = source};
  ts_gemm d = ts_gemm_make(64, 64, 64);
  ts_kernel *k = ts_compile_cuda(&src, &d, ts_gpu_arch(gpu));
  ts_bench_result r, blas;
  assert_int_equal(ts_bench(gpu, &k, 1, NULL, &r, &blas), want);
  assert_int_equal(r.status, want);
  assert_int_equal(blas.status, TS_OK);
  assert_int_equal(ts_gpu_status(gpu), TS_OK);
  if (!strstr(r.message, says))
    fail_msg("wanted \"%s\" in: %s", says, r.message);
  ts_kernel_free(k);
}

static void test_baseline_errors(void **state) {
  (void)state;
  const char *entry = "extern \"C\" __global__ void gemm(const float *A, "
                      "const float *B, float *C, int M, int N, int K, "
                      "float alpha, float beta) {}\n";
  char src[1024];
  snprintf(src, sizeof(src), "%s", entry);
  expect_refused(src, TS_ERR_BAD_ARG,
                 "kernel \"bad\": the source defines no extern \"C\" "
                 "__device__ int tessel_block[3]");
  snprintf(src, sizeof(src), "%sextern \"C\" __device__ int "
           "tessel_block[3] = {32, 1, 1};\n", entry);
  expect_refused(src, TS_ERR_BAD_ARG, "int tessel_tile[2]");
  snprintf(src, sizeof(src), "%sextern \"C\" __device__ int "
           "tessel_block[3] = {32, 1, 1};\nextern \"C\" __device__ int "
           "tessel_tile[3] = {1, 32, 1};\n", entry);
  expect_refused(src, TS_ERR_BAD_ARG, "tessel_tile is 12 bytes; it must be "
                 "int[2]");
  snprintf(src, sizeof(src), "%sextern \"C\" __device__ int "
           "tessel_block[3] = {32, 0, 1};\nextern \"C\" __device__ int "
           "tessel_tile[2] = {1, 32};\n", entry);
  expect_refused(src, TS_ERR_BAD_ARG, "tessel_block[1] is 0");
  snprintf(src, sizeof(src), "%sextern \"C\" __device__ int "
           "tessel_block[3] = {2048, 1, 1};\nextern \"C\" __device__ int "
           "tessel_tile[2] = {1, 2048};\n", entry);
  expect_refused(src, TS_ERR_RESOURCES, "block.x is 2048");
  expect_refused("extern \"C\" __global__ void other() {}\n", TS_ERR_CUDA,
                 "must define extern \"C\" __global__ void gemm");
  expect_refused("this is not CUDA", TS_ERR_NVRTC, "kernel \"bad\": ");
}

/* Split-K in both modes against cuBLAS (a tall K, and odd shapes with
 * alpha and beta), and ts_bench timing the sequence as one GEMM. */
/* Typed host matrices (ts_matrix) on the GPU: a kernel and cuBLAS given
 * fp16 and bf16 bit patterns agree within the tolerance, and the kernel's
 * C is, bit for bit, what the float entry point gives on the same values. */
static void test_typed_matrices(void **state) {
  (void)state;
  static const ts_dtype types[] = {TS_F16, TS_BF16};
  static const char *const names[] = {"wg128", "smem32"};
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 2; i++) {
      ts_gemm g = ts_gemm_make(999, 1001, 1003);
      g.layout = TS_NT;
      g.a_type = g.b_type = g.c_type = types[t];
      g.beta = 0.5f;
      size_t na = (size_t)(g.m * g.k), nb = (size_t)(g.k * g.n),
             nc = (size_t)(g.m * g.n);
      float *fa = malloc(na * 4), *fb = malloc(nb * 4), *fc = malloc(nc * 4);
      uint16_t *a = malloc(na * 2), *b = malloc(nb * 2), *c = malloc(nc * 2),
               *ref = malloc(nc * 2);
      assert_true(fa && fb && fc && a && b && c && ref);
      uint64_t rng = 11;
      ts_fill_random(fa, na, &rng);
      ts_fill_random(fb, nb, &rng);
      ts_fill_random(fc, nc, &rng);
      bool f16 = types[t] == TS_F16;
      for (size_t j = 0; j < na; j++)
        a[j] = f16 ? dtype_f32_to_f16(fa[j]) : dtype_f32_to_bf16(fa[j]);
      for (size_t j = 0; j < nb; j++)
        b[j] = f16 ? dtype_f32_to_f16(fb[j]) : dtype_f32_to_bf16(fb[j]);
      for (size_t j = 0; j < nc; j++)
        c[j] = ref[j] = f16 ? dtype_f32_to_f16(fc[j]) : dtype_f32_to_bf16(fc[j]);
      ts_sched *s = ts_builtin_schedule(names[i], &g);
      ts_kernel *k = ts_compile_sched(s, ts_gpu_arch(gpu));
      ts_sched_free(s);
      ts_matrix A = {a, types[t]}, B = {b, types[t]};
      if (ts_gpu_run_matrices(gpu, k, A, B, (ts_matrix){c, types[t]}) !=
              TS_OK ||
          ts_gpu_cublas_matrices(gpu, &g, A, B, (ts_matrix){ref, types[t]}) !=
              TS_OK ||
          ts_gpu_run(gpu, k, fa, fb, fc) != TS_OK)
        fail_msg("%s %s: %s", names[i], ts_dtype_name(types[t]),
                 ts_gpu_errmsg(gpu));
      float *x = malloc(nc * 4), *r = malloc(nc * 4);
      assert_true(x && r);
      for (size_t j = 0; j < nc; j++) {
        x[j] = f16 ? dtype_f16_to_f32(c[j]) : dtype_bf16_to_f32(c[j]);
        r[j] = f16 ? dtype_f16_to_f32(ref[j]) : dtype_bf16_to_f32(ref[j]);
        if (x[j] != fc[j])
          fail_msg("%s %s: typed C[%zu] %g, the float path's %g", names[i],
                   ts_dtype_name(types[t]), j, x[j], fc[j]);
      }
      double e = ts_max_rel_err(x, r, nc);
      printf("  %-10s typed %s NT rel err %.2e\n", names[i],
             ts_dtype_name(types[t]), e);
      assert_true(e < ts_gemm_tolerance(&g));
      ts_kernel_free(k);
      free(fa); free(fb); free(fc); free(a); free(b); free(c); free(ref);
      free(x); free(r);
    }
}

static void test_split_k_modes(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{128, 96, 4000}, {37, 53, 29}, {1, 1, 1}};
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
    for (int mode = 0; mode < 2; mode++) {
      ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
      g.alpha = i ? 1.5f : 1.0f;
      g.beta = i ? -0.5f : 0.0f;
      ts_sched *s = ts_matmul_named(&g, mode ? "splitk_atomic" : "splitk_ws");
      ts_loop *kz, *kr, *io, *ii;
      ts_split_k(s, ts_get_loop(s, "k"), 8, (ts_split_k_mode)mode, &kz, &kr);
      ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
      ts_bind(s, io, TS_BLOCK_Y);
      ts_bind(s, ii, TS_THREAD_X);
      check_against_cublas(gpu, s, g);
      ts_sched_free(s);
    }
  ts_gemm g = ts_gemm_make(512, 512, 8192);
  const char *names[] = {"splitk", "blocktile2d"};
  ts_kernel *k[2];
  compile_builtins(names, 2, g, k);
  ts_bench_result r[2], blas;
  ts_bench_opts o = {.warmup = 2, .repeats = 5, .seed = 3};
  if (ts_bench(gpu, k, 2, &o, r, &blas) != TS_OK)
    fail_msg("ts_bench: %s", ts_gpu_errmsg(gpu));
  for (int i = 0; i < 2; i++) {
    printf("  %-12s %.3f ms (cuBLAS %.3f ms)\n", names[i], r[i].median_ms,
           blas.median_ms);
    assert_int_equal(r[i].status, TS_OK);
    assert_true(r[i].max_rel_err < 1e-5);
    ts_kernel_free(k[i]);
  }
}

int main(int argc, char **argv) {
  gpu = open_gpu_or_skip(argc, argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_examples_match_cublas),
      cmocka_unit_test(test_tensor_cores_match_cublas),
      cmocka_unit_test(test_one_operand_packed_matches_cublas),
      cmocka_unit_test(test_exchanged_epilogue_matches_cublas),
      cmocka_unit_test(test_tma_stores_match_cublas),
      cmocka_unit_test(test_persistent_tma_stores_match_cublas),
      cmocka_unit_test(test_tf32_read_as_it_lies_matches_cublas),
      cmocka_unit_test(test_bench_reports_every_variant),
      cmocka_unit_test(test_bench_times_the_rest),
      cmocka_unit_test(test_bench_with_a_failed_schedule_first),
      cmocka_unit_test(test_dynamic_shared_memory),
      cmocka_unit_test(test_buffer_tiles_match_cublas),
      cmocka_unit_test(test_split_k_modes),
      cmocka_unit_test(test_typed_matrices),
      cmocka_unit_test(test_large_shape),
      cmocka_unit_test(test_baselines_match_cublas),
      cmocka_unit_test(test_baseline_skipped_at_other_shapes),
      cmocka_unit_test(test_baseline_errors),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ts_gpu_close(gpu);
  return rc;
}
