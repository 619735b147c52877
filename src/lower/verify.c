/*
 * The verifier of lowered kernels: every variable is defined by an
 * enclosing loop, every buffer is accessed inside its allocation with as
 * many indices as it has dimensions, the inputs are never stored to, loads
 * and stores have their buffer's element type, arithmetic is on fp32, and
 * no schedule-level node survived lowering.  Vectorized loops are expanded
 * into lanes that no longer use the loop's variable; there a vector is
 * only a vector temporary's initializer or a vector store's value, and a
 * temporary is read lane by lane at constant lanes and never stored to.
 * An asynchronous copy moves 4, 8 or 16 bytes from global to shared memory.
 * A tensor-core instruction has an instruction for its operands' type, an
 * fp32 accumulator, local operands in scope with room for a lane's
 * registers, and a kernel of blocks of whole warps built for sm_80 or later.
 * A warpgroup's (wgmma) reads its operands' tiles from shared buffers in
 * scope, swizzled in 128-byte rows and of its operand type, into fp32
 * local accumulators with room for a lane's registers, in blocks of whole
 * warpgroups of a kernel built for sm_90a alone; its fences and waits name
 * accumulators in scope.  A failure is a bug in tessel, not in the user's
 * schedule, and the message says which node.
 */
#include "lower.h"

#include <stdio.h>

#include "../ir/mma.h"
#include "../ir/visit.h"

enum { MAX_SCOPE = 256 };

typedef struct {
  ts_arena *a;
  const ir_kernel *k;
  const ir_var *vars[MAX_SCOPE];
  int nvars;
  const ir_buffer *bufs[MAX_SCOPE];
  int nbufs;
  /* In a vectorized loop's body as scheduled, where vector accesses are
   * marks on scalar ones, any of them may be a vector. */
  bool marks;
  const ir_expr *vector_slot; /* the one vector the statement may hold */
  const char *error;
} verifier;

static bool var_defined(const verifier *v, const ir_var *var) {
  if (var->kind == VAR_LAUNCH || var->kind == VAR_GRID || var->kind == VAR_PARAM)
    return true; /* blockIdx.x, M and the like are defined everywhere */
  for (int i = 0; i < v->nvars; i++)
    if (v->vars[i] == var)
      return true;
  return false;
}

static bool buffer_visible(const verifier *v, const ir_buffer *b) {
  if (b == v->k->A || b == v->k->B || b == v->k->C || (b && b == v->k->W) ||
      (b && (b == v->k->packed[0] || b == v->k->packed[1])))
    return true;
  for (int i = 0; i < v->nbufs; i++)
    if (v->bufs[i] == b)
      return true;
  return false;
}

/* Records the first error and ends the walk. */
static bool fail(ir_visitor *v, const char *what, const char *name) {
  verifier *vf = v->ctx;
  vf->error = ts_arena_printf(vf->a, "%s \"%s\"", what, name);
  v->stop = true;
  return false;
}

static bool is_vector(const ir_expr *e) {
  return e->kind == E_VECTOR || (e->kind == E_LOAD && e->load.lanes > 1);
}

/* A vector temporary's element: a constant lane. */
static bool lane_in_range(const ir_expr *e) {
  const ir_expr *lane = e->load.idx[0];
  return lane->kind == E_INT && lane->ival >= 0 &&
         lane->ival < e->load.buf->shape[0];
}

static bool check_expr(ir_visitor *v, const ir_expr *e) {
  const verifier *vf = v->ctx;
  if (is_vector(e) && !vf->marks && e != vf->vector_slot)
    return fail(v, "vector used as a scalar:", ir_expr_kind_name(e->kind));
  if (e->kind == E_LOAD && e->load.buf->vector && !lane_in_range(e))
    return fail(v, "vector temporary read at no constant lane:",
                e->load.buf->name);
  if (e->kind == E_VAR && !var_defined(vf, e->var))
    return fail(v, "variable used outside its loop:", e->var->name);
  if (e->kind == E_LOAD && !buffer_visible(vf, e->load.buf))
    return fail(v, "load from a buffer outside its allocation:",
                e->load.buf->name);
  if (e->kind == E_LOAD && e->dtype != e->load.buf->dtype)
    return fail(v, "load of another element type than its buffer's:",
                e->load.buf->name);
  if (ir_expr_form(e->kind) == FORM_BINARY && e->op.a->type == TY_FLOAT &&
      (e->op.a->dtype != TS_F32 || e->op.b->dtype != TS_F32))
    return fail(v, "arithmetic on a narrow type:", ir_expr_kind_name(e->kind));
  return true;
}

