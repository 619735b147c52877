/*
 * Integer expressions at one point: each variable given one value.  The
 * reference executor evaluates expressions for a whole block at once
 * (exec_eval.c); analyses that ask "what does this index come to for lane
 * 5 at k step 3" use this, and both share one definition of the integer
 * operators (floor division and modulo, as the IR means them).
 */
#ifndef TS_IR_EVAL_H
#define TS_IR_EVAL_H

#include "ir.h"

/* Where an expression is evaluated: loop variables by id, and the launch
 * indices a VAR_LAUNCH variable names. */
typedef struct ir_point {
  const int64_t *vars; /* vars[v->id] for VAR_LOOP variables */
  int64_t block[3], thread[3];
  int64_t grid[3]; /* gridDim, which a VAR_GRID variable names */
  const int64_t *values; /* by ts_param_value, for VAR_PARAM; may be NULL */
} ir_point;

/* a op b for an integer or comparison operator (E_ADD .. E_NE); floor
 * division and modulo, 0 for a division by 0. */
int64_t ir_int_op(ir_expr_kind k, int64_t a, int64_t b);

/* e's value at p; false where e reads memory or compares floats, which an
 * index or a guard on indices does not. */
bool ir_eval_int(const ir_expr *e, const ir_point *p, int64_t *out);

#endif
