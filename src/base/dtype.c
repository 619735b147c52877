/*
 * The element-type table and the conversions between float and the 16-bit
 * types.  The conversions work on bits alone (no _Float16, no rounding mode
 * or flush-to-zero setting of the host matters), so the reference executor
 * rounds exactly as CUDA's __float2half_rn and __float2bfloat16_rn do.
 *
 * Rounding to nearest even on bits: keep the high bits q, look at the
 * dropped remainder r against half a unit h; round up when r > h, or when
 * r == h and q is odd.  A carry out of the significand bumps the exponent,
 * which is the right answer (up to infinity).
 */
#include "dtype.h"

#include <math.h>
#include <string.h>

static const dtype_info dtypes[TS_DTYPE_COUNT] = {
    [TS_F32] = {.name = "f32", .size = 4, .cuda_type = "float",
                .cublas = CUDA_R_32F, .precision = 24, .epsilon = 0x1p-23,
                .unit_roundoff = 0x1p-24, .min_subnormal = 0x1p-149},
    [TS_F16] = {.name = "f16", .size = 2, .cuda_type = "__half",
                .cuda_header = "cuda_fp16.h",
                .cuda_from_float = "__float2half_rn",
                .cuda_to_float = "__half2float", .cublas = CUDA_R_16F,
                .precision = 11, .epsilon = 0x1p-10, .unit_roundoff = 0x1p-11,
                .min_subnormal = 0x1p-24},
    [TS_BF16] = {.name = "bf16", .size = 2, .cuda_type = "__nv_bfloat16",
                 .cuda_header = "cuda_bf16.h",
                 .cuda_from_float = "__float2bfloat16_rn",
                 .cuda_to_float = "__bfloat162float", .cublas = CUDA_R_16BF,
                 .precision = 8, .epsilon = 0x1p-7, .unit_roundoff = 0x1p-8,
                 .min_subnormal = 0x1p-133},
};

const dtype_info *dtype_info_of(ts_dtype t) {
  return (unsigned)t < TS_DTYPE_COUNT ? &dtypes[t] : NULL;
}

const char *ts_dtype_name(ts_dtype t) {
  const dtype_info *d = dtype_info_of(t);
  return d ? d->name : "??";
}

int ts_dtype_parse(const char *text) {
  for (int i = 0; text && i < TS_DTYPE_COUNT; i++)
    if (strcmp(text, dtypes[i].name) == 0)
      return i;
  return -1;
}

int ts_dtype_size(ts_dtype t) {
  const dtype_info *d = dtype_info_of(t);
  return d ? d->size : 0;
}

static uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof(u));
  return u;
}

static float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof(x));
  return x;
}

/* q followed by `shift` dropped bits r, rounded to nearest even. */
static uint32_t round_even(uint32_t q, uint32_t r, int shift) {
  uint32_t half = 1u << (shift - 1);
  return q + (r > half || (r == half && (q & 1)));
}

uint16_t dtype_f32_to_f16(float x) {
  uint32_t u = bits_of(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t mag = u & 0x7fffffff;
  int exp = (int)(mag >> 23); /* float's biased exponent */
  if (mag > 0x7f800000)       /* NaN: quiet, top 10 payload bits kept */
    return sign | 0x7e00 | (uint16_t)((mag >> 13) & 0x3ff);
  if (mag >= 0x477ff000) /* 65520, halfway from 65504 to 2^16, and up */
    return sign | 0x7c00;
  if (exp >= 113) { /* normal in fp16 (2^-14 and up): rebias 127 -> 15 */
    uint32_t v = mag - (112u << 23);
    return sign | (uint16_t)round_even(v >> 13, v & 0x1fff, 13);
  }
  if (exp < 102) /* under 2^-25, half the smallest subnormal: zero */
    return sign;
  /* Subnormal in fp16: x is m * 2^(exp - 150) with m the significand and
   * its implicit one, so in fp16's subnormal unit 2^-24 it is
   * m >> (126 - exp), a shift of 14 to 24.  Rounding up from the largest
   * subnormal gives 0x400, the smallest normal, as it should. */
  uint32_t m = (mag & 0x7fffff) | 0x800000;
  int shift = 126 - exp;
  return sign | (uint16_t)round_even(m >> shift, m & ((1u << shift) - 1),
                                     shift);
}

float dtype_f16_to_f32(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000) << 16;
  uint32_t exp = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (exp == 0x1f) /* infinity or NaN, payload kept */
    return float_of(sign | 0x7f800000 | (m << 13));
  if (exp != 0)
    return float_of(sign | ((exp + 112) << 23) | (m << 13));
  if (m == 0)
    return float_of(sign);
  /* Subnormal m * 2^-24: normalize so that the leading one is bit 10. */
  int shift = 0;
  while (!(m & 0x400)) {
    m <<= 1;
    shift++;
  }
  return float_of(sign | ((uint32_t)(113 - shift) << 23) | ((m & 0x3ff) << 13));
}

uint16_t dtype_f32_to_bf16(float x) {
  uint32_t u = bits_of(x);
  if ((u & 0x7fffffff) > 0x7f800000) /* NaN: truncate, set the quiet bit */
    return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)(round_even(u >> 16, u & 0xffff, 16));
}

float dtype_bf16_to_f32(uint16_t bits) {
  return float_of((uint32_t)bits << 16);
}

float ts_round_to(ts_dtype t, float x) {
  switch (t) {
  case TS_F16:
    return dtype_f16_to_f32(dtype_f32_to_f16(x));
  case TS_BF16:
    return dtype_bf16_to_f32(dtype_f32_to_bf16(x));
  default:
    return x;
  }
}

double dtype_gemm_tolerance(ts_dtype c_type, ts_dtype acc_type, int64_t k,
                            bool tf32) {
  const dtype_info *c = dtype_info_of(c_type), *acc = dtype_info_of(acc_type);
  double uc = (c ? c : &dtypes[TS_F32])->unit_roundoff;
  double uacc = (acc ? acc : &dtypes[TS_F32])->unit_roundoff;
  /* tf32 rounds each input by up to 2^-11 or truncates it by up to 2^-10,
   * a product by up to 2^-9; truncation's bias is at most that of C, and
   * the rest of a sum's errors mostly cancel (dtype.h). */
  double inputs = tf32 ? 2 * 0x1p-10 : 0;
  return inputs + 2 * uc + 2.5 * uacc * sqrt((double)(k > 4096 ? k : 4096));
}

void ts_dtype_store(ts_dtype t, float x, void *dst) {
  if (t == TS_F16 || t == TS_BF16) {
    uint16_t bits = t == TS_F16 ? dtype_f32_to_f16(x) : dtype_f32_to_bf16(x);
    memcpy(dst, &bits, sizeof(bits));
  } else {
    memcpy(dst, &x, sizeof(x));
  }
}

float ts_dtype_load(ts_dtype t, const void *src) {
  if (t == TS_F16 || t == TS_BF16) {
    uint16_t bits;
    memcpy(&bits, src, sizeof(bits));
    return t == TS_F16 ? dtype_f16_to_f32(bits) : dtype_bf16_to_f32(bits);
  }
  float x;
  memcpy(&x, src, sizeof(x));
  return x;
}
