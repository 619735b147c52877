/*
 * The reference executor.  Blocks run one after another; the threads of a
 * block run in lockstep, statement by statement: a loop's iterations are
 * the same for every thread (extents are constants), a divergent `if` is a
 * mask, and a store evaluates every active thread's value before any thread
 * writes, as a warp does.
 *
 * Every global and shared element carries a shadow: whether anything has
 * written it, and the last writer and reader with the barrier epoch of the
 * access.  Two threads touching one element between barriers, at least one
 * of them writing, is a race; threads of different blocks never
 * synchronize, so there any such pair is a race.
 *
 * Vectorized loops run as the lanes lowering expanded them into: a vector
 * access touches the contiguous elements from its lane 0's on, and one that
 * is not aligned to its width faults, as it does on the GPU.
 *
 * Asynchronous copies (cp.async) read global memory when issued and land
 * when a wait of the issuing thread completes their copy group (commit
 * closes a thread's group; wait N completes all but its N newest); a
 * barrier completes none.  Until then the elements are in flight: reading
 * one, or writing one, is a fault naming the copy and the wait it missed,
 * as is a copy still in flight when its buffer's scope ends.  A landed
 * copy counts as written at its wait, so other threads need a barrier
 * after the wait, not only after the issue.
 */
#include "exec_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"
#include "../ir/mma.h"
#include "../ir/visit.h"
#include "tessel/exec.h"

void exec_fault(exec *x, int t, const char *fmt, ...) {
  if (x->fault)
    return;
  x->fault = true;
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  int64_t bx = x->k->block[0], by = x->k->block[1];
  snprintf(x->msg, x->msglen, "%s, by thread (%lld, %lld, %lld) of block "
           "(%lld, %lld, %lld)", what, (long long)(t % bx),
           (long long)(t / bx % by), (long long)(t / (bx * by)),
           (long long)x->block_idx[0], (long long)x->block_idx[1],
           (long long)x->block_idx[2]);
}

/* ---- Statements ----------------------------------------------------------------- */

static void run(exec *x, const ir_stmt *s, const bool *active);

/* A launch loop's variable: uniform for a block index, per thread for a
 * thread index, as its index expression (a swizzle) makes it. */
static void set_launch_var(exec *x, const ts_loop *l, const ir_expr *index) {
  int id = l->var->id;
  int64_t *row = x->env + (size_t)id * (size_t)x->nthreads;
  if (index) {
    bool u = eval_int(x, index, x->all, row);
    x->varying[id] = !u;
    x->uenv[id] = row[0];
    return;
  }
  ir_var launch = {.kind = VAR_LAUNCH, .tag = l->kind};
  bool u = eval_int(x, &(ir_expr){.kind = E_VAR, .var = &launch}, x->all,
                    row);
  x->varying[id] = !u;
  x->uenv[id] = row[0];
}

static void run_for(exec *x, const ir_stmt *s, const bool *active) {
  const ts_loop *l = s->for_.loop;
  if (ir_kind_is_launch(l->kind)) {
    set_launch_var(x, l, s->for_.index);
    run(x, s->for_.body, active);
    return;
  }
  int id = l->var->id;
  x->varying[id] = 0;
  /* A persistent grid's tile loop: the block's tiles, blockIdx.x + it *
   * gridDim.x, while below the extent. */
  int64_t first = l->persistent ? x->block_idx[0] : 0;
  int64_t step = l->persistent ? x->grid[0] : 1;
  for (int64_t it = 0; first + it * step < l->extent && !x->fault; it++) {
    x->uenv[id] = it;
    run(x, s->for_.body, active);
  }
}

/* Phase 1 of a store: every active thread's lanes (lane l of thread t in
 * val[l * nthreads + t]) and the element of its lane 0 (off, uniform or
 * per thread); false after a fault. */
