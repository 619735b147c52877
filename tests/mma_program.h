/*
 * A hand-built program of tensor-core instructions, until lowering makes
 * them: one warp computes a 32 x 16 tile of C over K = 48, as 2 x 2
 * instruction tiles per k step, filling its fragments from global memory
 * by the PTX ISA's layouts (mma.h) written as index expressions of the
 * lane, as lowering will write them.  A planted mistake can swap a
 * fragment's lane coordinates, leave one lane out of the instruction, or
 * skip the accumulators' initialization.
 */
#ifndef TS_TEST_MMA_PROGRAM_H
#define TS_TEST_MMA_PROGRAM_H

#include "base/dtype.h"
#include "ir/mma.h"
#include "ir/program_ir.h"
#include "ir/visit.h"

enum { MMA_M = 32, MMA_N = 16, MMA_K = 48, MMA_TILES = 2 };

typedef enum {
  MMA_RIGHT,          /* as the ISA lays the fragments out */
  MMA_WRONG_ROW_A,    /* a's row from lane % 4 where the ISA has lane / 4 */
  MMA_LANE_LEFT_OUT,  /* lane 31 skips the instruction */
  MMA_NO_INIT,        /* the accumulators never set to 0 */
} mma_plant;

typedef struct {
  ts_program *p;
  ts_arena *a;
  ir_var *lane;
  int nloops;
} mma_builder;

static inline ir_expr *mma_int(mma_builder *mb, int64_t v) {
  return ir_int(mb->a, v);
}

static inline ts_loop *mma_loop(mma_builder *mb, const char *name,
                                int64_t extent, bool reduce) {
  return ir_new_loop(mb->a, mb->nloops++, name, extent, reduce, NULL);
}

/* base + g * g_coef + t * t_coef + off, with g = lane / 4, t = lane % 4. */
static inline ir_expr *mma_lane_coord(mma_builder *mb, ir_expr *base,
                                      int g_coef, int t_coef, int off) {
  ir_expr *lane = ir_varref(mb->a, mb->lane);
  ir_expr *g = ir_binary(mb->a, E_DIV, lane, mma_int(mb, 4));
  ir_expr *t = ir_binary(mb->a, E_MOD, lane, mma_int(mb, 4));
  ir_expr *e = ir_add(mb->a, base, mma_int(mb, off));
  e = ir_add(mb->a, e, ir_mul(mb->a, g, mma_int(mb, g_coef)));
  return ir_add(mb->a, e, ir_mul(mb->a, t, mma_int(mb, t_coef)));
}

/* Operand w's element (row, col) of register r in its tile at (r0, c0);
 * with `swap`, the row's coefficients of g and t exchanged. */
static inline void mma_frag_coord(mma_builder *mb, const mma_fragment *f,
                                  int r, ir_expr *r0, ir_expr *c0, bool swap,
                                  ir_expr **row, ir_expr **col) {
  *row = mma_lane_coord(mb, r0, swap ? f->t_row : f->g_row,
                        swap ? f->g_row : f->t_row, f->row_of[r]);
  *col = mma_lane_coord(mb, c0, f->g_col, f->t_col, f->col_of[r]);
}

static inline ir_stmt *mma_seq(mma_builder *mb, ir_stmt **items, int n) {
  return ir_new_seq(mb->a, items, n);
}

/* frag[r] = src[row, col] for each register of operand w. */
static inline ir_stmt *mma_fill(mma_builder *mb, const mma_instr *in, int w,
                                ir_buffer *frag, ir_buffer *src, ir_expr *r0,
                                ir_expr *c0, bool swap) {
  ir_stmt *items[MMA_MAX_REGS];
  for (int r = 0; r < in->frag[w].regs; r++) {
    ir_expr *idx[2], *reg = mma_int(mb, r);
    mma_frag_coord(mb, &in->frag[w], r, r0, c0, swap, &idx[0], &idx[1]);
    items[r] = ir_new_store(mb->a, frag, &reg, ir_load(mb->a, src, idx));
  }
  return mma_seq(mb, items, in->frag[w].regs);
}

/* for mi, nj: body(mi, nj), with the loops' variables. */
static inline ir_stmt *mma_tiles(mma_builder *mb, ts_loop *mi, ts_loop *nj,
                                 ir_stmt *body) {
  return ir_new_for(mb->a, mi, ir_new_for(mb->a, nj, body));
}

