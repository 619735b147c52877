/*
 * The gpu suite's check of the host's fp16 and bf16 conversions
 * (src/base/dtype.c, the reference executor's storage rounding) against
 * CUDA's own (tests/gpu_dtype_kernel.cu, compiled with NVRTC and run on
 * the GPU).  Widening takes every 16-bit pattern.  Narrowing takes every
 * value of the type, every midpoint between adjacent values (ties to even)
 * and the floats either side of it, both signs of each, the special values
 * (zeros, subnormals, the overflow boundary, infinities, NaNs) and random
 * float bit patterns from a fixed seed, as they come and with their
 * exponent drawn from the type's range.
 *
 * The GPU's results must equal the host's bit for bit, except that any NaN
 * matches any NaN: CUDA's NaNs are canonical, the host's keep the payload.
 * The pair conversions must give exactly the bits the single ones give,
 * each element in both halves of a pair.  A failure prints the first
 * mismatches: input, host (or single) and GPU (or pair) bits.
 *
 * The kernel's source is read from tests/ under the working directory: the
 * source root, as for the rest of the gpu suite (meson test runs it
 * there).  Exits 77 (skipped, saying why) without a GPU.
 */
#include "helpers.h"

#include <math.h>
#include <unistd.h>

#include "base/dtype.h"
#include "base/random.h"
#include "runtime/gpu_impl.h"

#define KERNEL_SOURCE "tests/gpu_dtype_kernel.cu"

static ts_gpu *gpu;
static CUmodule module;

/* ---- The host's conversions --------------------------------------------- */

/* The float that bits of type t stand for. */
static float value_of(ts_dtype t, uint32_t bits) {
  switch (t) {
  case TS_F16:
    return dtype_f16_to_f32((uint16_t)bits);
  case TS_BF16:
    return dtype_bf16_to_f32((uint16_t)bits);
  default:
    return float_of(bits);
  }
}

/* What the host's conversion makes of bits of type `from`, as type `to`. */
static uint32_t host_convert(ts_dtype from, ts_dtype to, uint32_t bits) {
  float x = value_of(from, bits);
  switch (to) {
  case TS_F16:
    return dtype_f32_to_f16(x);
  case TS_BF16:
    return dtype_f32_to_bf16(x);
  default:
    return bits_of(x);
  }
}

/* ---- Samples ------------------------------------------------------------ */

/* Inputs as bits, whatever their type: a 16-bit one in the low half. */
typedef struct samples {
  uint32_t *bits;
  size_t n, cap;
} samples;

static void add(samples *s, uint32_t bits) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 1 << 16;
    s->bits = realloc(s->bits, s->cap * sizeof(*s->bits));
    assert_non_null(s->bits);
  }
  s->bits[s->n++] = bits;
}

static void add_both_signs(samples *s, uint32_t bits) {
  add(s, bits & 0x7fffffffu);
  add(s, bits | 0x80000000u);
}

static samples every_pattern(void) {
  samples s = {0};
  for (uint32_t h = 0; h <= 0xffff; h++)
    add(&s, h);
  return s;
}

/* The midpoint between each pair of adjacent non-negative values of t, and
 * the floats one ulp either side of it.  Past the largest finite value
 * comes the one its exponent would give next (65536 for fp16), so that the
 * overflow threshold (65520) is a midpoint too. */
static void add_midpoints(samples *s, ts_dtype t) {
  uint32_t inf = host_convert(TS_F32, t, bits_of(INFINITY));
  for (uint32_t h = 0; h < inf; h++) {
    double lo = value_of(t, h);
    double hi = h + 1 < inf ? value_of(t, h + 1)
                            : 2 * lo - value_of(t, h - 1);
    float mid = (float)((lo + hi) / 2);
    assert_true((double)mid == (lo + hi) / 2); /* exact in float */
    for (int d = -1; d <= 1; d++)
      add_both_signs(s, bits_of(mid) + (uint32_t)d);
  }
}

static void add_specials(samples *s) {
  const uint32_t bits[] = {
      0x00000000, 0x00000001, 0x00400000, 0x007fffff, /* zero, subnormals */
      0x00800000, 0x7f7fffff, 0x7f800000,             /* FLT_MIN, MAX, inf */
      0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fc00001, /* NaNs */
      0x7fffffff, 0x7f802000, 0x7f810000, 0x7f808000,
  };
  /* fp16's overflow boundary and smallest subnormals, by name. */
  const float values[] = {65504.0f,   65519.996f, 65520.0f, 65520.004f,
                          65536.0f,   1e10f,      0x1p-24f, 0x1p-25f,
                          0x1.000002p-25f, 0x1.fffffep-26f, 0x3p-25f};
  for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
    add_both_signs(s, bits[i]);
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
    add_both_signs(s, bits_of(values[i]));
}

/* Random floats whose biased exponent lies in [emin, emax]; [0, 255] is
 * every bit pattern. */
