/*
 * The simplifier.  Integer expressions are brought to a canonical linear
 * form (a sum of coefficient * atom plus a constant, atoms in order of first
 * appearance), which cancels terms such as (io*16 + ii) - io*16.  Floor
 * division and modulo by a constant split off the terms the divisor divides;
 * what remains is dropped or kept by interval analysis.  Conditions that
 * interval analysis proves are folded, and with them the guards they hold.
 */
#include "analysis.h"

#include <stdint.h>
#include <string.h>

#include "visit.h"

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
  /* A product of two non-constant terms (wave * ((K + 63) / 64), where K
   * is taken at launch) is an atom; simplifying it again gives an equal
   * node, not a linear form. */
  bool product = atom->kind == E_MUL && atom->op.a->kind != E_INT &&
                 atom->op.b->kind != E_INT;
  if (atom != e && !product &&
      (atom->kind == E_ADD || atom->kind == E_SUB || atom->kind == E_MUL ||
       atom->kind == E_INT)) {
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

/* A term's coefficient times what its atom is known a multiple of: a
 * value taken at launch as a multiple of 4 (ts_gemm.runtime_multiple)
 * counts as 4 of itself. */
static int64_t term_multiple(const linear *d, int i) {
  int64_t c = d->coef[i] < 0 ? -d->coef[i] : d->coef[i];
  int64_t m = ir_divisor(d->atom[i]);
  return m > 1 && c <= INT64_MAX / m ? c * m : c;
}

/* Tries d < 0 as q * u + r < 0 for one modulus q: u the terms whose
 * coefficients q divides and the constant rounded down to a multiple of q,
 * r the other terms and what is left of the constant.  Where r lies in
 * [0, q), d < 0 exactly when q * u < 0, and r's variables leave the
 * comparison.  NULL where r is not in range or has no variable. */
static ir_expr *compare_without_remainder(ts_arena *a, const linear *d,
                                          int64_t q) {
  linear keep = {0}, rest = {0};
  for (int i = 0; i < d->n; i++) {
    if (term_multiple(d, i) % q == 0)
      add_term(&keep, d->atom[i], d->coef[i]);
    else
      add_term(&rest, d->atom[i], d->coef[i]);
  }
  if (rest.n == 0 || keep.n == 0)
    return NULL;
  int64_t bound = -floordiv(d->constant, q) * q;
  rest.constant = d->constant + bound;
  ir_expr *r = rebuild(a, &rest);
  int64_t lo, hi;
  if (!r || !ir_bounds(r, &lo, &hi) || lo < 0 || hi >= q)
    return NULL;
  return ir_binary(a, E_LT, rebuild(a, &keep), ir_int(a, bound));
}

/* x < y without the terms that cannot change its truth, trying each
 * coefficient of x - y as the modulus, largest first.  A vector lane's
 * guard, j*128 + lane*4 + v < N with v in 0..4 and N a multiple of 4,
 * becomes j*128 + lane*4 < N: one guard for all lanes, which can leave the
 * vectorized loop and let the access stay a vector.  NULL: no such terms. */
static ir_expr *drop_remainder(ts_arena *a, ir_expr *d) {
  linear l = {0};
  linearize(a, d, 1, &l);
  if (l.overflow)
    return NULL;
  drop_zero_terms(&l);
  int64_t tried = INT64_MAX;
  for (;;) {
    int64_t q = 1; /* the largest coefficient below those tried */
    for (int i = 0; i < l.n; i++) {
      int64_t c = term_multiple(&l, i);
      if (c > q && c < tried)
        q = c;
    }
    if (q == 1)
      return NULL;
    ir_expr *r = compare_without_remainder(a, &l, q);
    if (r)
      return r;
    tried = q;
  }
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
  ir_expr *fewer = d && e->kind == E_LT ? drop_remainder(a, d) : NULL;
  if (fewer)
    return fewer;
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

/* The children of an expression (or of a statement) are simplified whole:
 * ir_simplify_expr walks them itself. */
static ir_expr *simplify_whole(ir_mutator *m, ir_expr *e) {
  return ir_simplify_expr(m->a, e);
}

/* e with each child simplified; e itself when none changed. */
static ir_expr *simplify_children(ts_arena *a, ir_expr *e) {
  ir_mutator m = {.a = a, .expr = simplify_whole};
  return ir_mutate_expr_children(&m, e);
}

/* Simplifies an expression that is not itself a sum or product. */
static ir_expr *simplify_atom(ts_arena *a, ir_expr *e) {
  switch (e->kind) {
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
  if (ir_expr_form(e->kind) != FORM_BINARY) /* leaves and loads */
    return simplify_children(a, e);
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
  if (e->type == TY_FLOAT && e->kind != E_SELECT) /* nothing to fold */
    return simplify_children(a, e);
  return simplify_atom(a, e);
}

/* ---- Statements ------------------------------------------------------------ */

static ir_stmt *empty(ts_arena *a) { return ir_new_seq(a, NULL, 0); }

static bool is_empty(const ir_stmt *s) {
  return s && s->kind == S_SEQ && s->seq.n == 0;
}

/* A sequence whose items were simplified (and changed): nested sequences
 * flattened, one item left standing alone. */
static ir_stmt *flatten(ts_arena *a, ir_stmt *s) {
  int total = 0;
  for (int i = 0; i < s->seq.n; i++)
    total += s->seq.items[i]->kind == S_SEQ ? s->seq.items[i]->seq.n : 1;
  ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)(total + 1));
  if (!items)
    return NULL;
  int n = 0;
  for (int i = 0; i < s->seq.n; i++) {
    ir_stmt *x = s->seq.items[i];
    if (x->kind == S_SEQ)
      for (int j = 0; j < x->seq.n; j++)
        items[n++] = x->seq.items[j];
    else
      items[n++] = x;
  }
  return n == 1 ? items[0] : ir_new_seq(a, items, n);
}

/* A compute whose guard is proven false goes; one proven true loses it. */
static ir_stmt *simplify_compute(ir_mutator *m, ir_stmt *s) {
  ir_stmt *c = ir_mutate_stmt_children(m, s);
  if (!c)
    return NULL;
  ir_expr *p = c->compute.pred;
  if (ir_is_false(p))
    return empty(m->a);
  if (!ir_is_true(p))
    return c;
  ir_stmt *d = ir_compute_with_src(m->a, c, 0, c->compute.src[0],
                                   c->compute.origin[0][0],
                                   c->compute.origin[0][1]);
  if (d)
    d->compute.pred = NULL;
  return d;
}

static ir_stmt *simplify_stmt(ir_mutator *m, ir_stmt *s) {
  ts_arena *a = m->a;
  switch (s->kind) {
  case S_FOR: {
    ts_loop *l = s->for_.loop;
    if (l->extent == 1 && !l->size && !ir_kind_is_launch(l->kind))
      return ir_mutate_stmt(m, ir_subst_stmt(a, s->for_.body, l->var,
                                             ir_int(a, 0)));
    ir_stmt *r = ir_mutate_stmt_children(m, s);
    return r && is_empty(r->for_.body) ? r->for_.body : r;
  }
  case S_SEQ: {
    ir_stmt *r = ir_mutate_stmt_children(m, s);
    return r && r != s ? flatten(a, r) : r;
  }
  case S_IF: {
    ir_stmt *r = ir_mutate_stmt_children(m, s);
    if (r && ir_is_true(r->if_.cond))
      return r->if_.then_;
    if (r && ir_is_false(r->if_.cond))
      return r->if_.else_ ? r->if_.else_ : empty(a);
    return r;
  }
  case S_COMPUTE:
    return simplify_compute(m, s);
  default:
    return ir_mutate_stmt_children(m, s);
  }
}

ir_stmt *ir_simplify_stmt(ts_arena *a, ir_stmt *s) {
  ir_mutator m = {.a = a, .expr = simplify_whole, .stmt = simplify_stmt};
  return ir_mutate_stmt(&m, s);
}
