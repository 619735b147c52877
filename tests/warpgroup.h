/*
 * The warpgroup space's configurations as the Hopper tests use them: a
 * configuration's schedule and its lowered program, a statement copied
 * for a mutant, and a configuration checked against a plain GEMM at odd
 * shapes in every layout and type.
 */
#ifndef TS_TEST_WARPGROUP_H
#define TS_TEST_WARPGROUP_H

#include "helpers.h"

#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"

/* The `warpgroup` space at `config` for m x n x k, A and B of `type`
 * (tf32 arithmetic for fp32), the layout given. */
static inline ts_sched *warpgroup_sched(const char *config, int64_t m,
                                        int64_t n, int64_t k, ts_dtype type,
                                        ts_layout layout) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = type;
  g.math = type == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
  g.layout = layout;
  char err[256];
  ts_config *c = ts_config_parse(config, err, sizeof(err));
  assert_non_null(c);
  ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &g, c);
  ts_config_free(c);
  return s;
}

/* ... lowered; the schedule in *s. */
static inline ts_program *warpgroup_lowered(const char *config, int64_t m,
                                            int64_t n, int64_t k,
                                            ts_dtype type, ts_layout layout,
                                            ts_sched **s) {
  *s = warpgroup_sched(config, m, n, k, type, layout);
  if (ts_sched_status(*s) != TS_OK)
    fail_msg("%s: %s", config, ts_sched_errmsg(*s));
  ts_program *p = ts_lower(*s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("%s: %s", config, ts_program_errmsg(p));
  return p;
}

/* A shallow copy of s in arena a, for a mutant to change. */
static inline ir_stmt *stmt_copy(ts_arena *a, const ir_stmt *s) {
  ir_stmt *c = ts_arena_alloc(a, sizeof(*c));
  assert_non_null(c);
  *c = *s;
  return c;
}

/* fn on every statement of k's body, with ctx. */
static inline void visit_body(const ir_kernel *k,
                              bool (*fn)(ir_visitor *, const ir_stmt *),
                              void *ctx) {
  ir_visitor v = {.stmt = fn, .ctx = ctx};
  ir_visit_stmt(&v, k->body);
}

/* n, where it is the pipeline's node, copy or barrier operation, copied
 * onto a copy of its pipeline (made once, in *copy) whose empty barriers
 * count its warps times `num` / `den`: a mutant's miscount. */
static inline ir_stmt *with_consumers(ts_arena *a, ir_stmt *n,
                                      ir_pipeline **copy, int num, int den) {
  if (n->kind != S_PIPELINE && n->kind != S_TMA && n->kind != S_MBARRIER)
    return n;
  if (!*copy) {
    *copy = ts_arena_alloc(a, sizeof(**copy));
    assert_non_null(*copy);
    **copy = *n->pipe.pipe;
    (*copy)->consumers = (*copy)->consumers * num / den;
  }
  n = stmt_copy(a, n);
  n->pipe.pipe = *copy;
  return n;
}

/* Whether the space may prune `config` at a definition, as the kernel of
 * another configuration: swizzle=0 on C's transpose (tf32 NN), inflight
 * other than 1 where wgmma takes a from registers (tf32 TN, TT, NN), and
 * store=1 where C's rows are not 16-byte aligned. */
static inline bool pruned_as_another(const char *config, const ts_sched *s) {
  const char *why = ts_sched_errmsg(s);
  return ts_sched_status(s) == TS_ERR_PRUNED &&
         (strstr(config, "store=1") || strstr(why, "on C's transpose") ||
          strstr(why, "takes a from registers"));
}

/* `config` lowered and checked against a plain GEMM at each of the
 * shapes in f16, bf16 and tf32 and every layout (a sweep:
 * sweep_point_runs), each program given to `inspect` first. */
static inline void warpgroup_check_shapes(const char *config,
                                          const int64_t (*shapes)[3], int n,
                                          void (*inspect)(const ts_program *)) {
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int i = 0; i < n; i++)
    for (int t = 0; t < 3; t++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_sched *s = warpgroup_sched(config, shapes[i][0], shapes[i][1],
                                      shapes[i][2], types[t], (ts_layout)l);
        if (pruned_as_another(config, s)) {
          ts_sched_free(s);
          continue;
        }
        if (ts_sched_status(s) != TS_OK)
          fail_msg("%s: %s", config, ts_sched_errmsg(s));
        ts_program *p = ts_lower(s);
        if (ts_program_status(p) != TS_OK)
          fail_msg("%s: %s", config, ts_program_errmsg(p));
        inspect(p);
        char msg[1024];
        if (sweep_point_runs() && ts_program_check(p, 7, msg, sizeof(msg)) != TS_OK)
          fail_msg("%s at %lldx%lldx%lld, layout %d, type %d: %s", config,
                   (long long)shapes[i][0], (long long)shapes[i][1],
                   (long long)shapes[i][2], l, t, msg);
        ts_program_free(p);
        ts_sched_free(s);
      }
}

#endif
