/*
 * tensorize: the three innermost loops of the nest, over i, j and k, become
 * one warp's tensor-core instruction, or one warpgroup's.  The primitive
 * checks that the loops are the instruction's tile (mma.h: mma.sync's 16 x 8
 * x 16 for fp16 and bf16, 16 x 8 x 8 for tf32; wgmma's 64 x n x 16 for fp16
 * and bf16, 64 x n x 8 for tf32) walking C and the operands with unit
 * steps, and marks them; lowering (src/lower/lower_tensorize.c) puts the
 * warp's lanes on threadIdx.x and writes the fragment layouts into the
 * loads and stores around an S_MMA.
 *
 * The loops are given as the instruction's m, n and k.  A warpgroup's
 * instruction may also take them as (j, i, k): its m on C's columns, so
 * that it computes C's transpose, B^T A^T, reading op(B) as its a operand
 * (which wgmma can take from registers, in any layout) and op(A) as its b.
 */
#include "../ir/analysis.h"
#include "../ir/mma.h"
#include "sched.h"

static const char *const axis_names[3] = {"i", "j", "k"};

/* The compute statement's coordinate along axis 0 (i), 1 (j) or 2 (k). */
static ir_expr *coord(const ir_stmt *cs, int axis) {
  return axis == 0 ? cs->compute.i : axis == 1 ? cs->compute.j : cs->compute.k;
}

static bool is_var(const ir_var *v, void *ctx) { return v == ctx; }

/* Checks that `loop`, argument `arg` (0-based after s), walks axis `axis`
 * alone, one element a step, over the instruction's `want` elements. */
static bool check_axis(ts_sched *s, const ir_stmt *cs, const ts_loop *loop,
                       int arg, int axis, int64_t want,
                       const mma_instr *in) {
  const char *fn = "ts_tensorize";
  for (int x = 0; x < 3; x++)
    if ((x == axis) != ir_expr_uses_var(coord(cs, x), loop->var)) {
      sched_fail(s, TS_ERR_BAD_TENSORIZE, loop,
                 "%s: argument %d, loop \"%s\", %s %s; it must walk %s and "
                 "only %s", fn, arg + 2, loop->name,
                 x == axis ? "does not walk" : "walks", axis_names[x],
                 axis_names[axis], axis_names[axis]);
      return false;
    }
  if (loop->extent != want) {
    sched_fail(s, TS_ERR_BAD_TENSORIZE, loop,
               "%s: loop \"%s\" has %lld iteration%s; %s's tile is %lld "
               "along %s: split the loop by %lld and tensorize the inner one"
               "%s", fn, loop->name, (long long)loop->extent,
               loop->extent == 1 ? "" : "s", in->name, (long long)want,
               axis_names[axis], (long long)want,
               in->ab == TS_F32 || in->warpgroup
                   ? ""
                   : " (or tile 64 x n x 16, n a multiple of 8 up to 256, "
                     "for a warpgroup's wgmma)");
    return false;
  }
  ir_expr *base;
  int64_t span;
  if (!ir_region(&s->arena, coord(cs, axis), is_var, loop->var, &base,
                 &span) || span != want) {
    sched_fail(s, TS_ERR_BAD_TENSORIZE, loop,
               "%s: loop \"%s\" does not step %s by 1 (its %lld iterations "
               "span %lld elements); tensorize the innermost loop of the "
               "splits of %s", fn, loop->name, axis_names[axis],
               (long long)want, (long long)span, axis_names[axis]);
    return false;
  }
  return true;
}

static bool is_one_of(const ir_stmt *n, ts_loop *const loops[3]) {
  return n->kind == S_FOR && (n->for_.loop == loops[0] ||
                              n->for_.loop == loops[1] ||
                              n->for_.loop == loops[2]);
}

/* Whether the For of `loop` is one of the three nodes above the last. */
static bool directly_around(const nest_path *p, const ts_loop *loop) {
  for (int d = p->depth - 4; d >= 0 && d < p->depth - 1; d++)
    if (p->node[d]->kind == S_FOR && p->node[d]->for_.loop == loop)
      return true;
  return false;
}

/* Checks that the three loops are the innermost, directly around the
 * computation, in any order. */
static bool check_innermost(ts_sched *s, ts_loop *const loops[3]) {
  nest_path path;
  bool ok = nest_find_compute(s->root, &path) && path.depth >= 4;
  for (int d = path.depth - 4; ok && d < path.depth - 1; d++)
    ok = is_one_of(path.node[d], loops);
  if (ok)
    return true;
  const ts_loop *off = loops[0];
  for (int w = 2; w >= 0; w--)
    if (!directly_around(&path, loops[w]))
      off = loops[w];
  sched_fail(s, TS_ERR_NOT_INNERMOST, off,
             "ts_tensorize: loop \"%s\" is not one of the three loops "
             "directly around the computation; reorder \"%s\", \"%s\" and "
             "\"%s\" innermost", off->name, loops[0]->name, loops[1]->name,
             loops[2]->name);
  return false;
}

