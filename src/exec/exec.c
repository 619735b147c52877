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
 *
 * A kernel with a thread-block cluster runs each cluster's blocks
 * together, as one lockstep run of their threads (exec_impl.h), because
 * they reach into each other: a TMA pipeline's multicast copies land in
 * every block's shared memory, and each block's consumers release every
 * block's stages (exec_tma.c).  Each block keeps its own copy of every
 * shared buffer, its own barriers (__syncthreads and named barriers count
 * and order its threads only) and its own barrier epoch; between threads
 * of different blocks any unordered pair of accesses is a race, as
 * before.  A whole block that does not reach a barrier (a branch on
 * blockIdx) is not waiting at it: only the block that reaches it passes.
 * A persistent grid's cluster takes consecutive tiles, each block its own,
 * and its blocks must take as many tiles each.
 *
 * The work a run does is counted in steps as it goes (exec_steps.c says
 * what a statement costs, and estimates it from the program).
 */
#include "exec_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"
#include "tessel/exec.h"

void exec_fault(exec *x, int t, const char *fmt, ...) {
  if (x->fault)
    return;
  x->fault = true;
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  int64_t bx = x->k->block[0], by = x->k->block[1];
  int i = exec_in_block(x, t);
  snprintf(x->msg, x->msglen, "%s, by thread (%lld, %lld, %lld) of block "
           "(%lld, %lld, %lld)", what, (long long)(i % bx),
           (long long)(i / bx % by), (long long)(i / (bx * by)),
           (long long)x->block_idx[0] + exec_rank(x, t),
           (long long)x->block_idx[1], (long long)x->block_idx[2]);
}

void exec_block_name(const exec *x, int rank, char *out, size_t n) {
  snprintf(out, n, "(%lld, %lld, %lld)",
           (long long)(x->block_idx[0] + rank), (long long)x->block_idx[1],
           (long long)x->block_idx[2]);
}

