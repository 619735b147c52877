/*
 * The primitives' _at forms, which tessel.h's macros call with the file
 * and line of the call: each notes the location on the schedule for the
 * length of the call, so that the error it may record names it
 * (sched_fail) and the trace record it makes keeps it (sched_commit), and
 * calls the primitive's plain function, which the other files define and
 * which records no location of its own.
 */
#include "sched.h"

/* ts_get_loop returns a loop, not a status. */
ts_loop *ts_get_loop_at(const char *file, int line, ts_sched *s,
                        const char *name) {
  sched_enter(s, file, line);
  ts_loop *loop = (ts_get_loop)(s, name);
  sched_leave(s, TS_OK);
  return loop;
}

/* NAME_at(file, line, PARAMS): the plain NAME(ARGS) with the call's
 * location noted for its length. */
#define UNPARENTHESIZED(...) __VA_ARGS__
#define LOCATED(NAME, PARAMS, ARGS)                                           \
  ts_status NAME##_at(const char *file, int line,                             \
                      UNPARENTHESIZED PARAMS) {                               \
    sched_enter(s, file, line);                                               \
    return sched_leave(s, (NAME)ARGS);                                        \
  }

LOCATED(ts_split, (ts_sched *s, ts_loop *loop, int64_t factor, ts_loop **outer,
                   ts_loop **inner), (s, loop, factor, outer, inner))
LOCATED(ts_fuse, (ts_sched *s, ts_loop *outer, ts_loop *inner,
                  ts_loop **fused), (s, outer, inner, fused))
LOCATED(ts_reorder, (ts_sched *s, int n, ts_loop *const loops[]),
        (s, n, loops))
LOCATED(ts_bind, (ts_sched *s, ts_loop *loop, ts_loop_kind tag),
        (s, loop, tag))
LOCATED(ts_unroll, (ts_sched *s, ts_loop *loop), (s, loop))
LOCATED(ts_partition, (ts_sched *s, ts_loop *loop), (s, loop))
LOCATED(ts_rename, (ts_sched *s, ts_loop *loop, const char *name),
        (s, loop, name))
LOCATED(ts_split_k, (ts_sched *s, ts_loop *k, int64_t parts,
                     ts_split_k_mode mode, ts_loop **outer, ts_loop **inner),
        (s, k, parts, mode, outer, inner))
LOCATED(ts_cache_read, (ts_sched *s, const char *buffer, ts_scope scope,
                        ts_loop *at, ts_stage **stage),
        (s, buffer, scope, at, stage))
LOCATED(ts_cache_write, (ts_sched *s, const char *buffer, ts_scope scope,
                         ts_loop *at, ts_stage **stage),
        (s, buffer, scope, at, stage))
LOCATED(ts_storage_transpose, (ts_sched *s, ts_stage *stage), (s, stage))
LOCATED(ts_storage_pad, (ts_sched *s, ts_stage *stage, int64_t pad),
        (s, stage, pad))
LOCATED(ts_storage_swizzle, (ts_sched *s, ts_stage *stage), (s, stage))
LOCATED(ts_vectorize, (ts_sched *s, ts_loop *loop), (s, loop))
LOCATED(ts_tensorize, (ts_sched *s, ts_loop *i, ts_loop *j, ts_loop *k),
        (s, i, j, k))
LOCATED(ts_double_buffer, (ts_sched *s, ts_stage *stage), (s, stage))
LOCATED(ts_double_buffer_tiles, (ts_sched *s, ts_stage *stage, int tiles),
        (s, stage, tiles))
LOCATED(ts_pipeline, (ts_sched *s, ts_stage *stage, int stages),
        (s, stage, stages))
LOCATED(ts_tma, (ts_sched *s, ts_stage *stage), (s, stage))
LOCATED(ts_warp_specialize, (ts_sched *s, ts_stage *stage, int producer_warps),
        (s, stage, producer_warps))
LOCATED(ts_pingpong, (ts_sched *s, ts_stage *stage), (s, stage))
LOCATED(ts_wgmma_in_flight, (ts_sched *s, ts_loop *loop, int batches),
        (s, loop, batches))
LOCATED(ts_pack, (ts_sched *s, const char *buffer), (s, buffer))
LOCATED(ts_min_blocks_per_sm, (ts_sched *s, int blocks), (s, blocks))
LOCATED(ts_swizzle, (ts_sched *s, ts_loop *rows, ts_loop *cols, int64_t group),
        (s, rows, cols, group))
LOCATED(ts_persistent, (ts_sched *s, ts_loop *rows, ts_loop *cols,
                        int blocks_per_sm), (s, rows, cols, blocks_per_sm))
LOCATED(ts_cluster, (ts_sched *s, ts_loop *rows, ts_loop *cols,
                     ts_stage *stage, int blocks),
        (s, rows, cols, stage, blocks))
