/*
 * Every built-in schedule through the reference executor against a plain C
 * GEMM at shapes from 1x1x1 to past its tiles, in all four layouts and with
 * alpha/beta, in fp16 and bf16, and its CUDA C compiled by NVRTC for sm_80
 * and sm_90.
 */
#include "helpers.h"

#include <stdio.h>

/* A schedule written for 4096^3 runs at every shape: dimensions of 1, far
 * below a tile, a tile exactly, and odd sizes past several tiles. */
static const int64_t small_shapes[][3] = {
    {1, 1, 1},    {2, 3, 4},    {5, 300, 7},   {300, 5, 7},
    {1, 64, 64},  {64, 1, 64},  {64, 64, 1},   {31, 33, 35},
    {37, 53, 29}, {33, 65, 17}, {32, 32, 32},
};

static void check_one(const char *name, ts_gemm g) {
  g = def_for_builtin(ts_builtin_find(name), g);
  ts_sched *s = ts_builtin_schedule(name, &g);
  char msg[1024];
  ts_status st = ts_check(s, 11, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("%s at %lldx%lldx%lld %s alpha %g beta %g: %s: %s", name,
             (long long)g.m, (long long)g.n, (long long)g.k,
             ts_layout_name(g.layout), (double)g.alpha, (double)g.beta,
             ts_strerror(st), msg);
  ts_sched_free(s);
}

static void test_every_example_at_small_shapes(void **state) {
  (void)state;
  for (int b = 0; b < ts_builtin_count(); b++)
    for (size_t i = 0; i < sizeof(small_shapes) / sizeof(small_shapes[0]); i++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_gemm g = ts_gemm_make(small_shapes[i][0], small_shapes[i][1],
                                 small_shapes[i][2]);
        g.layout = (ts_layout)l;
        check_one(ts_builtin_at(b)->name, g);
      }
}

/* Past two 128-wide block tiles in i and j and many k steps, with a partial
 * tile at every edge.  The executor takes about a second per schedule here
 * (minutes under ASan for the whole cross product), so each built-in runs
 * in one layout, the layouts rotating over the built-ins; the small shapes
 * above cover every layout of every built-in. */
static void test_every_example_past_its_tiles(void **state) {
  (void)state;
  for (int b = 0; b < ts_builtin_count(); b++) {
    ts_gemm g = ts_gemm_make(255, 257, 129);
    g.layout = (ts_layout)(b % 4);
    check_one(ts_builtin_at(b)->name, g);
  }
}

static void test_every_example_with_alpha_beta(void **state) {
  (void)state;
  for (int b = 0; b < ts_builtin_count(); b++) {
    ts_gemm g = ts_gemm_make(37, 53, 29);
    g.alpha = 1.5f;
    g.beta = -0.75f;
    g.layout = TS_TN;
    check_one(ts_builtin_at(b)->name, g);
    g.alpha = 0.0f;
    g.beta = 1.0f;
    check_one(ts_builtin_at(b)->name, g);
  }
}

/* fp16 and bf16 inputs with a C of their own type or fp32, over the small
 * shapes (the layouts and the type pairs rotating) and past the tiles. */
static void test_every_example_in_fp16_and_bf16(void **state) {
  (void)state;
  const ts_dtype pairs[][2] = {{TS_F16, TS_F16}, {TS_BF16, TS_BF16},
                               {TS_F16, TS_F32}, {TS_BF16, TS_F32}};
  const int npairs = sizeof(pairs) / sizeof(pairs[0]);
  const int nsmall = sizeof(small_shapes) / sizeof(small_shapes[0]);
  for (int b = 0; b < ts_builtin_count(); b++) {
    for (int i = 0; i < nsmall; i++)
      for (int p = 0; p < npairs; p++) {
        ts_gemm g = ts_gemm_make(small_shapes[i][0], small_shapes[i][1],
                                 small_shapes[i][2]);
        g.a_type = g.b_type = pairs[p][0];
        g.c_type = pairs[p][1];
        g.layout = (ts_layout)((i + p) % 4);
        g.beta = p % 2 ? 0.5f : 0.0f;
        check_one(ts_builtin_at(b)->name, g);
      }
    ts_gemm g = ts_gemm_make(255, 257, 129);
    g.a_type = g.b_type = pairs[b % npairs][0];
    g.c_type = pairs[b % npairs][1];
    g.layout = (ts_layout)(b % 4);
    check_one(ts_builtin_at(b)->name, g);
  }
}

static void test_codegen_is_deterministic(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(37, 53, 29);
  for (int b = 0; b < ts_builtin_count(); b++) {
    ts_sched *x = builtin_at(b, g);
    ts_sched *y = builtin_at(b, g);
    char *cx = ts_cuda_source(x), *cy = ts_cuda_source(y);
    assert_non_null(cx);
    assert_string_equal(cx, cy);
    free(cx);
    free(cy);
    ts_sched_free(x);
    ts_sched_free(y);
  }
}

/* The one known spill: wgmma's 128 accumulators a lane leave no room for
 * the element-by-element guarded copies of rows that are not 16-byte
 * aligned (K or N not a multiple of 8 halves); it stays under 1 KiB
 * (docs/performance.md, "wgmma"). */
static bool wgmma_misaligned(const ts_builtin *b, const ts_gemm *g,
                             const ts_ptxas_info *p) {
  return b->sm90_only && (g->k % 8 != 0 || g->n % 8 != 0) &&
         p->spill_store_bytes + p->spill_load_bytes <= 1024;
}

/* Every example compiles for both architectures; at the benchmark shapes
 * none spills registers.  (At small odd shapes the edge guards cost
 * registers, and warptiled, at 255, spills a little.) */
static void test_every_example_compiles(void **state) {
  (void)state;
  const char *archs[] = {"sm_80", "sm_90"};
  const int64_t sizes[][3] = {{37, 53, 29}, {4096, 4096, 4096},
                              {1000, 1500, 777}};
  for (int b = 0; b < ts_builtin_count(); b++)
    for (int a = 0; a < 2; a++)
      for (int z = 0; z < 3; z++) {
        ts_gemm g = ts_gemm_make(sizes[z][0], sizes[z][1], sizes[z][2]);
        ts_sched *s = builtin_at(b, g);
        ts_kernel *k = ts_compile_sched(s, archs[a]);
        if (ts_builtin_at(b)->sm90_only && a == 0) { /* wgmma: sm_90 only */
          assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_ARCH);
          assert_non_null(strstr(ts_kernel_errmsg(k), "only sm_90 has"));
          ts_kernel_free(k);
          ts_sched_free(s);
          continue;
        }
        if (ts_kernel_status(k) != TS_OK)
          fail_msg("%s for %s: %s", ts_builtin_at(b)->name, archs[a],
                   ts_kernel_errmsg(k));
        ts_ptxas_info p = ts_kernel_ptxas(k);
        assert_true(p.valid);
        assert_true(p.registers > 0);
        if (z > 0 && p.spill_store_bytes + p.spill_load_bytes != 0 &&
            !wgmma_misaligned(ts_builtin_at(b), &g, &p))
          fail_msg("%s for %s at %lldx%lldx%lld spills %d bytes",
                   ts_builtin_at(b)->name, archs[a], (long long)g.m,
                   (long long)g.n, (long long)g.k,
                   p.spill_store_bytes + p.spill_load_bytes);
        assert_string_equal(ts_kernel_arch(k), ts_builtin_at(b)->sm90_only
                                                   ? "sm_90a"
                                                   : archs[a]);
        ts_kernel_free(k);
        ts_sched_free(s);
      }
}

