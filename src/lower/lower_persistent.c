/*
 * A persistent grid (ts_persistent): the kernel wrapped in a tile loop,
 *
 *   for (wave = 0; blockIdx.x + wave * gridDim.x < tiles; ++wave)
 *     tile = blockIdx.x + wave * gridDim.x
 *     (the kernel as it was, its block loops' values derived from tile)
 *
 * The loop counts the block's own tiles (wave w: every block's w-th), so
 * that a pipeline can count on across them (stages_tma.c).  The block rows
 * and columns are `tile` in ts_swizzle's grouped order where the schedule
 * swizzles (lower_swizzle.c reads the tile from here), else row by row,
 * the loop on the lower blockIdx fastest as in the launch order.  As with
 * the swizzle, the two loops keep their variables and extents, so every
 * bound proved on them stays proved.
 *
 * A warp-specialized TMA pipeline runs on across the tiles: its node (the
 * mbarriers, set up once) and the allocations of its stages move out to
 * wrap the tile loop, and what the tile loop did outside the pipeline
 * (the accumulators' zeroing, the epilogue) becomes the consumers' part,
 * under their role test, since the producer warpgroup now runs the tile
 * loop too.  The grid is then C's tiles on blockIdx.x, which the launch
 * cuts to the device's multiprocessors times the blocks a multiprocessor
 * (ir_kernel_grid).  C's ring of panels, where the TMA stores C's tile,
 * is allocated around the tile loop too, its last stores waited for at
 * the end.
 */
#include "lower.h"

#include "../ir/visit.h"

ir_expr *lower_grid_ref(lower_ctx *cx, ir_var_kind kind) {
  int64_t tiles = cx->wave->var->extent; /* the most, where it is sized */
  ir_var *v = ir_new_var(cx->arena, cx->next_var++,
                         kind == VAR_GRID ? "gridDim.x" : "blockIdx.x", kind,
                         kind == VAR_GRID ? tiles + 1 : tiles);
  if (v)
    v->tag = TS_BLOCK_X;
  return v ? ir_varref(cx->arena, v) : NULL;
}

ir_expr *lower_persistent_tile(lower_ctx *cx) {
  ts_arena *a = cx->arena;
  ir_expr *x = lower_grid_ref(cx, VAR_LAUNCH), *g = lower_grid_ref(cx, VAR_GRID);
  return x && g ? ir_add(a, x, ir_mul(a, ir_varref(a, cx->wave->var), g))
                : NULL;
}

/* ---- The block loops' indices ----------------------------------------------- */

typedef struct {
  const sched_persistent *ps;
  ir_expr *row, *col; /* NULL where the swizzle set them */
  int found;
} indexer;

static ir_stmt *set_index(ir_mutator *m, ir_stmt *s) {
  indexer *ix = m->ctx;
  ir_stmt *n = ir_mutate_stmt_children(m, s);
  if (!n || s->kind != S_FOR ||
      (s->for_.loop != ix->ps->rows && s->for_.loop != ix->ps->cols))
    return n;
  ix->found++;
  if (!ix->row)
    return n; /* the swizzle gave it its index */
  ir_stmt *c = ir_new_for(m->a, n->for_.loop, n->for_.body);
  if (c)
    c->for_.index = s->for_.loop == ix->ps->rows ? ix->row : ix->col;
  return c;
}

/* Row by row: the loop on the lower blockIdx varies fastest. */
static bool row_major(lower_ctx *cx, indexer *ix) {
  ts_arena *a = cx->arena;
  const ts_loop *rows = ix->ps->rows, *cols = ix->ps->cols;
  bool rows_fast = rows->kind < cols->kind;
  /* A cluster pairs neighbours along the fast loop: an even count of
   * them, the one past C's edge its partner's again (lower_cluster.c). */
  ir_expr *fast = cx->cluster ? ir_int(a, cx->pair_extent)
                 : ir_loop_size(a, rows_fast ? rows : cols);
  ir_expr *tile = lower_persistent_tile(cx);
  if (!tile)
    return false;
  ir_expr *slow_i = ir_binary(a, E_DIV, tile, fast);
  ir_expr *fast_i = ir_binary(a, E_MOD, tile, fast);
  if (cx->cluster)
    fast_i = lower_cluster_clamp(cx, fast_i);
  ix->row = rows_fast ? fast_i : slow_i;
  ix->col = rows_fast ? slow_i : fast_i;
  return ix->row && ix->col;
}