static bool store_values(exec *x, const ir_stmt *s, mem *m,
                         const bool *active, float *val, int64_t *off,
                         bool *uniform) {
  const ir_expr *v = s->store.value;
  int lanes = s->store.lanes > 1 ? s->store.lanes : 1;
  size_t n = (size_t)x->nthreads;
  if (lanes > 1 && !s->store.async &&
      (v->kind != E_VECTOR || v->vector.n != lanes)) {
    exec_fault(x, exec_first_active(x, active), "vector store to %s of no "
               "vector of %d lanes", m->buf->name, lanes);
    return false;
  }
  if (s->store.async && lanes > 1) {
    if (!eval_vector_load(x, v, active, val, n, 1))
      return false;
  } else {
    for (int l = 0; l < lanes && !x->fault; l++) {
      float *lane = val + (size_t)l * n;
      if (eval_float(x, lanes > 1 ? v->vector.lane[l] : v, active, lane))
        for (size_t t = 1; t < n; t++)
          lane[t] = lane[0];
    }
  }
  if (x->fault || !eval_offsets(x, m->buf, s->store.idx, active, "store",
                                off, uniform))
    return false;
  for (int t = 0; lanes > 1 && t < x->nthreads; t++)
    if (active[t] && !vector_fits(x, m, off[*uniform ? 0 : t], lanes, t))
      return false;
  exec_observe(x, &(ir_observed){.node = s, .buf = m->buf, .lanes = lanes,
                                 .store = true, .off = off,
                                 .uniform = *uniform, .mask = active});
  return true;
}

/* Phase 2 of a store to a local buffer (no shadow but `defined`): a
 * tight loop. */
static void write_local(exec *x, mem *m, const int64_t *off, bool u,
                        const float *val, int lanes, const bool *active) {
  size_t n = (size_t)x->nthreads, step = m->per_thread ? m->size : 0;
  ts_dtype type = m->buf->dtype;
  for (int t = 0; t < x->nthreads; t++) {
    if (!active[t])
      continue;
    size_t at = (size_t)off[u ? 0 : t] + (size_t)t * step;
    for (int l = 0; l < lanes; l++) {
      float v = val[(size_t)l * n + (size_t)t];
      m->data[at + (size_t)l] = type == TS_F32 ? v : ts_round_to(type, v);
      m->defined[at + (size_t)l] = 1;
    }
  }
}

/* Phase 2 of a store to a buffer with a shadow: each write checked. */
static void write_each(exec *x, const ir_stmt *s, mem *m, const int64_t *off,
                       bool u, const float *val, int lanes,
                       const bool *active) {
  size_t n = (size_t)x->nthreads;
  for (int t = 0; t < x->nthreads && !x->fault; t++) {
    int64_t o = off[u ? 0 : t];
    for (int l = 0; l < lanes && active[t]; l++) {
      float v = val[(size_t)l * n + (size_t)t];
      if (s->store.atomic && !atomic_sum(x, m, o + l, t, &v))
        break;
      if (!write_at(x, m, o + l, t, v, s->store.atomic) ||
          (s->store.async && !issue_copy(x, m, mem_slot(m, o + l, t), t)))
        break;
    }
  }
}

static void run_store(exec *x, const ir_stmt *s, const bool *active) {
  const ir_buffer *b = s->store.buf;
  mem *m = find_mem(x, b);
  if (!m) {
    exec_fault(x, 0, "store to %s, which is not allocated here", b->name);
    return;
  }
  /* Phase 1: every active thread evaluates; phase 2: every one writes. */
  int lanes = s->store.lanes > 1 ? s->store.lanes : 1;
  size_t n = (size_t)x->nthreads, mark = x->top;
  int64_t *off = exec_push(x, sizeof(int64_t) * n);
  float *val = exec_push(x, sizeof(float) * n * (size_t)lanes);
  bool u;
  if (!val || !store_values(x, s, m, active, val, off, &u)) {
    x->top = mark;
    return;
  }
  if (!m->tracked && !m->pending && !m->space && !s->store.atomic &&
      !s->store.async)
    write_local(x, m, off, u, val, lanes, active);
  else
    write_each(x, s, m, off, u, val, lanes, active);
  x->top = mark;
}

