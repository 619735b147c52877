/*
 * wgmma: ts_tensorize over 64 x n x 16 tiles in fp16 and bf16.  The
 * descriptors' canonical layouts against the caches' swizzled storage
 * element by element (what the hardware reads is what the executor
 * reads); warpgroup schedules checked on the reference executor against a
 * plain GEMM at odd shapes in every layout, with the accumulators' lane
 * layout followed; and lowering's refusals, with what they say.
 */
#include "helpers.h"

#include "ir/ir.h"
#include "ir/mma.h"

/* ---- Descriptors and the swizzled caches ------------------------------------ */

/* A shared f16 cache of rows x cols elements, swizzled as
 * ts_storage_swizzle leaves it. */
static ir_buffer swizzled(int64_t rows, int64_t cols) {
  ir_buffer b = {.name = "S", .scope = SCOPE_SHARED, .dtype = TS_F16,
                 .ndim = 2, .shape = {rows, cols}};
  ir_buffer_set_layout(&b, (int[]){0, 1}, 0);
  b.swizzle = 8;
  return b;
}

/* Element (r, c)'s byte address in the cache as stored. */
static int64_t stored(const ir_buffer *b, int64_t r, int64_t c) {
  return 2 * ir_swizzle_offset(b, r * b->strides[0] + c);
}

/* Element (r, c)'s byte address with the chunk swizzle left out: what
 * codegen gives a descriptor as its start. */
static int64_t unswizzled(const ir_buffer *b, int64_t r, int64_t c) {
  int64_t cols = b->shape[1], rows = b->shape[0];
  int64_t panel = cols > 64 ? 64 : cols;
  return 2 * ((c / panel) * rows * panel + r * panel + c % panel);
}

/* k-major: a's rows are m, 64 k to a row (one panel), sbo 8 rows. */
static void test_k_major_descriptor_reads_the_cache(void **state) {
  (void)state;
  ir_buffer b = swizzled(128, 64);
  for (int64_t m0 = 0; m0 < 128; m0 += 64)
    for (int64_t k0 = 0; k0 < 64; k0 += 16) {
      mma_desc d = {.start = unswizzled(&b, m0, k0), .lbo = 16, .sbo = 1024};
      for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++)
          assert_int_equal(mma_desc_address(&d, m, k),
                           stored(&b, m0 + m, k0 + k));
    }
}

/* mn-major: b's rows are k, stored in 128-byte panels of 64 n; lbo steps
 * a panel (its rows times 128 bytes), sbo 8 rows of k. */
static void test_mn_major_descriptor_reads_the_panels(void **state) {
  (void)state;
  const int64_t widths[] = {64, 128, 256};
  for (int w = 0; w < 3; w++) {
    ir_buffer b = swizzled(64, widths[w]);
    for (int64_t k0 = 0; k0 < 64; k0 += 16) {
      mma_desc d = {.start = unswizzled(&b, k0, 0), .lbo = 64 * 128,
                    .sbo = 1024, .mn_major = true};
      for (int n = 0; n < widths[w]; n++)
        for (int k = 0; k < 16; k++)
          assert_int_equal(mma_desc_address(&d, n, k),
                           stored(&b, k0 + k, n));
    }
  }
}

/* A descriptor with the wrong stride reads other bytes: the comparison
 * above can fail. */
static void test_a_wrong_stride_reads_elsewhere(void **state) {
  (void)state;
  ir_buffer b = swizzled(64, 128);
  mma_desc d = {.start = 0, .lbo = 1024, .sbo = 64 * 128, .mn_major = true};
  int differ = 0;
  for (int n = 0; n < 128; n++)
    for (int k = 0; k < 16; k++)
      differ += mma_desc_address(&d, n, k) != stored(&b, k, n);
  assert_true(differ > 0);
}

/* ---- Schedules ---------------------------------------------------------------- */

typedef struct {
  int64_t bm, bn, bk;
  bool swizzle_a, swizzle_b, cache_b;
} wg_shape;

/* bm x bn block tiles of warpgroups of 64 x bn, k in bk (16 a step), A
 * and B cached in shared memory above the k loop. */
static ts_sched *warpgroups(const ts_gemm *g, const wg_shape *w) {
  ts_sched *s = ts_matmul_named(g, "wg");
  ts_loop *io, *ir, *wg, *ii, *jo, *jj, *ko, *ki, *kq, *kk;
  ts_stage *as, *bs;
  ts_split(s, ts_get_loop(s, "i"), w->bm, &io, &ir);
  ts_split(s, ir, 64, &wg, &ii);
  ts_split(s, ts_get_loop(s, "j"), w->bn, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), w->bk, &ko, &ki);
  ts_split(s, ki, 16, &kq, &kk);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, wg, ko, kq, ii, jj, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  if (w->swizzle_a)
    ts_storage_swizzle(s, as);
  if (w->cache_b) {
    ts_cache_read(s, "B", TS_SHARED, ko, &bs);
    if (w->swizzle_b)
      ts_storage_swizzle(s, bs);
  }
  assert_int_equal(ts_tensorize(s, ii, jj, kk), TS_OK);
  return s;
}

static const wg_shape whole = {128, 128, 64, true, true, true};

