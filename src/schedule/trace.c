/*
 * The trace: every primitive call a schedule accepted, in order.  It prints
 * as C that rebuilds the schedule, and replays onto a fresh definition (the
 * loops a record names are found by id, which creation order makes the same
 * in both schedules).
 */
#include "sched.h"

#include "../ir/printer.h"

#include <stdio.h>
#include <stdlib.h>

/* A loop's C variable is its name at creation, '.' made '_'. */
static void loop_ref(ts_buf *b, const ts_sched *s, int id) {
  sched_c_name(b, s->loops[id]->birth);
}

static const char *tag_enum(ts_loop_kind k) {
  switch (k) {
  case TS_BLOCK_X: return "TS_BLOCK_X";
  case TS_BLOCK_Y: return "TS_BLOCK_Y";
  case TS_BLOCK_Z: return "TS_BLOCK_Z";
  case TS_THREAD_X: return "TS_THREAD_X";
  case TS_THREAD_Y: return "TS_THREAD_Y";
  case TS_THREAD_Z: return "TS_THREAD_Z";
  case TS_UNROLLED: return "TS_UNROLLED";
  case TS_VECTORIZED: return "TS_VECTORIZED";
  case TS_TENSORIZED: return "TS_TENSORIZED";
  case TS_SERIAL: break;
  }
  return "TS_SERIAL";
}

/* fn(s, loop, ...); with the record's loops as arguments. */
static void print_loop_call(ts_buf *b, const ts_sched *s, const char *fn,
                            const trace_rec *r) {
  ts_buf_printf(b, "%s(s", fn);
  for (int i = 0; i < r->nloops; i++) {
    ts_buf_puts(b, ", ");
    loop_ref(b, s, r->loops[i]);
  }
  ts_buf_puts(b, ");\n");
}

static void print_results(ts_buf *b, const ts_sched *s, const trace_rec *r) {
  ts_buf_puts(b, "ts_loop ");
  for (int i = 0; i < r->nresults; i++) {
    ts_buf_puts(b, i ? ", *" : "*");
    loop_ref(b, s, r->results[i]);
  }
  ts_buf_puts(b, ";\n");
}

static void stage_ref(ts_buf *b, const ts_sched *s, int id) {
  sched_c_name(b, s->stages[id]->name);
}

static void print_cache(ts_buf *b, const ts_sched *s, const trace_rec *r) {
  const ts_stage *st = s->stages[r->stage];
  ts_buf_puts(b, "ts_stage *");
  stage_ref(b, s, r->stage);
  ts_buf_printf(b, ";\n%s(s, \"%s\", %s, ",
                r->op == TR_CACHE_READ ? "ts_cache_read" : "ts_cache_write",
                r->name, r->scope == TS_SHARED ? "TS_SHARED" : "TS_LOCAL");
  loop_ref(b, s, r->loops[0]);
  ts_buf_puts(b, ", &");
  stage_ref(b, s, r->stage);
  ts_buf_puts(b, ");\n");
  if (r->op != TR_CACHE_READ)
    return;
  for (int d = 0; d < 2; d++) {
    ts_buf_puts(b, d ? ", *" : "ts_loop *");
    sched_c_name(b, st->axes[d]->birth);
    ts_buf_puts(b, " = ts_stage_axis(");
    stage_ref(b, s, r->stage);
    ts_buf_printf(b, ", %d)", d);
  }
  ts_buf_puts(b, ";\n");
}

static void print_stage_call(ts_buf *b, const ts_sched *s, const trace_rec *r,
                             const char *fn) {
  ts_buf_printf(b, "%s(s, ", fn);
  stage_ref(b, s, r->stage);
  if (r->op == TR_PAD || r->op == TR_PIPELINE || r->op == TR_WARP_SPECIALIZE ||
      (r->op == TR_DOUBLE_BUFFER && r->factor > 1))
    ts_buf_printf(b, ", %lld", (long long)r->factor);
  ts_buf_puts(b, ");\n");
}

/* ts_split_k's call; one part makes no loops, whose places are
 * throwaway compound literals. */
