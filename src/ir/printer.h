/*
 * Printing IR as text.  Expressions and statements print through styles, so
 * the IR printer (loop names as the user wrote them, logical indices,
 * indentation for blocks) and the CUDA code generator (C identifiers,
 * flattened global offsets, braces) share one printer: one table of
 * precedences, one walk of the statements.
 */
#ifndef TS_PRINTER_H
#define TS_PRINTER_H

#include "ir.h"
#include "../base/strbuf.h"

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

/* How statements print.  One walk (ir_print_stmt_with) writes what every
 * style shares: sequences, if/else, the nesting of bodies and their
 * indentation; a style's hooks write the lines that differ, each indented
 * to `depth` by the hook and ended with a newline. */
typedef struct ir_stmt_style ir_stmt_style;
struct ir_stmt_style {
  const ir_expr_style *expr; /* conditions */
  /* An if's opening (around its condition) and the line between its
   * branches. */
  const char *if_open, *if_then, *else_line;
  const char *close;   /* the line ending a deeper body; NULL: none */
  const char *barrier; /* a barrier's line */
  /* A barrier of the block's first threads (S_BARRIER's threads). */
  void (*named_barrier)(ts_buf *b, const ir_stmt *s, int depth,
                        const ir_stmt_style *st);
  const char *commit;  /* an asynchronous copy group's closing line */
  /* A wait for asynchronous copies (S_ASYNC_WAIT). */
  void (*wait)(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st);
  /* A loop's opening, with a swizzled launch loop's index expression (else
   * NULL); returns the depth of its body. */
  int (*loop)(ts_buf *b, const ts_loop *l, const ir_expr *index, int depth,
              const ir_stmt_style *st);
  /* A vectorized loop's expanded lanes (S_LANES): their opening and their
   * depth.  NULL: the loop and its body as scheduled print instead. */
  int (*lanes)(ts_buf *b, const ir_stmt *s, int depth,
               const ir_stmt_style *st);
  /* An allocation's declaration; its body follows at the same depth. */
  void (*alloc)(ts_buf *b, const ir_stmt *s, int depth,
                const ir_stmt_style *st);
  void (*store)(ts_buf *b, const ir_stmt *s, int depth,
                const ir_stmt_style *st);
  void (*compute)(ts_buf *b, const ir_stmt *s, int depth,
                  const ir_stmt_style *st);
  /* A warp's tensor-core instruction (S_MMA). */
  void (*mma)(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st);
  /* Each loop and buffer followed by the primitive that made it. */
  bool provenance;
  /* A warp's fragment load (S_LDMATRIX). */
  void (*ldmatrix)(ts_buf *b, const ir_stmt *s, int depth,
                   const ir_stmt_style *st);
  /* A warp's store of 8 x 8 matrices (S_STMATRIX). */
  void (*stmatrix)(ts_buf *b, const ir_stmt *s, int depth,
                   const ir_stmt_style *st);
  /* A warpgroup's instruction (S_WGMMA) and its fences (S_WGMMA_SYNC). */
  void (*wgmma)(ts_buf *b, const ir_stmt *s, int depth,
                const ir_stmt_style *st);
  void (*wgmma_sync)(ts_buf *b, const ir_stmt *s, int depth,
                     const ir_stmt_style *st);
  /* A TMA pipeline's opening (S_PIPELINE: its body follows at the same
   * depth), a copy (S_TMA) or a barrier operation (S_MBARRIER); a store
   * of the TMA (S_TMA_STORE) or its wait (S_TMA_STORE_WAIT). */
  void (*pipe)(ts_buf *b, const ir_stmt *s, int depth,
               const ir_stmt_style *st);
  /* pipe prints a warp-specialized pipeline's body itself, by roles. */
  bool pipe_prints_roles;
  void *ctx;
};

void ir_print_stmt_with(ts_buf *b, const ir_stmt *s, int depth,
                        const ir_stmt_style *st);

/* Loop-nest pseudo-code, one statement a line, `depth` levels indented.
 * The loop `mark` (may be NULL) gets a "<-- here" marker. */
void ir_print_stmt(ts_buf *b, const ir_stmt *s, int depth,
                   const ts_loop *mark);
/* The same with each vectorized loop's lanes as they run, as lowering
 * expanded them, rather than the loop as scheduled (TESSEL_DUMP). */
void ir_print_stmt_lanes(ts_buf *b, const ir_stmt *s, int depth);
/* ir_print_stmt with each loop and buffer's maker: "  # ts_split, step
 * 3", "# lowering" for what lowering made. */
void ir_print_stmt_provenance(ts_buf *b, const ir_stmt *s, int depth);

#endif
