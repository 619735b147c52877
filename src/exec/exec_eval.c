/*
 * The reference executor's expressions, evaluated for every active thread
 * of a block in one pass over the tree (exec_impl.h says why).  A node's
 * value is uniform where it cannot differ between threads, and then it is
 * computed once.  A branch (select, &&, ||) evaluates each side only for
 * the threads that take it, as each thread would: a guarded load of a
 * thread past the edge is never made.
 */
#include "exec_impl.h"

#include <stdio.h>
#include <string.h>

#include "../base/dtype.h"
#include "../ir/eval.h"
#include "../ir/mma.h"

enum { SCRATCH_ALIGN = 16 };

void *exec_push(exec *x, size_t n) {
  size_t at = (x->top + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
  if (x->fault)
    return NULL;
  if (at + n > x->cap) {
    exec_fault(x, 0, "an expression too deep for the executor's scratch "
               "(%zu bytes)", x->cap);
    return NULL;
  }
  x->top = at + n;
  return x->stack + at;
}

int exec_first_active(const exec *x, const bool *mask) {
  for (int t = 0; t < x->nthreads; t++)
    if (mask[t])
      return t;
  return 0;
}

void exec_observe(exec *x, const ir_observed *a) {
  if (!x->observer || a->buf->scope == SCOPE_LOCAL)
    return;
  ir_observed told = *a;
  told.nthreads = x->nthreads;
  x->observer->access(x->observer->ctx, &told);
}

static int64_t *push_ints(exec *x) {
  return exec_push(x, sizeof(int64_t) * (size_t)x->nthreads);
}

static float *push_floats(exec *x) {
  return exec_push(x, sizeof(float) * (size_t)x->nthreads);
}

/* The threads of mask for which c (uniform or not) is `want`; NULL when
 * none is. */
static bool *sub_mask(exec *x, const bool *mask, const int64_t *c, bool uc,
                      bool want) {
  bool *m = exec_push(x, (size_t)x->nthreads);
  bool any = false;
  for (int t = 0; m && t < x->nthreads; t++) {
    m[t] = mask[t] && ((uc ? c[0] : c[t]) != 0) == want;
    any |= m[t];
  }
  return any ? m : NULL;
}

static int64_t float_compare(ir_expr_kind k, float a, float b) {
  switch (k) {
  case E_LT: return a < b;
  case E_LE: return a <= b;
  case E_EQ: return a == b;
  case E_NE: return a != b;
  default: return 0;
  }
}

static float float_op(ir_expr_kind k, float a, float b) {
  switch (k) {
  case E_ADD: return a + b;
  case E_SUB: return a - b;
  case E_MUL: return a * b;
  case E_DIV: return a / b;
  case E_MIN: return a < b ? a : b;
  case E_MAX: return a > b ? a : b;
  default: return 0.0f;
  }
}

/* out[t] = a[t] op b[t] for the threads of mask, where a is out and
 * either side may be uniform (not both): one loop per operator, so the
 * operator is chosen once per node rather than once per thread. */
#define OP_THREADS(T, EXPR)                                                  \
  do {                                                                       \
    if (ua) {                                                                \
      T a0 = out[0];                                                         \
      for (int t = 0; t < n; t++)                                            \
        if (mask[t]) {                                                       \
          T a = a0, b_ = b[t];                                               \
          out[t] = (EXPR);                                                   \
        }                                                                    \
    } else if (ub) {                                                         \
      T b0 = b[0];                                                           \
      for (int t = 0; t < n; t++)                                            \
        if (mask[t]) {                                                       \
          T a = out[t], b_ = b0;                                             \
          out[t] = (EXPR);                                                   \
        }                                                                    \
    } else {                                                                 \
      for (int t = 0; t < n; t++)                                            \
        if (mask[t]) {                                                       \
          T a = out[t], b_ = b[t];                                           \
          out[t] = (EXPR);                                                   \
        }                                                                    \
    }                                                                        \
  } while (0)

static void int_op_threads(const exec *x, ir_expr_kind k, const bool *mask,
                           int64_t *out, bool ua, const int64_t *b,
                           bool ub) {
  int n = x->nthreads;
  switch (k) {
  case E_ADD: OP_THREADS(int64_t, a + b_); return;
  case E_SUB: OP_THREADS(int64_t, a - b_); return;
  case E_MUL: OP_THREADS(int64_t, a * b_); return;
  default: OP_THREADS(int64_t, ir_int_op(k, a, b_)); return;
  }
}

static void float_op_threads(const exec *x, ir_expr_kind k, const bool *mask,
                             float *out, bool ua, const float *b, bool ub) {
  int n = x->nthreads;
  switch (k) {
  case E_ADD: OP_THREADS(float, a + b_); return;
  case E_SUB: OP_THREADS(float, a - b_); return;
  case E_MUL: OP_THREADS(float, a * b_); return;
  default: OP_THREADS(float, float_op(k, a, b_)); return;
  }
}

/* Thread t's launch index: in a cluster's run, blockIdx.x is its block's
 * and threadIdx its place in that block. */
static int64_t launch_index(const exec *x, ts_loop_kind kind, int t) {
  int64_t bx = x->k->block[0], by = x->k->block[1];
  int i = exec_in_block(x, t);
  switch (kind) {
  case TS_BLOCK_X: return x->block_idx[0] + exec_rank(x, t);
  case TS_BLOCK_Y: return x->block_idx[1];
  case TS_BLOCK_Z: return x->block_idx[2];
  case TS_THREAD_X: return i % bx;
  case TS_THREAD_Y: return i / bx % by;
  case TS_THREAD_Z: return i / (bx * by);
  default: return 0;
  }
}

/* A launch index the same for every thread of the run: a block index,
 * but blockIdx.x in a cluster's run. */
static bool launch_uniform(const exec *x, ts_loop_kind kind) {
  return !ir_kind_is_thread(kind) && (kind != TS_BLOCK_X || x->ranks == 1);
}

static bool eval_var(exec *x, const ir_var *v, const bool *mask,
                     int64_t *out) {
  if (v->kind == VAR_GRID) {
    out[0] = x->grid[v->tag - TS_BLOCK_X];
    return true;
  }
  if (v->kind == VAR_PARAM) { /* unresolved: the kernel's nominal value */
    out[0] = x->k->values[v->value];
    return true;
  }
  if (v->kind == VAR_LAUNCH) {
    if (launch_uniform(x, v->tag)) {
      out[0] = launch_index(x, v->tag, 0);
      return true;
    }
    for (int t = 0; t < x->nthreads; t++)
      if (mask[t])
        out[t] = launch_index(x, v->tag, t);
    return false;
  }
  if (!x->varying[v->id]) {
    out[0] = x->uenv[v->id];
    return true;
  }
  const int64_t *row = x->env + (size_t)v->id * (size_t)x->nthreads;
  for (int t = 0; t < x->nthreads; t++)
    if (mask[t])
      out[t] = row[t];
  return false;
}

/* c ? a : b, each side for the threads that take it. */
static bool eval_select_int(exec *x, const ir_expr *e, const bool *mask,
                            int64_t *out) {
  size_t mark = x->top;
  int64_t *c = push_ints(x), *b = push_ints(x);
  if (!b)
    return out[0] = 0, true;
  bool uc = eval_int(x, e->op.c, mask, c);
  if (uc) {
    x->top = mark;
    return eval_int(x, c[0] ? e->op.a : e->op.b, mask, out);
  }
  bool *ma = sub_mask(x, mask, c, false, true);
  bool *mb = sub_mask(x, mask, c, false, false);
  bool ua = ma && eval_int(x, e->op.a, ma, out);
  bool ub = mb && eval_int(x, e->op.b, mb, b);
  for (int t = 0; t < x->nthreads; t++)
    if (mask[t])
      out[t] = c[t] ? (ua ? out[0] : out[t]) : (ub ? b[0] : b[t]);
  x->top = mark;
  return false;
}

/* a && b or a || b: b only for the threads a does not decide. */
static bool eval_logic(exec *x, const ir_expr *e, const bool *mask,
                       int64_t *out) {
  bool is_and = e->kind == E_AND;
  bool ua = eval_int(x, e->op.a, mask, out);
  if (ua) {
    if ((out[0] != 0) != is_and)
      return out[0] = !is_and, true;
    bool ub = eval_int(x, e->op.b, mask, out);
    for (int t = 0; t < (ub ? 1 : x->nthreads); t++)
      out[t] = out[t] != 0;
    return ub;
  }
  size_t mark = x->top;
  int64_t *b = push_ints(x);
  bool *mb = b ? sub_mask(x, mask, out, false, is_and) : NULL;
  bool ub = mb && eval_int(x, e->op.b, mb, b);
  for (int t = 0; t < x->nthreads; t++)
    if (mask[t])
      out[t] = mb && mb[t] ? (ub ? b[0] : b[t]) != 0 : out[t] != 0;
  x->top = mark;
  return false;
}

static bool eval_float_compare(exec *x, const ir_expr *e, const bool *mask,
                               int64_t *out) {
  size_t mark = x->top;
  float *a = push_floats(x), *b = push_floats(x);
  if (!b)
    return out[0] = 0, true;
  bool ua = eval_float(x, e->op.a, mask, a);
  bool ub = eval_float(x, e->op.b, mask, b);
  bool u = ua && ub;
  for (int t = 0; t < (u ? 1 : x->nthreads); t++)
    if (u || mask[t])
      out[t] = float_compare(e->kind, a[ua ? 0 : t], b[ub ? 0 : t]);
  x->top = mark;
  return u;
}

bool eval_int(exec *x, const ir_expr *e, const bool *mask, int64_t *out) {
  switch (e->kind) {
  case E_INT: out[0] = e->ival; return true;
  case E_VAR: return eval_var(x, e->var, mask, out);
  case E_NOT: {
    bool u = eval_int(x, e->op.a, mask, out);
    for (int t = 0; t < (u ? 1 : x->nthreads); t++)
      out[t] = !out[t];
    return u;
  }
  case E_SELECT: return eval_select_int(x, e, mask, out);
  case E_AND: case E_OR: return eval_logic(x, e, mask, out);
  default: break;
  }
  if (e->op.a && e->op.a->type == TY_FLOAT)
    return eval_float_compare(x, e, mask, out);
  size_t mark = x->top;
  int64_t *b = push_ints(x);
  if (!b)
    return out[0] = 0, true;
  bool ua = eval_int(x, e->op.a, mask, out);
  bool ub = eval_int(x, e->op.b, mask, b);
  ir_expr_kind k = e->kind;
  if (ua && ub)
    out[0] = ir_int_op(k, out[0], b[0]);
  else
    int_op_threads(x, k, mask, out, ua, b, ub);
  x->top = mark;
  return ua && ub;
}

/* The element off[t] of each thread of mask; false after a fault.  A
 * local buffer (no shadow but `defined`) is read in a tight loop. */
static bool read_each(exec *x, mem *m, const int64_t *off, bool uniform,
                      const bool *mask, float *out) {
  if (!m->tracked && !m->pending && !m->space && !m->read_only) {
    /* Only local buffers come here: a copy per thread (mem.group 1). */
    size_t step = m->group == 1 ? m->size : 0;
    for (int t = 0; t < x->nthreads; t++) {
      size_t at = (size_t)off[uniform ? 0 : t] + (size_t)t * step;
      if (!mask[t])
        continue;
      if (!m->defined[at])
        return read_at(x, m, off[uniform ? 0 : t], t), false;
      out[t] = m->data[at];
    }
    return true;
  }
  for (int t = 0; t < x->nthreads && !x->fault; t++)
    if (mask[t])
      out[t] = read_at(x, m, off[uniform ? 0 : t], t);
  return !x->fault;
}

static bool eval_load(exec *x, const ir_expr *e, const bool *mask,
                      float *out) {
  if (e->load.lanes > 1) {
    exec_fault(x, exec_first_active(x, mask), "vector load of %s used as a "
               "scalar", e->load.buf->name);
    return out[0] = 0.0f, true;
  }
  size_t mark = x->top;
  int64_t *off = push_ints(x);
  bool u;
  mem *m = find_mem(x, e->load.buf);
  if (!off || !eval_offsets(x, e->load.buf, e->load.idx, mask, "load", off,
                            &u) || !m ||
      !read_each(x, m, off, u, mask, out)) {
    x->top = mark;
    return out[0] = 0.0f, true;
  }
  exec_observe(x, &(ir_observed){.node = e, .buf = e->load.buf, .lanes = 1,
                                 .off = off, .uniform = u, .mask = mask});
  x->top = mark;
  return false;
}

static bool eval_select_float(exec *x, const ir_expr *e, const bool *mask,
                              float *out) {
  size_t mark = x->top;
  int64_t *c = push_ints(x);
  float *b = push_floats(x);
  if (!b)
    return out[0] = 0.0f, true;
  bool uc = eval_int(x, e->op.c, mask, c);
  if (uc) {
    x->top = mark;
    return eval_float(x, c[0] ? e->op.a : e->op.b, mask, out);
  }
  bool *ma = sub_mask(x, mask, c, false, true);
  bool *mb = sub_mask(x, mask, c, false, false);
  bool ua = ma && eval_float(x, e->op.a, ma, out);
  bool ub = mb && eval_float(x, e->op.b, mb, b);
  for (int t = 0; t < x->nthreads; t++)
    if (mask[t])
      out[t] = c[t] ? (ua ? out[0] : out[t]) : (ub ? b[0] : b[t]);
  x->top = mark;
  return false;
}

/* Whether every lane of thread t's warp runs: a warp shuffle's full mask
 * asks them all to take part. */
static bool whole_warp(exec *x, const bool *mask, int t) {
  int first = t - t % 32;
  for (int l = first; l < first + 32; l++)
    if (l >= x->nthreads || !mask[l]) {
      exec_fault(x, t, "pair_pick shuffles between neighbouring lanes with "
                 "the whole warp's mask, and lane %d of the warp %s", l % 32,
                 l >= x->nthreads ? "does not exist (the block's threads "
                 "are not whole warps)" : "does not run it (a guard or "
                 "branch left it out): pick only where the warp is whole");
      return false;
    }
  return true;
}

/* E_PAIR_PICK: every lane evaluates c, its own value and the one its
 * neighbour (lane ^ 1) takes from it, then keeps its own where c holds. */
static bool eval_pair_pick(exec *x, const ir_expr *e, const bool *mask,
                           float *out) {
  size_t mark = x->top;
  int64_t *c = push_ints(x);
  float *own = push_floats(x), *theirs = push_floats(x);
  if (!own || !theirs)
    return out[0] = 0.0f, true;
  bool uc = eval_int(x, e->op.c, mask, c);
  bool uo = eval_float(x, e->op.a, mask, own);
  bool ut = eval_float(x, e->op.b, mask, theirs);
  for (int t = 0, warp = -1; t < x->nthreads && !x->fault; t++) {
    if (!mask[t] || (t / 32 != warp && !whole_warp(x, mask, t)))
      continue;
    warp = t / 32;
    out[t] = c[uc ? 0 : t] ? own[uo ? 0 : t] : theirs[ut ? 0 : t ^ 1];
  }
  x->top = mark;
  return false;
}

bool eval_float(exec *x, const ir_expr *e, const bool *mask, float *out) {
  switch (e->kind) {
  case E_PAIR_PICK: return eval_pair_pick(x, e, mask, out);
  case E_FLOAT: out[0] = e->fval; return true;
  case E_INT: out[0] = (float)e->ival; return true;
  case E_LOAD: return eval_load(x, e, mask, out);
  case E_VECTOR:
    exec_fault(x, exec_first_active(x, mask), "vector of %d lanes used as "
               "a scalar", e->vector.n);
    return out[0] = 0.0f, true;
  case E_CAST: {
    bool u = eval_float(x, e->op.a, mask, out);
    for (int t = 0; t < (u ? 1 : x->nthreads); t++)
      if (u || mask[t])
        out[t] = ts_round_to(e->dtype, out[t]);
    return u;
  }
  case E_ROUND_TF32: {
    bool u = eval_float(x, e->op.a, mask, out);
    for (int t = 0; t < (u ? 1 : x->nthreads); t++)
      if (u || mask[t])
        out[t] = mma_round_tf32(out[t]);
    return u;
  }
  case E_SELECT: return eval_select_float(x, e, mask, out);
  default: break;
  }
  size_t mark = x->top;
  float *b = push_floats(x);
  if (!b)
    return out[0] = 0.0f, true;
  bool ua = eval_float(x, e->op.a, mask, out);
  bool ub = eval_float(x, e->op.b, mask, b);
  ir_expr_kind k = e->kind;
  if (ua && ub)
    out[0] = float_op(k, out[0], b[0]);
  else
    float_op_threads(x, k, mask, out, ua, b, ub);
  x->top = mark;
  return ua && ub;
}

/* An out-of-bounds fault of thread t at the indices `at`. */
static void out_of_bounds(exec *x, const ir_buffer *b, const int64_t *at,
                          int d, int t, const char *verb) {
  char where[128] = "", *p = where;
  for (int i = 0; i < b->ndim; i++)
    p += snprintf(p, sizeof(where) - (size_t)(p - where), "%s%lld",
                  i ? ", " : "", (long long)at[i]);
  exec_fault(x, t, "out-of-bounds %s of %s %s[%s]: index %d is %lld, the "
             "extent %lld", verb, exec_scope_word(b->scope), b->name, where,
             d, (long long)at[d], (long long)b->shape[d]);
}

/* Thread t's element from its indices, or -1 after a fault. */
static int64_t element(exec *x, const ir_buffer *b, int64_t *const *dims,
                       const bool *u, int t, const char *verb) {
  int64_t at[IR_MAX_DIMS], off = 0;
  for (int d = 0; d < b->ndim; d++) {
    at[d] = dims[d][u[d] ? 0 : t];
    off += at[d] * b->strides[d];
  }
  for (int d = 0; d < b->ndim; d++)
    if (at[d] < 0 || at[d] >= b->shape[d]) {
      out_of_bounds(x, b, at, d, t, verb);
      return -1;
    }
  return ir_swizzle_offset(b, off);
}

bool eval_offsets(exec *x, const ir_buffer *b, ir_expr *const *idx,
                  const bool *mask, const char *verb, int64_t *off,
                  bool *uniform) {
  size_t mark = x->top;
  int64_t *dims[IR_MAX_DIMS];
  bool u[IR_MAX_DIMS], all = true;
  for (int d = 0; d < b->ndim; d++) {
    if (!(dims[d] = push_ints(x)))
      return false;
    u[d] = eval_int(x, idx[d], mask, dims[d]);
    all &= u[d];
  }
  *uniform = all;
  if (all) {
    off[0] = element(x, b, dims, u, exec_first_active(x, mask), verb);
  } else {
    for (int t = 0; t < x->nthreads && !x->fault; t++)
      if (mask[t])
        off[t] = element(x, b, dims, u, t, verb);
  }
  x->top = mark;
  return !x->fault;
}

bool eval_vector_load(exec *x, const ir_expr *e, const bool *mask,
                      float *out, size_t lane_step, size_t thread_step) {
  size_t mark = x->top;
  int64_t *off = push_ints(x);
  bool u;
  mem *m = find_mem(x, e->load.buf);
  bool ok = off && eval_offsets(x, e->load.buf, e->load.idx, mask, "load",
                                off, &u) && m;
  if (ok)
    exec_observe(x, &(ir_observed){.node = e, .buf = e->load.buf,
                                   .lanes = e->load.lanes, .off = off,
                                   .uniform = u, .mask = mask});
  for (int t = 0; ok && t < x->nthreads; t++) {
    if (!mask[t])
      continue;
    int64_t o = off[u ? 0 : t];
    ok = vector_fits(x, m, o, e->load.lanes, t);
    for (int l = 0; ok && l < e->load.lanes; l++) {
      out[(size_t)l * lane_step + (size_t)t * thread_step] =
          read_at(x, m, o + l, t);
      ok = !x->fault;
    }
  }
  x->top = mark;
  return ok;
}
