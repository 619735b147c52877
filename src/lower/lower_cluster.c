/*
 * Thread-block clusters (ts_cluster): two blocks whose TMA copies the
 * operand tile both read once, into both (multicast).
 *
 * The pairing.  A cluster is blocks 2c and 2c + 1 of the grid's x, and the
 * blocks take C's tiles through a tile loop (the persistent grid's, with
 * one tile a block where the schedule has no ts_persistent), so the two
 * blocks' tiles are tiles 2m and 2m + 1 of the blocks' order.  In
 * ts_swizzle's groups those are neighbouring block rows of a column
 * (sharing B's tile) as long as every group has an even count of rows;
 * in row-by-row order, neighbours along the loop on the lower blockIdx.
 * So that every pair shares its tile, that loop's extent is rounded up to
 * even (`pair_extent`, and the tile count with it): the tile past C's
 * edge takes its partner's index (lower_cluster_clamp), so it loads what
 * its partner loads, and stores nothing (`tile_valid`).  Both blocks of a
 * cluster then run the same number of tiles, as their coupled pipelines
 * need: the grid and the tile count are even.
 *
 * The pipeline (stages_tma.c calls the helpers here).  Each stage's box of
 * the shared operand is issued once, by the block whose rank is the k
 * tile's number modulo 2, multicast into both blocks, each of whose
 * full barriers still expects the stage's whole bytes; each consumer warp
 * releases a stage in both blocks (an empty barrier counts both blocks'
 * warps), since either block's producer may write either block's stage;
 * and a block may leave only once its peer can no longer reach it, so in
 * its last tile the producer waits for each stage's last release, which
 * the peer's consumers' arrivals complete.  The barriers' initialization
 * ends with a cluster barrier (codegen), so that no multicast or arrival
 * reaches a peer's barrier before it exists.
 */
#include "lower.h"

#include "../ir/visit.h"

/* The loop along which a cluster's tiles lie: the rows in ts_swizzle's
 * groups, else the loop on the lower blockIdx, which varies fastest. */
static const ts_loop *pair_loop_of(const ts_sched *s,
                                   const sched_persistent *t) {
  if (s->swizzle.group)
    return t->rows;
  return t->rows->kind < t->cols->kind ? t->rows : t->cols;
}

static bool same_loops(const ts_loop *rows, const ts_loop *cols,
                       const ts_loop *r2, const ts_loop *c2) {
  return rows == r2 && cols == c2;
}

static bool check_cluster(lower_ctx *cx) {
  const ts_sched *s = cx->s;
  const sched_cluster *cl = &s->cluster;
  if (s->persistent.blocks_per_sm &&
      !same_loops(cl->rows, cl->cols, s->persistent.rows,
                  s->persistent.cols))
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_cluster pairs the "
                      "tiles of loops \"%s\" and \"%s\", ts_persistent "
                      "loops over \"%s\" and \"%s\"; give both the same "
                      "rows and cols", cl->rows->name, cl->cols->name,
                      s->persistent.rows->name, s->persistent.cols->name);
  if (s->swizzle.group &&
      !same_loops(cl->rows, cl->cols, s->swizzle.rows, s->swizzle.cols))
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_cluster pairs the "
                      "tiles of loops \"%s\" and \"%s\", ts_swizzle orders "
                      "\"%s\" and \"%s\"; give both the same rows and cols",
                      cl->rows->name, cl->cols->name, s->swizzle.rows->name,
                      s->swizzle.cols->name);
  if (!cl->rows->live || !cl->cols->live)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_cluster's loop "
                      "\"%s\" was split or fused away; call ts_cluster "
                      "after the loops are final",
                      cl->rows->live ? cl->cols->name : cl->rows->name);
  int64_t rows = (cl->rows->extent + cl->blocks - 1) / cl->blocks *
                 cl->blocks;
  if (s->swizzle.group && s->swizzle.group < rows &&
      s->swizzle.group % cl->blocks)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_cluster pairs "
                      "neighbouring block rows of ts_swizzle's groups, "
                      "which have %lld rows; make the group even",
                      (long long)s->swizzle.group);
  return true;
}

bool lower_cluster_plan(lower_ctx *cx) {
  const ts_sched *s = cx->s;
  const sched_cluster *cl = &s->cluster;
  if (s->persistent.blocks_per_sm)
    cx->tiles = s->persistent;
  else if (cl->blocks)
    cx->tiles = (sched_persistent){cl->rows, cl->cols, 0};
  else
    return true;
  if (cl->blocks && !check_cluster(cx))
    return false;
  const ts_loop *rows = cx->tiles.rows, *cols = cx->tiles.cols;
  int64_t tiles = rows->extent * cols->extent;
  if (cl->blocks) {
    cx->cluster = cl->blocks;
    cx->pair_loop = pair_loop_of(s, &cx->tiles);
    int64_t e = cx->pair_loop->extent;
    cx->pair_extent = (e + cl->blocks - 1) / cl->blocks * cl->blocks;
    tiles = tiles / e * cx->pair_extent;
  }
  cx->wave = lower_new_loop(cx, "wave", tiles, TS_SERIAL);
  if (!cx->wave)
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  if (rows->size || cols->size) /* C's tiles follow the launch's extents */
    ir_loop_sized(cx->wave, ir_mul(cx->arena, ir_loop_size(cx->arena, rows),
                                   ir_loop_size(cx->arena, cols)));
  cx->wave->persistent = true;
  return true;
}