/* With fp16 and bf16 elements too: the headers found, the conversions and
 * vector structs compiled, and no spills at the benchmark shapes. */
static void test_every_example_compiles_in_fp16_and_bf16(void **state) {
  (void)state;
  for (int b = 0; b < ts_builtin_count(); b++)
    for (int t = 0; t < 2; t++) {
      ts_gemm g = t ? ts_gemm_make(1000, 1500, 777)
                    : ts_gemm_make(4096, 4096, 4096);
      g.a_type = g.b_type = t ? TS_BF16 : TS_F16;
      g.c_type = t ? TS_F32 : TS_F16;
      g.beta = 0.5f;
      ts_sched *s = builtin_at(b, g);
      ts_kernel *k = ts_compile_sched(s, "sm_90");
      if (ts_kernel_status(k) != TS_OK)
        fail_msg("%s in %s: %s", ts_builtin_at(b)->name,
                 ts_dtype_name(g.a_type), ts_kernel_errmsg(k));
      ts_ptxas_info p = ts_kernel_ptxas(k);
      assert_true(p.valid);
      if (p.spill_store_bytes + p.spill_load_bytes != 0 &&
          !wgmma_misaligned(ts_builtin_at(b), &g, &p))
        fail_msg("%s in %s spills %d bytes", ts_builtin_at(b)->name,
                 ts_dtype_name(g.a_type),
                 p.spill_store_bytes + p.spill_load_bytes);
      ts_kernel_free(k);
      ts_sched_free(s);
    }
}

static void test_compile_errors_are_clear(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_builtin_schedule("naive", &g);
  ts_kernel *k = ts_compile_sched(s, "sm_1");
  assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_ARCH);
  assert_non_null(strstr(ts_kernel_errmsg(k), "NVRTC does not know "
                                              "architecture sm_1"));
  ts_kernel_free(k);
  k = ts_compile_sched(s, "ampere");
  assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_ARCH);
  ts_kernel_free(k);
  ts_sched_free(s);
  s = ts_builtin_schedule("no-such", &g);
  assert_int_equal(ts_sched_status(s), TS_ERR_UNKNOWN_SCHEDULE);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_example_at_small_shapes),
      cmocka_unit_test(test_every_example_past_its_tiles),
      cmocka_unit_test(test_every_example_with_alpha_beta),
      cmocka_unit_test(test_every_example_in_fp16_and_bf16),
      cmocka_unit_test(test_codegen_is_deterministic),
      cmocka_unit_test(test_every_example_compiles),
      cmocka_unit_test(test_every_example_compiles_in_fp16_and_bf16),
      cmocka_unit_test(test_compile_errors_are_clear),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