static void run_if(exec *x, const ir_stmt *s, const bool *active) {
  size_t n = (size_t)x->nthreads, mark = x->top;
  int64_t *c = exec_push(x, sizeof(int64_t) * n);
  bool *then_mask = exec_push(x, n), *else_mask = exec_push(x, n);
  if (!else_mask)
    return;
  bool u = eval_int(x, s->if_.cond, active, c), any_then = false,
       any_else = false;
  for (size_t t = 0; t < n && !x->fault; t++) {
    bool taken = active[t] && (u ? c[0] : c[t]) != 0;
    then_mask[t] = taken;
    else_mask[t] = active[t] && !taken;
    any_then |= taken;
    any_else |= else_mask[t];
  }
  if (any_then && !x->fault)
    run(x, s->if_.then_, then_mask);
  if (any_else && s->if_.else_)
    run(x, s->if_.else_, else_mask);
  x->top = mark;
}

/* A vector temporary's lanes, each thread's read by one vector load. */
static void fill_vector_temp(exec *x, mem *m, const ir_expr *init,
                             const bool *active) {
  if (init->kind != E_LOAD || init->load.lanes != (int)m->size) {
    exec_fault(x, 0, "vector temporary %s filled by no vector load of its "
               "size", m->buf->name);
    return;
  }
  if (!eval_vector_load(x, init, active, m->data, 1, m->size))
    return;
  for (int t = 0; t < x->nthreads; t++)
    if (active[t])
      memset(m->defined + mem_slot(m, 0, t), 1, m->size);
}

static void run_alloc(exec *x, const ir_stmt *s, const bool *active) {
  const ir_buffer *b = s->alloc.buf;
  if (x->nlive == MAX_LIVE) {
    exec_fault(x, 0, "more than %d buffers live at once", MAX_LIVE);
    return;
  }
  mem *m = &x->live[x->nlive];
  bool local = b->scope == SCOPE_LOCAL;
  if (!mem_init(m, b, NULL, local ? (size_t)x->nthreads : 1,
                !local || b->async_read)) {
    mem_free(m, true);
    exec_fault(x, 0, "the executor ran out of memory allocating %s", b->name);
    return;
  }
  x->nlive++;
  mem_restore_shadow(x, m);
  if (b->overlay)
    exec_overlay_begins(x, m);
  if (s->alloc.init)
    fill_vector_temp(x, m, s->alloc.init, active);
  run(x, s->alloc.body, active);
  check_landed(x, m);
  exec_tma_store_scope_ends(x, m);
  if (!mem_keep_shadow(x, m))
    exec_fault(x, 0, "the executor ran out of memory");
  exec_wgmma_scope_ends(x, m);
  x->nlive--;
  mem_free(m, true);
}

/* A producer thread outside its pipeline has left the kernel: the
 * barrier does not count it.  A named barrier of the block's first
 * `threads` (whole warps) counts exactly those, every one of them
 * arriving: one more would arrive at a barrier already passed, one
 * fewer leave it waiting for ever. */
static void run_barrier(exec *x, const ir_stmt *s, const bool *active) {
  int64_t named = s->barrier.threads;
  if (named % 32) {
    exec_fault(x, 0, "named barrier of %lld threads: a barrier counts "
               "whole warps", (long long)named);
    return;
  }
  for (int t = 0; t < x->nthreads; t++) {
    bool counted = named ? t < named : x->start[t];
    if (counted && !active[t]) {
      exec_fault(x, t, "barrier in divergent code: this thread does not "
                 "reach it while others of its block do%s",
                 x->start[t] ? "" : " (it has left the kernel)");
      return;
    }
    if (!counted && active[t]) {
      exec_fault(x, t, "this thread reaches a barrier of threads 0..%lld, "
                 "which does not count it", (long long)named - 1);
      return;
    }
  }
  x->epoch++;
}

static void run(exec *x, const ir_stmt *s, const bool *active);

/* A TMA pipeline; warp-specialized, its producer's threads join the
 * block's for its body (whose role tests keep each to its part) and leave
 * with its end, as they leave the kernel.  On the GPU all but the issuing
 * one leave at the start, which the role tests make the same. */
static void run_pipeline(exec *x, const ir_stmt *s, const bool *active) {
  const ir_pipeline *p = s->pipe.pipe;
  size_t mark = x->top;
  const bool *body = active;
  if (p->producer_threads) {
    bool *both = exec_push(x, (size_t)x->nthreads);
    if (!both)
      return;
    for (int t = 0; t < x->nthreads; t++)
      both[t] = active[t] || !x->start[t];
    body = both;
  }
  if (exec_tma_begin(x, s)) {
    run(x, s->pipe.body, body);
    exec_tma_end(x, x->tma, !x->fault);
  }
  x->top = mark;
}

