/*
 * Split-K's second kernel.  ts_split_k binds the outer part of k to
 * blockIdx.z; the reduction pass keeps the accumulator inside that loop
 * and ends each block with its partial sum:
 *
 *   workspace   W[k.outer, i, j] = acc        then   C = alpha * sum_z W[z] + beta * C
 *   atomic      first C = beta * C (or 0)     then   atomicAdd(C[i, j], alpha * acc)
 *
 * The kernel here is the other half of each: the reduction of the
 * workspace, launched after the schedule's kernel, or the scaling of C,
 * launched before it (none when beta is 1).  It is one thread per element
 * of C, a row-major walk of 256 threads per block, so that neighbouring
 * threads touch neighbouring elements of W and C.  The workspace sums the
 * parts in order, z = 0, 1, ...: the result is the same from run to run.
 */
#include "lower.h"

#include "../ir/analysis.h"

enum { THREADS = 256 };

const ts_loop *lower_split_k_loop(const ts_sched *s) {
  for (int i = 0; i < s->nloops; i++)
    if (s->loops[i]->live && ir_loop_is_split_k(s->loops[i]))
      return s->loops[i];
  return NULL;
}

ir_buffer *lower_workspace(lower_ctx *cx) {
  const ts_gemm *g = &cx->s->def;
  int64_t shape[3] = {cx->split_k->extent, g->m, g->n};
  return ir_new_buffer(cx->arena, "W", SCOPE_GLOBAL, TS_F32, 3, shape, NULL);
}

bool lower_split_k_has_aux(const lower_ctx *cx) {
  return cx->split_k && (cx->s->split_k == TS_SPLIT_K_WORKSPACE ||
                         cx->s->def.beta != 1.0f);
}

bool lower_split_k_aux_first(const lower_ctx *cx) {
  return cx->split_k && cx->s->split_k == TS_SPLIT_K_ATOMIC;
}

/* C's element (i, j) from the reduction of the workspace's parts. */
static ir_stmt *reduce_element(lower_ctx *cx, ir_expr *i, ir_expr *j) {
  ts_arena *a = cx->arena;
  const ts_sched *s = cx->s;
  int64_t one[2] = {1, 1};
  ir_buffer *sum = ir_new_buffer(a, "sum", SCOPE_LOCAL, TS_F32, 2, one, NULL);
  ts_loop *z = lower_new_loop(cx, "z", cx->split_k->extent, TS_SERIAL);
  if (!sum || !z)
    return NULL;
  ir_expr *at[2] = {ir_int(a, 0), ir_int(a, 0)};
  ir_expr *w_idx[3] = {ir_varref(a, z->var), i, j};
  ir_expr *c_idx[2] = {i, j};
  ir_stmt *add = ir_new_store(a, sum, at,
                              ir_binary(a, E_ADD, ir_load(a, sum, at),
                                        ir_load(a, cx->W, w_idx)));
  ir_stmt *steps[3] = {
      ir_new_store(a, sum, at, ir_float(a, 0)),
      ir_new_for(a, z, add),
      ir_new_store(a, s->C, c_idx,
                   lower_epilogue_value(a, &s->def, ir_load(a, sum, at),
                                        ir_load(a, s->C, c_idx))),
  };
  return ir_new_alloc(a, sum, ir_new_seq(a, steps, 3));
}

/* C's element (i, j) scaled by beta before the atomic adds (0 when beta
 * is 0: C is not read). */
static ir_stmt *scale_element(lower_ctx *cx, ir_expr *i, ir_expr *j) {
  ts_arena *a = cx->arena;
  const ts_gemm *g = &cx->s->def;
  ir_expr *c_idx[2] = {i, j};
  ir_expr *value = g->beta == 0.0f
                       ? ir_float(a, 0)
                       : ir_binary(a, E_MUL, ir_float(a, g->beta),
                                   ir_load(a, cx->s->C, c_idx));
  return ir_new_store(a, cx->s->C, c_idx, value);
}

bool lower_split_k_aux(lower_ctx *cx, ir_kernel *k) {
  ts_arena *a = cx->arena;
  const ts_sched *s = cx->s;
  int64_t elems = s->def.m * s->def.n;
  ts_loop *blk = lower_new_loop(cx, "e.block", (elems + THREADS - 1) / THREADS,
                                TS_BLOCK_X);
  ts_loop *thr = lower_new_loop(cx, "e.thread", THREADS, TS_THREAD_X);
  if (!blk || !thr)
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  /* Step 1. Element e of C, row-major: (e / N, e % N). */
  ir_expr *e = ir_add(a, ir_mul(a, ir_varref(a, blk->var), ir_int(a, THREADS)),
                      ir_varref(a, thr->var));
  ir_expr *i = ir_binary(a, E_DIV, e, ir_int(a, s->def.n));
  ir_expr *j = ir_binary(a, E_MOD, e, ir_int(a, s->def.n));
  bool reduce = s->split_k == TS_SPLIT_K_WORKSPACE;
  ir_stmt *body = reduce ? reduce_element(cx, i, j) : scale_element(cx, i, j);
  /* Step 2. Guarded past the last element, under the launch loops. */
  if (elems % THREADS != 0)
    body = ir_new_if(a, ir_binary(a, E_LT, e, ir_int(a, elems)), body, NULL);
  body = ir_new_for(a, blk, ir_new_for(a, thr, body));
  body = body ? ir_simplify_stmt(a, body) : NULL;
  if (!body || a->failed)
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  *k = (ir_kernel){.body = body, .A = s->input[0], .B = s->input[1], .C = s->C,
                   .W = cx->W};
  lower_launch_dims(body, k);
  return true;
}
