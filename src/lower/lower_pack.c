/*
 * ts_pack's kernel: op(A) or op(B) copied into its view of the workspace,
 * k-major and rounded as the math rounds, launched before the schedule's
 * kernel.  With P the packed operand as R rows of K (op(A): R = M;
 * op(B): R = N, P[r][k] = op(B)[k][r]):
 *
 *   for each 32 x 32 tile of P (blockIdx.x over rows, blockIdx.y over k):
 *     tile[r][k] = P's element, read along the source's contiguous
 *                  dimension (k, or r where the layout stores the operand
 *                  the other way: the transpose happens in the tile)
 *     barrier
 *     packed[r][k] = round(tile[r][k]), written along k
 *
 * Block (32, 8), four rows a thread.  Reads and writes are both coalesced
 * (a warp touches 32 neighbouring elements) whichever way the source is
 * stored; the tile's rows are padded by one element so that a warp
 * writing a column of it touches 32 banks.
 */
#include "lower.h"

#include "../ir/analysis.h"

enum { TILE = 32, ROWS = 8, MAX_GRID_Y = 65535 };

ir_buffer *lower_packed(const ts_sched *s, int w) {
  ir_buffer *b = w == 0 ? s->A : s->B;
  return b->workspace_view ? b : NULL;
}

/* Element (r, k) of P, in buffer b of operand w: (r, k) for op(A), (k, r)
 * for op(B). */
static void element(int w, ir_expr *r, ir_expr *k, ir_expr *idx[2]) {
  idx[0] = w == 0 ? r : k;
  idx[1] = w == 0 ? k : r;
}

/* Row r0 + rl, column k0 + kl of P inside it. */
static ir_expr *inside(ts_arena *a, const ts_gemm *g, int w, ir_expr *r,
                       ir_expr *k) {
  return ir_and(a, ir_binary(a, E_LT, r, ir_int(a, w == 0 ? g->m : g->n)),
                ir_binary(a, E_LT, k, ir_int(a, g->k)));
}

/* One thread's move of P's element (r0 + rl, k0 + kl) between `from` and
 * `to` (either a global buffer or the tile, indexed (rl, kl)), guarded to
 * lie inside P. */
static ir_stmt *move(lower_ctx *cx, int w, ir_expr *r0, ir_expr *k0,
                     ir_expr *rl, ir_expr *kl, ir_buffer *from,
                     ir_buffer *to, bool round) {
  ts_arena *a = cx->arena;
  ir_expr *r = ir_add(a, r0, rl), *k = ir_add(a, k0, kl);
  ir_expr *local[2] = {rl, kl}, *global[2];
  element(w, r, k, global);
  ir_expr **src = from->scope == SCOPE_GLOBAL ? global : local;
  ir_expr **dst = to->scope == SCOPE_GLOBAL ? global : local;
  ir_expr *value = ir_load(a, from, src);
  if (round)
    value = ir_round_tf32(a, value);
  return ir_new_if(a, inside(a, &cx->s->def, w, r, k),
                   ir_new_store(a, to, dst, value), NULL);
}

bool lower_pack_kernel(lower_ctx *cx, int w, ir_kernel *k) {
  ts_arena *a = cx->arena;
  const ts_sched *s = cx->s;
  const ts_gemm *g = &s->def;
  ir_buffer *in = s->input[w];
  ir_buffer *out = lower_packed(s, w);
  int64_t rows = w == 0 ? g->m : g->n;
  /* Rows on blockIdx.x, which reaches 2^31 - 1; k on y, 65535 tiles. */
  if ((g->k + TILE - 1) / TILE > MAX_GRID_Y)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_pack's kernel takes "
                      "K in tiles of %d on blockIdx.y, at most %d of them; "
                      "K = %lld is too deep to pack", TILE, MAX_GRID_Y,
                      (long long)g->k);
  ts_loop *br = lower_new_loop(cx, "p.r", (rows + TILE - 1) / TILE,
                               TS_BLOCK_X);
  ts_loop *bk = lower_new_loop(cx, "p.k", (g->k + TILE - 1) / TILE,
                               TS_BLOCK_Y);
  ts_loop *tx = lower_new_loop(cx, "p.tx", TILE, TS_THREAD_X);
  ts_loop *ty = lower_new_loop(cx, "p.ty", ROWS, TS_THREAD_Y);
  ts_loop *q[2] = {lower_new_loop(cx, "p.load", TILE / ROWS, TS_UNROLLED),
                   lower_new_loop(cx, "p.store", TILE / ROWS, TS_UNROLLED)};
  int64_t shape[2] = {TILE, TILE};
  ir_buffer *tile = ir_new_buffer(a, "P.tile", SCOPE_SHARED, in->dtype, 2,
                                  shape, NULL);
  if (!bk || !br || !tx || !ty || !q[0] || !q[1] || !tile)
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  ir_buffer_set_layout(tile, (int[]){0, 1}, 1);
  ir_expr *r0 = ir_mul(a, ir_varref(a, br->var), ir_int(a, TILE));
  ir_expr *k0 = ir_mul(a, ir_varref(a, bk->var), ir_int(a, TILE));
  ir_expr *lane = ir_varref(a, tx->var);
  /* Step 1. The tile from the source, lanes along its contiguous
   * dimension: k where op(X) is stored k-major, r where it is not. */
  bool k_contiguous = in->strides[w == 0 ? 1 : 0] == 1;
  ir_expr *line[2];
  for (int p = 0; p < 2; p++)
    line[p] = ir_add(a, ir_varref(a, ty->var),
                     ir_mul(a, ir_varref(a, q[p]->var), ir_int(a, ROWS)));
  ir_stmt *load =
      k_contiguous ? move(cx, w, r0, k0, line[0], lane, in, tile, false)
                   : move(cx, w, r0, k0, lane, line[0], in, tile, false);
  /* Step 2. The packed rows from the tile, lanes along k, rounded. */
  bool round = g->math == TS_MATH_TF32 && in->dtype == TS_F32;
  ir_stmt *store = move(cx, w, r0, k0, line[1], lane, tile, out, round);
  ir_stmt *steps[3] = {ir_new_for(a, q[0], load), ir_new_barrier(a),
                       ir_new_for(a, q[1], store)};
  ir_stmt *body = ir_new_alloc(a, tile, ir_new_seq(a, steps, 3));
  body = ir_new_for(a, br, ir_new_for(a, bk, ir_new_for(a, ty,
                                                        ir_new_for(a, tx, body))));
  body = body ? ir_simplify_stmt(a, body) : NULL;
  if (!body || a->failed)
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  *k = (ir_kernel){.body = body, .A = s->input[0], .B = s->input[1],
                   .C = s->C, .W = cx->W};
  k->packed[w] = out;
  k->min_arch = round ? 80 : 0; /* cvt.rna.tf32.f32 */
  lower_launch_dims(body, k);
  return true;
}