static void print_split_k(ts_buf *b, const ts_sched *s, const trace_rec *r) {
  if (r->nresults == 2)
    print_results(b, s, r);
  ts_buf_puts(b, "ts_split_k(s, ");
  loop_ref(b, s, r->loops[0]);
  ts_buf_printf(b, ", %lld, %s, ", (long long)r->factor,
                r->split_k == TS_SPLIT_K_ATOMIC ? "TS_SPLIT_K_ATOMIC"
                                                : "TS_SPLIT_K_WORKSPACE");
  for (int i = 0; i < 2; i++) {
    ts_buf_puts(b, i ? ", " : "");
    if (r->nresults == 2) {
      ts_buf_puts(b, "&");
      loop_ref(b, s, r->results[i]);
    } else {
      ts_buf_puts(b, "&(ts_loop *){NULL}");
    }
  }
  ts_buf_puts(b, ");\n");
}

void sched_print_record(ts_buf *b, const ts_sched *s, const trace_rec *r) {
  switch (r->op) {
  case TR_SPLIT_K:
    print_split_k(b, s, r);
    return;
  case TR_CACHE_READ: case TR_CACHE_WRITE:
    print_cache(b, s, r);
    return;
  case TR_TRANSPOSE:
    print_stage_call(b, s, r, "ts_storage_transpose");
    return;
  case TR_PAD:
    print_stage_call(b, s, r, "ts_storage_pad");
    return;
  case TR_SWIZZLE_STORAGE:
    print_stage_call(b, s, r, "ts_storage_swizzle");
    return;
  case TR_DOUBLE_BUFFER:
    print_stage_call(b, s, r, r->factor > 1 ? "ts_double_buffer_tiles"
                                            : "ts_double_buffer");
    return;
  case TR_PIPELINE:
    print_stage_call(b, s, r, "ts_pipeline");
    return;
  case TR_TMA:
    print_stage_call(b, s, r, "ts_tma");
    return;
  case TR_WARP_SPECIALIZE:
    print_stage_call(b, s, r, "ts_warp_specialize");
    return;
  case TR_PINGPONG:
    print_stage_call(b, s, r, "ts_pingpong");
    return;
  case TR_MIN_BLOCKS:
    ts_buf_printf(b, "ts_min_blocks_per_sm(s, %lld);\n", (long long)r->factor);
    return;
  case TR_PACK:
    ts_buf_printf(b, "ts_pack(s, \"%s\");\n", r->name);
    return;
  case TR_WGMMA_IN_FLIGHT:
    ts_buf_puts(b, "ts_wgmma_in_flight(s, ");
    loop_ref(b, s, r->loops[0]);
    ts_buf_printf(b, ", %lld);\n", (long long)r->factor);
    return;
  case TR_SWIZZLE: case TR_PERSISTENT:
    ts_buf_printf(b, "%s(s, ", r->op == TR_SWIZZLE ? "ts_swizzle"
                                                   : "ts_persistent");
    loop_ref(b, s, r->loops[0]);
    ts_buf_puts(b, ", ");
    loop_ref(b, s, r->loops[1]);
    ts_buf_printf(b, ", %lld);\n", (long long)r->factor);
    return;
  case TR_CLUSTER:
    ts_buf_puts(b, "ts_cluster(s, ");
    loop_ref(b, s, r->loops[0]);
    ts_buf_puts(b, ", ");
    loop_ref(b, s, r->loops[1]);
    ts_buf_puts(b, ", ");
    stage_ref(b, s, r->stage);
    ts_buf_printf(b, ", %lld);\n", (long long)r->factor);
    return;
  case TR_VECTORIZE:
    print_loop_call(b, s, "ts_vectorize", r);
    return;
  case TR_SPLIT:
    print_results(b, s, r);
    ts_buf_puts(b, "ts_split(s, ");
    loop_ref(b, s, r->loops[0]);
    ts_buf_printf(b, ", %lld, &", (long long)r->factor);
    loop_ref(b, s, r->results[0]);
    ts_buf_puts(b, ", &");
    loop_ref(b, s, r->results[1]);
    ts_buf_puts(b, ");\n");
    return;
  case TR_FUSE:
    print_results(b, s, r);
    ts_buf_puts(b, "ts_fuse(s, ");
    loop_ref(b, s, r->loops[0]);
    ts_buf_puts(b, ", ");
    loop_ref(b, s, r->loops[1]);
    ts_buf_puts(b, ", &");
    loop_ref(b, s, r->results[0]);
    ts_buf_puts(b, ");\n");
    return;
  case TR_REORDER:
    ts_buf_printf(b, "ts_reorder(s, %d, (ts_loop *[]){", r->nloops);
    for (int i = 0; i < r->nloops; i++) {
      if (i)
        ts_buf_puts(b, ", ");
      loop_ref(b, s, r->loops[i]);
    }
    ts_buf_puts(b, "});\n");
    return;
  case TR_BIND:
    ts_buf_puts(b, "ts_bind(s, ");
    loop_ref(b, s, r->loops[0]);
    ts_buf_printf(b, ", %s);\n", tag_enum(r->tag));
    return;
  case TR_TENSORIZE:
    print_loop_call(b, s, "ts_tensorize", r);
    return;
  case TR_PARTITION:
    print_loop_call(b, s, "ts_partition", r);
    return;
  case TR_UNROLL:
    print_loop_call(b, s, "ts_unroll", r);
    return;
  case TR_RENAME:
    ts_buf_puts(b, "ts_rename(s, ");
    loop_ref(b, s, r->loops[0]);
    ts_buf_printf(b, ", \"%s\");\n", r->name);
    return;
  }
}