static void run(exec *x, const ir_stmt *s, const bool *active) {
  if (x->fault)
    return;
  x->steps += ir_stmt_steps(s) * (double)x->nthreads;
  switch (s->kind) {
  case S_FOR: run_for(x, s, active); return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n && !x->fault; i++)
      run(x, s->seq.items[i], active);
    return;
  case S_STORE: run_store(x, s, active); return;
  case S_IF: run_if(x, s, active); return;
  case S_ALLOC: run_alloc(x, s, active); return;
  case S_BARRIER: run_barrier(x, s, active); return;
  case S_ASYNC_COMMIT: run_commit(x, active); return;
  case S_ASYNC_WAIT: run_wait(x, s, active); return;
  case S_LANES: run(x, s->lanes.expanded, active); return;
  case S_MMA: exec_run_mma(x, s, active); return;
  case S_LDMATRIX: exec_run_ldmatrix(x, s, active); return;
  case S_STMATRIX: exec_run_stmatrix(x, s, active); return;
  /* A wgmma reads its tiles at its issue and again when a wait retires
   * it, which adds its products (exec_wgmma.c). */
  case S_WGMMA: exec_run_wgmma(x, s, active); return;
  case S_WGMMA_SYNC: exec_run_wgmma_sync(x, s, active); return;
  case S_PIPELINE: run_pipeline(x, s, active); return;
  case S_TMA: exec_run_tma(x, s, active); return;
  case S_MBARRIER: exec_run_mbarrier(x, s, active); return;
  case S_TMA_STORE: exec_run_tma_store(x, s, active); return;
  case S_TMA_STORE_WAIT: exec_run_tma_store_wait(x, active); return;
  case S_COMPUTE:
    exec_fault(x, 0, "compute statement in a lowered kernel");
    return;
  }
}

/* ---- Work, counted and estimated ------------------------------------------------ */

/* A statement's own steps for each thread of its block (see exec.h): what
 * it costs the executor against a scalar store, the lockstep loops over
 * every thread of the block, whatever the mask, being the unit.  An
 * mma.sync reads and writes its lanes' registers and does its
 * multiply-adds, STEP_MADDS of them costing one step.  A wgmma or a TMA
 * copy costs every thread its lockstep test, and the warpgroup or thread
 * that issues it its work (ir_issue_steps): a wgmma its tiles twice (at
 * issue and at retirement), its multiply-adds and its accumulators, a
 * copy its box.  Measured on the built-ins, a step of each of these costs
 * about what a scalar store's does (ts_check_rate). */
enum { STEP_MADDS = 8 };

static bool count_access(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_LOAD && e->load.buf->scope != SCOPE_LOCAL)
    ++*(int *)v->ctx;
  return true;
}

/* A store's steps a lane: one, and half one for each access of global or
 * shared memory it makes (its loads and its own write), whose shadows
 * are read and written. */
static double store_steps(const ir_stmt *s) {
  int accesses = s->store.buf->scope != SCOPE_LOCAL;
  ir_visitor v = {.expr = count_access, .ctx = &accesses};
  ir_visit_expr(&v, s->store.value);
  return (s->store.lanes > 1 ? s->store.lanes : 1) * (1 + 0.5 * accesses);
}

/* An stmatrix's values' loads (beta's reads of C), half a step each. */
static double stmatrix_value_steps(const ir_stmt *s) {
  int accesses = 0;
  ir_visitor v = {.expr = count_access, .ctx = &accesses};
  for (int i = 0; i < 2 * s->stsm.matrices; i++)
    ir_visit_expr(&v, s->stsm.value[i]);
  return 0.5 * accesses;
}

