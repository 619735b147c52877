/*
 * Block swizzle: the blocks of a grid visit the tiles of C in groups of
 * `group` block rows, column by column inside a group, instead of row by
 * row (Triton's GROUP_M).  Blocks that run at the same time then share the
 * tiles of A of `group` block rows and of B of as many columns, which stay
 * in L2, where a row of blocks would share one tile of A and stream every
 * tile of B.  The primitive only records the two loops and the group;
 * lowering (src/lower/lower_swizzle.c) gives each loop its index as an
 * expression of the launch indices.
 */
#include "sched.h"

static bool check_block_loop(ts_sched *s, int pos, const char *arg,
                             const ts_loop *l) {
  if (!sched_check_loop(s, "ts_swizzle", pos, arg, l))
    return false;
  if (!ir_kind_is_block(l->kind)) {
    sched_fail(s, TS_ERR_BAD_ARG, l,
               "ts_swizzle: argument %d '%s' must be a loop bound to "
               "blockIdx (loop \"%s\" is %s); bind it first", pos, arg,
               l->name, ir_loop_kind_name(l->kind));
    return false;
  }
  return true;
}

ts_status ts_swizzle(ts_sched *s, ts_loop *rows, ts_loop *cols,
                     int64_t group) {
  CHECK_SCHED(s);
  /* Check: two loops bound to two block indices, a group of at least one
   * row, and no swizzle yet. */
  if (!check_block_loop(s, 2, "rows", rows) ||
      !check_block_loop(s, 3, "cols", cols))
    return s->status;
  if (rows == cols)
    return sched_fail(s, TS_ERR_DUPLICATE_LOOP, rows,
                      "ts_swizzle: rows and cols are both loop \"%s\"; give "
                      "the loops of the block rows and the block columns",
                      rows->name);
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
