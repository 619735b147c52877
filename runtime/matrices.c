/*
 * Matrices between the host and the device in their element types.  The
 * host side is always float (the caller's data, or the reference's); on the
 * device a matrix is stored in its definition's type, converted here with
 * round-to-nearest-even, exactly as the reference executor rounds, so that
 * the CPU and the GPU start from the same bits.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../src/base/dtype.h"
#include "gpu_impl.h"

size_t mat_bytes(ts_dtype t, size_t n) {
  return n * (size_t)ts_dtype_size(t);
}

/* n floats as elements of t, in a malloc'd buffer. */
static void *narrow(const float *src, size_t n, ts_dtype t) {
  uint16_t *out = malloc(n * sizeof(*out) + 1);
  for (size_t i = 0; out && i < n; i++)
    out[i] = t == TS_F16 ? dtype_f32_to_f16(src[i]) : dtype_f32_to_bf16(src[i]);
  return out;
}

bool mat_upload(ts_gpu *g, CUdeviceptr dst, const float *src, size_t n,
                ts_dtype t) {
  if (t == TS_F32)
    return GPU_CALL(g, cuMemcpyHtoD(dst, src, n * sizeof(float)));
  void *bits = narrow(src, n, t);
  if (!bits)
    return gpu_fail(g, TS_ERR_NO_MEMORY, "out of host memory converting a "
                    "matrix of %zu elements to %s", n, ts_dtype_name(t));
  bool ok = GPU_CALL(g, cuMemcpyHtoD(dst, bits, mat_bytes(t, n)));
  free(bits);
  return ok;
}

bool mat_download(ts_gpu *g, float *dst, CUdeviceptr src, size_t n,
                  ts_dtype t) {
  if (t == TS_F32)
    return GPU_CALL(g, cuMemcpyDtoH(dst, src, n * sizeof(float)));
  uint16_t *bits = malloc(n * sizeof(*bits) + 1);
  if (!bits)
    return gpu_fail(g, TS_ERR_NO_MEMORY, "out of host memory reading a "
                    "matrix of %zu elements of %s", n, ts_dtype_name(t));
  bool ok = GPU_CALL(g, cuMemcpyDtoH(bits, src, mat_bytes(t, n)));
  for (size_t i = 0; ok && i < n; i++)
    dst[i] = t == TS_F16 ? dtype_f16_to_f32(bits[i]) : dtype_bf16_to_f32(bits[i]);
  free(bits);
  return ok;
}
