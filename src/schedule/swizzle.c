/*
 * The grid's blocks: their order (ts_swizzle), a persistent grid
 * (ts_persistent) and clusters (ts_cluster).
 *
 * Block swizzle: the blocks of a grid visit the tiles of C in groups of
 * `group` block rows, column by column inside a group, instead of row by
 * row (Triton's GROUP_M).  Blocks that run at the same time then share the
 * tiles of A of `group` block rows and of B of as many columns, which stay
 * in L2, where a row of blocks would share one tile of A and stream every
 * tile of B.  The primitive only records the two loops and the group;
 * lowering (src/lower/lower_swizzle.c) gives each loop its index as an
 * expression of the launch indices.
 *
 * A persistent grid: a block a multiprocessor (or a few), each looping
 * over C's tiles, so that one block's next tile starts while it finishes
 * the last one, and the grid's launch and tail cost once, not once a
 * wave.  The primitive records the loops and the blocks a multiprocessor;
 * lowering (src/lower/lower_persistent.c) wraps the kernel in the tile
 * loop and derives the two loops' values from the tile.
 *
 * Clusters: two blocks that run at once on neighbouring multiprocessors,
 * whose TMA copies the tile both read once, into both (multicast), so
 * that L2 serves the shared operand once for the pair.  The primitive
 * records the loops, the cache multicast and the cluster's blocks;
 * lowering pairs consecutive tiles of the blocks' order (so the blocks
 * loop over tiles as a persistent grid's do) and builds the multicast
 * pipeline (src/lower/stages_tma.c).
 */
#include <string.h>

#include "sched.h"

static bool check_block_loop(ts_sched *s, const char *fn, int pos,
                             const char *arg, const ts_loop *l) {
  /* A swizzle's map and a persistent grid's tiles take the grid as it
   * comes; a cluster's pairs are laid out for a grid compiled in. */
  if (!sched_check_loop(s, fn, pos, arg, l) ||
      (strcmp(fn, "ts_cluster") == 0 && !sched_require_static(s, fn, l)))
    return false;
  if (!ir_kind_is_block(l->kind)) {
    sched_fail(s, TS_ERR_BAD_ARG, l,
               "%s: argument %d '%s' must be a loop bound to blockIdx (loop "
               "\"%s\" is %s); bind it first", fn, pos, arg, l->name,
               ir_loop_kind_name(l->kind));
    return false;
  }
  return true;
}

/* Check: two distinct loops bound to block indices. */
static bool check_block_loops(ts_sched *s, const char *fn, ts_loop *rows,
                              ts_loop *cols) {
  if (!check_block_loop(s, fn, 2, "rows", rows) ||
      !check_block_loop(s, fn, 3, "cols", cols))
    return false;
  if (rows == cols) {
    sched_fail(s, TS_ERR_DUPLICATE_LOOP, rows,
               "%s: rows and cols are both loop \"%s\"; give the loops of "
               "the block rows and the block columns", fn, rows->name);
    return false;
  }
  return true;
}

ts_status (ts_swizzle)(ts_sched *s, ts_loop *rows, ts_loop *cols,
                       int64_t group) {
  CHECK_SCHED(s);
  /* Check: two loops bound to two block indices, a group of at least one
   * row, and no swizzle yet. */
  if (!check_block_loops(s, "ts_swizzle", rows, cols))
    return s->status;
  if (group < 1)
    return sched_fail(s, TS_ERR_BAD_FACTOR, rows,
                      "ts_swizzle: argument 4 'group' must be >= 1 (got "
                      "%lld): block rows per group", (long long)group);
  if (s->swizzle.group)
    return sched_fail(s, TS_ERR_ALREADY_BOUND, rows,
                      "ts_swizzle: the blocks are already swizzled (loops "
                      "\"%s\" and \"%s\", groups of %lld)",
                      s->swizzle.rows->name, s->swizzle.cols->name,
                      (long long)s->swizzle.group);
  /* Step 1. Record it; lowering computes the indices. */
  trace_rec rec = {.op = TR_SWIZZLE, .loops = {rows->id, cols->id},
                   .nloops = 2, .factor = group};
  ts_status status = sched_commit(s, "ts_swizzle", s->root, NULL, 0, &rec);
  if (status == TS_OK)
    s->swizzle = (sched_swizzle){rows, cols, group};
  return status;
}

/* The block loop other than rows and cols, or NULL. */
static const ts_loop *third_block_loop(const ts_sched *s, const ts_loop *rows,
                                       const ts_loop *cols) {
  for (int i = 0; i < s->nloops; i++) {
    const ts_loop *l = s->loops[i];
    if (l->live && ir_kind_is_block(l->kind) && l != rows && l != cols)
      return l;
  }
  return NULL;
}