static bool enter_loop(ir_visitor *v, const ts_loop *l) {
  verifier *vf = v->ctx;
  if (vf->nvars == MAX_SCOPE)
    return fail(v, "loops nested too deep at", l->name);
  if (l->extent < 1)
    return fail(v, "loop with no iterations:", l->name);
  vf->vars[vf->nvars++] = l->var;
  return true;
}

/* cp.async: global memory into a shared cache, one load of the store's
 * own width (a vectorized loop as scheduled may mark either), 4, 8 or 16
 * bytes. */
static bool check_async_copy(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  const ir_buffer *buf = s->store.buf;
  const ir_expr *value = s->store.value;
  int lanes = s->store.lanes > 1 ? s->store.lanes : 1;
  int64_t bytes = lanes * (int64_t)ts_dtype_size(buf->dtype);
  if (buf->scope != SCOPE_SHARED || value->kind != E_LOAD ||
      value->load.buf->scope != SCOPE_GLOBAL)
    return fail(v, "asynchronous copy not from global to shared memory:",
                buf->name);
  if (!vf->marks && (value->load.lanes > 1 ? value->load.lanes : 1) != lanes)
    return fail(v, "asynchronous copy of another width than its load:",
                buf->name);
  if (bytes != 4 && bytes != 8 && bytes != 16)
    return fail(v, "asynchronous copy of no 4, 8 or 16 bytes:", buf->name);
  vf->vector_slot = value;
  return true;
}

static bool check_store(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  const ir_buffer *buf = s->store.buf;
  const ir_expr *value = s->store.value;
  if (buf == vf->k->A || buf == vf->k->B)
    return fail(v, "store to input buffer", buf->name);
  if (!buffer_visible(vf, buf))
    return fail(v, "store to a buffer outside its allocation:", buf->name);
  if (buf->vector)
    return fail(v, "store to a vector temporary:", buf->name);
  if (value->dtype != buf->dtype)
    return fail(v, "store of another element type than its buffer's:",
                buf->name);
  if (s->store.async)
    return check_async_copy(v, s);
  if (!vf->marks && s->store.lanes > 1 &&
      (value->kind != E_VECTOR || value->vector.n != s->store.lanes))
    return fail(v, "vector store of another number of lanes:", buf->name);
  vf->vector_slot = s->store.lanes > 1 ? value : NULL;
  return true;
}

/* A buffer comes into scope; a vector temporary's is filled whole by one
 * vector load of its type. */
static bool check_alloc(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  const ir_buffer *buf = s->alloc.buf;
  const ir_expr *init = s->alloc.init;
  if (vf->nbufs == MAX_SCOPE)
    return fail(v, "allocations nested too deep at", buf->name);
  if (buf->vector != (init != NULL) ||
      (init && (init->kind != E_LOAD || init->load.lanes != buf->shape[0] ||
                buf->ndim != 1 || init->dtype != buf->dtype)))
    return fail(v, "vector temporary not filled by one vector load of its "
                "type:", buf->name);
  vf->bufs[vf->nbufs++] = buf;
  vf->vector_slot = init;
  return true;
}

/* The loop's body as scheduled, with its variable, and then the lanes,
 * which must not use it. */
static bool check_lanes(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  if (!enter_loop(v, s->lanes.loop))
    return false;
  vf->marks = true;
  ir_visit_stmt(v, s->lanes.body);
  vf->marks = false;
  vf->nvars--;
  ir_visit_stmt(v, s->lanes.expanded);
  return false; /* the children are checked */
}