ir_expr *lower_cluster_clamp(lower_ctx *cx, ir_expr *padded) {
  int64_t e = cx->pair_loop->extent;
  if (!padded || cx->pair_extent == e)
    return padded;
  ts_arena *a = cx->arena;
  cx->tile_valid = ir_binary(a, E_LT, padded, ir_int(a, e));
  return ir_select(a, cx->tile_valid, padded, ir_int(a, e - 1));
}

ir_expr *lower_cluster_rank(lower_ctx *cx) {
  ts_arena *a = cx->arena;
  ir_expr *x = lower_grid_ref(cx, VAR_LAUNCH);
  return x ? ir_binary(a, E_MOD, x, ir_int(a, cx->cluster)) : NULL;
}

static ir_stmt *multicast_box(ir_mutator *m, ir_stmt *s) {
  if (s->kind != S_TMA)
    return ir_mutate_stmt_children(m, s);
  ir_stmt *c = ts_arena_alloc(m->a, sizeof(*c));
  if (c) {
    *c = *s;
    c->pipe.multicast = true;
  }
  return c;
}

ir_stmt *lower_cluster_multicast(lower_ctx *cx, ir_stmt *issue,
                                 ir_expr *ktile) {
  ts_arena *a = cx->arena;
  ir_mutator m = {.a = a, .stmt = multicast_box};
  ir_stmt *boxes = ir_mutate_stmt(&m, issue);
  ir_expr *turn = ir_binary(a, E_EQ, lower_cluster_rank(cx),
                            ir_binary(a, E_MOD, ktile,
                                      ir_int(a, cx->cluster)));
  return boxes ? ir_new_if(a, turn, boxes, NULL) : NULL;
}

bool lower_cluster_shared(lower_ctx *cx, const struct ts_stage *st,
                          const tma_tile *t) {
  const ts_loop *pair = cx->pair_loop;
  for (int d = 0; d < 2; d++)
    if (ir_expr_uses_var(t->origin[d], pair->var))
      return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_cluster "
                        "multicasts \"%s\", but a cluster's two tiles lie "
                        "along loop \"%s\", whose value moves that cache's "
                        "tile: the pair does not share it.  Multicast the "
                        "other operand's cache%s", st->name, pair->name,
                        cx->s->swizzle.group
                            ? " (ts_swizzle's groups pair block rows, "
                              "which share B's tile)"
                            : ", or swizzle the blocks (ts_swizzle)");
  return true;
}

/* The tile is the block's last: the next one it would take is past C's
 * tiles (the tile loop's own test). */
static ir_expr *last_tile(lower_ctx *cx) {
  ts_arena *a = cx->arena;
  ir_expr *g = lower_grid_ref(cx, VAR_GRID);
  ir_expr *tile = lower_persistent_tile(cx);
  return g && tile ? ir_binary(a, E_LE, ir_int(a, cx->wave->extent),
                               ir_add(a, tile, g))
                   : NULL;
}

/* Each stage's last release is that of one of the pipeline's last S
 * fills, g = base + k for k in n - S .. n - 1: with fewer k tiles a tile
 * than stages, some of an earlier tile's (g >= 0: a stage never filled
 * has nothing to wait for). */
ir_stmt *lower_cluster_last_releases(lower_ctx *cx, const ir_pipeline *p,
                                     ir_expr *base, int64_t n) {
  ts_arena *a = cx->arena;
  int64_t S = p->stages;
  ir_stmt *waits[SCHED_MAX_STAGES];
  int nw = 0;
  for (int64_t k = n - S; k < n; k++) {
    ir_expr *g = ir_add(a, base, ir_int(a, k));
    ir_stmt *w = ir_new_mbarrier(
        a, p, MBAR_WAIT, MBAR_EMPTY, ir_binary(a, E_MOD, g, ir_int(a, S)),
        ir_binary(a, E_MOD, ir_binary(a, E_DIV, g, ir_int(a, S)),
                  ir_int(a, 2)));
    waits[nw++] = k >= 0 ? w : ir_new_if(a, ir_binary(a, E_LE, ir_int(a, -k),
                                                      base), w, NULL);
  }
  ir_expr *last = last_tile(cx);
  return last ? ir_new_if(a, last, ir_new_seq(a, waits, nw), NULL) : NULL;
}