static void add_random(samples *s, size_t count, uint32_t emin, uint32_t emax,
                       uint64_t *rng) {
  for (size_t i = 0; i < count; i++) {
    uint64_t r = ts_random_next(rng);
    uint32_t exp = emin + (uint32_t)((r >> 32) % (emax - emin + 1));
    add(s, ((uint32_t)r & 0x807fffffu) | exp << 23);
  }
}

/* The biased float exponent of bits of type t. */
static uint32_t float_exponent(ts_dtype t, uint32_t bits) {
  return (bits_of(value_of(t, bits)) >> 23) & 0xff;
}

/* The floats to narrow to t (see the top of the file). */
static samples narrowing_inputs(ts_dtype t) {
  samples s = {0};
  for (uint32_t h = 0; h <= 0xffff; h++)
    add(&s, bits_of(value_of(t, h)));
  add_midpoints(&s, t);
  add_specials(&s);
  uint64_t rng = 0x7e55e1 + (uint64_t)t;
  add_random(&s, 4u << 20, 0, 255, &rng);
  /* Two binades under the smallest subnormal to one over the largest. */
  uint32_t inf = host_convert(TS_F32, t, bits_of(INFINITY));
  uint32_t emin = float_exponent(t, 1), emax = float_exponent(t, inf - 1);
  add_random(&s, 1u << 20, emin > 2 ? emin - 2 : 0,
             emax < 253 ? emax + 1 : 254, &rng);
  return s;
}

/* ---- The GPU ------------------------------------------------------------ */

static void fail_on_gpu(bool ok) {
  if (!ok)
    fail_msg("%s", ts_gpu_errmsg(gpu));
}

/* Bits as the kernels take them, `size` bytes an element (malloc'd). */
static void *pack(const uint32_t *bits, size_t n, int size) {
  unsigned char *buf = malloc(n * (size_t)size);
  assert_non_null(buf);
  for (size_t i = 0; i < n; i++) {
    if (size == 2) {
      uint16_t h = (uint16_t)bits[i];
      memcpy(buf + 2 * i, &h, 2);
    } else {
      memcpy(buf + 4 * i, &bits[i], 4);
    }
  }
  return buf;
}

/* The kernels' results, `size` bytes an element, as bits. */
static void unpack(const void *buf, size_t n, int size, uint32_t *bits) {
  const unsigned char *p = buf;
  for (size_t i = 0; i < n; i++) {
    uint16_t h;
    if (size == 2) {
      memcpy(&h, p + 2 * i, 2);
      bits[i] = h;
    } else {
      memcpy(&bits[i], p + 4 * i, 4);
    }
  }
}

/* A conversion of the kernel file: its entry points for one element and
 * for two (a __half2, __nv_bfloat162 or float2 at a time). */
typedef struct conversion {
  const char *single, *pair;
  ts_dtype from, to;
} conversion;

/* Runs entry point `entry` over in[0..n), `lanes` elements to a call
 * (n a multiple of lanes); returns the results' bits (malloc'd). */
static uint32_t *gpu_convert(const char *entry, const conversion *c, int lanes,
                             const uint32_t *in, size_t n) {
  int in_size = ts_dtype_size(c->from), out_size = ts_dtype_size(c->to);
  size_t in_bytes = n * (size_t)in_size, out_bytes = n * (size_t)out_size;
  assert_true(n % (size_t)lanes == 0 && n / (size_t)lanes <= INT32_MAX);
  void *host_in = pack(in, n, in_size), *host_out = malloc(out_bytes);
  uint32_t *out = malloc(n * sizeof(*out));
  assert_true(host_out && out);
  CUfunction fn;
  CUdeviceptr d_in = 0, d_out = 0;
  int count = (int)(n / (size_t)lanes);
  void *params[] = {&d_in, &d_out, &count};
  /* The kernels stride over the grid: any number of blocks covers n. */
  unsigned blocks = (unsigned)((count + 255) / 256);
  fail_on_gpu(GPU_CALL(gpu, cuModuleGetFunction(&fn, module, entry)) &&
              GPU_CALL(gpu, cuMemAlloc(&d_in, in_bytes)) &&
              GPU_CALL(gpu, cuMemAlloc(&d_out, out_bytes)) &&
              GPU_CALL(gpu, cuMemcpyHtoD(d_in, host_in, in_bytes)) &&
              GPU_CALL(gpu, cuLaunchKernel(fn, blocks < 4096 ? blocks : 4096,
                                           1, 1, 256, 1, 1, 0, NULL, params,
                                           NULL)) &&
              GPU_CALL(gpu, cuCtxSynchronize(gpu->ctx)) &&
              GPU_CALL(gpu, cuMemcpyDtoH(host_out, d_out, out_bytes)));
  gpu->cu.cuMemFree(d_in);
  gpu->cu.cuMemFree(d_out);
  unpack(host_out, n, out_size, out);
  free(host_in);
  free(host_out);
  return out;
}

/* ---- Comparing ---------------------------------------------------------- */

