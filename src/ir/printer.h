/*
 * Printing IR as text.  Expressions print through a style, so the IR printer
 * (loop names as the user wrote them, logical indices) and the CUDA code
 * generator (C identifiers, flattened global offsets) share one printer with
 * one table of precedences.
 */
#ifndef TS_PRINTER_H
#define TS_PRINTER_H

#include "ir.h"
#include "strbuf.h"

typedef struct ir_expr_style ir_expr_style;
struct ir_expr_style {
  void (*var)(ts_buf *b, const ir_var *v, const ir_expr_style *st);
  void (*access)(ts_buf *b, const ir_buffer *buf, ir_expr *const *idx,
                 const ir_expr_style *st);
  /* A vector load (lanes > 1) or a vector of lanes (E_VECTOR). */
  void (*vector)(ts_buf *b, const ir_expr *e, const ir_expr_style *st);
  bool cuda; /* C syntax: float suffixes, min()/max() calls */
  void *ctx;
  /* When set and true for a division or modulo, it prints as a call to
   * floordiv() or floormod() rather than with C's truncating operator. */
  bool (*floor_call)(const ir_expr *e, const ir_expr_style *st);
};

extern const ir_expr_style ir_pseudo_style;

void ir_print_expr(ts_buf *b, const ir_expr *e, const ir_expr_style *st);
void ir_print_float(ts_buf *b, float v, bool cuda);
/* A type as the IR text declares it: "float", "f16", "bf16". */
const char *ir_dtype_word(ts_dtype t);

/* Loop-nest pseudo-code, one statement a line, `depth` levels indented.
 * The loop `mark` (may be NULL) gets a "<-- here" marker. */
void ir_print_stmt(ts_buf *b, const ir_stmt *s, int depth,
                   const ts_loop *mark);
/* The same with each vectorized loop's lanes as they run, as lowering
 * expanded them, rather than the loop as scheduled (TESSEL_DUMP). */
void ir_print_stmt_lanes(ts_buf *b, const ir_stmt *s, int depth);

#endif
