/*
 * The simplifier.  Integer expressions are brought to a canonical linear
 * form (a sum of coefficient * atom plus a constant, atoms in order of first
 * appearance), which cancels terms such as (io*16 + ii) - io*16.  Floor
 * division and modulo by a constant split off the terms the divisor divides;
 * what remains is dropped or kept by interval analysis.  Conditions that
 * interval analysis proves are folded, and with them the guards they hold.
 */
#include "analysis.h"

#include <string.h>

enum { MAX_TERMS = 32 };

typedef struct {
  ir_expr *atom[MAX_TERMS];
  int64_t coef[MAX_TERMS];
  int n;
  int64_t constant;
  bool overflow; /* too many terms: leave the expression alone */
} linear;

ir_expr *ir_bool(ts_arena *a, bool v) {
  ir_expr *e = ir_int(a, v);
  if (e)
    e->type = TY_BOOL;
  return e;
}

bool ir_is_true(const ir_expr *e) {
  return e && e->kind == E_INT && e->type == TY_BOOL && e->ival;
}

bool ir_is_false(const ir_expr *e) {
  return e && e->kind == E_INT && e->type == TY_BOOL && !e->ival;
}

static ir_expr *simplify_atom(ts_arena *a, ir_expr *e);

static void add_term(linear *l, ir_expr *atom, int64_t coef) {
  if (atom->kind == E_INT) {
    l->constant += coef * atom->ival;
    return;
  }
  for (int i = 0; i < l->n; i++) {
    if (ir_expr_equal(l->atom[i], atom)) {
      l->coef[i] += coef;
      return;
    }
  }
  if (l->n == MAX_TERMS) {
    l->overflow = true;
    return;
  }
  l->atom[l->n] = atom;
  l->coef[l->n++] = coef;
}

static void linearize(ts_arena *a, ir_expr *e, int64_t scale, linear *l) {
  switch (e->kind) {
  case E_INT:
    l->constant += scale * e->ival;
    return;
  case E_ADD:
    linearize(a, e->op.a, scale, l);
    linearize(a, e->op.b, scale, l);
    return;
  case E_SUB:
    linearize(a, e->op.a, scale, l);
    linearize(a, e->op.b, -scale, l);
    return;
  case E_MUL:
    if (e->op.b->kind == E_INT) {
      linearize(a, e->op.a, scale * e->op.b->ival, l);
      return;
    }
    if (e->op.a->kind == E_INT) {
      linearize(a, e->op.b, scale * e->op.a->ival, l);
      return;
    }
    break;
  default:
    break;
  }
  ir_expr *atom = simplify_atom(a, e);
  if (!atom) {
    l->overflow = true;
    return;
  }
  if (atom != e && (atom->kind == E_ADD || atom->kind == E_SUB ||
                    atom->kind == E_MUL || atom->kind == E_INT)) {
    /* The atom simplified to a linear form: merge its terms. */
    linear inner = {0};
    linearize(a, atom, 1, &inner);
    if (inner.overflow) {
      l->overflow = true;
      return;
    }
    for (int i = 0; i < inner.n; i++)
      add_term(l, inner.atom[i], inner.coef[i] * scale);
    l->constant += inner.constant * scale;
    return;
  }
  add_term(l, atom, scale);
}

static ir_expr *term_expr(ts_arena *a, ir_expr *atom, int64_t coef) {
  return coef == 1 ? atom : ir_binary(a, E_MUL, atom, ir_int(a, coef));
}

static ir_expr *rebuild(ts_arena *a, const linear *l) {
  ir_expr *sum = NULL;
  for (int i = 0; i < l->n; i++) {
    if (l->coef[i] > 0) {
      ir_expr *t = term_expr(a, l->atom[i], l->coef[i]);
      sum = sum ? ir_binary(a, E_ADD, sum, t) : t;
    }
  }
  if (l->constant > 0)
    sum = sum ? ir_binary(a, E_ADD, sum, ir_int(a, l->constant))
              : ir_int(a, l->constant);
  for (int i = 0; i < l->n; i++) {
    if (l->coef[i] < 0) {
      ir_expr *t = term_expr(a, l->atom[i], -l->coef[i]);
      sum = ir_binary(a, E_SUB, sum ? sum : ir_int(a, 0), t);
    }
  }
  if (l->constant < 0)
    sum = sum ? ir_binary(a, E_SUB, sum, ir_int(a, -l->constant))
              : ir_int(a, l->constant);
  return sum ? sum : ir_int(a, 0);
}

