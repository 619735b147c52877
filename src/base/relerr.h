/*
 * The error measure of the GPU checks (the runtime's comparison with
 * cuBLAS, the GPU tests): max |x - ref| / max |ref| over all elements
 * (relative to the largest reference value, so elements near zero do not
 * inflate it); a NaN anywhere makes it infinite.
 *
 * The maxima are taken over the magnitudes' bit patterns, which order as
 * the magnitudes do (a NaN's above infinity's), so that the loop has no
 * branch and the compiler vectorizes it: ts_bench compares every
 * candidate's C, 67 million elements at 8192^3, and the branchy loop in
 * double took longer than the kernel's four launches.
 */
#ifndef TS_RELERR_H
#define TS_RELERR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t ts_magnitude_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof(b));
  return b & 0x7fffffffu;
}

static inline double ts_max_rel_err(const float *x, const float *ref, size_t n) {
  uint32_t num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t e = ts_magnitude_bits(x[i] - ref[i]), r = ts_magnitude_bits(ref[i]);
    num = e > num ? e : num;
    den = r > den ? r : den;
  }
  if (num > 0x7f800000u) /* a NaN */
    return INFINITY;
  float fn, fd;
  memcpy(&fn, &num, sizeof(fn));
  memcpy(&fd, &den, sizeof(fd));
  return fd > 0 ? (double)fn / fd : fn;
}

#endif