void exec_thread_name(const exec *x, int t, char *out, size_t n) {
  int64_t bx = x->k->block[0], by = x->k->block[1];
  int i = exec_in_block(x, t);
  int len = snprintf(out, n, "(%lld, %lld, %lld)", (long long)(i % bx),
                     (long long)(i / bx % by), (long long)(i / (bx * by)));
  if (x->ranks > 1 && len > 0 && (size_t)len < n) {
    char block[80];
    exec_block_name(x, exec_rank(x, t), block, sizeof(block));
    snprintf(out + len, n - (size_t)len, " of block %s", block);
  }
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

/* The tiles a persistent grid's block from blockIdx.x `first` takes. */
static int64_t waves_of(const exec *x, const ts_loop *l, int64_t first) {
  return first < l->extent ? (l->extent - first + x->grid[0] - 1) / x->grid[0]
                           : 0;
}

/* A cluster's blocks run in lockstep, so they must take as many tiles
 * each (lowering makes the tiles a multiple of the cluster and the grid
 * one too); a fault where they do not. */
static bool cluster_waves_agree(exec *x, const ts_loop *l,
                                const bool *active) {
  int64_t waves = waves_of(x, l, x->block_idx[0]);
  for (int r = 1; r < x->ranks; r++) {
    int64_t own = waves_of(x, l, x->block_idx[0] + r);
    if (own == waves)
      continue;
    char first[80], peer[80];
    exec_block_name(x, 0, first, sizeof(first));
    exec_block_name(x, r, peer, sizeof(peer));
    exec_fault(x, exec_first_active(x, active), "a persistent grid's tile "
               "loop (%lld tiles, a grid of %lld) gives block %s %lld tiles "
               "and its cluster peer block %s %lld: a cluster's blocks run "
               "together, so the tiles must be a multiple of the cluster",
               (long long)l->extent, (long long)x->grid[0], first,
               (long long)waves, peer, (long long)own);
    return false;
  }
  return true;
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
   * gridDim.x, while below the extent; in a cluster, the first block's
   * count, which its peers share (cluster_waves_agree). */
  int64_t first = l->persistent ? x->block_idx[0] : 0;
  int64_t step = l->persistent ? x->grid[0] : 1;
  if (l->persistent && !cluster_waves_agree(x, l, active))
    return;
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
  /* Only local buffers come here: a copy per thread (mem.group 1). */
  size_t n = (size_t)x->nthreads, step = m->group == 1 ? m->size : 0;
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
  bool local = b->scope == SCOPE_LOCAL, blocks = !local && x->ranks > 1;
  size_t copies = local ? (size_t)x->nthreads
                        : blocks ? (size_t)x->ranks : 1;
  int group = local ? 1 : blocks ? x->block_threads : 0;
  if (!mem_init(m, b, NULL, copies, group, !local || b->async_read)) {
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

/* Whether any thread of block `rank` of the run is in mask. */
static bool block_reaches(const exec *x, int rank, const bool *mask) {
  int T = x->block_threads;
  for (int t = rank * T; t < (rank + 1) * T; t++)
    if (mask[t])
      return true;
  return false;
}

/* A producer thread outside its pipeline has left the kernel: the
 * barrier does not count it.  A named barrier of the block's first
 * `threads` (whole warps) counts exactly those, every one of them
 * arriving: one more would arrive at a barrier already passed, one
 * fewer leave it waiting for ever.  False after a fault. */
static bool block_arrives(exec *x, int rank, int64_t named,
                          const bool *active) {
  int T = x->block_threads;
  for (int t = rank * T; t < (rank + 1) * T; t++) {
    int i = t - rank * T;
    bool counted = named ? i < named : x->start[t];
    if (counted && !active[t]) {
      exec_fault(x, t, "barrier in divergent code: this thread does not "
                 "reach it while others of its block do%s",
                 x->start[t] ? "" : " (it has left the kernel)");
      return false;
    }
    if (!counted && active[t]) {
      exec_fault(x, t, "this thread reaches a barrier of threads 0..%lld, "
                 "which does not count it", (long long)named - 1);
      return false;
    }
  }
  return true;
}

/* Each block's barrier: in a cluster's run, a block none of whose
 * threads reach it is elsewhere (a branch on blockIdx), not waiting;
 * the blocks that pass it together begin one new epoch. */
static void run_barrier(exec *x, const ir_stmt *s, const bool *active) {
  int64_t named = s->barrier.threads;
  if (named % 32) {
    exec_fault(x, 0, "named barrier of %lld threads: a barrier counts "
               "whole warps", (long long)named);
    return;
  }
  bool passed[MAX_CLUSTER] = {false};
  for (int r = 0; r < x->ranks; r++) {
    if (x->ranks > 1 && !block_reaches(x, r, active))
      continue;
    if (!block_arrives(x, r, named, active))
      return;
    passed[r] = true;
  }
  x->epochs++;
  for (int r = 0; r < x->ranks; r++)
    if (passed[r])
      x->epoch[r] = x->epochs;
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
  x->ranks = k->cluster > 1 ? k->cluster : 1;
  if (x->ranks > MAX_CLUSTER) {
    snprintf(x->msg, x->msglen, "a cluster of %d blocks: the executor runs "
             "clusters of at most %d", x->ranks, MAX_CLUSTER);
    return false;
  }
  x->block_threads = (int)(k->block[0] * k->block[1] * k->block[2]);
  x->nthreads = x->block_threads * x->ranks;
  /* A run lays its blocks end to end: a warp must lie within one. */
  if (x->ranks > 1 && x->block_threads % 32) {
    snprintf(x->msg, x->msglen, "a cluster of blocks of %d threads, not "
             "whole warps: the executor runs a cluster's blocks together "
             "and needs each warp within one block", x->block_threads);
    return false;
  }
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
    x->start[t] = k->consumer_threads == 0 ||
                  (int64_t)exec_in_block(x, (int)t) < k->consumer_threads;
  bind_globals(x, k);
  return true;
}

bool exec_run_block(exec *x, int64_t bx, int64_t by, int64_t bz) {
  const ir_kernel *k = x->k;
  x->block_idx[0] = bx - bx % x->ranks;
  x->block_idx[1] = by;
  x->block_idx[2] = bz;
  /* Threads are named by the blocks run so far (a full run's are its
   * linear block index): a sampled run names only the blocks it runs.
   * A run's blocks are numbered on from its first, so a global id modulo
   * the run's threads is the thread of the run. */
  if ((int64_t)(x->blocks_run + x->ranks) * x->block_threads >
      INT32_MAX - 2) {
    snprintf(x->msg, x->msglen, "the executor runs at most 2^31 threads; "
             "use a smaller shape or sample");
    return !(x->fault = true);
  }
  x->block_linear = x->blocks_run;
  x->blocks_run += x->ranks;
  for (int r = 0; r < x->ranks; r++)
    x->epoch[r] = x->epochs;
  x->top = 0;
  reset_queues(x);
  run(x, k->body, x->start);
  exec_wgmma_block_ends(x);
  return !x->fault;
}

void exec_finish(exec *x) {
  end_kernel(x);
}

/* Runs kernel k over its grid: blocks (a cluster's together) one after
 * another. */
static bool run_grid(exec *x, const ir_kernel *k) {
  if (!exec_begin_kernel(x, k))
    return false;
  if (k->grid[0] * k->grid[1] * k->grid[2] * x->block_threads >
      INT32_MAX - 2) {
    snprintf(x->msg, x->msglen, "the executor runs at most 2^31 threads; "
             "use a smaller shape or sample");
    return false;
  }
  for (int64_t bz = 0; bz < x->grid[2] && !x->fault; bz++)
    for (int64_t by = 0; by < x->grid[1] && !x->fault; by++)
      for (int64_t bx = 0; bx < x->grid[0] && !x->fault; bx += x->ranks)
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
  return ir_execute_at(ks, n, NULL, A, B, C, c_defined, observer, steps, msg,
                       msglen);
}

static bool execute_resolved(const ir_kernel *const *ks, int n,
                             const float *A, const float *B, float *C,
                             bool c_defined, const ir_observer *observer,
                             double *steps, char *msg, size_t msglen);

bool ir_execute_at(const ir_kernel *const *ks, int n, const int64_t *values,
                   const float *A, const float *B, float *C, bool c_defined,
                   const ir_observer *observer, double *steps, char *msg,
                   size_t msglen) {
  bool symbolic = values != NULL;
  for (int i = 0; i < n && !symbolic; i++)
    symbolic = ir_kernel_symbolic(ks[i]);
  if (!symbolic)
    return execute_resolved(ks, n, A, B, C, c_defined, observer, steps, msg,
                            msglen);
  /* Extents taken at launch: each kernel as compiled for these values. */
  enum { MOST = 8 }; /* a program launches at most 4 */
  if (n > MOST) {
    if (msglen)
      snprintf(msg, msglen, "the executor runs at most %d kernels at "
               "values given at launch (got %d)", MOST, n);
    return false;
  }
  ts_arena a;
  ts_arena_init(&a);
  ir_kernel resolved[MOST];
  const ir_kernel *at[MOST];
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    ok = ir_kernel_resolve(&a, ks[i], values, &resolved[i]);
    at[i] = &resolved[i];
  }
  if (ok)
    ok = execute_resolved(at, n, A, B, C, c_defined, observer, steps, msg,
                          msglen);
  else if (msglen)
    snprintf(msg, msglen, "the executor could not resolve the kernels' "
             "sizes at the values given: out of memory, or a size that "
             "reads more than the values (a lowering error)");
  ts_arena_release(&a);
  return ok;
}

static bool execute_resolved(const ir_kernel *const *ks, int n,
                             const float *A, const float *B, float *C,
                             bool c_defined, const ir_observer *observer,
                             double *steps, char *msg, size_t msglen) {
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
  bool ok = mem_init(&x.live[0], g[0], (float *)A, 1, 0, false) &&
            mem_init(&x.live[1], g[1], (float *)B, 1, 0, false) &&
            mem_init(&x.live[2], g[2], C, 1, 0, true);
  x.nlive = 3;
  for (int j = 3; ok && j < GLOBALS; j++) {
    ok = !g[j] || mem_init(&x.live[j], g[j], NULL, 1, 0, true);
    x.nlive = g[j] ? j + 1 : x.nlive;
  }
  if (!ok) {
    snprintf(x.msg, x.msglen, "the executor ran out of memory");
  } else {
    x.live[0].read_only = x.live[1].read_only = true;
    for (int i = GLOBAL_A; i <= GLOBAL_C; i++)
      mem_set_rows(&x.live[i]);
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