/* Checks that no loop takes threadIdx.x, which lowering gives the lanes. */
static bool check_lanes_free(ts_sched *s) {
  for (int i = 0; i < s->nloops; i++) {
    const ts_loop *l = s->loops[i];
    if (l->live && l->kind == TS_THREAD_X)
      return sched_fail(s, TS_ERR_TAG_BOUND_TWICE, l,
                        "ts_tensorize: loop \"%s\" is bound to threadIdx.x, "
                        "which the instruction takes for the lanes of a "
                        "warp (or warpgroup); bind the warps to TS_THREAD_Y or TS_THREAD_Z",
                        l->name) == TS_OK;
    if (l->live && l->kind == TS_TENSORIZED)
      return sched_fail(s, TS_ERR_ALREADY_BOUND, l,
                        "ts_tensorize: loop \"%s\" is already tensorized; a "
                        "nest has one instruction", l->name) == TS_OK;
  }
  return true;
}

/* The instruction for the operands' type, or NULL with the error. */
static const mma_instr *instruction(ts_sched *s) {
  const ts_gemm *g = &s->def;
  const mma_instr *in = g->a_type == g->b_type ? mma_instr_for(g->a_type)
                                                : NULL;
  if (!in) {
    sched_fail(s, TS_ERR_TENSOR_TYPE, NULL,
               "ts_tensorize: A is %s and B is %s; mma.sync multiplies two "
               "operands of one type: f16, bf16, or f32 (as tf32)",
               ts_dtype_name(g->a_type), ts_dtype_name(g->b_type));
    return NULL;
  }
  if (in->tf32 && g->math != TS_MATH_TF32) {
    sched_fail(s, TS_ERR_TENSOR_TYPE, NULL,
               "ts_tensorize: A and B are f32 and the definition asks for "
               "exact fp32 products; tensor cores round f32 to tf32: allow "
               "it with def->math = TS_MATH_TF32 (--dtype tf32)");
    return NULL;
  }
  return in;
}

/* Whether the loops come as (j, i, k): the first walks j and not i. */
static bool transposed(const ir_stmt *cs, const ts_loop *first) {
  return ir_expr_uses_var(cs->compute.j, first->var) &&
         !ir_expr_uses_var(cs->compute.i, first->var);
}

ts_status (ts_tensorize)(ts_sched *s, ts_loop *i, ts_loop *j, ts_loop *k) {
  CHECK_SCHED(s);
  const char *fn = "ts_tensorize";
  ts_loop *loops[3] = {i, j, k};
  const char *names[3] = {"i", "j", "k"};
  for (int w = 0; w < 3; w++)
    if (!sched_check_loop(s, fn, w + 2, names[w], loops[w]) ||
        !sched_require_serial(s, fn, loops[w]) ||
        !sched_require_static(s, fn, loops[w]))
      return s->status;
  if (i == j || j == k || i == k)
    return sched_fail(s, TS_ERR_DUPLICATE_LOOP, i == j || i == k ? i : j,
                      "%s: a loop is given twice; pass the loops over i, j "
                      "and k", fn);
  const mma_instr *in = instruction(s);
  if (!in || !check_lanes_free(s))
    return s->status;
  /* A 64 x n x 16 tile in fp16 or bf16 (64 x n x 8 in tf32) is a
   * warpgroup's wgmma. */
  const mma_instr *wg = mma_instr_for_tile(s->def.a_type, i->extent,
                                           j->extent, k->extent);
  if (wg)
    in = wg;
  /* Check: the loops are the instruction's tile, innermost. */
  nest_path path;
  if (!nest_find_compute(s->root, &path))
    return sched_fail(s, TS_ERR_BAD_ARG, NULL, "%s: the nest has no "
                      "computation", fn);
  const ir_stmt *cs = path.node[path.depth - 1];
  bool swap = transposed(cs, i);
  if (swap && !in->warpgroup)
    return sched_fail(s, TS_ERR_BAD_TENSORIZE, i, "%s: loop \"%s\" walks j "
                      "as the instruction's m; only a warpgroup's wgmma "
                      "computes C's transpose, and loops of %lld x %lld x "
                      "%lld are none of its tiles (64 x n x %d, n a multiple "
                      "of 8 up to 256): pass the loops over i, j and k, or "
                      "split j by 64 for the first", fn, i->name,
                      (long long)i->extent, (long long)j->extent,
                      (long long)k->extent, in->tf32 ? 8 : 16);
  const int axis[3] = {swap ? 1 : 0, swap ? 0 : 1, 2};
  const int64_t tile[3] = {in->m, in->n, in->k};
  for (int w = 0; w < 3; w++)
    if (!check_axis(s, cs, loops[w], w, axis[w], tile[w], in))
      return s->status;
  if (!check_innermost(s, loops))
    return s->status;
  /* Step 1. Mark them. */
  trace_rec rec = {.op = TR_TENSORIZE, .loops = {i->id, j->id, k->id},
                   .nloops = 3};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    for (int w = 0; w < 3; w++) {
      loops[w]->kind = TS_TENSORIZED;
      loops[w]->mma_axis = w;
    }
  return status;
}