/* "F16" for TS_F16. */
static const char *type_enum(ts_dtype t) {
  return t == TS_F16 ? "F16" : t == TS_BF16 ? "BF16" : "F32";
}

char *ts_print_trace(ts_sched *s) {
  if (!s || s->status != TS_OK)
    return NULL;
  const ts_gemm *g = &s->def;
  ts_buf b;
  ts_buf_init(&b);
  ts_buf_printf(&b, "/* schedule \"%s\" */\n", s->name);
  ts_buf_printf(&b, "ts_gemm def = ts_gemm_make(%lld, %lld, %lld);\n",
                (long long)g->m, (long long)g->n, (long long)g->k);
  if (g->layout != TS_NN)
    ts_buf_printf(&b, "def.layout = TS_%s;\n", ts_layout_name(g->layout));
  if (g->alpha != 1.0f || g->beta != 0.0f) {
    /* C float literals: 2.0f, not the 2f that %gf would write. */
    ts_buf_puts(&b, "def.alpha = ");
    ir_print_float(&b, g->alpha, true);
    ts_buf_puts(&b, ";\ndef.beta = ");
    ir_print_float(&b, g->beta, true);
    ts_buf_puts(&b, ";\n");
  }
  if (g->a_type != TS_F32 || g->b_type != TS_F32 || g->c_type != TS_F32)
    ts_buf_printf(&b, "def.a_type = TS_%s;\ndef.b_type = TS_%s;\n"
                  "def.c_type = TS_%s;\n", type_enum(g->a_type),
                  type_enum(g->b_type), type_enum(g->c_type));
  if (g->math == TS_MATH_TF32)
    ts_buf_puts(&b, "def.math = TS_MATH_TF32;\n");
  const int64_t ld[3] = {g->lda, g->ldb, g->ldc};
  for (int r = 0; r < 3; r++)
    if (ld[r])
      ts_buf_printf(&b, "def.ld%c = %lld;\n", "abc"[r], (long long)ld[r]);
  ts_buf_printf(&b, "ts_sched *s = ts_matmul_named(&def, \"%s\");\n", s->name);
  for (int id = 0; id < 3; id++) {
    ts_buf_puts(&b, "ts_loop *");
    loop_ref(&b, s, id);
    ts_buf_printf(&b, " = ts_get_loop(s, \"%s\");\n", s->loops[id]->birth);
  }
  for (int i = 0; i < s->ntrace; i++)
    sched_print_record(&b, s, &s->trace[i]);
  return ts_buf_take(&b);
}