static void drop_zero_terms(linear *l) {
  int n = 0;
  for (int i = 0; i < l->n; i++) {
    if (l->coef[i] != 0) {
      l->atom[n] = l->atom[i];
      l->coef[n++] = l->coef[i];
    }
  }
  l->n = n;
}

static ir_expr *simplify_linear(ts_arena *a, ir_expr *e) {
  linear l = {0};
  linearize(a, e, 1, &l);
  if (l.overflow)
    return e;
  drop_zero_terms(&l);
  return rebuild(a, &l);
}

static int64_t floordiv(int64_t x, int64_t y) {
  int64_t q = x / y;
  return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;
}

/* x / c and x % c for a constant c > 0: terms whose coefficients c divides
 * leave the modulo and pass into the quotient whole. */
static ir_expr *simplify_divmod(ts_arena *a, ir_expr_kind kind, ir_expr *x,
                                int64_t c) {
  linear l = {0};
  linearize(a, x, 1, &l);
  if (l.overflow)
    return ir_binary(a, kind, x, ir_int(a, c));
  linear quot = {0}, rest = {0};
  for (int i = 0; i < l.n; i++) {
    if (l.coef[i] == 0)
      continue;
    if (l.coef[i] % c == 0)
      add_term(&quot, l.atom[i], l.coef[i] / c);
    else
      add_term(&rest, l.atom[i], l.coef[i]);
  }
  quot.constant = floordiv(l.constant, c);
  rest.constant = l.constant - quot.constant * c;
  ir_expr *r = rebuild(a, &rest);
  int64_t lo, hi;
  bool in_range = r && ir_bounds(r, &lo, &hi) && lo >= 0 && hi < c;
  if (kind == E_MOD) {
    if (in_range)
      return r;
    return ir_binary(a, E_MOD, r, ir_int(a, c));
  }
  ir_expr *q = rebuild(a, &quot);
  if (in_range)
    return q;
  return ir_add(a, q, ir_binary(a, E_DIV, r, ir_int(a, c)));
}

static ir_expr *fold_compare(ts_arena *a, ir_expr *e, ir_expr *x, ir_expr *y) {
  ir_expr *d = simplify_linear(a, ir_binary(a, E_SUB, x, y));
  int64_t lo, hi;
  if (d && ir_bounds(d, &lo, &hi)) {
    switch (e->kind) {
    case E_LT:
      if (hi < 0) return ir_bool(a, true);
      if (lo >= 0) return ir_bool(a, false);
      break;
    case E_LE:
      if (hi <= 0) return ir_bool(a, true);
      if (lo > 0) return ir_bool(a, false);
      break;
    case E_EQ:
      if (lo == 0 && hi == 0) return ir_bool(a, true);
      if (lo > 0 || hi < 0) return ir_bool(a, false);
      break;
    case E_NE:
      if (lo == 0 && hi == 0) return ir_bool(a, false);
      if (lo > 0 || hi < 0) return ir_bool(a, true);
      break;
    default:
      break;
    }
  }
  if (x == e->op.a && y == e->op.b)
    return e;
  return ir_binary(a, e->kind, x, y);
}

static ir_expr *fold_logic(ts_arena *a, ir_expr *e, ir_expr *x, ir_expr *y) {
  bool is_and = e->kind == E_AND;
  if (ir_is_true(x)) return is_and ? y : x;
  if (ir_is_false(x)) return is_and ? x : y;
  if (ir_is_true(y)) return is_and ? x : y;
  if (ir_is_false(y)) return is_and ? y : x;
  if (ir_expr_equal(x, y)) return x;
  if (x == e->op.a && y == e->op.b) return e;
  return ir_binary(a, e->kind, x, y);
}

