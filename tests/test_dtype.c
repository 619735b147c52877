/*
 * The element-type table and the float <-> fp16 / bf16 conversions.
 *
 * Every 16-bit pattern is widened and narrowed back.  Narrowing is checked
 * against a reference that knows nothing of the bit tricks: the ladder of a
 * type's non-negative values, each computed with ldexp from its bits, in
 * which a float is placed by binary search and rounded to the nearer rung
 * (the even one on a tie; one rung past the largest finite value stands
 * for infinity).  The samples are floats at a stride over all 2^32
 * patterns, every midpoint between adjacent values of the type and the
 * floats either side of it, and the special values.  fp16 is also checked
 * against the compiler's own _Float16, where it has one.
 */
#include "helpers.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "base/dtype.h"

/* ---- The independent reference ------------------------------------------ */

typedef struct ladder {
  const char *name;
  int n;       /* v[0..n-1]: the finite non-negative values, by bits */
  double *v;   /* v[n]: the value for the bits of infinity, 2^emax+1 */
  int mbits;   /* explicit significand bits: 10 or 7 */
  int bias;    /* exponent bias: 15 or 127 */
} ladder;

/* The value of bits h (non-negative, finite or the first past them). */
static double ladder_value(const ladder *l, uint32_t h) {
  uint32_t e = h >> l->mbits, m = h & ((1u << l->mbits) - 1);
  if (e == 0)
    return ldexp(m, 1 - l->bias - l->mbits);
  return ldexp((double)((1u << l->mbits) + m), (int)e - l->bias - l->mbits);
}

static ladder make_ladder(const char *name, int mbits, int bias, int n) {
  ladder l = {name, n, malloc((size_t)(n + 1) * sizeof(double)), mbits, bias};
  assert_non_null(l.v);
  for (int h = 0; h <= n; h++)
    l.v[h] = ladder_value(&l, (uint32_t)h);
  return l;
}

static ladder f16_ladder(void) { return make_ladder("f16", 10, 15, 0x7c00); }
static ladder bf16_ladder(void) { return make_ladder("bf16", 7, 127, 0x7f80); }

/* The bits x rounds to, to nearest even; x must not be a NaN. */
static uint16_t ladder_round(const ladder *l, float x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs((double)x);
  if (a >= l->v[l->n])
    return sign | (uint16_t)l->n;
  int lo = 0, hi = l->n; /* v[lo] <= a < v[hi] */
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (l->v[mid] <= a)
      lo = mid;
    else
      hi = mid;
  }
  double below = a - l->v[lo], above = l->v[hi] - a;
  int pick = below < above ? lo : above < below ? hi : (lo & 1 ? hi : lo);
  return sign | (uint16_t)pick;
}

/* ---- Samples ------------------------------------------------------------ */

typedef void check_fn(const ladder *l, uint32_t u);

/* Calls check on the samples described at the top of the file. */
static void sweep(const ladder *l, check_fn *check) {
  for (uint64_t u = 0; u <= 0xffffffffu; u += 997)
    check(l, (uint32_t)u);
  for (int h = 0; h < l->n; h++) {
    float mid = (float)((l->v[h] + l->v[h + 1]) / 2);
    assert_true((double)mid == (l->v[h] + l->v[h + 1]) / 2); /* exact */
    for (int d = -1; d <= 1; d++) {
      check(l, bits_of(mid) + (uint32_t)d);
      check(l, (bits_of(mid) + (uint32_t)d) | 0x80000000u);
    }
  }
  const uint32_t specials[] = {
      0x00000000, 0x80000000, 0x00000001, 0x807fffff, /* zeros, subnormals */
      0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, /* FLT_MAX, infinities */
      0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff, /* NaNs */
      0xff800001, 0xffc00000, 0x7f802000, 0x7f810000,
  };
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++)
    check(l, specials[i]);
}

static bool is_nan16(const ladder *l, uint16_t h) {
  return (h & 0x7fff) > (uint16_t)l->n;
}

/* ---- The table ---------------------------------------------------------- */

