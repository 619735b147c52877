/*
 * Lowering a tensorized nest (ts_tensorize): the reduction pass places the
 * accumulators as for any nest, and calls here for what the instruction
 * changes.  The 32 lanes of a warp become a loop bound to threadIdx.x just
 * inside the launch loops; a lane's accumulators are acc[mi][nj][0..4),
 * the registers the PTX ISA gives it in each 16 x 8 tile of C; the three
 * tensorized loops become the fills of the operand fragments and one
 * S_MMA:
 *
 *   a[r] = op(A)[i0 + row_a(lane, r), k0 + col_a(lane, r)]    r < 8 (or 4)
 *   b[r] = op(B)[k0 + row_b(lane, r), j0 + col_b(lane, r)]    r < 4 (or 2)
 *   mma acc[mi, nj, 0:+4] += a[0:+8] * b[0:+4]
 *
 * and init and epilogue run over a lane's 4 registers with C's row and
 * column from the accumulator's layout.  The layouts (mma.h) are written
 * as index expressions of the lane, so the executor checks every element
 * a lane touches as it checks any access, and the code generator prints
 * them as it prints any.
 *
 * A warpgroup's instruction (wgmma) reads its operands from shared memory
 * itself, by descriptors, or its a from registers where no descriptor
 * can read it (lower_wgmma_operands.c), and leaves its accumulators in
 * registers as mma_acc_coord places them.  Tensorized as (j, i, k) it
 * computes C's transpose, B^T A^T: its a is op(B), its b op(A), its
 * accumulators' rows C's columns (lower_mma_loop, lower_mma_tile).
 */
#include "lower.h"

#include "../ir/analysis.h"

/* g * g_coef + t * t_coef + off, with g = l / 4 and t = l % 4. */
static ir_expr *lane_coord(ts_arena *a, ir_expr *l, int g_coef, int t_coef,
                           int off) {
  ir_expr *g = ir_binary(a, E_DIV, l, ir_int(a, 4));
  ir_expr *t = ir_binary(a, E_MOD, l, ir_int(a, 4));
  return ir_add(a, ir_add(a, ir_mul(a, g, ir_int(a, g_coef)),
                          ir_mul(a, t, ir_int(a, t_coef))),
                ir_int(a, off));
}

/* Row (d = 0) or column (d = 1) in operand w's tile of register r: in a
 * warp's fragment, or for a warpgroup's a in registers, in the 16 rows of
 * warp lane / 32 (mma_wgmma_a_coord). */
static ir_expr *frag_coord(ts_arena *a, const lower_mma *t, int w, int r,
                           int d) {
  const mma_fragment *f = &t->in->frag[w];
  ir_expr *l = ir_varref(a, t->lane->var);
  ir_expr *warp = NULL;
  if (t->in->warpgroup) {
    warp = ir_binary(a, E_DIV, l, ir_int(a, 32));
    l = ir_binary(a, E_MOD, l, ir_int(a, 32));
  }
  if (d == 1)
    return lane_coord(a, l, f->g_col, f->t_col, f->col_of[r]);
  ir_expr *row = lane_coord(a, l, f->g_row, f->t_row, f->row_of[r]);
  return warp ? ir_add(a, row, ir_mul(a, warp, ir_int(a, 16))) : row;
}

const ts_loop *lower_mma_loop(const lower_mma *t, int axis) {
  return axis == 2 || !t->transposed ? t->loop[axis] : t->loop[1 - axis];
}

int64_t lower_mma_tile(const lower_mma *t, int d) {
  return (d == 0) != t->transposed ? t->in->m : t->in->n;
}

/* e with the tile loops of operand w's rows and columns replaced by
 * register r's coordinates: a's (m, k), b's (k, n), the accumulator's
 * (m, n). */
static ir_expr *at_register(ts_arena *a, const lower_mma *t, int w, int r,
                            ir_expr *e) {
  static const int axes[3][2] = {{0, 1}, {0, 2}, {2, 1}};
  for (int d = 0; d < 2 && e; d++)
    e = ir_subst_expr(a, e, lower_mma_loop(t, axes[w][d])->var,
                      frag_coord(a, t, w, r, d));
  return e;
}

