/*
 * The values a kernel may take at launch (ts_gemm.runtime), in one
 * order for every stage that checks them: m, n, k, lda, ldb, ldc; which
 * of them a definition takes, and what each must be a multiple of.
 */
#ifndef TS_LAUNCH_VALUES_H
#define TS_LAUNCH_VALUES_H

#include <stdbool.h>

#include "tessel/types.h"

enum { LAUNCH_VALUES = 6 };

/* The most a value taken at launch may be: the kernels compute
 * (M + 255) / 256 and the like in int, which 2^30 leaves room for. */
#define LAUNCH_VALUE_MOST ((int64_t)1 << 30)

static inline const char *launch_value_name(int i) {
  static const char *const names[LAUNCH_VALUES] = {"m", "n", "k",
                                                   "lda", "ldb", "ldc"};
  return i >= 0 && i < LAUNCH_VALUES ? names[i] : "?";
}

/* Value i of g: its extent, or its operand's leading dimension resolved
 * (0 is the packed row). */
static inline int64_t launch_value_of(const ts_gemm *g, int i) {
  if (i < 3)
    return i == 0 ? g->m : i == 1 ? g->n : g->k;
  return ts_gemm_operand(g, (ts_operand_role)(i - 3)).ld;
}

/* g takes value i at launch. */
static inline bool launch_value_taken(const ts_gemm *g, int i) {
  static const unsigned bits[LAUNCH_VALUES] = {
      TS_RUNTIME_M, TS_RUNTIME_N, TS_RUNTIME_K,
      TS_RUNTIME_LD, TS_RUNTIME_LD, TS_RUNTIME_LD};
  return i >= 0 && i < LAUNCH_VALUES && (g->runtime & bits[i]);
}

/* What value i, taken at launch, must be a multiple of: 1 at least. */
static inline int64_t launch_value_multiple(const ts_gemm *g, int i) {
  int64_t q = i < 3 ? g->runtime_multiple : g->runtime_ld_multiple;
  return q > 1 ? q : 1;
}

#endif
