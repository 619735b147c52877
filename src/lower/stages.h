/*
 * What the stages pass's files share (internal to src/lower): stages.c
 * walks to the attach loops and lowers the copy nests and the cp.async
 * pipelines, stages_buffer.c double buffering, stages_tma.c the TMA
 * pipelines; all three build on the walker, an attach point's pieces and
 * the copies of a cache declared here.
 */
#ifndef TS_LOWER_STAGES_H
#define TS_LOWER_STAGES_H

#include "../ir/visit.h"
#include "lower.h"

enum { MAX_ITEMS = 16, MAX_DEPTH = 8 };

/* The walk to the attach loops: its state. */
typedef struct {
  lower_ctx *cx;
  ir_mutator m;              /* the walk: this walker is its ctx */
  const ts_loop *threads[3]; /* the enclosing loops bound to threadIdx.x/y/z */
  bool repeats;              /* an enclosing serial loop runs more than once */
  bool failed;
} walker;

/* Accesses to `from` made accesses to copy `lead` of `to`. */
typedef struct {
  const ir_buffer *from;
  ir_buffer *to;
  ir_expr *lead; /* the copy's index: which of the two */
} retarget;

/* An attach point: its copy nests, lowered and as scheduled, their
 * stages, and the rest of the loop's body. */
typedef struct {
  ir_stmt *copies[MAX_ITEMS];
  ir_stmt *raw[MAX_ITEMS]; /* the copy nests as scheduled (ts_tma reads) */
  const ts_stage *stages[MAX_ITEMS];
  int n;
  ir_stmt *rest; /* the body after the copies, lowered */
} attach;

/* Records the first error of the walk (lower_fail) and marks it failed. */
void stages_fail(walker *w, ts_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The block's linear thread index from the enclosing thread loops;
 * *count gets the block's size. */
ir_expr *stages_thread_id(walker *w, int64_t *count);
/* Every access to r->from in st made an access to copy r->lead of r->to. */
ir_stmt *stages_retarget_stmt(ts_arena *a, ir_stmt *st, const retarget *r);
/* n copies of a shared buffer, the copy index outermost. */
ir_buffer *stages_copies_of(ts_arena *a, const ir_buffer *b, int64_t n);
/* items[0] alone, or a sequence of the n. */
ir_stmt *stages_seq_of(ts_arena *a, ir_stmt *const *items, int n);
/* The register caches at an attach point, their copies and buffers: the
 * count. */
int stages_register_copies(const attach *at, ir_stmt **copies,
                           ir_buffer **bufs);

/* stages_buffer.c: the double-buffered caches at loop f. */
ir_stmt *stages_double_buffer(walker *w, ts_loop *f, attach *at);
/* stages_tma.c: the TMA-filled caches at loop f in `depth` stages, lag
 * wgmma batches in flight; outer_repeats: a serial loop runs it again. */
ir_stmt *stages_tma_pipeline(walker *w, ts_loop *f, attach *at, int depth,
                             int lag, bool outer_repeats);

#endif