static bool is_tensorized(const ir_stmt *n) {
  return n->kind == S_FOR && n->for_.loop->kind == TS_TENSORIZED;
}

bool lower_mma_plan(lower_ctx *cx, const nest_path *path, lower_mma *t) {
  *t = (lower_mma){.depth = -1};
  const ts_sched *s = cx->s;
  int found = 0;
  for (int d = 0; d < path->depth; d++)
    if (is_tensorized(path->node[d])) {
      found++;
      t->depth = t->depth < 0 ? d : t->depth;
    }
  if (!found)
    return true;
  const ir_stmt *cs = path->node[path->depth - 1];
  if (found != 3 || t->depth != path->depth - 4)
    return lower_fail(cx, TS_ERR_NOT_INNERMOST, "ts_lower: the tensorized "
                      "loops are no longer the three directly around the "
                      "computation; call ts_tensorize after every primitive "
                      "that moves them");
  for (int d = t->depth; d < path->depth - 1; d++) {
    const ts_loop *l = path->node[d]->for_.loop;
    int axis = ir_expr_uses_var(cs->compute.i, l->var)   ? 0
               : ir_expr_uses_var(cs->compute.j, l->var) ? 1
                                                         : 2;
    t->loop[axis] = l;
  }
  t->transposed = t->loop[1]->mma_axis == 0;
  t->in = mma_instr_for_tile(s->def.a_type, lower_mma_loop(t, 0)->extent,
                             lower_mma_loop(t, 1)->extent, t->loop[2]->extent);
  if (!t->in)
    return lower_fail(cx, TS_ERR_BAD_TENSORIZE, "ts_lower: the tensorized "
                      "loops' tile %lld x %lld x %lld is no instruction's",
                      (long long)lower_mma_loop(t, 0)->extent,
                      (long long)lower_mma_loop(t, 1)->extent,
                      (long long)t->loop[2]->extent);
  for (int i = 0; i < s->nloops; i++)
    if (s->loops[i]->live && s->loops[i]->kind == TS_THREAD_X)
      return lower_fail(cx, TS_ERR_TAG_BOUND_TWICE, "ts_lower: loop \"%s\" is "
                        "bound to threadIdx.x, which a tensorized nest gives "
                        "the lanes of its warps; bind it to TS_THREAD_Y or "
                        "TS_THREAD_Z", s->loops[i]->name);
  t->lane = lower_new_loop(cx, "lane", mma_lanes(t->in), TS_THREAD_X);
  /* A warpgroup's lane holds up to 128 accumulators: a loop over them
   * (unrolled, so that each is a register) rather than a copy each. */
  t->reg = lower_new_loop(cx, "reg", t->in->frag[MMA_ACC].regs,
                          t->in->warpgroup ? TS_UNROLLED : TS_SERIAL);
  return (t->lane && t->reg) ||
         lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
}

bool lower_mma_acc_index(lower_ctx *cx, const lower_mma *t, ir_expr *const ai,
                         ir_expr *const aj, ir_expr *idx[3]) {
  ts_arena *a = cx->arena;
  const int64_t tile[2] = {lower_mma_tile(t, 0), lower_mma_tile(t, 1)};
  ir_expr *at[2] = {ai, aj};
  for (int d = 0; d < 2; d++) {
    ir_expr *corner = ir_simplify_expr(
        a, ir_subst_expr(a, at[d], t->loop[d]->var, ir_int(a, 0)));
    if (!corner)
      return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
    int64_t div = ir_divisor(corner);
    if (div % tile[d] != 0)
      return lower_fail(cx, TS_ERR_BAD_TENSORIZE, "ts_lower: the tiles of "
                        "the instruction over loop \"%s\" do not start at "
                        "multiples of %lld within the accumulators; split "
                        "%s by a multiple of %lld above it", t->loop[d]->name,
                        (long long)tile[d], d == 0 ? "i" : "j",
                        (long long)tile[d]);
    idx[d] = ir_simplify_expr(
        a, ir_binary(a, E_DIV, corner, ir_int(a, tile[d])));
  }
  idx[2] = ir_varref(a, t->reg->var);
  return (idx[0] && idx[1] && idx[2]) ||
         lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
}

