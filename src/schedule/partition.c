/*
 * Loop partitioning (Halide's partition, TVM's loop_partition): a serial
 * loop whose body has guards that hold on all but its last iterations, as
 * a k loop has when K is not a multiple of the k tile and a double-buffered
 * loop has for its next tile's load, is split at lowering into a steady
 * loop where those guards are proven and dropped and a tail that keeps
 * them.  The steady loop's loads then need no bounds test on k and become
 * vectors where the rows are aligned.  The primitive only marks the loop;
 * lowering (src/lower/lower_partition.c) finds the split point.
 */
#include "sched.h"

ts_status (ts_partition)(ts_sched *s, ts_loop *loop) {
  CHECK_SCHED(s);
  /* Check: a live serial loop (which sched_require_serial also refuses
   * when it is partitioned already). */
  if (!sched_check_loop(s, "ts_partition", 2, "loop", loop) ||
      !sched_require_serial(s, "ts_partition", loop))
    return s->status;
  /* Step 1. Mark it; lowering splits it. */
  trace_rec rec = {.op = TR_PARTITION, .loops = {loop->id}, .nloops = 1};
  ts_status st = sched_commit(s, "ts_partition", s->root, NULL, 0, &rec);
  if (st == TS_OK)
    loop->partitioned = true;
  return st;
}