static void test_names_parse_size(void **state) {
  (void)state;
  const char *names[] = {"f32", "f16", "bf16"};
  const int sizes[] = {4, 2, 2};
  for (int t = 0; t < TS_DTYPE_COUNT; t++) {
    assert_string_equal(ts_dtype_name((ts_dtype)t), names[t]);
    assert_int_equal(ts_dtype_parse(names[t]), t);
    assert_int_equal(ts_dtype_size((ts_dtype)t), sizes[t]);
  }
  assert_string_equal(ts_dtype_name((ts_dtype)TS_DTYPE_COUNT), "??");
  assert_int_equal(ts_dtype_size((ts_dtype)-1), 0);
  assert_null(dtype_info_of((ts_dtype)TS_DTYPE_COUNT));
  const char *bad[] = {"", "F32", "fp16", "half", "bf16 ", "f8"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(ts_dtype_parse(bad[i]), -1);
  assert_int_equal(ts_dtype_parse(NULL), -1);
}

static void test_table(void **state) {
  (void)state;
  const cudaDataType cublas[] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF};
  for (int t = 0; t < TS_DTYPE_COUNT; t++) {
    const dtype_info *d = dtype_info_of((ts_dtype)t);
    assert_int_equal(d->cublas, cublas[t]);
    assert_true(d->epsilon == ldexp(1, 1 - d->precision));
    assert_true(d->unit_roundoff == d->epsilon / 2);
    /* Either a 16-bit type with its header and conversions, or float. */
    bool narrow = d->size == 2;
    assert_int_equal(d->cuda_header != NULL, narrow);
    assert_int_equal(d->cuda_from_float != NULL, narrow);
    assert_int_equal(d->cuda_to_float != NULL, narrow);
    /* The smallest subnormal: 2^(1 - precision) below the smallest normal,
     * and what rounding half of it upward gives. */
    assert_true(d->min_subnormal > 0);
    assert_true(ts_round_to((ts_dtype)t, (float)d->min_subnormal) ==
                (float)d->min_subnormal);
    assert_true(ts_round_to((ts_dtype)t, (float)(d->min_subnormal * 0.75)) ==
                (float)d->min_subnormal);
    assert_true(ts_round_to((ts_dtype)t, (float)(d->min_subnormal * 0.25)) == 0);
  }
  assert_true(dtype_info_of(TS_F32)->epsilon == FLT_EPSILON);
  assert_string_equal(dtype_info_of(TS_BF16)->cuda_type, "__nv_bfloat16");
  assert_string_equal(dtype_info_of(TS_F16)->cuda_header, "cuda_fp16.h");
}

/* fp32 keeps the GPU checks' 1e-5 up to k = 4096; the 16-bit C types are
 * dominated by their own rounding. */
static void test_tolerance(void **state) {
  (void)state;
  for (int64_t k = 1; k <= 4096; k *= 2) {
    double t = dtype_gemm_tolerance(TS_F32, TS_F32, k, false);
    assert_true(t > 9e-6 && t < 1e-5);
  }
  double t16k = dtype_gemm_tolerance(TS_F32, TS_F32, 16384, false);
  assert_true(t16k > 1.9e-5 && t16k < 2e-5);
  double f16 = dtype_gemm_tolerance(TS_F16, TS_F32, 1024, false);
  assert_true(f16 > 2 * 0x1p-11 && f16 < 1e-3);
  double bf16 = dtype_gemm_tolerance(TS_BF16, TS_F32, 1024, false);
  assert_true(bf16 > 2 * 0x1p-8 && bf16 < 8e-3);
  double tf32 = dtype_gemm_tolerance(TS_F32, TS_F32, 1024, true);
  assert_true(tf32 > 0x1p-9 && tf32 < 2e-3);
}

/* ---- fp16 --------------------------------------------------------------- */

/* Every pattern widens to the ladder's value and narrows back to itself; a
 * NaN stays a NaN of the same sign and payload, quieted. */
