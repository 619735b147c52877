/*
 * What the full check (check.c) and the sampled check (check_sample.c)
 * share: the tolerance of one element of C, where op(A) and op(B) keep
 * their elements.
 */
#ifndef TS_CHECK_IMPL_H
#define TS_CHECK_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "tessel/exec.h"

/* How far program p's C[i, j] may be from `want`, the exact result for
 * the same (rounded) inputs, `scale` the magnitudes summed. */
double check_element_tolerance(const ts_program *p, double want,
                               double scale);

/* Storage index of op(A)[i, k] and op(B)[k, j] in g's layout. */
static inline int64_t check_a_index(const ts_gemm *g, int64_t i, int64_t k) {
  bool t = g->layout == TS_TN || g->layout == TS_TT;
  return t ? k * g->m + i : i * g->k + k;
}

static inline int64_t check_b_index(const ts_gemm *g, int64_t k, int64_t j) {
  bool t = g->layout == TS_NT || g->layout == TS_TT;
  return t ? j * g->k + k : k * g->n + j;
}

#endif