static ir_expr *fold_minmax(ts_arena *a, ir_expr *e, ir_expr *x, ir_expr *y) {
  int64_t xl, xh, yl, yh;
  if (ir_bounds(x, &xl, &xh) && ir_bounds(y, &yl, &yh)) {
    if (xh <= yl) return e->kind == E_MIN ? x : y;
    if (yh <= xl) return e->kind == E_MIN ? y : x;
  }
  if (x == e->op.a && y == e->op.b) return e;
  return ir_binary(a, e->kind, x, y);
}

/* Simplifies an expression that is not itself a sum or product. */
static ir_expr *simplify_atom(ts_arena *a, ir_expr *e) {
  switch (e->kind) {
  case E_INT: case E_FLOAT: case E_VAR:
    return e;
  case E_LOAD: {
    ir_expr *idx[IR_MAX_DIMS];
    bool changed = false;
    for (int d = 0; d < e->load.buf->ndim; d++) {
      idx[d] = ir_simplify_expr(a, e->load.idx[d]);
      changed |= idx[d] != e->load.idx[d];
    }
    return changed ? ir_load(a, e->load.buf, idx) : e;
  }
  case E_NOT: {
    ir_expr *x = ir_simplify_expr(a, e->op.a);
    if (ir_is_true(x)) return ir_bool(a, false);
    if (ir_is_false(x)) return ir_bool(a, true);
    return x == e->op.a ? e : ir_not(a, x);
  }
  case E_SELECT: {
    ir_expr *c = ir_simplify_expr(a, e->op.c);
    ir_expr *x = ir_simplify_expr(a, e->op.a);
    ir_expr *y = ir_simplify_expr(a, e->op.b);
    if (ir_is_true(c)) return x;
    if (ir_is_false(c)) return y;
    if (c == e->op.c && x == e->op.a && y == e->op.b) return e;
    return ir_select(a, c, x, y);
  }
  default:
    break;
  }
  ir_expr *x = ir_simplify_expr(a, e->op.a);
  ir_expr *y = ir_simplify_expr(a, e->op.b);
  if (!x || !y)
    return NULL;
  switch (e->kind) {
  case E_DIV: case E_MOD:
    if (e->type == TY_INT && y->kind == E_INT && y->ival > 0) {
      if (y->ival == 1)
        return e->kind == E_DIV ? x : ir_int(a, 0);
      return simplify_divmod(a, e->kind, x, y->ival);
    }
    break;
  case E_LT: case E_LE: case E_EQ: case E_NE:
    if (x->type == TY_INT)
      return fold_compare(a, e, x, y);
    break;
  case E_AND: case E_OR:
    return fold_logic(a, e, x, y);
  case E_MIN: case E_MAX:
    if (e->type == TY_INT)
      return fold_minmax(a, e, x, y);
    break;
  default:
    break;
  }
  if (x == e->op.a && y == e->op.b)
    return e;
  return ir_binary(a, e->kind, x, y);
}

ir_expr *ir_simplify_expr(ts_arena *a, ir_expr *e) {
  if (!e)
    return NULL;
  if (e->type == TY_INT &&
      (e->kind == E_ADD || e->kind == E_SUB || e->kind == E_MUL))
    return simplify_linear(a, e);
  if (e->type == TY_FLOAT && e->kind != E_LOAD && e->kind != E_FLOAT &&
      e->kind != E_SELECT) {
    ir_expr *x = ir_simplify_expr(a, e->op.a);
    ir_expr *y = ir_simplify_expr(a, e->op.b);
    return (x == e->op.a && y == e->op.b) ? e : ir_binary(a, e->kind, x, y);
  }
  return simplify_atom(a, e);
}

/* ---- Statements ------------------------------------------------------------ */

static ir_stmt *empty(ts_arena *a) { return ir_new_seq(a, NULL, 0); }

