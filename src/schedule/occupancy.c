/*
 * min_blocks_per_sm: how many of the kernel's blocks one multiprocessor
 * should hold at once.  The code generator passes it to CUDA as
 * __launch_bounds__(threads, n), and ptxas keeps each thread's registers
 * within 65536 / (n * threads) so that n blocks fit, spilling if it must.
 * A kernel one register over a boundary (129 registers at 256 threads)
 * otherwise runs with half its warps.
 */
#include "sched.h"

ts_status (ts_min_blocks_per_sm)(ts_sched *s, int blocks) {
  CHECK_SCHED(s);
  const char *fn = "ts_min_blocks_per_sm";
  /* Check: a count a multiprocessor can hold (32 blocks on sm_80..sm_90);
   * the threads it makes are checked at lowering, when the block is known. */
  if (blocks < 1 || blocks > SCHED_MAX_BLOCKS_PER_SM)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: argument 2 'blocks' must be in 1..%d (got %d)", fn,
                      SCHED_MAX_BLOCKS_PER_SM, blocks);
  /* Step 1. Record it; the last call holds. */
  trace_rec rec = {.op = TR_MIN_BLOCKS, .factor = blocks};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    s->min_blocks = blocks;
  return status;
}