/* The whole program for operands of type ab. */
static inline ts_program *mma_program(ts_dtype ab, mma_plant plant) {
  ts_program *p = calloc(1, sizeof(*p));
  ts_arena_init(&p->arena);
  mma_builder mb = {.p = p, .a = &p->arena};
  ts_arena *a = mb.a;
  const mma_instr *in = mma_instr_for(ab);
  p->def = ts_gemm_make(MMA_M, MMA_N, MMA_K);
  p->def.a_type = p->def.b_type = ab;
  p->name = "mma_by_hand";
  p->entry = "tessel_mma_by_hand";
  p->errmsg = strdup("");
  int64_t ak[2] = {MMA_M, MMA_K}, kb[2] = {MMA_K, MMA_N}, mn[2] = {MMA_M, MMA_N};
  ir_kernel *k = &p->k;
  k->A = ir_new_buffer(a, "A", SCOPE_GLOBAL, ab, 2, ak, NULL);
  k->B = ir_new_buffer(a, "B", SCOPE_GLOBAL, ab, 2, kb, NULL);
  k->C = ir_new_buffer(a, "C", SCOPE_GLOBAL, TS_F32, 2, mn, NULL);
  int64_t acc_shape[3] = {MMA_TILES, MMA_TILES, 4};
  int64_t a_shape[1] = {in->frag[MMA_A].regs}, b_shape[1] = {in->frag[MMA_B].regs};
  ir_buffer *acc = ir_new_buffer(a, "acc", SCOPE_LOCAL, TS_F32, 3, acc_shape, NULL);
  ir_buffer *fa = ir_new_buffer(a, "a", SCOPE_LOCAL, ab, 1, a_shape, NULL);
  ir_buffer *fb = ir_new_buffer(a, "b", SCOPE_LOCAL, ab, 1, b_shape, NULL);

  ts_loop *lane = mma_loop(&mb, "lane", 32, false);
  lane->kind = TS_THREAD_X;
  mb.lane = lane->var;
  ts_loop *ks = mma_loop(&mb, "k.step", MMA_K / in->k, true);
  ts_loop *loops[6];
  for (int i = 0; i < 6; i += 2) {
    loops[i] = mma_loop(&mb, "mi", MMA_TILES, false);
    loops[i + 1] = mma_loop(&mb, "nj", MMA_TILES, false);
    loops[i]->kind = loops[i + 1]->kind = TS_UNROLLED;
  }
  ts_loop *r_init = mma_loop(&mb, "r", 4, false), *r_out = mma_loop(&mb, "r", 4, false);
  r_init->kind = r_out->kind = TS_UNROLLED;
#define V(l) ir_varref(a, (l)->var)

  /* acc[mi][nj][r] = 0 */
  ir_expr *init_idx[3] = {V(loops[0]), V(loops[1]), V(r_init)};
  ir_stmt *init = mma_tiles(&mb, loops[0], loops[1],
      ir_new_for(a, r_init, ir_new_store(a, acc, init_idx, ir_float(a, 0.0f))));

  /* the k step: fragments of A and B, then the instruction */
  ir_expr *mi = V(loops[2]), *nj = V(loops[3]);
  ir_expr *k0 = ir_mul(a, V(ks), mma_int(&mb, in->k));
  ir_expr *zero = mma_int(&mb, 0);
  ir_expr *acc_at[3] = {mi, nj, zero}, *a_at[1] = {zero}, *b_at[1] = {zero};
  ir_buffer *bufs[3] = {acc, fa, fb};
  ir_expr **at[3] = {acc_at, a_at, b_at};
  ir_stmt *mma = ir_new_mma(a, bufs, at);
  if (plant == MMA_LANE_LEFT_OUT)
    mma = ir_new_if(a, ir_binary(a, E_LT, V(lane), mma_int(&mb, 31)), mma, NULL);
  ir_stmt *step[3] = {
      mma_fill(&mb, in, MMA_A, fa, k->A, ir_mul(a, mi, mma_int(&mb, 16)), k0,
               plant == MMA_WRONG_ROW_A),
      mma_fill(&mb, in, MMA_B, fb, k->B, k0, ir_mul(a, nj, mma_int(&mb, 8)),
               false),
      mma};
  ir_stmt *body = ir_new_alloc(a, fa, ir_new_alloc(a, fb, mma_seq(&mb, step, 3)));
  ir_stmt *loop = ir_new_for(a, ks, mma_tiles(&mb, loops[2], loops[3], body));

  /* C[row][col] = acc[mi][nj][r] */
  ir_stmt *stores[4];
  mi = V(loops[4]);
  nj = V(loops[5]);
  for (int r = 0; r < 4; r++) {
    ir_expr *c_at[2], *acc_r[3] = {mi, nj, mma_int(&mb, r)};
    mma_frag_coord(&mb, &in->frag[MMA_ACC], r, ir_mul(a, mi, mma_int(&mb, 16)),
                   ir_mul(a, nj, mma_int(&mb, 8)), false, &c_at[0], &c_at[1]);
    stores[r] = ir_new_store(a, k->C, c_at, ir_load(a, acc, acc_r));
  }
  ir_stmt *out = mma_tiles(&mb, loops[4], loops[5], mma_seq(&mb, stores, 4));
#undef V
  ir_stmt *all[3] = {init, loop, out};
  ir_stmt *per_thread = plant == MMA_NO_INIT ? mma_seq(&mb, all + 1, 2)
                                             : mma_seq(&mb, all, 3);
  k->body = ir_new_for(a, lane, ir_new_alloc(a, acc, per_thread));
  for (int d = 0; d < 3; d++)
    k->grid[d] = k->block[d] = 1;
  k->block[0] = 32;
  k->entry = p->entry;
  k->nvars = mb.nloops;
  k->min_arch = 80;
  p->nkernels = 1;
  p->order = ts_arena_alloc(a, sizeof(*p->order));
  if (p->order && ir_kernel_set_params(a, k))
    p->order[0] = k;
  p->status = a->failed ? TS_ERR_NO_MEMORY : TS_OK;
  return p;
}

/* C = op(A) op(B) in double, from A and B rounded to their type. */
static inline void mma_reference(ts_dtype ab, const float *A, const float *B,
                                 double *C) {
  for (int i = 0; i < MMA_M; i++)
    for (int j = 0; j < MMA_N; j++) {
      double sum = 0;
      for (int k = 0; k < MMA_K; k++) {
        float x = A[i * MMA_K + k], y = B[k * MMA_N + j];
        if (ab == TS_F32) {
          x = mma_round_tf32(x);
          y = mma_round_tf32(y);
        } else {
          x = ts_round_to(ab, x);
          y = ts_round_to(ab, y);
        }
        sum += (double)x * y;
      }
      C[i * MMA_N + j] = sum;
    }
}

#endif