static bool is_empty(const ir_stmt *s) {
  return s && s->kind == S_SEQ && s->seq.n == 0;
}

static ir_stmt *simplify_seq(ts_arena *a, ir_stmt *s) {
  ir_stmt **done = ts_arena_alloc(a, sizeof(*done) * (size_t)(s->seq.n + 1));
  if (!done)
    return NULL;
  bool changed = false;
  int total = 0;
  for (int i = 0; i < s->seq.n; i++) {
    done[i] = ir_simplify_stmt(a, s->seq.items[i]);
    if (!done[i])
      return NULL;
    changed |= done[i] != s->seq.items[i];
    total += done[i]->kind == S_SEQ ? done[i]->seq.n : 1;
  }
  if (!changed)
    return s;
  ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)(total + 1));
  if (!items)
    return NULL;
  int n = 0;
  for (int i = 0; i < s->seq.n; i++) {
    if (done[i]->kind == S_SEQ) /* flatten */
      for (int j = 0; j < done[i]->seq.n; j++)
        items[n++] = done[i]->seq.items[j];
    else
      items[n++] = done[i];
  }
  return n == 1 ? items[0] : ir_new_seq(a, items, n);
}

static ir_stmt *simplify_indices_store(ts_arena *a, ir_stmt *s) {
  ir_expr *idx[IR_MAX_DIMS];
  bool changed = false;
  for (int d = 0; d < s->store.buf->ndim; d++) {
    idx[d] = ir_simplify_expr(a, s->store.idx[d]);
    changed |= idx[d] != s->store.idx[d];
  }
  ir_expr *v = ir_simplify_expr(a, s->store.value);
  if (!changed && v == s->store.value)
    return s;
  return ir_new_store(a, s->store.buf, idx, v);
}

static ir_expr *simplify_fn(ts_arena *a, ir_expr *e, void *ctx) {
  (void)ctx;
  return ir_simplify_expr(a, e);
}

ir_stmt *ir_simplify_stmt(ts_arena *a, ir_stmt *s) {
  if (!s)
    return NULL;
  switch (s->kind) {
  case S_FOR: {
    ts_loop *l = s->for_.loop;
    if (l->extent == 1 && !ir_kind_is_launch(l->kind)) {
      ir_stmt *body = ir_subst_stmt(a, s->for_.body, l->var, ir_int(a, 0));
      return ir_simplify_stmt(a, body);
    }
    ir_stmt *body = ir_simplify_stmt(a, s->for_.body);
    if (is_empty(body))
      return body;
    return body == s->for_.body ? s : ir_new_for(a, l, body);
  }
  case S_SEQ:
    return simplify_seq(a, s);
  case S_STORE:
    return simplify_indices_store(a, s);
  case S_IF: {
    ir_expr *c = ir_simplify_expr(a, s->if_.cond);
    ir_stmt *t = ir_simplify_stmt(a, s->if_.then_);
    ir_stmt *e = ir_simplify_stmt(a, s->if_.else_);
    if (ir_is_true(c))
      return t;
    if (ir_is_false(c))
      return e ? e : empty(a);
    if (c == s->if_.cond && t == s->if_.then_ && e == s->if_.else_)
      return s;
    return ir_new_if(a, c, t, e);
  }
  case S_ALLOC: {
    ir_stmt *body = ir_simplify_stmt(a, s->alloc.body);
    return body == s->alloc.body ? s : ir_new_alloc(a, s->alloc.buf, body);
  }
  case S_BARRIER:
    return s;
  case S_COMPUTE: {
    ir_stmt *c = ir_compute_map(a, s, simplify_fn, NULL);
    if (!c)
      return NULL;
    ir_expr *p = c->compute.pred;
    if (ir_is_false(p))
      return empty(a);
    if (!ir_is_true(p))
      return c;
    ir_stmt *d = ir_compute_with_src(a, c, 0, c->compute.src[0],
                                     c->compute.origin[0][0],
                                     c->compute.origin[0][1]);
    if (d)
      d->compute.pred = NULL;
    return d;
  }
  }
  return s;
}