static void test_f16_every_pattern(void **state) {
  (void)state;
  ladder l = f16_ladder();
  for (uint32_t h = 0; h <= 0xffff; h++) {
    float x = dtype_f16_to_f32((uint16_t)h);
    uint16_t back = dtype_f32_to_f16(x);
    if (is_nan16(&l, (uint16_t)h)) {
      assert_true(isnan(x));
      assert_int_equal(back, h | 0x200);
      continue;
    }
    double mag = (int)(h & 0x7fff) == l.n ? INFINITY : l.v[h & 0x7fff];
    double want = h & 0x8000 ? -mag : mag;
    if (!((double)x == want && back == h && !signbit(x) == !(h & 0x8000)))
      fail_msg("f16 0x%04x widens to %a (want %a), narrows to 0x%04x", h,
               (double)x, want, back);
  }
  free(l.v);
}

static void check_f16(const ladder *l, uint32_t u) {
  float x = float_of(u);
  uint16_t got = dtype_f32_to_f16(x);
  uint16_t want = isnan(x) ? (uint16_t)(((u >> 16) & 0x8000) | 0x7e00 |
                                        ((u >> 13) & 0x3ff))
                           : ladder_round(l, x);
  if (got != want)
    fail_msg("f16(%a = 0x%08x) is 0x%04x, want 0x%04x", (double)x, u, got,
             want);
}

static void test_f16_rounding(void **state) {
  (void)state;
  ladder l = f16_ladder();
  sweep(&l, check_f16);
  free(l.v);
}

