/* A size's formula, evaluated (formula.h). */
#include "formula.h"

#include <stdint.h>

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* A formula comes from a file: every step is checked, so that a damaged
 * one fails instead of overflowing or trapping (INT64_MIN / -1). */
static bool divides(int64_t a, int64_t b) {
  return b != 0 && !(a == INT64_MIN && b == -1);
}

static bool apply(int op, int64_t a, int64_t b, int64_t *out) {
  switch (op) {
  case TS_FORMULA_ADD: return !__builtin_add_overflow(a, b, out);
  case TS_FORMULA_SUB: return !__builtin_sub_overflow(a, b, out);
  case TS_FORMULA_MUL: return !__builtin_mul_overflow(a, b, out);
  case TS_FORMULA_DIV:
    return divides(a, b) && (*out = floor_div(a, b), true);
  case TS_FORMULA_MOD:
    return divides(a, b) && (*out = a - floor_div(a, b) * b, true);
  case TS_FORMULA_MIN: *out = a < b ? a : b; return true;
  case TS_FORMULA_MAX: *out = a > b ? a : b; return true;
  default: return false;
  }
}

bool ts_formula_eval(const ts_formula *f, const int64_t *values, int64_t *out) {
  int64_t stack[TS_FORMULA_LEN];
  int top = 0;
  if (f->n < 1 || f->n > TS_FORMULA_LEN)
    return false;
  for (int i = 0; i < f->n; i++) {
    int op = f->op[i];
    if (op == TS_FORMULA_CONST || op == TS_FORMULA_VALUE) {
      if (op == TS_FORMULA_VALUE &&
          (f->arg[i] < 0 || f->arg[i] >= TS_FORMULA_VALUES))
        return false;
      stack[top++] = op == TS_FORMULA_CONST ? f->arg[i] : values[f->arg[i]];
      continue;
    }
    if (top < 2 || !apply(op, stack[top - 2], stack[top - 1], &stack[top - 2]))
      return false;
    top--;
  }
  return top == 1 && (*out = stack[0], true);
}
