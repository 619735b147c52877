/*
 * Software pipelining.  ts_double_buffer gives a shared cache two copies, so
 * that the global loads of the next tile overlap the computation on the
 * current one (seed 000's prefetching); ts_double_buffer_tiles puts several
 * k tiles in each copy, so that the block meets at one barrier per copy
 * rather than per tile; ts_pipeline gives it 2..8 copies
 * filled by cp.async, global memory straight into shared memory with no
 * registers between (sm_80's asynchronous copies).  The primitives only
 * mark the stage; lowering builds the pipelines (src/lower/stages_buffer.c,
 * stages.c):
 *
 *   double buffering                      ts_pipeline(S stages)
 *
 *   copy tile 0 into S[0]; barrier        for s in 0..S-2: issue tile s; commit
 *   for ko:                               for ko:
 *     if ko + 1 < n: load tile ko + 1       wait S-2; barrier
 *                    into registers R       if ko + S-1 < n: issue tile ko+S-1
 *     compute on S[ko % 2]                    into S[(ko + S-1) % S]
 *     if ko + 1 < n: store R into           commit
 *                    S[(ko + 1) % 2]        compute on S[ko % S]
 *     barrier
 *
 * ts_wgmma_in_flight(loop, n) lets the wgmma batch of iteration ko run on
 * through n more iterations; the pipeline then issues tile ko + S-1-n into
 * S[(ko + S-1-n) % S], the copy whose batch the barrier proved finished.
 */
#include "sched.h"

/* Check: a shared cache_read stage whose copies, `copies` in all, fit. */
static bool check_shared_copies(ts_sched *s, const char *fn, ts_stage *stage,
                                int copies, const char *what) {
  if (!sched_check_read_stage(s, fn, stage))
    return false;
  if (stage->buf->scope != SCOPE_SHARED) {
    sched_fail(s, TS_ERR_NOT_SHARED, NULL,
               "%s: \"%s\" is in registers; %s overlaps a shared copy's "
               "global loads with the computation", fn, stage->name, what);
    return false;
  }
  int64_t bytes = sched_shared_bytes(s) +
                  ir_buffer_bytes(stage->buf) *
                      (copies - sched_stage_copies(stage));
  if (bytes > SCHED_SHARED_LIMIT) {
    sched_fail(s, TS_ERR_SHARED_LIMIT, NULL,
               "%s: %d copies of \"%s\" bring the shared caches to %lld "
               "bytes, over the limit of %d", fn, copies, stage->name,
               (long long)bytes, SCHED_SHARED_LIMIT);
    return false;
  }
  return true;
}

enum { MAX_BUFFER_TILES = 8 };

static ts_status double_buffer(ts_sched *s, ts_stage *stage, int tiles,
                               const char *fn) {
  /* Check: a shared cache_read stage, 1..8 tiles a copy, not doubled or
   * pipelined yet, whose two copies of `tiles` tiles fit. */
  if (!sched_check_read_stage(s, fn, stage))
    return s->status;
  if (tiles < 1 || tiles > MAX_BUFFER_TILES)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: argument 3 'tiles' must be in 1..%d (got %d)", fn,
                      MAX_BUFFER_TILES, tiles);
  if (stage->double_buffered)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" is already double-buffered", fn, stage->name);
  if (stage->pipeline)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" is already pipelined (ts_pipeline, %d "
                      "stages), which overlaps its loads already; use one "
                      "or the other", fn, stage->name, stage->pipeline);
  if (!check_shared_copies(s, fn, stage, 2 * tiles, "double buffering"))
    return s->status;
  /* Step 1. Mark it; lowering builds the pipeline. */
  trace_rec rec = {.op = TR_DOUBLE_BUFFER, .stage = stage->id,
                   .factor = tiles};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK) {
    stage->double_buffered = true;
    stage->buffer_tiles = tiles;
  }
  return status;
}

ts_status (ts_double_buffer)(ts_sched *s, ts_stage *stage) {
  CHECK_SCHED(s);
  return double_buffer(s, stage, 1, "ts_double_buffer");
}

ts_status (ts_double_buffer_tiles)(ts_sched *s, ts_stage *stage, int tiles) {
  CHECK_SCHED(s);
  return double_buffer(s, stage, tiles, "ts_double_buffer_tiles");
}

ts_status (ts_pipeline)(ts_sched *s, ts_stage *stage, int stages) {
  CHECK_SCHED(s);
  const char *fn = "ts_pipeline";
  /* Check: a shared cache_read stage, neither double-buffered nor
   * pipelined yet, 2..8 stages that fit in shared memory. */
  if (!sched_check_read_stage(s, fn, stage))
    return s->status;
  if (stages < 2 || stages > 8)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: argument 3 'stages' must be in 2..8 (got %d): "
                      "tiles in flight plus the one in use", fn, stages);
  if (stage->pipeline)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" is already pipelined with %d stages", fn,
                      stage->name, stage->pipeline);
  if (stage->double_buffered)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" is double-buffered (through registers); "
                      "ts_pipeline replaces that with cp.async, so call it "
                      "instead of double buffering the stage", fn,
                      stage->name);
  if (!check_shared_copies(s, fn, stage, stages, "pipelining"))
    return s->status;
  /* Step 1. Mark it; lowering builds the pipeline. */
  trace_rec rec = {.op = TR_PIPELINE, .stage = stage->id, .factor = stages};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    stage->pipeline = stages;
  return status;
}