double ir_stmt_steps(const ir_stmt *s) {
  switch (s->kind) {
  case S_STORE: return store_steps(s);
  case S_IF: case S_BARRIER: case S_ASYNC_COMMIT: case S_ASYNC_WAIT:
  case S_WGMMA_SYNC: case S_MBARRIER: case S_TMA: case S_TMA_STORE:
  case S_TMA_STORE_WAIT:
    return 1;
  case S_LDMATRIX: return 2.0 * s->ldsm.matrices;
  case S_STMATRIX: return 2.0 * s->stsm.matrices + stmatrix_value_steps(s);
  case S_MMA: {
    const mma_instr *in = mma_instr_for(s->mma.buf[MMA_A]->dtype);
    double regs = in->frag[MMA_A].regs + in->frag[MMA_B].regs +
                  2.0 * in->frag[MMA_ACC].regs;
    return regs + (double)(in->m * in->n * in->k) / MMA_LANES / STEP_MADDS;
  }
  case S_WGMMA: return 1; /* the operands' indices; the rest a warpgroup's */
  default: return 0; /* loops, sequences, allocations: their bodies' */
  }
}

double ir_issue_steps(const ir_stmt *s) {
  switch (s->kind) {
  case S_TMA: /* the box's elements, read and landed */
  case S_TMA_STORE: /* or read and stored */
    return 2.0 * (double)(s->pipe.box[0] * s->pipe.box[1]);
  case S_WGMMA: { /* the tiles read twice, the products, the accumulators */
    const mma_instr *in = s->wgmma.in;
    double tiles = 2.0 * (double)(in->m * in->k + in->k * in->n);
    return tiles + (double)(in->m * in->n * in->k) / STEP_MADDS +
           2.0 * in->frag[MMA_ACC].regs * WGMMA_LANES;
  }
  default: return 0;
  }
}

/* What an estimate knows while it walks a kernel: the values of the
 * short serial loops' variables it walks iteration by iteration (by id),
 * and how many walks of the current statement those loops make. */
typedef struct {
  int64_t *val;
  uint8_t *known;
  int nvars;
  double walks;
  int64_t blocks; /* a persistent grid's blocks as the executor runs it */
  double threads; /* of a block */
  double computing; /* its share of threads that issue wgmma: the
                     * consumers' in a warp-specialized pipeline */
} estimate_env;

/* Loops this short (an unrolled tile's) are walked an iteration at a time,
 * as long as the walks of a statement stay within ESTIMATE_WALKS, so that
 * a guard on their variables (split-K's last part, a tile past K) counts
 * only where it holds. */
enum { ESTIMATE_SHORT_LOOP = 16, ESTIMATE_WALKS = 4096 };

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* e's value where the variables it needs are known: true with *v. */
static bool known_value(const estimate_env *env, const ir_expr *e,
                        int64_t *v) {
  int64_t a, b;
  switch (e->kind) {
  case E_INT: *v = e->ival; return true;
  case E_VAR:
    if (e->var->kind == VAR_LAUNCH || e->var->id < 0 ||
        e->var->id >= env->nvars || !env->known[e->var->id])
      return false;
    *v = env->val[e->var->id];
    return true;
  case E_NOT:
    if (!known_value(env, e->op.a, &a))
      return false;
    *v = !a;
    return true;
  case E_AND: case E_OR: {
    /* One side known false (true) decides && (||) alone. */
    bool ka = known_value(env, e->op.a, &a), kb = known_value(env, e->op.b, &b);
    bool decides = e->kind == E_OR;
    if ((ka && (a != 0) == decides) || (kb && (b != 0) == decides)) {
      *v = decides;
      return true;
    }
    *v = !decides;
    return ka && kb;
  }
  case E_ADD: case E_SUB: case E_MUL: case E_DIV: case E_MOD: case E_MIN:
  case E_MAX: case E_LT: case E_LE: case E_EQ: case E_NE:
    break;
  default: return false;
  }
  if (!known_value(env, e->op.a, &a) || !known_value(env, e->op.b, &b))
    return false;
  switch (e->kind) {
  case E_ADD: *v = a + b; return true;
  case E_SUB: *v = a - b; return true;
  case E_MUL: *v = a * b; return true;
  case E_DIV: case E_MOD:
    if (b == 0)
      return false;
    *v = e->kind == E_DIV ? floor_div(a, b) : a - floor_div(a, b) * b;
    return true;
  case E_MIN: *v = a < b ? a : b; return true;
  case E_MAX: *v = a > b ? a : b; return true;
  case E_LT: *v = a < b; return true;
  case E_LE: *v = a <= b; return true;
  case E_EQ: *v = a == b; return true;
  default: *v = a != b; return true;
  }
}

