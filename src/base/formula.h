/*
 * A size as a formula of the values a kernel takes at launch (M, N, K,
 * the leading dimensions: ts_param_value): a grid dimension of a kernel
 * whose extents are chosen at launch, kept in the compiled kernel and its
 * file and evaluated by the launcher, which has no IR.  Postfix, a few
 * dozen operations at most: constants, values, and integer arithmetic
 * with floor division, as the IR's.
 */
#ifndef TS_FORMULA_H
#define TS_FORMULA_H

#include <stdbool.h>
#include <stdint.h>

typedef enum ts_formula_op {
  TS_FORMULA_CONST, /* push arg */
  TS_FORMULA_VALUE, /* push values[arg] */
  TS_FORMULA_ADD, TS_FORMULA_SUB, TS_FORMULA_MUL,
  TS_FORMULA_DIV,   /* floor division; a divisor of 0 fails */
  TS_FORMULA_MOD,   /* floor modulo */
  TS_FORMULA_MIN, TS_FORMULA_MAX,
  TS_FORMULA_OPS
} ts_formula_op;

enum { TS_FORMULA_LEN = 32, TS_FORMULA_VALUES = 8 };

typedef struct ts_formula {
  int n; /* 0: none (the number is compiled in) */
  uint8_t op[TS_FORMULA_LEN];
  int64_t arg[TS_FORMULA_LEN];
} ts_formula;

/* f's value at `values` (TS_FORMULA_VALUES of them); false for a
 * malformed formula (a stack that does not end with one value, an
 * operation or value out of range, a division by 0, a step that
 * overflows). */
bool ts_formula_eval(const ts_formula *f, const int64_t *values, int64_t *out);

#endif
