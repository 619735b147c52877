/*
 * The primitives' _at forms, which tessel.h's macros call with the file
 * and line of the call: each notes the location on the schedule for the
 * length of the call, so that the error it may record names it
 * (sched_fail) and the trace record it makes keeps it (sched_commit), and
 * calls the primitive's plain function, which the other files define and
 * which records no location of its own.
 */
#include "sched.h"

ts_loop *ts_get_loop_at(const char *file, int line, ts_sched *s,
                        const char *name) {
  sched_enter(s, file, line);
  ts_loop *loop = (ts_get_loop)(s, name);
  sched_leave(s, TS_OK);
  return loop;
}

ts_status ts_split_at(const char *file, int line, ts_sched *s, ts_loop *loop,
                      int64_t factor, ts_loop **outer, ts_loop **inner) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_split)(s, loop, factor, outer, inner));
}

ts_status ts_fuse_at(const char *file, int line, ts_sched *s, ts_loop *outer,
                     ts_loop *inner, ts_loop **fused) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_fuse)(s, outer, inner, fused));
}

ts_status ts_reorder_at(const char *file, int line, ts_sched *s, int n,
                        ts_loop *const loops[]) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_reorder)(s, n, loops));
}

ts_status ts_bind_at(const char *file, int line, ts_sched *s, ts_loop *loop,
                     ts_loop_kind tag) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_bind)(s, loop, tag));
}

ts_status ts_unroll_at(const char *file, int line, ts_sched *s,
                       ts_loop *loop) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_unroll)(s, loop));
}

ts_status ts_partition_at(const char *file, int line, ts_sched *s,
                          ts_loop *loop) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_partition)(s, loop));
}

ts_status ts_rename_at(const char *file, int line, ts_sched *s, ts_loop *loop,
                       const char *name) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_rename)(s, loop, name));
}

ts_status ts_split_k_at(const char *file, int line, ts_sched *s, ts_loop *k,
                        int64_t parts, ts_split_k_mode mode, ts_loop **outer,
                        ts_loop **inner) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_split_k)(s, k, parts, mode, outer, inner));
}

ts_status ts_cache_read_at(const char *file, int line, ts_sched *s,
                           const char *buffer, ts_scope scope, ts_loop *at,
                           ts_stage **stage) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_cache_read)(s, buffer, scope, at, stage));
}

ts_status ts_cache_write_at(const char *file, int line, ts_sched *s,
                            const char *buffer, ts_scope scope, ts_loop *at,
                            ts_stage **stage) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_cache_write)(s, buffer, scope, at, stage));
}

ts_status ts_storage_transpose_at(const char *file, int line, ts_sched *s,
                                  ts_stage *stage) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_storage_transpose)(s, stage));
}

ts_status ts_storage_pad_at(const char *file, int line, ts_sched *s,
                            ts_stage *stage, int64_t pad) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_storage_pad)(s, stage, pad));
}

ts_status ts_storage_swizzle_at(const char *file, int line, ts_sched *s,
                                ts_stage *stage) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_storage_swizzle)(s, stage));
}

ts_status ts_vectorize_at(const char *file, int line, ts_sched *s,
                          ts_loop *loop) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_vectorize)(s, loop));
}

ts_status ts_tensorize_at(const char *file, int line, ts_sched *s, ts_loop *i,
                          ts_loop *j, ts_loop *k) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_tensorize)(s, i, j, k));
}

ts_status ts_double_buffer_at(const char *file, int line, ts_sched *s,
                              ts_stage *stage) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_double_buffer)(s, stage));
}

ts_status ts_double_buffer_tiles_at(const char *file, int line, ts_sched *s,
                                    ts_stage *stage, int tiles) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_double_buffer_tiles)(s, stage, tiles));
}

ts_status ts_pipeline_at(const char *file, int line, ts_sched *s,
                         ts_stage *stage, int stages) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_pipeline)(s, stage, stages));
}

ts_status ts_tma_at(const char *file, int line, ts_sched *s, ts_stage *stage) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_tma)(s, stage));
}

ts_status ts_warp_specialize_at(const char *file, int line, ts_sched *s,
                                ts_stage *stage, int producer_warps) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_warp_specialize)(s, stage, producer_warps));
}

ts_status ts_pingpong_at(const char *file, int line, ts_sched *s,
                         ts_stage *stage) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_pingpong)(s, stage));
}

ts_status ts_wgmma_in_flight_at(const char *file, int line, ts_sched *s,
                                ts_loop *loop, int batches) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_wgmma_in_flight)(s, loop, batches));
}

ts_status ts_pack_at(const char *file, int line, ts_sched *s,
                     const char *buffer) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_pack)(s, buffer));
}

ts_status ts_min_blocks_per_sm_at(const char *file, int line, ts_sched *s,
                                  int blocks) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_min_blocks_per_sm)(s, blocks));
}

ts_status ts_swizzle_at(const char *file, int line, ts_sched *s, ts_loop *rows,
                        ts_loop *cols, int64_t group) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_swizzle)(s, rows, cols, group));
}

ts_status ts_persistent_at(const char *file, int line, ts_sched *s,
                           ts_loop *rows, ts_loop *cols, int blocks_per_sm) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_persistent)(s, rows, cols, blocks_per_sm));
}

ts_status ts_cluster_at(const char *file, int line, ts_sched *s, ts_loop *rows,
                        ts_loop *cols, ts_stage *stage, int blocks) {
  sched_enter(s, file, line);
  return sched_leave(s, (ts_cluster)(s, rows, cols, stage, blocks));
}