/* wgmma's accumulator layout (mma_acc_coord) as expressions of the lane
 * and the register r = 2 pair + half: row 16 (lane / 32) + lane % 32 / 4
 * + 8 (pair % 2), column pair / 2 * 8 + 2 (lane % 4) + half. */
static ir_expr *wgmma_acc_coord(ts_arena *a, const lower_mma *t,
                                const ts_loop *pair, const ts_loop *half,
                                int d) {
  ir_expr *l = ir_varref(a, t->lane->var), *p = ir_varref(a, pair->var);
  ir_expr *(*op)(ts_arena *, ir_expr_kind, ir_expr *, ir_expr *) = ir_binary;
  if (d == 0)
    return ir_add(a, ir_add(a, ir_mul(a, op(a, E_DIV, l, ir_int(a, 32)),
                                      ir_int(a, 16)),
                            op(a, E_DIV, op(a, E_MOD, l, ir_int(a, 32)),
                               ir_int(a, 4))),
                  ir_mul(a, op(a, E_MOD, p, ir_int(a, 2)), ir_int(a, 8)));
  return ir_add(a, ir_add(a, ir_mul(a, op(a, E_DIV, p, ir_int(a, 2)),
                                    ir_int(a, 8)),
                          ir_mul(a, op(a, E_MOD, l, ir_int(a, 4)),
                                 ir_int(a, 2))),
                ir_varref(a, half->var));
}

ir_stmt *lower_mma_registers(lower_ctx *cx, const lower_mma *t,
                             ir_stmt *body) {
  ts_arena *a = cx->arena;
  ir_stmt *exchanged = t->in->warpgroup && !t->transposed
                           ? lower_exchanged_registers(cx, t, body) : NULL;
  if (exchanged)
    return exchanged;
  if (t->in->warpgroup) {
    /* Registers 2r and 2r + 1 are neighbours in a row of the tile: a
     * vectorized pair, so that C is stored (and read, with beta) 8 bytes
     * at a time where its rows are aligned.  On C's transpose they lie in
     * a column of C, each its own access. */
    ts_loop *pair = lower_new_loop(cx, "reg.pair",
                                   t->in->frag[MMA_ACC].regs / 2,
                                   TS_UNROLLED);
    ts_loop *half = lower_new_loop(cx, "reg.half", 2,
                                   t->transposed ? TS_UNROLLED
                                                 : TS_VECTORIZED);
    if (!pair || !half)
      return NULL;
    for (int d = 0; d < 2 && body; d++)
      body = ir_subst_stmt(a, body, t->loop[d]->var,
                           wgmma_acc_coord(a, t, pair, half,
                                           t->transposed ? 1 - d : d));
    body = body ? ir_subst_stmt(a, body, t->reg->var,
                                ir_add(a, ir_mul(a, ir_varref(a, pair->var),
                                                 ir_int(a, 2)),
                                       ir_varref(a, half->var)))
                : NULL;
    body = body ? ir_new_for(a, half, body) : NULL;
    return body ? ir_new_for(a, pair, body) : NULL;
  }
  /* mma.sync's registers c0, c1 (and c2, c3) are neighbours in a row as
   * well: each such pair a vectorized loop of its own. */
  const mma_fragment *f = &t->in->frag[MMA_ACC];
  ir_stmt *items[MMA_MAX_REGS];
  int n = 0;
  for (int r = 0, step; r < f->regs; r += step) {
    bool pair = r + 1 < f->regs && f->row_of[r] == f->row_of[r + 1] &&
                f->col_of[r + 1] == f->col_of[r] + 1;
    step = pair ? 2 : 1;
    ts_loop *half = pair ? lower_new_loop(cx, "reg.half", 2, TS_VECTORIZED)
                         : NULL;
    if (pair && !half)
      return NULL;
    ir_expr *h = half ? ir_varref(a, half->var) : ir_int(a, 0);
    ir_stmt *x = ir_subst_stmt(a, body, t->reg->var,
                               ir_add(a, ir_int(a, r), h));
    x = x ? ir_subst_stmt(a, x, t->loop[0]->var,
                          frag_coord(a, t, MMA_ACC, r, 0))
          : NULL;
    x = x ? ir_subst_stmt(a, x, t->loop[1]->var,
                          ir_add(a, frag_coord(a, t, MMA_ACC, r, 1), h))
          : NULL;
    if (!x || !(items[n++] = half ? ir_new_for(a, half, x) : x))
      return NULL;
  }
  return ir_new_seq(a, items, n);
}

