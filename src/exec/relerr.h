/*
 * The error measure of the GPU checks: max |x - ref| / max |ref| over all
 * elements (relative to the largest reference value, so elements near zero
 * do not inflate it); a NaN anywhere makes it infinite.
 */
#ifndef TS_RELERR_H
#define TS_RELERR_H

#include <math.h>
#include <stddef.h>

static inline double ts_max_rel_err(const float *x, const float *ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)x[i] - ref[i]);
    if (isnan(e))
      return INFINITY;
    num = e > num ? e : num;
    den = fabs((double)ref[i]) > den ? fabs((double)ref[i]) : den;
  }
  return den > 0 ? num / den : num;
}

#endif
