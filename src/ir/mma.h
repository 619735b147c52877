/*
 * The tensor-core instructions an S_MMA statement stands for: their tile
 * shapes, which element of a tile each lane's registers hold (the PTX ISA's
 * fragment layouts), and what one warp's instruction computes, for the
 * reference executor.  Lowering writes the fragment layouts into index
 * expressions; the executor and the tests use them as numbers.
 */
#ifndef TS_MMA_H
#define TS_MMA_H

#include <stdbool.h>

#include "tessel.h"

enum { MMA_ACC, MMA_A, MMA_B }; /* an S_MMA's operands, in order */
enum { MMA_LANES = 32, MMA_MAX_REGS = 8 };

/* Where a lane's register r of one operand lies in its tile: with
 * g = lane / 4 and t = lane % 4,
 *   row = g * g_row + t * t_row + row_of[r],
 *   col = g * g_col + t * t_col + col_of[r]. */
typedef struct {
  int regs; /* elements a lane holds */
  int g_row, t_row, g_col, t_col;
  int row_of[MMA_MAX_REGS], col_of[MMA_MAX_REGS];
} mma_fragment;

typedef struct {
  const char *name;      /* "m16n8k16" */
  const char *ptx_types; /* the instruction's type suffix: ".f32.f16.f16.f32" */
  ts_dtype ab;           /* the operands' element type */
  bool tf32;             /* fp32 operands rounded to tf32 */
  int m, n, k;
  /* The accumulator (m x n), a (m x k, row-major) and b (k x n). */
  mma_fragment frag[3];
} mma_instr;

/* The instruction for operands of type ab (fp16, bf16: m16n8k16; fp32:
 * m16n8k8 in tf32); NULL for none. */
const mma_instr *mma_instr_for(ts_dtype ab);

/* Row and column in operand w's tile of register r of `lane`. */
void mma_coord(const mma_fragment *f, int lane, int r, int *row, int *col);

/* x rounded to tf32 (10 significand bits) to nearest, ties away from zero,
 * as cvt.rna.tf32.f32 rounds; infinities and NaNs unchanged. */
float mma_round_tf32(float x);

/* One warp's instruction: acc[lane][r] += sum over the tile's k of
 * a * b, the operands gathered from every lane's registers by the
 * fragment layouts, products and sums in fp32 (tf32 operands rounded
 * first). */
void mma_warp(const mma_instr *in, float acc[MMA_LANES][MMA_MAX_REGS],
              const float a[MMA_LANES][MMA_MAX_REGS],
              const float b[MMA_LANES][MMA_MAX_REGS]);

#endif