/* ---- The pipeline hoisted ------------------------------------------------- */

typedef struct {
  const ir_stmt *pipe;       /* the warp-specialized pipeline */
  ir_buffer *shared[8];      /* the shared allocations around it */
  int nshared;
  const char *error;
} hoist;

static bool find_ws(ir_visitor *v, const ir_stmt *s) {
  const ir_stmt **found = v->ctx;
  if (s->kind == S_PIPELINE && s->pipe.pipe->producer_threads)
    *found = s;
  v->stop = *found != NULL;
  return !v->stop;
}

static const ir_stmt *ws_pipeline(const ir_stmt *s) {
  const ir_stmt *found = NULL;
  ir_visitor v = {.stmt = find_ws, .ctx = &found};
  ir_visit_stmt(&v, s);
  return found;
}

/* s with the pipeline replaced by its body and the shared allocations
 * on the way dropped (recorded in h); the statements beside the way made
 * the consumers'.  NULL with h->error, or out of memory. */
static ir_stmt *unwrap(lower_ctx *cx, hoist *h, ir_stmt *s);

/* The statements of the tile beside its pipeline made the consumers'
 * (with ping-pong consumers, the tile's team's); those after it (the
 * epilogue) only where the tile lies in C: a
 * cluster's block past C's edge stores nothing.  The consumers' test
 * stays a test of its own, which the code generator's role split reads
 * (cuda_tma.c). */
static ir_stmt *unwrap_seq(lower_ctx *cx, hoist *h, ir_stmt *s) {
  ts_arena *a = cx->arena;
  ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)s->seq.n);
  bool past = false;
  for (int i = 0; items && i < s->seq.n; i++) {
    ir_stmt *it = s->seq.items[i];
    bool pipe = ws_pipeline(it) != NULL;
    if (!pipe && past && cx->tile_valid)
      it = ir_new_if(a, cx->tile_valid, it, NULL);
    if (!pipe && cx->turn_test)
      it = ir_new_if(a, cx->turn_test, it, NULL);
    items[i] = pipe ? unwrap(cx, h, it)
                    : ir_new_if(a, cx->consumer_test, it, NULL);
    past = past || pipe;
    if (!items[i])
      return NULL;
  }
  return items ? ir_new_seq(a, items, s->seq.n) : NULL;
}

static ir_stmt *unwrap(lower_ctx *cx, hoist *h, ir_stmt *s) {
  ts_arena *a = cx->arena;
  bool shared = s->kind == S_ALLOC && s->alloc.buf->scope == SCOPE_SHARED;
  if (shared && h->nshared < 8) {
    h->shared[h->nshared++] = s->alloc.buf;
    return unwrap(cx, h, s->alloc.body);
  }
  switch (s->kind) {
  case S_PIPELINE:
    h->pipe = s;
    return s->pipe.body;
  case S_ALLOC: /* a local allocation stays, as a loop does */
  case S_FOR: {
    if (shared)
      break;
    ir_stmt **at = s->kind == S_FOR ? &s->for_.body : &s->alloc.body;
    ir_stmt *body = unwrap(cx, h, *at);
    ir_stmt *c = body ? ts_arena_alloc(a, sizeof(*c)) : NULL;
    if (c) {
      *c = *s;
      *(s->kind == S_FOR ? &c->for_.body : &c->alloc.body) = body;
    }
    return c;
  }
  case S_SEQ:
    return unwrap_seq(cx, h, s);
  default:
    break;
  }
  h->error = ir_stmt_kind_name(s->kind);
  return NULL;
}

/* The pipeline, with its stages' allocations, around the tile loop. */
static ir_stmt *hoist_pipeline(lower_ctx *cx, ir_stmt *root, hoist *h) {
  ts_arena *a = cx->arena;
  ir_stmt *inner = unwrap(cx, h, root);
  if (!inner) {
    if (h->error)
      lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: the warp-specialized "
                 "pipeline of a persistent grid (ts_persistent) runs on "
                 "across its tiles, so it must lie in the tile's loops, "
                 "allocations and statements only; it lies in a%s %s",
                 h->error[0] == 'i' || h->error[0] == 'a' ? "n" : "",
                 h->error);
    return NULL;
  }
  ir_stmt *loop = ir_new_for(a, cx->wave, inner);
  ir_stmt *out = ir_new_pipeline(a, h->pipe->pipe.pipe, loop);
  for (int i = h->nshared - 1; out && i >= 0; i--)
    out = ir_new_alloc(a, h->shared[i], out);
  return out;
}

