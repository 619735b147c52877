/*
 * Integer expressions at one point (eval.h).
 */
#include "eval.h"

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t ir_int_op(ir_expr_kind k, int64_t a, int64_t b) {
  switch (k) {
  case E_ADD: return a + b;
  case E_SUB: return a - b;
  case E_MUL: return a * b;
  case E_DIV: return b ? floordiv(a, b) : 0;
  case E_MOD: return b ? a - floordiv(a, b) * b : 0;
  case E_MIN: return a < b ? a : b;
  case E_MAX: return a > b ? a : b;
  case E_LT: return a < b;
  case E_LE: return a <= b;
  case E_EQ: return a == b;
  case E_NE: return a != b;
  default: return 0;
  }
}

static int64_t launch_value(const ir_point *p, ts_loop_kind tag) {
  switch (tag) {
  case TS_BLOCK_X: return p->block[0];
  case TS_BLOCK_Y: return p->block[1];
  case TS_BLOCK_Z: return p->block[2];
  case TS_THREAD_X: return p->thread[0];
  case TS_THREAD_Y: return p->thread[1];
  case TS_THREAD_Z: return p->thread[2];
  default: return 0;
  }
}

bool ir_eval_int(const ir_expr *e, const ir_point *p, int64_t *out) {
  int64_t a, b;
  switch (e->kind) {
  case E_INT: *out = e->ival; return true;
  case E_VAR:
    if (e->var->kind == VAR_PARAM)
      return p->values && (*out = p->values[e->var->value], true);
    *out = e->var->kind == VAR_LAUNCH ? launch_value(p, e->var->tag)
           : e->var->kind == VAR_GRID ? p->grid[e->var->tag - TS_BLOCK_X]
                                      : p->vars[e->var->id];
    return true;
  case E_NOT:
    if (!ir_eval_int(e->op.a, p, &a))
      return false;
    return *out = !a, true;
  case E_SELECT:
    if (!ir_eval_int(e->op.c, p, &a))
      return false;
    return ir_eval_int(a ? e->op.a : e->op.b, p, out);
  case E_AND: case E_OR:
    if (!ir_eval_int(e->op.a, p, &a))
      return false;
    if ((a != 0) != (e->kind == E_AND))
      return *out = a != 0, true;
    if (!ir_eval_int(e->op.b, p, &b))
      return false;
    return *out = b != 0, true;
  case E_LOAD: case E_VECTOR: case E_FLOAT: case E_CAST: case E_ROUND_TF32:
  case E_PAIR_PICK:
    return false;
  default: break;
  }
  if (e->op.a->type != TY_INT || e->op.b->type != TY_INT ||
      !ir_eval_int(e->op.a, p, &a) || !ir_eval_int(e->op.b, p, &b))
    return false;
  *out = ir_int_op(e->kind, a, b);
  return true;
}
