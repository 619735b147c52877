/*
 * The one generic traversal of the IR.  Each kind's form (the third column
 * of the kind lists in ir.h) says where its children are, so the walks here
 * have one case per form, none per kind: a new kind of an existing form
 * needs nothing here, and a pass written on them needs no case for it.
 *
 * A visitor reads a tree: a hook before each node, which may skip the
 * node's children or end the walk, and one after them.  A mutator rewrites
 * a tree as Halide's IRMutator does: by default a node has its children
 * rewritten and is copied around them only when one of them changed, so a
 * rewrite returns the very node it was given when nothing below it changed
 * and shares every subtree it did not touch.  A pass hooks the kinds it
 * cares about and calls the default for the rest.
 */
#ifndef TS_VISIT_H
#define TS_VISIT_H

#include "ir.h"

ir_form ir_expr_form(ir_expr_kind k);
ir_form ir_stmt_form(ir_stmt_kind k);

/* ---- Visitor ------------------------------------------------------------- */

typedef struct ir_visitor ir_visitor;
struct ir_visitor {
  /* Before a node's children; false skips them and the node's post hook.
   * NULL: go on into the children. */
  bool (*expr)(ir_visitor *v, const ir_expr *e);
  bool (*stmt)(ir_visitor *v, const ir_stmt *s);
  /* After a node's children. */
  void (*expr_post)(ir_visitor *v, const ir_expr *e);
  void (*stmt_post)(ir_visitor *v, const ir_stmt *s);
  void *ctx; /* the hooks' state */
  bool stop; /* a hook sets it to end the walk: no hook runs again */
};

/* Every node below and including the given one (NULL: none), children in
 * their form's order.  With neither expression hook set, a walk does not
 * enter expressions. */
void ir_visit_expr(ir_visitor *v, const ir_expr *e);
void ir_visit_stmt(ir_visitor *v, const ir_stmt *s);

/* ---- Mutator ------------------------------------------------------------- */

typedef struct ir_mutator ir_mutator;
struct ir_mutator {
  ts_arena *a; /* where new nodes come from */
  /* A node's rewrite in place of the default (ir_mutate_*_children), which
   * the hook may call, before or after looking at the node.  NULL: the
   * default; with no expression hook, expressions are returned as they
   * are.  A hook returns NULL only when the arena is out of memory. */
  ir_expr *(*expr)(ir_mutator *m, ir_expr *e);
  ir_stmt *(*stmt)(ir_mutator *m, ir_stmt *s);
  void *ctx; /* the hooks' state */
};

/* The node as the hook, or else the default, rewrites it; NULL for NULL,
 * and when out of memory (the arena is then marked failed). */
ir_expr *ir_mutate_expr(ir_mutator *m, ir_expr *e);
ir_stmt *ir_mutate_stmt(ir_mutator *m, ir_stmt *s);

/* The default: each child passed through ir_mutate_*; then the node itself
 * when no child changed, else a copy of it (every other field kept) with
 * the new children.  NULL children stay NULL; NULL when out of memory. */
ir_expr *ir_mutate_expr_children(ir_mutator *m, ir_expr *e);
ir_stmt *ir_mutate_stmt_children(ir_mutator *m, ir_stmt *s);

#endif