/* Check: no block loop but rows and cols (split-K's blockIdx.z): the
 * grid is C's tiles, which `what` ("a persistent grid loops over"). */
static bool check_only_tiles(ts_sched *s, const char *fn, const ts_loop *rows,
                             const ts_loop *cols, const char *what) {
  const ts_loop *third = third_block_loop(s, rows, cols);
  if (third)
    sched_fail(s, TS_ERR_BAD_ARG, third,
               "%s: loop \"%s\" is bound to %s too; %s the tiles of rows "
               "and cols only (not with ts_split_k)", fn, third->name,
               ir_loop_kind_name(third->kind), what);
  return !third;
}

ts_status (ts_persistent)(ts_sched *s, ts_loop *rows, ts_loop *cols,
                          int blocks_per_sm) {
  CHECK_SCHED(s);
  const char *fn = "ts_persistent";
  /* Check: two loops bound to two block indices and no third (split-K's
   * blockIdx.z), a count of blocks a multiprocessor can hold, and no
   * persistent grid yet. */
  if (!check_block_loops(s, fn, rows, cols) ||
      !check_only_tiles(s, fn, rows, cols, "a persistent grid loops over"))
    return s->status;
  if (blocks_per_sm < 1 || blocks_per_sm > SCHED_MAX_BLOCKS_PER_SM)
    return sched_fail(s, TS_ERR_BAD_ARG, rows,
                      "%s: argument 4 'blocks_per_sm' must be in 1..%d (got "
                      "%d): the grid's blocks a multiprocessor", fn,
                      SCHED_MAX_BLOCKS_PER_SM, blocks_per_sm);
  if (s->persistent.blocks_per_sm)
    return sched_fail(s, TS_ERR_ALREADY_BOUND, rows,
                      "%s: the grid is already persistent (loops \"%s\" and "
                      "\"%s\", %d blocks a multiprocessor)", fn,
                      s->persistent.rows->name, s->persistent.cols->name,
                      s->persistent.blocks_per_sm);
  /* Step 1. Record it; lowering makes the tile loop. */
  trace_rec rec = {.op = TR_PERSISTENT, .loops = {rows->id, cols->id},
                   .nloops = 2, .factor = blocks_per_sm};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    s->persistent = (sched_persistent){rows, cols, blocks_per_sm};
  return status;
}

/* Check: a TMA-filled cache of a producer warpgroup's (the cluster's
 * releases and multicasts are the mbarrier pipeline's). */
static bool check_multicast_stage(ts_sched *s, const char *fn,
                                  const ts_stage *st) {
  if (!sched_check_read_stage(s, fn, (ts_stage *)st))
    return false;
  if (!st->tma || !st->producer_warps) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "%s: \"%s\" is not filled by the TMA with a producer "
               "warpgroup; a cluster multicasts the TMA's boxes: call "
               "ts_tma and ts_warp_specialize on it first", fn, st->name);
    return false;
  }
  return true;
}

ts_status (ts_cluster)(ts_sched *s, ts_loop *rows, ts_loop *cols,
                       ts_stage *stage, int blocks) {
  CHECK_SCHED(s);
  const char *fn = "ts_cluster";
  /* Check: two loops bound to two block indices and no third, a stage
   * the TMA fills beside a producer warpgroup, clusters of 2, none yet. */
  if (!check_block_loops(s, fn, rows, cols) ||
      !check_only_tiles(s, fn, rows, cols, "a cluster pairs") ||
      !check_multicast_stage(s, fn, stage))
    return s->status;
  if (blocks != 2)
    return sched_fail(s, TS_ERR_BAD_ARG, rows,
                      "%s: argument 5 'blocks' must be 2 (got %d): two "
                      "blocks share each multicast box", fn, blocks);
  if (s->cluster.blocks)
    return sched_fail(s, TS_ERR_ALREADY_BOUND, rows,
                      "%s: the grid already has clusters of %d blocks, "
                      "multicasting \"%s\"", fn, s->cluster.blocks,
                      s->cluster.stage->name);
  /* Step 1. Record it; lowering pairs the tiles and multicasts. */
  trace_rec rec = {.op = TR_CLUSTER, .loops = {rows->id, cols->id},
                   .nloops = 2, .stage = stage->id, .factor = blocks};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK) {
    s->cluster = (sched_cluster){rows, cols, stage, blocks};
    stage->multicast = true;
  }
  return status;
}