/* ts_tma of C's shared stage: its store, not a pipeline's fills. */
static ts_status tma_store(ts_sched *s, ts_stage *stage) {
  if (stage->tma)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL, "ts_tma: \"%s\" is "
                      "already stored by the TMA", stage->name);
  trace_rec rec = {.op = TR_TMA, .stage = stage->id};
  ts_status status = sched_commit(s, "ts_tma", s->root, NULL, 0, &rec);
  if (status == TS_OK)
    stage->tma = true;
  return status;
}

ts_status (ts_tma)(ts_sched *s, ts_stage *stage) {
  CHECK_SCHED(s);
  const char *fn = "ts_tma";
  if (sched_check_stage(s, fn, 2, stage) && stage->write && stage->shared)
    return tma_store(s, stage);
  /* Check: a pipelined shared cache_read stage, swizzled in 128-byte rows
   * (the TMA's 128-byte swizzle is that layout), not marked yet.  The
   * operand's alignment and the box are lowering's checks: they depend on
   * the copies' final shape. */
  if (!sched_check_read_stage(s, fn, stage))
    return s->status;
  if (!stage->pipeline)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: \"%s\" is not pipelined; the TMA fills the "
                      "stages of a pipeline: call ts_pipeline first", fn,
                      stage->name);
  if (stage->buf->swizzle != 8 || stage->buf->pad)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: \"%s\" is not swizzled in 128-byte rows; the "
                      "TMA writes its 128-byte swizzle: call "
                      "ts_storage_swizzle first", fn, stage->name);
  if (stage->tma)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" is already filled by the TMA", fn,
                      stage->name);
  /* Step 1. Mark it; lowering builds the mbarrier pipeline. */
  trace_rec rec = {.op = TR_TMA, .stage = stage->id};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    stage->tma = true;
  return status;
}

ts_status (ts_warp_specialize)(ts_sched *s, ts_stage *stage,
                                int producer_warps) {
  CHECK_SCHED(s);
  const char *fn = "ts_warp_specialize";
  /* Check: a TMA-filled stage not specialized yet, and a producer of one
   * warpgroup (setmaxnreg works on whole warpgroups). */
  if (!sched_check_read_stage(s, fn, stage))
    return s->status;
  if (producer_warps != 4)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: argument 3 'producer_warps' must be 4 (got %d): "
                      "setmaxnreg moves registers between whole warpgroups",
                      fn, producer_warps);
  if (!stage->tma)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: \"%s\" is not filled by the TMA; the producer "
                      "warps issue the TMA's copies: call ts_tma first", fn,
                      stage->name);
  if (stage->producer_warps)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" already has %d producer warps", fn,
                      stage->name, stage->producer_warps);
  /* Step 1. Mark it; lowering adds the producer to the block. */
  trace_rec rec = {.op = TR_WARP_SPECIALIZE, .stage = stage->id,
                   .factor = producer_warps};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    stage->producer_warps = producer_warps;
  return status;
}

ts_status (ts_pingpong)(ts_sched *s, ts_stage *stage) {
  CHECK_SCHED(s);
  const char *fn = "ts_pingpong";
  /* Check: a cache of a producer warpgroup's pipeline, not marked yet.
   * Whether the grid loops over tiles and the block is one warpgroup is
   * lowering's check: ts_persistent and the loops may come after. */
  if (!sched_check_read_stage(s, fn, stage))
    return s->status;
  if (!stage->tma || !stage->producer_warps)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: \"%s\" is not filled by a producer warpgroup; "
                      "ping-pong consumers take turns on its pipeline: call "
                      "ts_tma and ts_warp_specialize on it first", fn,
                      stage->name);
  if (stage->pingpong)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "%s: \"%s\" already has ping-pong consumers", fn,
                      stage->name);
  /* Step 1. Mark it; lowering doubles the consumers. */
  trace_rec rec = {.op = TR_PINGPONG, .stage = stage->id};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    stage->pingpong = true;
  return status;
}

ts_status (ts_wgmma_in_flight)(ts_sched *s, ts_loop *loop, int batches) {
  CHECK_SCHED(s);
  const char *fn = "ts_wgmma_in_flight";
  /* Check: a live serial loop over k, and a count a pipeline of 8 stages
   * can keep (the tile in use, one in flight, the batches').  Whether its
   * body has wgmma and pipelined caches is lowering's check: tensorize and
   * the caches may come after. */
  if (!sched_check_loop(s, fn, 2, "loop", loop) ||
      !sched_require_serial(s, fn, loop))
    return s->status;
  if (!loop->reduce)
    return sched_fail(s, TS_ERR_BAD_ARG, loop, "%s: loop \"%s\" is a "
                      "spatial loop; wgmma batches run on across the "
                      "iterations of a k loop", fn, loop->name);
  if (batches < 0 || batches > 6)
    return sched_fail(s, TS_ERR_BAD_ARG, loop, "%s: argument 3 'batches' "
                      "must be in 0..6 (got %d): a pipeline of at most 8 "
                      "stages holds the tile in use, one in flight and the "
                      "batches'", fn, batches);
  /* Step 1. Mark the loop; lowering delays the copies and the waits. */
  trace_rec rec = {.op = TR_WGMMA_IN_FLIGHT, .loops = {loop->id},
                   .nloops = 1, .factor = batches};
  ts_status st = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (st == TS_OK)
    loop->wgmma_in_flight = batches;
  return st;
}