/* The conjuncts of pred that do not involve `var`. */
static ir_expr *without_var(ts_arena *a, ir_expr *pred, const ir_var *var) {
  if (!pred)
    return NULL;
  if (pred->kind == E_AND)
    return ir_and(a, without_var(a, pred->op.a, var),
                  without_var(a, pred->op.b, var));
  return ir_expr_uses_var(pred, var) ? NULL : pred;
}

/* Whether a conjunct of pred involves both i's and j's tile loops: no
 * operand alone could carry it. */
static const ir_expr *mixed_conjunct(const ir_expr *pred, const lower_mma *t) {
  if (!pred)
    return NULL;
  if (pred->kind == E_AND) {
    const ir_expr *x = mixed_conjunct(pred->op.a, t);
    return x ? x : mixed_conjunct(pred->op.b, t);
  }
  return ir_expr_uses_var(pred, t->loop[0]->var) &&
                 ir_expr_uses_var(pred, t->loop[1]->var)
             ? pred
             : NULL;
}

/* ---- ldmatrix ---------------------------------------------------------------
 *
 * An operand read from a shared cache, at the tile's element plus the
 * tile loops' variables, 16-bit, unguarded, its rows 16-byte aligned: one
 * ldmatrix fills the fragment.  Matrix m is the 8 x 8 block of the tile
 * at register 2m's corner; its 8 rows are stored contiguous along the
 * cache's innermost dimension (`contig`); lane l addresses row l % 8 of
 * matrix l / 8.  .trans where the rows run across the pairs of registers
 * the fragment holds.  Whether it delivers the fragment's elements is
 * checked lane by lane against the layout, not assumed. */

typedef struct {
  ir_expr *base[2]; /* the tile's corner in the cache */
  int contig;       /* the cache's dimension contiguous in memory */
  bool trans;
} ldsm_plan;

/* Matrix m's corner in the tile (the layout's offsets of register 2m). */
static void corner(const mma_fragment *f, int m, int out[2]) {
  out[0] = f->row_of[2 * m];
  out[1] = f->col_of[2 * m];
}

/* Whether ldmatrix (trans or not, rows along `contig`) hands every lane
 * the elements the fragment layout gives it. */
static bool delivers_fragment(const mma_fragment *f, int contig, bool trans) {
  for (int lane = 0; lane < MMA_LANES; lane++)
    for (int m = 0; m < f->regs / 2; m++)
      for (int e = 0; e < 2; e++) {
        int row = trans ? 2 * (lane % 4) + e : lane / 4; /* stored row */
        int pos = trans ? lane / 4 : 2 * (lane % 4) + e; /* along it */
        int at[2], want[2];
        corner(f, m, at);
        at[contig] += pos;
        at[1 - contig] += row;
        mma_coord(f, lane, 2 * m + e, &want[0], &want[1]);
        if (at[0] != want[0] || at[1] != want[1])
          return false;
      }
  return true;
}

