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
double check_element_tolerance(const ts_program *p, int64_t k, double want,
                               double scale);

/* Storage index of element (r, c) of op(X), X operand `o` as it lies in
 * memory: stored transposed, (c, r); each stored row o->ld apart. */
static inline int64_t check_index(const ts_operand *o, int64_t r, int64_t c) {
  return o->transposed ? c * o->ld + r : r * o->ld + c;
}

#endif