static double stmt_steps_estimate(estimate_env *env, const ir_stmt *s);

/* A serial loop: a short one walked an iteration at a time, a long one
 * its trip count times its body. */
static double loop_steps_estimate(estimate_env *env, const ir_stmt *s) {
  const ts_loop *l = s->for_.loop;
  int id = l->var->id;
  /* A persistent grid's tile loop: a block's share of the tiles, the
   * most any block takes. */
  if (l->persistent)
    return (double)((l->extent + env->blocks - 1) / env->blocks) *
           stmt_steps_estimate(env, s->for_.body);
  bool walk = l->extent <= ESTIMATE_SHORT_LOOP &&
              env->walks * (double)l->extent <= ESTIMATE_WALKS &&
              id >= 0 && id < env->nvars;
  if (!walk)
    return (double)l->extent * stmt_steps_estimate(env, s->for_.body);
  double sum = 0;
  env->walks *= (double)l->extent;
  env->known[id] = 1;
  for (int64_t it = 0; it < l->extent; it++) {
    env->val[id] = it;
    sum += stmt_steps_estimate(env, s->for_.body);
  }
  env->known[id] = 0;
  env->walks /= (double)l->extent;
  return sum;
}

/* A pipeline's body; warp-specialized, its producer warpgroup issues no
 * wgmma. */
static double pipeline_steps_estimate(estimate_env *env, const ir_stmt *s) {
  if (!s->pipe.body)
    return 0;
  double computing = env->computing;
  int producers = s->pipe.pipe->producer_threads;
  if (producers > 0 && producers < env->threads)
    env->computing = (env->threads - producers) / env->threads;
  double steps = stmt_steps_estimate(env, s->pipe.body);
  env->computing = computing;
  return steps;
}

/* The steps of s for one thread: an `if` whose condition the known loop
 * variables decide counts its branch, else both.  A TMA copy's or store's
 * box is the block's once, shared among its threads: lowering has one
 * thread issue each.  A wgmma's work is each computing warpgroup's. */
static double stmt_steps_estimate(estimate_env *env, const ir_stmt *s) {
  double own = ir_stmt_steps(s);
  switch (s->kind) {
  case S_FOR:
    if (ir_kind_is_launch(s->for_.loop->kind))
      return stmt_steps_estimate(env, s->for_.body);
    return loop_steps_estimate(env, s);
  case S_SEQ: {
    double sum = 0;
    for (int i = 0; i < s->seq.n; i++)
      sum += stmt_steps_estimate(env, s->seq.items[i]);
    return sum;
  }
  case S_IF: {
    int64_t c;
    bool known = known_value(env, s->if_.cond, &c);
    double then_ = !known || c ? stmt_steps_estimate(env, s->if_.then_) : 0;
    double else_ = s->if_.else_ && (!known || !c)
                       ? stmt_steps_estimate(env, s->if_.else_) : 0;
    return own + then_ + else_;
  }
  case S_ALLOC: return stmt_steps_estimate(env, s->alloc.body);
  case S_LANES: return stmt_steps_estimate(env, s->lanes.expanded);
  case S_PIPELINE: return pipeline_steps_estimate(env, s);
  case S_TMA:
  case S_TMA_STORE: return own + ir_issue_steps(s) / env->threads;
  case S_WGMMA:
    return own + ir_issue_steps(s) / WGMMA_LANES * env->computing;
  default: return own;
  }
}

double ir_block_steps(const ir_kernel *k) {
  int n = k->nvars > 0 ? k->nvars : 1;
  int64_t grid[3];
  ir_kernel_grid(k, TS_EXEC_MULTIPROCESSORS, grid);
  double threads = (double)(k->block[0] * k->block[1] * k->block[2]);
  estimate_env env = {.val = calloc((size_t)n, sizeof(int64_t)),
                      .known = calloc((size_t)n, 1), .nvars = n,
                      .walks = 1, .blocks = grid[0] > 0 ? grid[0] : 1,
                      .threads = threads > 0 ? threads : 1,
                      .computing = 1};
  /* Out of memory: no variable is known, every branch counts. */
  if (!env.val || !env.known)
    env.nvars = 0;
  double steps = stmt_steps_estimate(&env, k->body) * threads;
  free(env.val);
  free(env.known);
  return steps;
}