/* The ties and thresholds by name, as a reader would check them. */
static void test_f16_edges(void **state) {
  (void)state;
  assert_int_equal(dtype_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(dtype_f32_to_f16(65519.996f), 0x7bff);
  assert_int_equal(dtype_f32_to_f16(65520.0f), 0x7c00); /* tie to even: inf */
  assert_int_equal(dtype_f32_to_f16(-1e10f), 0xfc00);
  assert_int_equal(dtype_f32_to_f16(1.0f + 0x1p-11f), 0x3c00); /* tie: down */
  assert_int_equal(dtype_f32_to_f16(1.0f + 0x3p-11f), 0x3c02); /* tie: up */
  assert_int_equal(dtype_f32_to_f16(0x1p-24f), 0x0001);  /* smallest */
  assert_int_equal(dtype_f32_to_f16(0x1p-25f), 0x0000);  /* tie: zero */
  assert_int_equal(dtype_f32_to_f16(0x1.000002p-25f), 0x0001);
  assert_int_equal(dtype_f32_to_f16(0x3p-25f), 0x0002);  /* tie: up */
  assert_int_equal(dtype_f32_to_f16(0x1.ff8p-15f), 0x03ff); /* largest sub */
  assert_int_equal(dtype_f32_to_f16(0x1.ffcp-15f), 0x0400); /* tie: normal */
  assert_int_equal(dtype_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(dtype_f32_to_f16(float_of(0x7f800001)), 0x7e00);
  assert_int_equal(dtype_f32_to_f16(float_of(0xffffe000)), 0xffff);
}

#ifdef __FLT16_MAX__
static void check_f16_compiler(const ladder *l, uint32_t u) {
  float x = float_of(u);
  _Float16 h = (_Float16)x;
  uint16_t want;
  memcpy(&want, &h, sizeof(want));
  uint16_t got = dtype_f32_to_f16(x);
  if (isnan(x) ? !(is_nan16(l, got) && is_nan16(l, want) &&
                   (got & 0x8000) == (want & 0x8000))
               : got != want)
    fail_msg("f16(%a = 0x%08x) is 0x%04x, _Float16 gives 0x%04x", (double)x,
             u, got, want);
}
#endif

static void test_f16_against_float16(void **state) {
  (void)state;
#ifdef __FLT16_MAX__
  ladder l = f16_ladder();
  for (uint32_t b = 0; b <= 0xffff; b++) {
    _Float16 h;
    uint16_t b16 = (uint16_t)b;
    memcpy(&h, &b16, sizeof(h));
    float want = (float)h, got = dtype_f16_to_f32(b16);
    if (isnan(want) ? !isnan(got) : bits_of(got) != bits_of(want))
      fail_msg("f16 0x%04x widens to %a, _Float16 to %a", b, (double)got,
               (double)want);
  }
  sweep(&l, check_f16_compiler);
  free(l.v);
#else
  printf("  skipped: this compiler has no _Float16 on this target "
         "(__FLT16_MAX__ undefined); the ladder reference still ran\n");
  skip();
#endif
}

/* ---- bf16 --------------------------------------------------------------- */

static void test_bf16_every_pattern(void **state) {
  (void)state;
  ladder l = bf16_ladder();
  for (uint32_t h = 0; h <= 0xffff; h++) {
    float x = dtype_bf16_to_f32((uint16_t)h);
    uint16_t back = dtype_f32_to_bf16(x);
    if (is_nan16(&l, (uint16_t)h)) {
      assert_true(isnan(x));
      assert_int_equal(back, h | 0x40);
      continue;
    }
    double mag = (int)(h & 0x7fff) == l.n ? INFINITY : l.v[h & 0x7fff];
    double want = h & 0x8000 ? -mag : mag;
    if (!((double)x == want && back == h && !signbit(x) == !(h & 0x8000)))
      fail_msg("bf16 0x%04x widens to %a (want %a), narrows to 0x%04x", h,
               (double)x, want, back);
  }
  free(l.v);
}

static void check_bf16(const ladder *l, uint32_t u) {
  float x = float_of(u);
  uint16_t got = dtype_f32_to_bf16(x);
  uint16_t want = isnan(x) ? (uint16_t)((u >> 16) | 0x40) : ladder_round(l, x);
  if (got != want)
    fail_msg("bf16(%a = 0x%08x) is 0x%04x, want 0x%04x", (double)x, u, got,
             want);
}

static void test_bf16_rounding(void **state) {
  (void)state;
  ladder l = bf16_ladder();
  sweep(&l, check_bf16);
  free(l.v);
}

static void test_bf16_edges(void **state) {
  (void)state;
  assert_int_equal(dtype_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie: down */
  assert_int_equal(dtype_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82); /* tie: up */
  assert_int_equal(dtype_f32_to_bf16(FLT_MAX), 0x7f80);        /* to inf */
  assert_int_equal(dtype_f32_to_bf16(float_of(0x7f7f7fff)), 0x7f7f);
  assert_int_equal(dtype_f32_to_bf16(float_of(0x00008000)), 0x0000);
  assert_int_equal(dtype_f32_to_bf16(float_of(0x00018000)), 0x0002);
  /* NaNs whose payload lies in the dropped bits stay NaN, never inf. */
  assert_int_equal(dtype_f32_to_bf16(float_of(0x7f800001)), 0x7fc0);
  assert_int_equal(dtype_f32_to_bf16(float_of(0xff80ffff)), 0xffc0);
  assert_int_equal(dtype_f32_to_bf16(float_of(0x7fffffff)), 0x7fff);
}

/* ---- Rounding to a storage type ----------------------------------------- */

static void test_round_to(void **state) {
  (void)state;
  const float xs[] = {0.1f, -3.14159f, 1e-7f, 70000.0f, 1.0f + 0x1p-9f};
  for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
    float x = xs[i];
    assert_true(bits_of(ts_round_to(TS_F32, x)) == bits_of(x));
    assert_true(bits_of(ts_round_to(TS_F16, x)) ==
                bits_of(dtype_f16_to_f32(dtype_f32_to_f16(x))));
    assert_true(bits_of(ts_round_to(TS_BF16, x)) ==
                bits_of(dtype_bf16_to_f32(dtype_f32_to_bf16(x))));
  }
  assert_true(ts_round_to(TS_F16, 0.1f) == 0x1.998p-4f);
  assert_true(ts_round_to(TS_BF16, 0.1f) == 0x1.9ap-4f);
  assert_true(isinf(ts_round_to(TS_F16, 70000.0f)));
  assert_true(ts_round_to(TS_BF16, 70000.0f) == 70144.0f);
  assert_true(isnan(ts_round_to(TS_F16, NAN)) && isnan(ts_round_to(TS_BF16, NAN)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_parse_size),
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_tolerance),
      cmocka_unit_test(test_f16_every_pattern),
      cmocka_unit_test(test_f16_rounding),
      cmocka_unit_test(test_f16_edges),
      cmocka_unit_test(test_f16_against_float16),
      cmocka_unit_test(test_bf16_every_pattern),
      cmocka_unit_test(test_bf16_rounding),
      cmocka_unit_test(test_bf16_edges),
      cmocka_unit_test(test_round_to),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