static bool plan_ldmatrix(ts_arena *a, const lower_mma *t, int w,
                          const ir_expr *operand, const ir_expr *guard,
                          ldsm_plan *p) {
  static const int axes[2][2] = {{0, 2}, {2, 1}}; /* A: (i, k); B: (k, j) */
  if (guard || operand->kind != E_LOAD || operand->load.lanes > 1)
    return false;
  const ir_buffer *buf = operand->load.buf;
  if (buf->scope != SCOPE_SHARED || buf->ndim != 2 ||
      ts_dtype_size(buf->dtype) != 2 || t->in->frag[w].regs % 2 != 0)
    return false;
  for (int d = 0; d < 2; d++) {
    const ts_loop *l = t->loop[axes[w - MMA_A][d]];
    ir_expr *x = operand->load.idx[d];
    for (int q = 0; q < 2; q++)
      x = ir_subst_expr(a, x, t->loop[axes[w - MMA_A][q]]->var, ir_int(a, 0));
    p->base[d] = ir_simplify_expr(a, x);
    ir_expr *step = ir_simplify_expr(
        a, ir_sub(a, operand->load.idx[d], p->base[d]));
    if (!step || step->kind != E_VAR || step->var != l->var)
      return false;
  }
  p->contig = buf->strides[1] == 1 ? 1 : buf->strides[0] == 1 ? 0 : -1;
  if (p->contig < 0 || ir_divisor(p->base[p->contig]) % 8 != 0 ||
      buf->strides[1 - p->contig] % 8 != 0)
    return false;
  for (int trans = 0; trans < 2; trans++)
    if (delivers_fragment(&t->in->frag[w], p->contig, trans)) {
      p->trans = trans;
      return true;
    }
  return false;
}

/* The row lane addresses: the corner of matrix (lane / 8) % matrices,
 * written as bits of it times the corners' steps (checked affine), plus
 * lane % 8 across the stored rows. */
static ir_expr *row_address(ts_arena *a, const lower_mma *t, int w,
                            const ldsm_plan *p, int d) {
  const mma_fragment *f = &t->in->frag[w];
  int nm = f->regs / 2, c0[2], c1[2], c2[2], c3[2];
  corner(f, 0, c0);
  corner(f, nm > 1 ? 1 : 0, c1);
  corner(f, nm > 2 ? 2 : 0, c2);
  corner(f, nm > 2 ? 3 : 0, c3);
  if (nm > 2 && c3[d] != c1[d] + c2[d] - c0[d])
    return NULL;
  ir_expr *lane = ir_varref(a, t->lane->var);
  ir_expr *bit0 = ir_binary(a, E_MOD, ir_binary(a, E_DIV, lane, ir_int(a, 8)),
                            ir_int(a, 2));
  ir_expr *bit1 = ir_binary(a, E_MOD, ir_binary(a, E_DIV, lane, ir_int(a, 16)),
                            ir_int(a, 2));
  ir_expr *e = ir_add(a, p->base[d], ir_int(a, c0[d]));
  e = ir_add(a, e, ir_mul(a, bit0, ir_int(a, c1[d] - c0[d])));
  e = ir_add(a, e, ir_mul(a, bit1, ir_int(a, c2[d] - c0[d])));
  if (d != p->contig)
    e = ir_add(a, e, ir_binary(a, E_MOD, lane, ir_int(a, 8)));
  return ir_simplify_expr(a, e);
}

/* The ldmatrix filling operand w's fragment, or NULL where it does not
 * apply. */
static ir_stmt *ldmatrix_fill(lower_ctx *cx, const lower_mma *t, int w,
                              ir_buffer *frag, ir_expr *const *frag_idx,
                              const ir_expr *operand, const ir_expr *guard) {
  ts_arena *a = cx->arena;
  ldsm_plan p;
  if (!plan_ldmatrix(a, t, w, operand, guard, &p))
    return NULL;
  ir_expr *idx[2] = {row_address(a, t, w, &p, 0), row_address(a, t, w, &p, 1)};
  if (!idx[0] || !idx[1])
    return NULL;
  return ir_new_ldmatrix(a, frag, frag_idx, ir_load(a, operand->load.buf, idx),
                         t->in->frag[w].regs / 2, p.trans);
}

/* ---- Operand fragments ------------------------------------------------------ */