static void test_correct_in_every_type_layout_and_shape(void **state) {
  (void)state;
  static const ts_layout layouts[] = {TS_NN, TS_NT, TS_TN, TS_TT};
  static const int64_t shapes[][3] = {
      {67, 45, 70}, {1, 1, 1}, {130, 129, 200}, {128, 128, 64}};
  static const ts_dtype types[] = {TS_F16, TS_BF16};
  for (int t = 0; t < 2; t++)
    for (int l = 0; l < 4; l++)
      for (int z = 0; z < 4; z++) {
        ts_gemm g = ts_gemm_make(shapes[z][0], shapes[z][1], shapes[z][2]);
        g.a_type = g.b_type = types[t];
        g.layout = layouts[l];
        g.alpha = 1.5f;
        g.beta = 0.5f;
        ts_sched *s = warpgroups(&g, &whole);
        assert_checks(s, 17 + (uint64_t)z);
        ts_sched_free(s);
      }
}

/* The lowered nest: 128 lanes on threadIdx.x, one wgmma a k step, the
 * batch fenced, committed and waited for, and an sm_90a program. */
static void test_lanes_batches_and_arch(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = warpgroups(&g, &whole);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  char *ir = ts_program_ir(p);
  assert_non_null(strstr(ir, "for lane in 0..128 bound to threadIdx.x"));
  assert_non_null(strstr(ir, "wgmma.m64n128k16.f16 acc[0, 0, 0:+64]"));
  assert_non_null(strstr(ir, "(a k-major, b n-major)"));
  char *fence = strstr(ir, "wgmma.fence"), *mma = strstr(ir, "wgmma.m64"),
       *wait = strstr(ir, "wgmma.commit; wgmma.wait 0");
  assert_true(fence && mma && wait && fence < mma && mma < wait);
  assert_int_equal(ts_program_min_arch(p), 90);
  assert_true(ts_program_arch_specific(p));
  char *cu = ts_program_cuda(p);
  assert_non_null(strstr(cu, "wgmma.mma_async.sync.aligned.m64n128k16"
                             ".f32.f16.f16"));
  assert_non_null(strstr(cu, "__align__(1024)"));
  free(cu);
  free(ir);
  ts_program_free(p);
  ts_sched_free(s);
}

/* The descriptors lowering prints: a's k-major (sbo 8 rows of 128 bytes),
 * b's mn-major with lbo a panel of the tile's k rows, as the layout tests
 * above require; and the k tiles of two panels correct on the executor. */
static void test_descriptors_follow_the_tiles(void **state) {
  (void)state;
  const int64_t bks[] = {64, 128}, bns[] = {64, 128, 256};
  for (int k = 0; k < 2; k++)
    for (int n = 0; n < 3; n++) {
      ts_gemm g = ts_gemm_make(128, bns[n], 256);
      g.a_type = g.b_type = TS_F16;
      wg_shape w = {128, bns[n], bks[k], true, true, true};
      ts_sched *s = warpgroups(&g, &w);
      char *cu = ts_cuda_source(s);
      char want[64];
      snprintf(want, sizeof(want), "], %lld, 1024)",
               (long long)(bks[k] * 128));
      assert_non_null(strstr(cu, "], 16, 1024)")); /* a: lbo unused */
      if (!strstr(cu, want))
        fail_msg("bk %lld, bn %lld: no descriptor \"%s\"",
                 (long long)bks[k], (long long)bns[n], want);
      free(cu);
      assert_checks(s, 3);
      ts_sched_free(s);
    }
}

/* ---- Refusals ------------------------------------------------------------------ */

static void assert_refused(const wg_shape *w, const char *says) {
  ts_gemm g = ts_gemm_make(128, 128, 128);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = warpgroups(&g, w);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_TENSORIZE);
  if (!strstr(ts_program_errmsg(p), says))
    fail_msg("\"%s\" does not say \"%s\"", ts_program_errmsg(p), says);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_refuses_operands_it_cannot_describe(void **state) {
  (void)state;
  assert_refused(&(wg_shape){128, 128, 64, false, true, true},
                 "not swizzled in 128-byte rows");
  assert_refused(&(wg_shape){128, 128, 64, true, true, false},
                 "it is not in shared memory: cache it with TS_SHARED");
  /* B n-major in 32-element tiles: rows of 64 bytes, swizzled in 4
   * chunks, not the 8 of a descriptor's 128-byte rows. */
  assert_refused(&(wg_shape){128, 32, 64, true, true, true},
                 "with a tile of 64 or more elements");
}

/* tf32 has no wgmma here: a 64-row tile is no instruction's. */
static void test_refuses_tf32_tiles(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 128, 128);
  g.math = TS_MATH_TF32;
  ts_sched *s = ts_matmul_named(&g, "wg");
  ts_loop *io, *ii, *jo, *jj, *ko, *kk;
  ts_split(s, ts_get_loop(s, "i"), 64, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 64, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &kk);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ko, ii, jj, kk});
  assert_int_equal(ts_tensorize(s, ii, jj, kk), TS_ERR_BAD_TENSORIZE);
  assert_non_null(strstr(ts_sched_errmsg(s), "m16n8k8's tile is 16"));
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_k_major_descriptor_reads_the_cache),
      cmocka_unit_test(test_mn_major_descriptor_reads_the_panels),
      cmocka_unit_test(test_a_wrong_stride_reads_elsewhere),
      cmocka_unit_test(test_correct_in_every_type_layout_and_shape),
      cmocka_unit_test(test_lanes_batches_and_arch),
      cmocka_unit_test(test_descriptors_follow_the_tiles),
      cmocka_unit_test(test_refuses_operands_it_cannot_describe),
      cmocka_unit_test(test_refuses_tf32_tiles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