/* ---- C's ring --------------------------------------------------------------- */

/* A TMA store of C's tile reads its ring of panels after the tile's
 * epilogue, while the next tile's main loop runs: the ring's allocation
 * moves out around the tile loop, and the kernel ends with the issuing
 * thread's wait for the last stores (lower_tma_store.c). */
static ir_stmt *drop_ring(ir_mutator *m, ir_stmt *s) {
  const ir_buffer *ring = m->ctx;
  if (s->kind == S_ALLOC && s->alloc.buf == ring)
    return ir_mutate_stmt(m, s->alloc.body);
  return ir_mutate_stmt_children(m, s);
}

static ir_stmt *around_the_ring(lower_ctx *cx, ir_stmt *kernel) {
  ir_stmt *items[2] = {kernel, cx->drain};
  return ir_new_alloc(cx->arena, cx->ring, ir_new_seq(cx->arena, items, 2));
}

/* ---- The pass ---------------------------------------------------------------- */

static bool check(lower_ctx *cx) {
  const ts_sched *s = cx->s;
  const sched_persistent *ps = &cx->tiles;
  const sched_swizzle *sw = &s->swizzle;
  if (cx->split_k)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: a persistent grid "
                      "(ts_persistent) loops over the tiles of \"%s\" and "
                      "\"%s\"; split-K's blocks (loop \"%s\") are not tiles: "
                      "drop ts_split_k or ts_persistent", ps->rows->name,
                      ps->cols->name, cx->split_k->name);
  if (!ps->rows->live || !ps->cols->live)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_persistent's loop "
                      "\"%s\" was split or fused away; call ts_persistent "
                      "after the loops are final",
                      ps->rows->live ? ps->cols->name : ps->rows->name);
  if (sw->group && (sw->rows != ps->rows || sw->cols != ps->cols))
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_swizzle orders "
                      "loops \"%s\" and \"%s\", ts_persistent loops \"%s\" "
                      "and \"%s\"; give both the same rows and cols",
                      sw->rows->name, sw->cols->name, ps->rows->name,
                      ps->cols->name);
  return true;
}

ir_stmt *lower_persistent(lower_ctx *cx, ir_stmt *root) {
  if (!cx->wave)
    return root;
  if (!check(cx))
    return NULL;
  if (cx->cluster && !cx->multicasts) {
    lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_cluster multicasts \"%s\", "
               "which no TMA pipeline of the kernel fills; attach it in the "
               "k loop beside the other operand's TMA-filled cache",
               cx->s->cluster.stage->name);
    return NULL;
  }
  indexer ix = {.ps = &cx->tiles};
  if (!cx->s->swizzle.group && !row_major(cx, &ix))
    return NULL;
  ir_mutator m = {.a = cx->arena, .stmt = set_index, .ctx = &ix};
  ir_stmt *out = ir_mutate_stmt(&m, root);
  if (out && ix.found != 2) {
    lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_persistent's loops \"%s\" "
               "and \"%s\" are not both in the kernel", ix.ps->rows->name,
               ix.ps->cols->name);
    return NULL;
  }
  if (out && cx->ring) {
    ir_mutator r = {.a = cx->arena, .stmt = drop_ring, .ctx = cx->ring};
    out = ir_mutate_stmt(&r, out);
  }
  hoist h = {0};
  if (out && ws_pipeline(out))
    out = hoist_pipeline(cx, out, &h);
  else if (out)
    out = ir_new_for(cx->arena, cx->wave, out);
  if (out && cx->ring)
    out = around_the_ring(cx, out);
  if (!out && cx->status == TS_OK)
    lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  return out;
}

void lower_persistent_launch(const lower_ctx *cx, ir_kernel *k) {
  if (!cx->wave)
    return;
  k->grid[0] = cx->wave->extent;
  k->grid[1] = k->grid[2] = 1;
  k->grid_size[0] = cx->wave->size; /* C's tiles at the launch's extents */
  k->grid_size[1] = k->grid_size[2] = NULL;
  k->persistent = cx->tiles.blocks_per_sm;
  k->cluster = cx->cluster;
}