ir_stmt *lower_mma_fill(lower_ctx *cx, const lower_mma *t, int w,
                        ir_buffer *frag, ir_expr *const *prefix,
                        ir_expr *operand, ir_expr *guard) {
  ts_arena *a = cx->arena;
  int np = frag->ndim - 1;
  ir_expr *idx[IR_MAX_DIMS];
  for (int d = 0; d < np; d++)
    idx[d] = prefix[d];
  idx[np] = ir_int(a, 0);
  ir_stmt *ldsm = t->in->warpgroup
                      ? NULL : ldmatrix_fill(cx, t, w, frag, idx, operand,
                                             guard);
  if (ldsm)
    return ldsm;
  ir_stmt *items[MMA_MAX_REGS];
  int n = t->in->frag[w].regs;
  for (int r = 0; r < n; r++) {
    idx[np] = ir_int(a, r);
    ir_stmt *load = ir_new_store(a, frag, idx,
                                 at_register(a, t, w, r, operand));
    items[r] = guard ? ir_new_if(a, at_register(a, t, w, r, guard), load,
                                 ir_new_store(a, frag, idx, ir_float(a, 0)))
                     : load;
  }
  return ir_new_seq(a, items, n);
}

/* ---- Hoisting the fills ------------------------------------------------------
 *
 * The unrolled spatial loops directly above the instruction's (a warp's
 * tiles, mi and nj) would refill each fragment for every tile even where
 * the operand does not change with it: A's fragment is the same for every
 * nj.  So each fragment gets a dimension per such loop its operand uses,
 * is filled over those loops first, and the instructions follow: all the
 * loads of a k step before its multiplies, which the compiler can then
 * overlap with the previous step's. */

typedef struct {
  int first;                     /* path index of the outermost tile loop */
  const ts_loop *uses[2][NEST_MAX_DEPTH]; /* by fragment: the loops it needs */
  int nuses[2];
} hoist;

bool lower_unrolled_around(const nest_path *p, int d) {
  const ir_stmt *n = p->node[d];
  return n->kind == S_FOR && n->for_.loop->kind == TS_UNROLLED &&
         n->for_.body == p->node[d + 1];
}

static bool is_tile_loop(const nest_path *p, int d) {
  return lower_unrolled_around(p, d) && !p->node[d]->for_.loop->reduce;
}

static void plan_hoist(const lower_mma *t, const nest_path *p, int top,
                       ir_expr *const operand[2], ir_expr *const guard[2],
                       hoist *h) {
  h->first = t->depth;
  while (h->first - 1 >= top && is_tile_loop(p, h->first - 1))
    h->first--;
  for (int w = 0; w < 2; w++) {
    h->nuses[w] = 0;
    for (int d = h->first; d < t->depth; d++) {
      const ts_loop *l = p->node[d]->for_.loop;
      if (ir_expr_uses_var(operand[w], l->var) ||
          (guard[w] && ir_expr_uses_var(guard[w], l->var)))
        h->uses[w][h->nuses[w]++] = l;
    }
  }
}

/* Operand w's fragment, a dimension per loop it needs, then its
 * registers. */
static ir_buffer *fragment(ts_arena *a, const lower_mma *t, const hoist *h,
                           int w, ts_dtype type) {
  int64_t shape[IR_MAX_DIMS];
  int n = h->nuses[w];
  if (n + 1 > IR_MAX_DIMS)
    return NULL;
  for (int d = 0; d < n; d++)
    shape[d] = h->uses[w][d]->extent;
  shape[n] = t->in->frag[MMA_A + w].regs;
  return ir_new_buffer(a, w ? "b_frag" : "a_frag", SCOPE_LOCAL, type, n + 1,
                       shape, NULL);
}

/* The fill of fragment w over fresh copies of the loops it needs. */
static ir_stmt *hoisted_fill(lower_ctx *cx, const lower_mma *t,
                             const hoist *h, int w, ir_buffer *frag,
                             ir_expr *operand, ir_expr *guard) {
  ts_arena *a = cx->arena;
  ir_expr *prefix[IR_MAX_DIMS];
  for (int d = 0; d < h->nuses[w]; d++)
    prefix[d] = ir_varref(a, h->uses[w][d]->var);
  ir_stmt *body = lower_mma_fill(cx, t, MMA_A + w, frag, prefix, operand,
                                 guard);
  for (int d = h->nuses[w] - 1; d >= 0 && body; d--) {
    const ts_loop *l = h->uses[w][d];
    ts_loop *copy = lower_new_loop(cx, l->name, l->extent, TS_UNROLLED);
    if (!copy)
      return NULL;
    copy->made_by = l->made_by; /* the same loop, replayed */
    body = ir_new_for(a, copy, ir_subst_stmt(a, body, l->var,
                                             ir_varref(a, copy->var)));
  }
  return body;
}

