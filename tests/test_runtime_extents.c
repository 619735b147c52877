/*
 * Extents and leading dimensions chosen at launch (ts_gemm.runtime): a
 * program lowered once, at a nominal shape, runs on the reference
 * executor at other shapes (ts_program_check_at) against the plain C GEMM,
 * in every layout, with leading dimensions of their own, for the built-ins
 * of every family: CUDA cores, cp.async pipelines, mma.sync, wgmma with
 * the TMA, warp specialization and the TMA's store.  What a schedule or a
 * launch cannot take is refused, named; the kernel's text takes the values
 * as parameters; the formulas the launcher evaluates give the grid.
 */
#include "helpers.h"

#include "base/formula.h"

/* Shapes a kernel compiled at another runs at, odd and even. */
static const int64_t shapes[][3] = {
    {1, 1, 1}, {37, 53, 29}, {70, 140, 67}, {8, 264, 136}};
enum { NSHAPES = sizeof(shapes) / sizeof(shapes[0]) };

/* def at shape x, each leading dimension `pad` past its stored row and
 * rounded up to a multiple of `ld_multiple`. */
static ts_gemm at_shape(ts_gemm def, const int64_t x[3], int64_t pad,
                        int64_t ld_multiple) {
  def.m = x[0];
  def.n = x[1];
  def.k = x[2];
  def.lda = def.ldb = def.ldc = 0;
  int64_t *ld[TS_OPERAND_COUNT] = {&def.lda, &def.ldb, &def.ldc};
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    int64_t cols = ts_gemm_operand(&def, (ts_operand_role)r).cols;
    *ld[r] = (cols + pad + ld_multiple - 1) / ld_multiple * ld_multiple;
  }
  return def;
}

/* Schedule `name` lowered once at def (its nominal shape) and checked at
 * every shape, in each layout. */