/* One side of a comparison: whose results they are, and their bits. */
typedef struct results {
  const char *whose;
  const uint32_t *bits;
} results;

enum { SHOWN = 8 }; /* mismatches printed before the count */

static bool is_nan(ts_dtype t, uint32_t bits) {
  return isnan(value_of(t, bits));
}

/* Fails the test where a and b differ for any of in[0..n) (where
 * nan_matches, two NaNs never differ), printing the first few. */
static void expect_same(const char *what, const conversion *c,
                        const uint32_t *in, size_t n, results a, results b,
                        bool nan_matches) {
  int win = 2 * ts_dtype_size(c->from), wout = 2 * ts_dtype_size(c->to);
  size_t differ = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = a.bits[i], y = b.bits[i];
    if (x == y || (nan_matches && is_nan(c->to, x) && is_nan(c->to, y)))
      continue;
    if (differ++ < SHOWN)
      printf("  %s: input 0x%0*x (%a): %s 0x%0*x, %s 0x%0*x\n", what, win,
             in[i], (double)value_of(c->from, in[i]), a.whose, wout, x,
             b.whose, wout, y);
  }
  if (differ)
    fail_msg("%s: %zu of %zu results differ (%s against %s)", what, differ, n,
             b.whose, a.whose);
}

/* The single conversion against the host's; then the pair conversion
 * against the single one, over in[0..) and in[1..), so that every input
 * passes through both halves of a pair. */
static void check_conversion(const conversion *c, const samples *in) {
  uint32_t *want = malloc(in->n * sizeof(*want));
  assert_non_null(want);
  for (size_t i = 0; i < in->n; i++)
    want[i] = host_convert(c->from, c->to, in->bits[i]);
  uint32_t *single = gpu_convert(c->single, c, 1, in->bits, in->n);
  expect_same(c->single, c, in->bits, in->n, (results){"host", want},
              (results){"GPU", single}, true);
  printf("  %-13s %8zu inputs: the host's bits\n", c->single, in->n);
  for (size_t first = 0; first < 2; first++) {
    size_t n = (in->n - first) & ~(size_t)1;
    uint32_t *pair = gpu_convert(c->pair, c, 2, in->bits + first, n);
    expect_same(c->pair, c, in->bits + first, n,
                (results){"single", single + first}, (results){"pair", pair},
                false);
    free(pair);
  }
  printf("  %-13s %8zu inputs: %s's bits, in either half\n", c->pair, in->n,
         c->single);
  free(single);
  free(want);
}

static void check_widening(const conversion *c) {
  samples in = every_pattern();
  check_conversion(c, &in);
  free(in.bits);
}

static void check_narrowing(const conversion *c) {
  samples in = narrowing_inputs(c->to);
  check_conversion(c, &in);
  free(in.bits);
}

/* ---- Tests -------------------------------------------------------------- */

static void test_f16_widens_as_host(void **state) {
  (void)state;
  check_widening(&(conversion){"f16_to_f32", "f16x2_to_f32", TS_F16, TS_F32});
}

static void test_f16_narrows_as_host(void **state) {
  (void)state;
  check_narrowing(&(conversion){"f32_to_f16", "f32_to_f16x2", TS_F32, TS_F16});
}

static void test_bf16_widens_as_host(void **state) {
  (void)state;
  check_widening(
      &(conversion){"bf16_to_f32", "bf16x2_to_f32", TS_BF16, TS_F32});
}

static void test_bf16_narrows_as_host(void **state) {
  (void)state;
  check_narrowing(
      &(conversion){"f32_to_bf16", "f32_to_bf16x2", TS_F32, TS_BF16});
}

/* Compiles the kernel file for the GPU and loads it. */
static int load_kernels(void **state) {
  (void)state;
  if (access(KERNEL_SOURCE, R_OK) != 0)
    fail_msg("cannot read %s: run the gpu suite from the source root",
             KERNEL_SOURCE);
  char *src = read_text(KERNEL_SOURCE);
  ts_kernel *k = kernel_from_source(src, "f32_to_f16", ts_gpu_arch(gpu));
  free(src);
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("%s: %s", KERNEL_SOURCE, ts_kernel_errmsg(k));
  fail_on_gpu(GPU_CALL(gpu, cuModuleLoadData(&module, k->cubin)));
  ts_kernel_free(k);
  return 0;
}

static int unload_kernels(void **state) {
  (void)state;
  if (module)
    gpu->cu.cuModuleUnload(module);
  return 0;
}

int main(int argc, char **argv) {
  gpu = open_gpu_or_skip(argc, argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_widens_as_host),
      cmocka_unit_test(test_f16_narrows_as_host),
      cmocka_unit_test(test_bf16_widens_as_host),
      cmocka_unit_test(test_bf16_narrows_as_host),
  };
  int rc = cmocka_run_group_tests(tests, load_kernels, unload_kernels);
  ts_gpu_close(gpu);
  return rc;
}