/* The instructions over the tile loops, each fragment indexed by the
 * loops it needs. */
static ir_stmt *mma_nest(ts_arena *a, const lower_mma *t, const hoist *h,
                         const nest_path *p, ir_buffer *const bufs[3],
                         ir_expr *const acc_idx[3]) {
  ir_expr *zero = ir_int(a, 0);
  ir_expr *acc_at[3] = {acc_idx[0], acc_idx[1], zero};
  ir_expr *at[2][IR_MAX_DIMS];
  for (int w = 0; w < 2; w++) {
    for (int d = 0; d < h->nuses[w]; d++)
      at[w][d] = ir_varref(a, h->uses[w][d]->var);
    at[w][h->nuses[w]] = zero;
  }
  ir_expr **idx[3] = {acc_at, at[0], at[1]};
  ir_stmt *body = ir_new_mma(a, bufs, idx);
  for (int d = t->depth - 1; d >= h->first && body; d--)
    body = ir_new_for(a, p->node[d]->for_.loop, body);
  return body;
}

ir_stmt *lower_mma_update(lower_ctx *cx, const lower_mma *t,
                          const nest_path *path, int top,
                          ir_expr *const operand[2], ir_expr *pred,
                          ir_buffer *acc, ir_expr *const acc_idx[3],
                          int *at) {
  ts_arena *a = cx->arena;
  if (t->in->warpgroup)
    return lower_wgmma_update(cx, t, path, top, operand, pred, acc, acc_idx,
                              at);
  if (mixed_conjunct(pred, t)) {
    lower_fail(cx, TS_ERR_BAD_TENSORIZE, "ts_lower: a bound of the "
               "tensorized computation involves both loop \"%s\" and loop "
               "\"%s\"; neither operand alone can carry it",
               t->loop[0]->name, t->loop[1]->name);
    return NULL;
  }
  /* A's fill is guarded by the conjuncts without j, B's without i. */
  ir_expr *guard[2] = {without_var(a, pred, t->loop[1]->var),
                       without_var(a, pred, t->loop[0]->var)};
  hoist h;
  plan_hoist(t, path, top, operand, guard, &h);
  ir_buffer *bufs[3] = {acc, fragment(a, t, &h, 0, operand[0]->dtype),
                        fragment(a, t, &h, 1, operand[1]->dtype)};
  if (!bufs[1] || !bufs[2])
    return NULL;
  ir_stmt *items[3] = {
      hoisted_fill(cx, t, &h, 0, bufs[1], operand[0], guard[0]),
      hoisted_fill(cx, t, &h, 1, bufs[2], operand[1], guard[1]),
      mma_nest(a, t, &h, path, bufs, acc_idx)};
  if (!items[0] || !items[1] || !items[2])
    return NULL;
  ir_stmt *body = ir_new_seq(a, items, 3);
  for (int w = 2; w >= 1; w--)
    body = ir_new_alloc(a, bufs[w], body);
  *at = h.first;
  return body;
}

/* s with the lane loop just inside its launch loops. */
ir_stmt *lower_mma_lanes(lower_ctx *cx, const lower_mma *t, ir_stmt *s) {
  ts_arena *a = cx->arena;
  if (s->kind != S_FOR || !ir_kind_is_launch(s->for_.loop->kind))
    return ir_new_for(a, t->lane, s);
  ir_stmt *body = lower_mma_lanes(cx, t, s->for_.body);
  if (!body)
    return NULL;
  ir_stmt *copy = ir_new_for(a, s->for_.loop, body);
  if (copy)
    copy->for_.index = s->for_.index;
  return copy;
}