static void check_everywhere(const char *name, ts_gemm def) {
  int64_t q = def.runtime_ld_multiple > 1 ? def.runtime_ld_multiple : 1;
  for (int l = TS_NN; l <= TS_TT; l++) {
    def.layout = (ts_layout)l;
    def.beta = l % 2 ? 0.5f : 0.0f;
    ts_sched *s = ts_builtin_schedule(name, &def);
    ts_program *p = ts_lower(s);
    if (ts_program_status(p) != TS_OK)
      fail_msg("%s %s: %s", name, ts_layout_name(def.layout),
               ts_program_errmsg(p));
    for (int i = 0; i < NSHAPES; i++) {
      if (!sweep_point_runs())
        continue;
      ts_gemm at = at_shape(def, shapes[i], i % 3, q);
      char msg[2048];
      if (ts_program_check_at(p, &at, 42 + (uint64_t)i, msg, sizeof(msg)))
        fail_msg("%s %s at %lldx%lldx%lld (lda %lld ldb %lld ldc %lld): %s",
                 name, ts_layout_name(def.layout), (long long)at.m,
                 (long long)at.n, (long long)at.k, (long long)at.lda,
                 (long long)at.ldb, (long long)at.ldc, msg);
    }
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* A built-in lowered for def, its schedule freed. */
static ts_program *lower_builtin(const char *name, const ts_gemm *def) {
  ts_sched *s = ts_builtin_schedule(name, def);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  return p;
}

static ts_gemm runtime_def(int64_t m, int64_t n, int64_t k, ts_dtype ab,
                           ts_dtype c, int64_t ld_multiple) {
  ts_gemm def = ts_gemm_make(m, n, k);
  def.a_type = def.b_type = ab;
  def.c_type = c;
  def.runtime = TS_RUNTIME_SHAPE;
  def.runtime_ld_multiple = ld_multiple;
  return def;
}

static void test_cuda_cores(void **state) {
  (void)state;
  const char *names[] = {"naive", "coalesced", "smem32", "smem16",
                         "blocktile1d", "blocktile2d", "tvm_step2",
                         "vectorized", "bankfree", "double_buffered",
                         "warptiled", "pipelined"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    check_everywhere(names[i], runtime_def(64, 64, 64, TS_F32, TS_F32, 0));
  check_everywhere("warptiled", runtime_def(64, 64, 64, TS_F16, TS_F16, 0));
}

static void test_tensor_cores(void **state) {
  (void)state;
  check_everywhere("tc64", runtime_def(64, 64, 64, TS_F16, TS_F32, 0));
  check_everywhere("tc128", runtime_def(128, 128, 64, TS_BF16, TS_BF16, 0));
}

/* The TMA reads rows 16 bytes apart: leading dimensions multiples of 8
 * 2-byte elements; the extents any. */
static void test_wgmma_and_the_tma(void **state) {
  (void)state;
  const char *names[] = {"wg128", "wgtma", "wgws", "wgstore", "wgskinny",
                         "wgpers"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    check_everywhere(names[i], runtime_def(128, 256, 64, TS_F16, TS_F16, 8));
    check_everywhere(names[i], runtime_def(128, 256, 64, TS_BF16, TS_F32, 8));
  }
}

/* The nominal shape is only where the executor and explain look: a
 * kernel compiled at 4096^3 runs at 37x53x29 as one compiled there. */
static void test_nominal_shape_is_not_compiled_in(void **state) {
  (void)state;
  ts_gemm def = runtime_def(4096, 4096, 4096, TS_F16, TS_F16, 8);
  ts_program *p = lower_builtin("wgws", &def);
  assert_int_equal(ts_program_status(p), TS_OK);
  ts_gemm at = at_shape(def, shapes[1], 3, 8);
  char msg[2048];
  if (ts_program_check_at(p, &at, 7, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s", msg);
  ts_program_free(p);
}

static void expect_lower_refused(const char *name, ts_gemm def,
                                 const char *says) {
  ts_program *p = lower_builtin(name, &def);
  if (ts_program_status(p) == TS_OK || !strstr(ts_program_errmsg(p), says))
    fail_msg("%s: expected a refusal saying \"%s\"; got: %s", name, says,
             ts_program_errmsg(p));
  ts_program_free(p);
}

static void test_refusals(void **state) {
  (void)state;
  ts_gemm f16 = runtime_def(128, 256, 64, TS_F16, TS_F16, 8);
  /* Split-K's workspace and a cluster's pairs are laid out for compiled
   * extents. */
  expect_lower_refused("splitk", runtime_def(64, 64, 64, TS_F32, TS_F32, 0),
                       "ts_split_k: loop \"k\" runs a number of times "
                       "chosen at launch");
  ts_config *cl = ts_config_parse("cluster=2", NULL, 0);
  ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &f16, cl);
  ts_config_free(cl);
  assert_non_null(strstr(ts_sched_errmsg(s), "ts_cluster: loop \"i.outer\" "
                         "runs a number of times chosen at launch"));
  ts_sched_free(s);
  /* The TMA needs rows 16 bytes apart: a leading dimension of any value
   * may not be. */
  expect_lower_refused("wgws", runtime_def(128, 256, 64, TS_F16, TS_F16, 0),
                       "they lie lda elements of 2 bytes apart, chosen at "
                       "launch as any multiple of 1: set "
                       "def->runtime_ld_multiple to a multiple of 8");
  /* Nor may a packed row that follows K (NT's B is n x k). */
  ts_gemm nt = runtime_def(128, 256, 64, TS_F16, TS_F16, 0);
  nt.runtime = TS_RUNTIME_K;
  nt.layout = TS_NT;
  expect_lower_refused("wgws", nt, "they lie K elements of 2 bytes apart, "
                       "chosen at launch as any multiple of 1: set "
                       "def->runtime_multiple to a multiple of 8");
  /* A cluster's pairs of tiles are laid out for the grid compiled in. */
  ts_gemm only_k_f16 = runtime_def(128, 256, 64, TS_F16, TS_F16, 0);
  only_k_f16.runtime = TS_RUNTIME_K;
  only_k_f16.runtime_multiple = 8;
  ts_config *pair = ts_config_parse("cluster=2", NULL, 0);
  ts_sched *clustered = ts_space_schedule(ts_space_find("warpgroup"),
                                          &only_k_f16, pair);
  ts_config_free(pair);
  ts_program *p2 = ts_lower(clustered);
  assert_non_null(strstr(ts_program_errmsg(p2), "ts_cluster pairs the tiles "
                         "and releases the stages of a grid compiled in"));
  ts_program_free(p2);
  ts_sched_free(clustered);
  /* A nominal value that is not the multiple every launch's must be. */
  ts_gemm odd = runtime_def(64, 64, 64, TS_F32, TS_F32, 0);
  odd.runtime_multiple = 4;
  odd.m = 37;
  expect_lower_refused("naive", odd, "def->m is 37, taken at launch as a "
                       "multiple of def->runtime_multiple (4)");
  ts_gemm bad = runtime_def(64, 64, 64, TS_F32, TS_F32, 0);
  bad.runtime = 99;
  expect_lower_refused("naive", bad, "def->runtime must be TS_RUNTIME_M");

  /* ts_program_check_at: only what the program takes at launch differs. */
  ts_gemm only_k = ts_gemm_make(40, 24, 16);
  only_k.runtime = TS_RUNTIME_K;
  ts_program *p = lower_builtin("naive", &only_k);
  char msg[1024];
  ts_gemm at = only_k;
  at.k = 333;
  assert_int_equal(ts_program_check_at(p, &at, 1, msg, sizeof(msg)), TS_OK);
  at.m = 41;
  assert_int_equal(ts_program_check_at(p, &at, 1, msg, sizeof(msg)),
                   TS_ERR_BAD_SHAPE);
  assert_non_null(strstr(msg, "m is 41; program \"naive\" compiles it in as "
                              "40"));
  at = only_k;
  at.layout = TS_NT;
  assert_int_equal(ts_program_check_at(p, &at, 1, msg, sizeof(msg)),
                   TS_ERR_BAD_ARG);
  assert_non_null(strstr(msg, "differs from program \"naive\"'s in its "
                              "types, layout, alpha or beta"));
  ts_program_free(p);
}

/* The kernel's text takes the values as parameters and computes what
 * follows from them; nothing of the nominal shape is in it. */
static void test_the_kernel_takes_the_values(void **state) {
  (void)state;
  ts_gemm def = runtime_def(96, 96, 96, TS_F32, TS_F32, 0);
  ts_program *p = lower_builtin("warptiled", &def);
  char *cuda = ts_program_cuda(p);
  assert_non_null(cuda);
  assert_non_null(strstr(cuda, "float *__restrict__ C, int M,\n    int N, "
                               "int K,\n    int lda, int ldb,\n    int ldc)"));
  assert_non_null(strstr(cuda, "k_outer < (K + 15)/16"));
  assert_non_null(strstr(cuda, "const int i_outer = blockIdx.y;  // "
                               "0..(M + 127)/128 - 1"));
  assert_non_null(strstr(cuda, "// C[M x N] = op(A) * op(B), summed over K"));
  assert_non_null(strstr(cuda, "// Launch: grid ((N + 127)/128, "
                               "(M + 127)/128, 1)"));
  /* The nominal shape is named in the header, and nowhere in the code. */
  const char *code = strstr(cuda, "extern \"C\"");
  assert_non_null(code);
  assert_null(strstr(code, "96"));
  /* Values of any size: the copies of A and B are element by element. */
  assert_null(strstr(cuda, "float4 *>(&A["));
  free(cuda);
  ts_program_free(p);
  /* Multiples of 4: a lane's guard is its vector's, and the copies load
   * float4. */
  def.runtime_multiple = def.runtime_ld_multiple = 4;
  p = lower_builtin("warptiled", &def);
  cuda = ts_program_cuda(p);
  assert_non_null(cuda);
  assert_non_null(strstr(cuda, "float4 *>(&A[("));
  assert_non_null(strstr(cuda, "float4 *>(&B[("));
  free(cuda);
  ts_program_free(p);
}

/* The grid's formulas, as the launcher evaluates them. */
static void test_formulas(void **state) {
  (void)state;
  int64_t values[TS_FORMULA_VALUES] = {999, 1001, 1003};
  ts_formula f = {.n = 5,
                  .op = {TS_FORMULA_VALUE, TS_FORMULA_CONST, TS_FORMULA_ADD,
                         TS_FORMULA_CONST, TS_FORMULA_DIV},
                  .arg = {0, 127, 0, 128, 0}};
  int64_t out = 0;
  assert_true(ts_formula_eval(&f, values, &out));
  assert_int_equal(out, 8); /* (999 + 127) / 128 */
  f.arg[3] = 0;             /* a division by 0 */
  assert_false(ts_formula_eval(&f, values, &out));
  f.arg[3] = 128;
  f.n = 4; /* two values left on the stack */
  assert_false(ts_formula_eval(&f, values, &out));
  ts_formula bad = {.n = 1, .op = {TS_FORMULA_VALUE}, .arg = {9}};
  assert_false(ts_formula_eval(&bad, values, &out));
  ts_formula none = {0};
  assert_false(ts_formula_eval(&none, values, &out));
  ts_formula mod = {.n = 3,
                    .op = {TS_FORMULA_CONST, TS_FORMULA_CONST, TS_FORMULA_MOD},
                    .arg = {-7, 4}};
  assert_true(ts_formula_eval(&mod, values, &out));
  assert_int_equal(out, 1); /* floor modulo, as the IR's */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_cores),
      cmocka_unit_test(test_tensor_cores),
      cmocka_unit_test(test_wgmma_and_the_tma),
      cmocka_unit_test(test_nominal_shape_is_not_compiled_in),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_the_kernel_takes_the_values),
      cmocka_unit_test(test_formulas),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
