/*
 * Interval analysis over loop and launch variables.  Numeric bounds prove
 * guards true (or false); symbolic regions size a cached tile: the span of
 * an index over the loops inside an attach point, with a base expression in
 * the loops outside it.
 */
#include "analysis.h"

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t min4(int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t m = a < b ? a : b;
  m = m < c ? m : c;
  return m < d ? m : d;
}

static int64_t max4(int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t m = a > b ? a : b;
  m = m > c ? m : c;
  return m > d ? m : d;
}

bool ir_bounds(const ir_expr *e, int64_t *lo, int64_t *hi) {
  int64_t al, ah, bl, bh;
  switch (e->kind) {
  case E_INT:
    *lo = *hi = e->ival;
    return true;
  case E_VAR: /* a value given at launch is at least 1 */
    *lo = e->var->kind == VAR_PARAM ? 1 : 0;
    *hi = e->var->extent - 1;
    return true;
  case E_FLOAT: case E_LOAD: case E_CAST: case E_ROUND_TF32: case E_VECTOR:
  case E_PAIR_PICK:
    return false;
  case E_NOT: case E_SELECT:
    if (e->kind == E_NOT || e->type == TY_BOOL) {
      *lo = 0;
      *hi = 1;
      return true;
    }
    if (!ir_bounds(e->op.a, &al, &ah) || !ir_bounds(e->op.b, &bl, &bh))
      return false;
    *lo = al < bl ? al : bl;
    *hi = ah > bh ? ah : bh;
    return true;
  default:
    break;
  }
  if (e->type == TY_BOOL) {
    *lo = 0;
    *hi = 1;
    return true;
  }
  if (!ir_bounds(e->op.a, &al, &ah) || !ir_bounds(e->op.b, &bl, &bh))
    return false;
  /* Sizes chosen at launch have ranges up to 2^30, and their products
   * (a tile loop's count times K's tiles) may pass int64: then the bounds
   * are unknown. */
  int64_t p[4];
  switch (e->kind) {
  case E_ADD:
    return !__builtin_add_overflow(al, bl, lo) &&
           !__builtin_add_overflow(ah, bh, hi);
  case E_SUB:
    return !__builtin_sub_overflow(al, bh, lo) &&
           !__builtin_sub_overflow(ah, bl, hi);
  case E_MUL:
    if (__builtin_mul_overflow(al, bl, &p[0]) ||
        __builtin_mul_overflow(al, bh, &p[1]) ||
        __builtin_mul_overflow(ah, bl, &p[2]) ||
        __builtin_mul_overflow(ah, bh, &p[3]))
      return false;
    *lo = min4(p[0], p[1], p[2], p[3]);
    *hi = max4(p[0], p[1], p[2], p[3]);
    return true;
  case E_DIV:
    if (bl <= 0)
      return false; /* divisors are positive in tessel's IR */
    *lo = min4(floordiv(al, bl), floordiv(al, bh), floordiv(ah, bl),
               floordiv(ah, bh));
    *hi = max4(floordiv(al, bl), floordiv(al, bh), floordiv(ah, bl),
               floordiv(ah, bh));
    return true;
  case E_MOD:
    if (bl <= 0)
      return false;
    if (al >= 0 && ah < bl) {
      *lo = al;
      *hi = ah;
    } else {
      *lo = 0;
      *hi = bh - 1;
    }
    return true;
  case E_MIN: *lo = al < bl ? al : bl; *hi = ah < bh ? ah : bh; return true;
  case E_MAX: *lo = al > bl ? al : bl; *hi = ah > bh ? ah : bh; return true;
  default:
    return false;
  }
}

/* ---- Divisibility ------------------------------------------------------- */

static int64_t gcd(int64_t x, int64_t y) {
  x = x < 0 ? -x : x;
  y = y < 0 ? -y : y;
  while (y) {
    int64_t t = x % y;
    x = y;
    y = t;
  }
  return x;
}

int64_t ir_divisor(const ir_expr *e) {
  switch (e->kind) {
  case E_INT:
    return e->ival < 0 ? -e->ival : e->ival;
  case E_ADD: case E_SUB:
    return gcd(ir_divisor(e->op.a), ir_divisor(e->op.b));
  case E_MUL:
    return ir_divisor(e->op.a) * ir_divisor(e->op.b);
  case E_MOD:
    return e->op.b->kind == E_INT ? gcd(ir_divisor(e->op.a), e->op.b->ival) : 1;
  case E_VAR:
    return e->var->kind == VAR_PARAM && e->var->divisor > 1 ? e->var->divisor
                                                            : 1;
  default:
    return 1;
  }
}

/* ---- Regions ------------------------------------------------------------- */

bool ir_region(ts_arena *a, ir_expr *e, ir_var_pred inner, void *ctx,
               ir_expr **base, int64_t *extent) {
  ir_expr *xb, *yb;
  int64_t xe, ye;
  switch (e->kind) {
  case E_INT:
    *base = e;
    *extent = 1;
    return true;
  case E_VAR:
    if (inner(e->var, ctx)) {
      *base = ir_int(a, 0);
      *extent = e->var->extent;
    } else {
      *base = e;
      *extent = 1;
    }
    return true;
  case E_ADD: case E_SUB:
    if (!ir_region(a, e->op.a, inner, ctx, &xb, &xe) ||
        !ir_region(a, e->op.b, inner, ctx, &yb, &ye))
      return false;
    *extent = xe + ye - 1;
    if (e->kind == E_ADD)
      *base = ir_add(a, xb, yb);
    else
      *base = ir_sub(a, xb, ir_add(a, yb, ir_int(a, ye - 1)));
    return true;
  case E_MUL: {
    ir_expr *x = e->op.a, *c = e->op.b;
    if (x->kind == E_INT) {
      ir_expr *t = x;
      x = c;
      c = t;
    }
    if (c->kind != E_INT || c->ival < 0 ||
        !ir_region(a, x, inner, ctx, &xb, &xe))
      return false;
    *base = ir_mul(a, xb, c);
    *extent = (xe - 1) * c->ival + 1;
    return true;
  }
  case E_DIV: case E_MOD: {
    ir_expr *c = e->op.b;
    if (c->kind != E_INT || c->ival <= 0 ||
        !ir_region(a, e->op.a, inner, ctx, &xb, &xe))
      return false;
    if (xe == 1) { /* nothing inner: the value is fixed */
      *base = ir_binary(a, e->kind, xb, c);
      *extent = 1;
    } else if (e->kind == E_DIV) {
      *base = ir_binary(a, E_DIV, xb, c);
      /* From a multiple of c, xe values span (xe - 1) / c + 1 quotients;
       * from anywhere else, one more at most. */
      bool aligned = ir_divisor(xb) % c->ival == 0;
      *extent = (xe - 1) / c->ival + 1 + (aligned ? 0 : 1);
      if (!aligned && (xe + c->ival - 2) / c->ival + 1 < *extent)
        *extent = (xe + c->ival - 2) / c->ival + 1;
    } else {
      *base = ir_int(a, 0);
      *extent = c->ival;
    }
    return true;
  }
  default:
    return false;
  }
}