ts_status sched_replay_record(ts_sched *onto, const trace_rec *r) {
  ts_loop *l[TRACE_MAX_LOOPS];
  for (int i = 0; i < r->nloops; i++) {
    if (r->loops[i] >= onto->nloops)
      return sched_fail(onto, TS_ERR_BAD_ARG, NULL,
                        "ts_replay: the trace names loop %d, which the "
                        "schedule does not have", r->loops[i]);
    l[i] = onto->loops[r->loops[i]];
  }
  if ((r->op == TR_TRANSPOSE || r->op == TR_PAD || r->op == TR_DOUBLE_BUFFER ||
       r->op == TR_PIPELINE || r->op == TR_SWIZZLE_STORAGE ||
       r->op == TR_TMA || r->op == TR_WARP_SPECIALIZE ||
       r->op == TR_CLUSTER || r->op == TR_PINGPONG) &&
      r->stage >= onto->nstages)
    return sched_fail(onto, TS_ERR_BAD_ARG, NULL,
                      "ts_replay: the trace names cache %d, which the "
                      "schedule does not have", r->stage);
  /* Each primitive called at the record's location, which its own record
   * and error keep. */
  const char *f = r->at.file;
  int ln = r->at.line;
  ts_loop *x, *y;
  ts_stage *st;
  ts_stage *stage = r->stage < onto->nstages ? onto->stages[r->stage] : NULL;
  switch (r->op) {
  case TR_CACHE_READ:
    return ts_cache_read_at(f, ln, onto, r->name, r->scope, l[0], &st);
  case TR_CACHE_WRITE:
    return ts_cache_write_at(f, ln, onto, r->name, r->scope, l[0], &st);
  case TR_TRANSPOSE: return ts_storage_transpose_at(f, ln, onto, stage);
  case TR_PAD: return ts_storage_pad_at(f, ln, onto, stage, r->factor);
  case TR_SWIZZLE_STORAGE: return ts_storage_swizzle_at(f, ln, onto, stage);
  case TR_DOUBLE_BUFFER: /* the call the trace prints, for its messages */
    return r->factor > 1
               ? ts_double_buffer_tiles_at(f, ln, onto, stage, (int)r->factor)
               : ts_double_buffer_at(f, ln, onto, stage);
  case TR_PIPELINE: return ts_pipeline_at(f, ln, onto, stage, (int)r->factor);
  case TR_TMA: return ts_tma_at(f, ln, onto, stage);
  case TR_WARP_SPECIALIZE:
    return ts_warp_specialize_at(f, ln, onto, stage, (int)r->factor);
  case TR_PINGPONG: return ts_pingpong_at(f, ln, onto, stage);
  case TR_VECTORIZE: return ts_vectorize_at(f, ln, onto, l[0]);
  case TR_SPLIT: return ts_split_at(f, ln, onto, l[0], r->factor, &x, &y);
  case TR_FUSE: return ts_fuse_at(f, ln, onto, l[0], l[1], &x);
  case TR_REORDER: return ts_reorder_at(f, ln, onto, r->nloops, l);
  case TR_BIND: return ts_bind_at(f, ln, onto, l[0], r->tag);
  case TR_UNROLL: return ts_unroll_at(f, ln, onto, l[0]);
  case TR_PARTITION: return ts_partition_at(f, ln, onto, l[0]);
  case TR_TENSORIZE: return ts_tensorize_at(f, ln, onto, l[0], l[1], l[2]);
  case TR_RENAME: return ts_rename_at(f, ln, onto, l[0], r->name);
  case TR_MIN_BLOCKS:
    return ts_min_blocks_per_sm_at(f, ln, onto, (int)r->factor);
  case TR_PACK: return ts_pack_at(f, ln, onto, r->name);
  case TR_WGMMA_IN_FLIGHT:
    return ts_wgmma_in_flight_at(f, ln, onto, l[0], (int)r->factor);
  case TR_SWIZZLE: return ts_swizzle_at(f, ln, onto, l[0], l[1], r->factor);
  case TR_PERSISTENT:
    return ts_persistent_at(f, ln, onto, l[0], l[1], (int)r->factor);
  case TR_CLUSTER:
    return ts_cluster_at(f, ln, onto, l[0], l[1], stage, (int)r->factor);
  case TR_SPLIT_K:
    return ts_split_k_at(f, ln, onto, l[0], r->factor, r->split_k, &x, &y);
  }
  return TS_ERR_BAD_ARG;
}

ts_status ts_replay(const ts_sched *from, ts_sched *onto) {
  if (!from || !onto)
    return TS_ERR_NULL_ARG;
  if (onto->status != TS_OK)
    return onto->status;
  if (onto->ntrace != 0 || onto->nloops != 3)
    return sched_fail(onto, TS_ERR_BAD_ARG, NULL,
                      "ts_replay: argument 2 'onto' must be a fresh "
                      "ts_matmul schedule");
  for (int i = 0; i < from->ntrace; i++) {
    ts_status st = sched_replay_record(onto, &from->trace[i]);
    if (st != TS_OK)
      return st;
  }
  return TS_OK;
}
