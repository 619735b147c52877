/*
 * CUDA's own conversions between float and fp16 / bf16, for the GPU test
 * (tests/test_gpu_dtype.c) that compares them with the host's
 * (src/ir/dtype.c): 16-bit patterns widened and floats narrowed, one
 * element at a time (__float2half_rn, __float2bfloat16_rn and back) and two
 * at a time (the pair conversions the code generator uses).  Bits travel
 * as unsigned short so the host needs no CUDA types.  Compiled with NVRTC;
 * every loop strides over the grid, so any launch covers all n elements.
 *
 * CUDA's NaN results are canonical (0x7fff) where the host keeps the
 * payload: compare NaNs as NaNs, not as bits.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define EACH(i, n)                                                            \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n);               \
       i += gridDim.x * blockDim.x)

extern "C" __global__ void f32_to_f16(const float *x, unsigned short *out,
                                      int n) {
  EACH(i, n) out[i] = __half_as_ushort(__float2half_rn(x[i]));
}

extern "C" __global__ void f16_to_f32(const unsigned short *bits, float *out,
                                      int n) {
  EACH(i, n) out[i] = __half2float(__ushort_as_half(bits[i]));
}

extern "C" __global__ void f32_to_bf16(const float *x, unsigned short *out,
                                       int n) {
  EACH(i, n) out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
}

extern "C" __global__ void bf16_to_f32(const unsigned short *bits, float *out,
                                       int n) {
  EACH(i, n) out[i] = __bfloat162float(__ushort_as_bfloat16(bits[i]));
}

/* Pairs: x[2i], x[2i+1] through one __half2 or __nv_bfloat162; n is the
 * number of pairs. */
extern "C" __global__ void f32_to_f16x2(const float2 *x, unsigned short *out,
                                        int n) {
  EACH(i, n) {
    __half2 h = __float22half2_rn(x[i]);
    out[2 * i] = __half_as_ushort(__low2half(h));
    out[2 * i + 1] = __half_as_ushort(__high2half(h));
  }
}

extern "C" __global__ void f16x2_to_f32(const unsigned short *bits,
                                        float2 *out, int n) {
  EACH(i, n) {
    __half2 h = __halves2half2(__ushort_as_half(bits[2 * i]),
                               __ushort_as_half(bits[2 * i + 1]));
    out[i] = __half22float2(h);
  }
}

extern "C" __global__ void f32_to_bf16x2(const float2 *x, unsigned short *out,
                                         int n) {
  EACH(i, n) {
    __nv_bfloat162 h = __float22bfloat162_rn(x[i]);
    out[2 * i] = __bfloat16_as_ushort(__low2bfloat16(h));
    out[2 * i + 1] = __bfloat16_as_ushort(__high2bfloat16(h));
  }
}

extern "C" __global__ void bf16x2_to_f32(const unsigned short *bits,
                                         float2 *out, int n) {
  EACH(i, n) {
    __nv_bfloat162 h = __halves2bfloat162(__ushort_as_bfloat16(bits[2 * i]),
                                          __ushort_as_bfloat16(bits[2 * i + 1]));
    out[i] = __bfloat1622float2(h);
  }
}
