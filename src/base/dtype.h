/*
 * Element types: one table that says, for each ts_dtype, everything a layer
 * needs to know about it (its name, size, CUDA spelling, cuBLAS type and
 * precision), and the bit-exact conversions the reference executor uses to
 * round fp32 values to fp16 and bf16 the way the GPU does.
 *
 * ts_dtype_name, ts_dtype_parse and ts_dtype_size are public (tessel.h);
 * the rest is internal (dtype_ prefix).
 */
#ifndef TS_DTYPE_H
#define TS_DTYPE_H

#include <stdint.h>

#include <library_types.h>

#include <stdbool.h>

#include "tessel/types.h"

#define TS_DTYPE_COUNT 3

typedef struct dtype_info {
  const char *name;      /* for people and the CLI: "f32", "f16", "bf16" */
  int size;              /* bytes per element */
  const char *cuda_type; /* "float", "__half", "__nv_bfloat16" */
  const char *cuda_header; /* the header defining it; NULL for float */
  /* CUDA functions converting one element from and to float; NULL for
   * float, which needs none. */
  const char *cuda_from_float; /* "__float2half_rn" (round to nearest even) */
  const char *cuda_to_float;   /* "__half2float" (exact) */
  cudaDataType cublas;    /* CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF */
  int precision;          /* significand bits, the implicit one included */
  double epsilon;         /* 2^(1 - precision): 1.0's distance to the next */
  double unit_roundoff;   /* 2^-precision: the relative error of rounding */
  double min_subnormal;   /* the smallest positive value; half of it bounds
                           * the absolute error of rounding near zero */
} dtype_info;

/* The table's entry for t, or NULL when t is not a ts_dtype. */
const dtype_info *dtype_info_of(ts_dtype t);

/* ts_dtype_name, ts_dtype_parse and ts_dtype_size are in tessel.h. */

/* IEEE binary16 bits from a float, rounding to nearest even: subnormal
 * results are rounded, magnitudes from 65520 up become infinity, and a NaN
 * stays a NaN with its sign, its payload's top bits and the quiet bit set. */
uint16_t dtype_f32_to_f16(float x);
/* The float a binary16 holds (exact; a NaN keeps its payload). */
float dtype_f16_to_f32(uint16_t bits);
/* bfloat16 bits from a float, rounding to nearest even; a NaN stays a NaN
 * (quiet bit set, never rounded into infinity). */
uint16_t dtype_f32_to_bf16(float x);
/* The float a bfloat16 holds (exact). */
float dtype_bf16_to_f32(uint16_t bits);
/* x rounded to the storage of t and widened back to float: what a store
 * of x to a t element followed by a load gives. */
float ts_round_to(ts_dtype t, float x);

/* A bound on max |C - ref| / max |ref| for a GEMM of depth k whose
 * products are summed in acc_type and stored as c_type, against a
 * reference computed in double from the same (already rounded) A, B and C:
 *
 *   tol = 2 u(c_type) + 2.5 u(acc_type) sqrt(max(k, 4096))
 *
 * where u is the unit roundoff.  The products of fp16 or bf16 elements are
 * exact in fp32, so only the sum and the store round.  The rounding errors
 * of a k-term sum of random-signed products grow like sqrt(k) relative to
 * the largest result (about 0.6 u sqrt(k) measured, for uniform [-1, 1)
 * data and any summation order); 2.5 leaves a margin of four.  The store
 * to C adds at most u(c_type) of the largest result, and two results each
 * rounded to c_type (a kernel's and cuBLAS's) differ by at most 2 u.  Below
 * k = 4096 the bound stays at its value there (1e-5 in fp32, as the GPU
 * checks have always used), so short sums whose alpha and beta roundings
 * outweigh sqrt(k) are not held tighter.  Gives 9.7e-6 for fp32 up to
 * k = 4096 and 1.9e-5 at 16384, 9.9e-4 for a fp16 C, 7.8e-3 for a bf16 C.
 * With tf32 (fp32 A and B cut to 10 significand bits before they are
 * multiplied, against a reference of the uncut inputs) 2^-9 more: an
 * input rounded to nearest is off by up to 2^-11 of itself, one truncated
 * (wgmma reading fp32 as it lies) by up to 2^-10, toward zero, so a
 * product by up to 2^-10 or 2^-9.  Rounding errors mostly cancel over a
 * sum; truncation's do not: their mean, about 0.7 x 2^-10 of each product
 * for uniform data, carries over to C as a bias of that much of C itself
 * (never more than 2^-9 of it), below 2^-9 of the largest |C| whichever
 * of the kernel and cuBLAS truncates, and the rest cancels as rounding's
 * does. */
double dtype_gemm_tolerance(ts_dtype c_type, ts_dtype acc_type, int64_t k,
                            bool tf32);

#endif