double ir_kernel_steps(const ir_kernel *k) {
  int64_t grid[3];
  ir_kernel_grid(k, TS_EXEC_MULTIPROCESSORS, grid);
  return ir_block_steps(k) * (double)(grid[0] * grid[1] * grid[2]);
}

/* ---- Kernels ------------------------------------------------------------------- */

/* The buffers global memory holds, as kernel k names them. */
static void bind_globals(exec *x, const ir_kernel *k) {
  const ir_buffer *bufs[GLOBALS];
  exec_globals(k, bufs);
  for (int i = 0; i < x->nlive && i < GLOBALS; i++) {
    forget_accesses(&x->live[i]);
    if (bufs[i])
      x->live[i].buf = bufs[i];
  }
}

/* The parameters' buffers at their slots (A, B, C, W), then the packed
 * views of the workspace the body reads or writes. */
void exec_globals(const ir_kernel *k, const ir_buffer *out[GLOBALS]) {
  memset(out, 0, GLOBALS * sizeof(*out));
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].p.kind == TS_PARAM_BUFFER)
      out[k->params[i].p.buffer] = k->params[i].buf;
  out[GLOBAL_PACKED_A] = k->packed[0];
  out[GLOBAL_PACKED_B] = k->packed[1];
}

/* Frees what exec_begin_kernel allocated. */
static void end_kernel(exec *x) {
  mem_forget_shadows(x);
  for (int t = 0; x->queues && t < x->nqueues; t++)
    free(x->queues[t].recs);
  free(x->queues);
  exec_wgmma_forget(x);
  free(x->flight);
  x->flight = NULL;
  x->nflight = x->capflight = 0;
  free(x->env);
  free(x->uenv);
  free(x->varying);
  free(x->all);
  free(x->stack);
  x->queues = NULL;
  x->nqueues = 0;
  x->env = x->uenv = NULL;
  x->varying = NULL;
  x->all = x->start = NULL;
  x->stack = NULL;
}

/* Scratch vectors an expression may hold at once: far more than the
 * deepest lowered expression needs. */
enum { SCRATCH_VECTORS = 512 };

bool exec_begin_kernel(exec *x, const ir_kernel *k) {
  end_kernel(x);
  x->k = k;
  ir_kernel_grid(k, TS_EXEC_MULTIPROCESSORS, x->grid);
  x->nthreads = (int)(k->block[0] * k->block[1] * k->block[2]);
  x->blocks_run = 0;
  size_t n = (size_t)x->nthreads, vars = (size_t)(k->nvars ? k->nvars : 1);
  x->nvars = k->nvars;
  x->env = calloc(n * vars, sizeof(int64_t));
  x->uenv = calloc(vars, sizeof(int64_t));
  x->varying = calloc(vars, 1);
  x->all = malloc(2 * n);
  x->cap = SCRATCH_VECTORS * n * sizeof(int64_t);
  x->stack = malloc(x->cap);
  x->top = 0;
  x->queues = calloc(n, sizeof(*x->queues));
  x->nqueues = x->queues ? x->nthreads : 0;
  if (!x->env || !x->uenv || !x->varying || !x->all || !x->stack ||
      !x->queues) {
    end_kernel(x);
    snprintf(x->msg, x->msglen, "the executor ran out of memory");
    return false;
  }
  memset(x->all, 1, n);
  x->start = x->all + n;
  for (size_t t = 0; t < n; t++)
    x->start[t] = k->consumer_threads == 0 || (int64_t)t < k->consumer_threads;
  bind_globals(x, k);
  return true;
}

bool exec_run_block(exec *x, int64_t bx, int64_t by, int64_t bz) {
  const ir_kernel *k = x->k;
  x->block_idx[0] = bx;
  x->block_idx[1] = by;
  x->block_idx[2] = bz;
  /* Threads are named by the blocks run so far (a full run's are its
   * linear block index): a sampled run names only the blocks it runs. */
  if ((int64_t)(x->blocks_run + 1) * x->nthreads > INT32_MAX - 2) {
    snprintf(x->msg, x->msglen, "the executor runs at most 2^31 threads; "
             "use a smaller shape or sample");
    return !(x->fault = true);
  }
  x->block_linear = x->blocks_run++;
  x->top = 0;
  reset_queues(x);
  run(x, k->body, x->start);
  exec_wgmma_block_ends(x);
  return !x->fault;
}