static bool check_mma(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  ir_buffer *const *buf = s->mma.buf;
  const mma_instr *in = mma_instr_for(buf[MMA_A]->dtype);
  if (!in || buf[MMA_B]->dtype != buf[MMA_A]->dtype ||
      buf[MMA_ACC]->dtype != TS_F32)
    return fail(v, "tensor-core instruction for no operand types it has:",
                buf[MMA_A]->name);
  for (int w = 0; w < 3; w++) {
    const ir_buffer *b = buf[w];
    const ir_expr *last = s->mma.idx[w][b->ndim - 1];
    if (b->scope != SCOPE_LOCAL || b->vector || !buffer_visible(vf, b))
      return fail(v, "tensor-core operand not a local buffer in scope:",
                  b->name);
    if (last->kind != E_INT ||
        last->ival + in->frag[w].regs > b->shape[b->ndim - 1])
      return fail(v, "tensor-core operand without room for a lane's "
                  "registers:", b->name);
  }
  const int64_t *blk = vf->k->block;
  if ((blk[0] * blk[1] * blk[2]) % MMA_LANES != 0 || vf->k->min_arch < 80)
    return fail(v, "tensor-core instruction in a kernel of partial warps or "
                "built for an architecture before sm_80:", buf[MMA_A]->name);
  return true;
}

/* A fragment load: 16-bit elements from a shared buffer into a local one
 * with room for two registers a matrix, in whole warps on sm_80 or newer
 * (ldmatrix itself is sm_75's). */
static bool check_ldmatrix(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  const ir_buffer *frag = s->ldsm.frag;
  const ir_expr *src = s->ldsm.src, *last = s->ldsm.idx[frag->ndim - 1];
  int m = s->ldsm.matrices;
  if (src->kind != E_LOAD || src->load.buf->scope != SCOPE_SHARED ||
      src->load.lanes > 1 || src->load.buf->dtype != frag->dtype ||
      ts_dtype_size(frag->dtype) != 2)
    return fail(v, "ldmatrix not of 16-bit elements of a shared buffer into "
                "a fragment of their type:", frag->name);
  if (frag->scope != SCOPE_LOCAL || frag->vector || !buffer_visible(vf, frag))
    return fail(v, "ldmatrix into a buffer not local or not in scope:",
                frag->name);
  if ((m != 1 && m != 2 && m != 4) || last->kind != E_INT ||
      last->ival + 2 * m > frag->shape[frag->ndim - 1])
    return fail(v, "ldmatrix without room for a lane's registers:",
                frag->name);
  const int64_t *blk = vf->k->block;
  if ((blk[0] * blk[1] * blk[2]) % MMA_LANES != 0 || vf->k->min_arch < 80)
    return fail(v, "ldmatrix in a kernel of partial warps or built for an "
                "architecture before sm_80:", frag->name);
  return true;
}

/* A matrix store: 16-bit elements into a shared buffer in scope, 1, 2 or
 * 4 matrices of two values a lane, in whole warps on sm_90. */
static bool check_stmatrix(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  const ir_expr *dst = s->stsm.dst;
  int m = s->stsm.matrices;
  if (dst->kind != E_LOAD || dst->load.buf->scope != SCOPE_SHARED ||
      dst->load.lanes > 1 || ts_dtype_size(dst->load.buf->dtype) != 2 ||
      !buffer_visible(vf, dst->load.buf))
    return fail(v, "stmatrix not into 16-bit elements of a shared buffer "
                "in scope:", dst->kind == E_LOAD ? dst->load.buf->name : "?");
  if (m != 1 && m != 2 && m != 4)
    return fail(v, "stmatrix not of 1, 2 or 4 matrices:",
                dst->load.buf->name);
  const int64_t *blk = vf->k->block;
  if ((blk[0] * blk[1] * blk[2]) % MMA_LANES != 0 || vf->k->min_arch < 90)
    return fail(v, "stmatrix in a kernel of partial warps or built for an "
                "architecture before sm_90:", dst->load.buf->name);
  return true;
}

static bool check_accumulators(ir_visitor *v, const ir_buffer *acc) {
  if (acc->scope != SCOPE_LOCAL || acc->vector || acc->dtype != TS_F32 ||
      !buffer_visible(v->ctx, acc))
    return fail(v, "wgmma accumulators not a local fp32 buffer in scope:",
                acc->name);
  return true;
}

/* wgmma's a from registers: a local buffer of the operands' type in
 * scope, with room for a lane's registers from src on, for an
 * instruction that takes a from registers. */
