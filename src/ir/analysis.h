/*
 * Interval analysis and the simplifier.
 *
 * Every variable in the IR ranges over [0, extent): loops over their extent,
 * launch variables over their grid or block dimension.  Bounds are taken over
 * those ranges; a region is the span of an index over the variables inside
 * an attach point, with the variables outside held fixed.
 */
#ifndef TS_ANALYSIS_H
#define TS_ANALYSIS_H

#include "ir.h"

/* Numeric bounds of an integer expression; false when unbounded (a load). */
bool ir_bounds(const ir_expr *e, int64_t *lo, int64_t *hi);

/* The span of an integer expression as the variables for which inner()
 * returns true range over their extents: index - base lies in [0, extent).
 * base is an expression of the other variables.  False when the expression
 * has a form the analysis does not handle. */
typedef bool (*ir_var_pred)(const ir_var *v, void *ctx);
bool ir_region(ts_arena *a, ir_expr *e, ir_var_pred inner, void *ctx,
               ir_expr **base, int64_t *extent);

/* A number every value of e is a multiple of (0 when e is always 0). */
int64_t ir_divisor(const ir_expr *e);

ir_expr *ir_bool(ts_arena *a, bool v);
bool ir_is_true(const ir_expr *e);
bool ir_is_false(const ir_expr *e);

/* Canonical linear forms, constant folding, floor div/mod of linear terms,
 * conditions proven by interval analysis. */
ir_expr *ir_simplify_expr(ts_arena *a, ir_expr *e);
/* Also drops provably true guards and unreachable branches, and replaces
 * serial loops of extent 1 by their body. */
ir_stmt *ir_simplify_stmt(ts_arena *a, ir_stmt *s);

#endif
