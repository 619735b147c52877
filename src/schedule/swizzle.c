/*
 * Block order: ts_swizzle and ts_persistent.
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
 */
#include "sched.h"

static bool check_block_loop(ts_sched *s, const char *fn, int pos,
                             const char *arg, const ts_loop *l) {
  if (!sched_check_loop(s, fn, pos, arg, l))
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

ts_status ts_swizzle(ts_sched *s, ts_loop *rows, ts_loop *cols,
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

ts_status ts_persistent(ts_sched *s, ts_loop *rows, ts_loop *cols,
                        int blocks_per_sm) {
  CHECK_SCHED(s);
  const char *fn = "ts_persistent";
  /* Check: two loops bound to two block indices and no third (split-K's
   * blockIdx.z), a count of blocks a multiprocessor can hold, and no
   * persistent grid yet. */
  if (!check_block_loops(s, fn, rows, cols))
    return s->status;
  const ts_loop *third = third_block_loop(s, rows, cols);
  if (third)
    return sched_fail(s, TS_ERR_BAD_ARG, third,
                      "%s: loop \"%s\" is bound to %s too; a persistent "
                      "grid loops over the tiles of rows and cols only "
                      "(not with ts_split_k)", fn, third->name,
                      ir_loop_kind_name(third->kind));
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
