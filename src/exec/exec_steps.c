/*
 * The reference executor's work, counted and estimated (exec.h): a
 * statement's steps for each thread that runs it, the work of the thread
 * or warpgroup that issues a TMA copy or a wgmma, and the estimate of a
 * block's and a kernel's steps from the program alone, which ts_check's
 * time limits and a sample's budget rest on.  exec.c counts the steps as
 * it runs; the estimate walks the kernel as the executor would, without
 * running it.  A cluster's blocks run together, but the steps are each
 * block's: a run of two blocks counts the statements of both.
 */
#include <stdlib.h>

#include "../ir/mma.h"
#include "../ir/visit.h"
#include "executor.h"
#include "tessel/exec.h"

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
