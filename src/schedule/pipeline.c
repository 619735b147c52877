/*
 * Software pipelining: ts_double_buffer gives a shared cache two copies, so
 * that the global loads of the next tile overlap the computation on the
 * current one (seed 000's prefetching).  The primitive only marks the
 * stage; lowering builds the pipeline (src/lower/stages.c):
 *
 *   copy tile 0 into S[0]; barrier
 *   for ko:
 *     if ko + 1 < n: load tile ko + 1 into registers R
 *     compute on S[ko % 2]
 *     if ko + 1 < n: store R into S[(ko + 1) % 2]
 *     barrier
 */
#include "sched.h"

ts_status ts_double_buffer(ts_sched *s, ts_stage *stage) {
  CHECK_SCHED(s);
  const char *fn = "ts_double_buffer";
  /* Check: a shared cache_read stage, not doubled yet, whose two copies
   * fit. */
  if (!sched_check_read_stage(s, fn, stage))
    return s->status;
  if (stage->buf->scope != SCOPE_SHARED)
    return sched_fail(s, TS_ERR_NOT_SHARED, NULL,
                      "%s: \"%s\" is in registers; double buffering overlaps "
                      "a shared copy's global loads with the computation",
                      fn, stage->name);
  if (stage->double_buffered)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" is already double-buffered", fn, stage->name);
  int64_t bytes = sched_shared_bytes(s) + ir_buffer_bytes(stage->buf);
  if (bytes > SCHED_SHARED_LIMIT)
    return sched_fail(s, TS_ERR_SHARED_LIMIT, NULL,
                      "%s: two copies of \"%s\" bring the shared caches to "
                      "%lld bytes, over the limit of %d", fn, stage->name,
                      (long long)bytes, SCHED_SHARED_LIMIT);
  /* Step 1. Mark it; lowering builds the pipeline. */
  trace_rec rec = {.op = TR_DOUBLE_BUFFER, .stage = stage->id};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    stage->double_buffered = true;
  return status;
}