static bool check_register_operand(ir_visitor *v, const mma_instr *in,
                                   const ir_expr *src) {
  const ir_buffer *b = src->load.buf;
  const ir_expr *last = src->load.idx[b->ndim - 1];
  int regs = in->frag[MMA_A].regs;
  if (regs == 0 || b->vector || !b->async_read || b->dtype != in->ab ||
      src->load.lanes > 1 ||
      !buffer_visible(v->ctx, b) || last->kind != E_INT || last->ival < 0 ||
      last->ival + regs > b->shape[b->ndim - 1])
    return fail(v, "wgmma register operand not a local buffer read "
                "asynchronously (async_read), in scope, of its type, with "
                "room for a lane's registers, for an instruction that takes "
                "a from registers:", b->name);
  return true;
}

static bool check_wgmma(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  const mma_instr *in = s->wgmma.in;
  const ir_buffer *acc = s->wgmma.acc;
  if (!in || !in->warpgroup)
    return fail(v, "wgmma without a warpgroup's instruction:", acc->name);
  if (!check_accumulators(v, acc))
    return false;
  for (int w = 0; w < 2; w++) {
    const ir_expr *src = s->wgmma.src[w];
    const ir_buffer *b = src->kind == E_LOAD ? src->load.buf : NULL;
    if (w == 0 && b && b->scope == SCOPE_LOCAL) {
      if (!check_register_operand(v, in, src))
        return false;
      continue;
    }
    if (!b || b->scope != SCOPE_SHARED || !buffer_visible(vf, b) ||
        b->swizzle != 8 || b->dtype != in->ab || src->load.lanes > 1)
      return fail(v, "wgmma operand not a scalar load of a shared buffer "
                  "in scope, of its type, swizzled in 128-byte rows:",
                  b ? b->name : acc->name);
  }
  const ir_expr *last = s->wgmma.idx[acc->ndim - 1];
  if (last->kind != E_INT || last->ival < 0 ||
      last->ival + in->frag[MMA_ACC].regs > acc->shape[acc->ndim - 1])
    return fail(v, "wgmma accumulators without room for a lane's "
                "registers:", acc->name);
  const int64_t *blk = vf->k->block;
  if ((blk[0] * blk[1] * blk[2]) % WGMMA_LANES != 0)
    return fail(v, "wgmma in a kernel of partial warpgroups:", acc->name);
  if (vf->k->min_arch < 90 || !vf->k->arch_specific)
    return fail(v, "wgmma in a kernel not built for sm_90a:", acc->name);
  return true;
}

/* Before a statement's children: its own checks, and the loop variable or
 * buffer it brings into scope. */
static bool enter(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  vf->vector_slot = NULL;
  switch (s->kind) {
  case S_FOR:
    if (s->for_.loop->kind == TS_VECTORIZED)
      return fail(v, "vectorized loop not expanded into lanes:",
                  s->for_.loop->name);
    return enter_loop(v, s->for_.loop);
  case S_STORE:
    return check_store(v, s);
  case S_ALLOC:
    return check_alloc(v, s);
  case S_LANES:
    return check_lanes(v, s);
  case S_COMPUTE:
    return fail(v, "compute statement left after lowering", "C");
  case S_MMA:
    return check_mma(v, s);
  case S_LDMATRIX:
    return check_ldmatrix(v, s);
  case S_STMATRIX:
    return check_stmatrix(v, s);
  case S_WGMMA:
    return check_wgmma(v, s);
  case S_WGMMA_SYNC:
    return check_accumulators(v, s->wait.acc);
  default:
    return true;
  }
}

/* After its children: the statement's scope ends. */
static void leave(ir_visitor *v, const ir_stmt *s) {
  verifier *vf = v->ctx;
  if (s->kind == S_FOR)
    vf->nvars--;
  else if (s->kind == S_ALLOC)
    vf->nbufs--;
}

const char *lower_verify(ts_arena *a, const ir_kernel *k) {
  verifier vf = {.a = a, .k = k};
  ir_visitor v = {.expr = check_expr, .stmt = enter, .stmt_post = leave,
                  .ctx = &vf};
  ir_visit_stmt(&v, k->body);
  return vf.error;
}