void exec_finish(exec *x) {
  end_kernel(x);
}

/* Runs kernel k over its grid: blocks one after another. */
static bool run_grid(exec *x, const ir_kernel *k) {
  if (!exec_begin_kernel(x, k))
    return false;
  if (k->grid[0] * k->grid[1] * k->grid[2] * x->nthreads > INT32_MAX - 2) {
    snprintf(x->msg, x->msglen, "the executor runs at most 2^31 threads; "
             "use a smaller shape or sample");
    return false;
  }
  for (int64_t bz = 0; bz < x->grid[2] && !x->fault; bz++)
    for (int64_t by = 0; by < x->grid[1] && !x->fault; by++)
      for (int64_t bx = 0; bx < x->grid[0] && !x->fault; bx++)
        exec_run_block(x, bx, by, bz);
  return !x->fault;
}

/* "kernel 2 of 2 (tessel_x_reduce): " before a fault's description. */
void exec_name_kernel(exec *x, int i, int n) {
  char what[1024];
  snprintf(what, sizeof(what), "%s", x->msg);
  snprintf(x->msg, x->msglen, "kernel %d of %d (%s): %s", i + 1, n,
           x->k->entry ? x->k->entry : "?", what);
}

bool ir_execute_kernels(const ir_kernel *const *ks, int n, const float *A,
                        const float *B, float *C, bool c_defined, char *msg,
                        size_t msglen) {
  return ir_execute_observed(ks, n, A, B, C, c_defined, NULL, msg, msglen);
}

bool ir_execute_observed(const ir_kernel *const *ks, int n, const float *A,
                         const float *B, float *C, bool c_defined,
                         const ir_observer *observer, char *msg,
                         size_t msglen) {
  return ir_execute_counted(ks, n, A, B, C, c_defined, observer, NULL, msg,
                            msglen);
}

bool ir_execute_counted(const ir_kernel *const *ks, int n, const float *A,
                        const float *B, float *C, bool c_defined,
                        const ir_observer *observer, double *steps,
                        char *msg, size_t msglen) {
  char scratch[1];
  exec x = {.k = ks[0], .msg = msglen ? msg : scratch,
            .msglen = msglen ? msglen : 1, .observer = observer};
  x.msg[0] = 0;
  /* The workspace's buffers, as the first kernel naming each has it. */
  const ir_buffer *g[GLOBALS] = {NULL};
  for (int i = n - 1; i >= 0; i--) {
    const ir_buffer *gi[GLOBALS];
    exec_globals(ks[i], gi);
    for (int j = 0; j < GLOBALS; j++)
      g[j] = gi[j] ? gi[j] : g[j];
  }
  bool ok = mem_init(&x.live[0], g[0], (float *)A, 1, false) &&
            mem_init(&x.live[1], g[1], (float *)B, 1, false) &&
            mem_init(&x.live[2], g[2], C, 1, true);
  x.nlive = 3;
  for (int j = 3; ok && j < GLOBALS; j++) {
    ok = !g[j] || mem_init(&x.live[j], g[j], NULL, 1, true);
    x.nlive = g[j] ? j + 1 : x.nlive;
  }
  if (!ok) {
    snprintf(x.msg, x.msglen, "the executor ran out of memory");
  } else {
    x.live[0].read_only = x.live[1].read_only = true;
    memset(x.live[2].defined, c_defined, x.live[2].size);
    for (int i = 0; i < n && ok; i++) {
      ok = run_grid(&x, ks[i]);
      if (!ok && n > 1)
        exec_name_kernel(&x, i, n);
    }
  }
  for (int i = 0; i < x.nlive; i++)
    mem_free(&x.live[i], i >= 3);
  exec_finish(&x);
  if (steps)
    *steps = x.steps;
  return ok && !x.fault;
}

bool ir_execute(const ir_kernel *k, const float *A, const float *B, float *C,
                bool c_defined, char *msg, size_t msglen) {
  return ir_execute_kernels(&k, 1, A, B, C, c_defined, msg, msglen);
}
