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

#include "tessel/types.h"

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

typedef struct mma_instr_s {
  const char *name;      /* "m16n8k16", "m64n128k16" */
  const char *ptx_types; /* the instruction's type suffix: ".f32.f16.f16.f32" */
  ts_dtype ab;           /* the operands' element type */
  bool tf32;             /* fp32 operands rounded to tf32 */
  int m, n, k;
  /* The accumulator (m x n), a (m x k, row-major) and b (k x n).  For a
   * warpgroup's instruction frag[MMA_ACC].regs is set (mma_acc_coord has
   * its layout), and frag[MMA_A] where lowering may give it a from
   * registers (tf32: mma_wgmma_a_coord); b is read from shared memory. */
  mma_fragment frag[3];
  /* wgmma.mma_async (sm_90a): the 128 lanes of a warpgroup, a and b read
   * from shared memory through descriptors, issued asynchronously. */
  bool warpgroup;
} mma_instr;

enum { WGMMA_LANES = 128 };

/* The lanes an instruction takes: 32, or 128 for a warpgroup's. */
int mma_lanes(const mma_instr *in);

/* The instruction whose tile is m x n x k for operands of type ab:
 * mma.sync's 16 x 8 x 16 (fp16, bf16) or 16 x 8 x 8 (tf32), or wgmma's
 * 64 x n x 16 (fp16, bf16; n a multiple of 8 up to 256); NULL for none. */
const mma_instr *mma_instr_for_tile(ts_dtype ab, int64_t m, int64_t n,
                                    int64_t k);

/* Row and column in the m x n tile of C of accumulator register r of
 * `lane` (either kind of instruction). */
void mma_acc_coord(const mma_instr *in, int lane, int r, int *row, int *col);

/* Row and column in the m x k tile of a of register r of `lane`, where a
 * warpgroup's instruction takes a from registers: warp w of the
 * warpgroup holds rows 16w..16w+15, laid out as mma.sync's a of the same
 * type (frag[MMA_A]). */
void mma_wgmma_a_coord(const mma_instr *in, int lane, int r, int *row,
                       int *col);

/* ---- wgmma's shared-memory operands -----------------------------------------
 *
 * A descriptor names an operand tile in shared memory laid out in the
 * PTX ISA's canonical form with the 128-byte swizzle: 8 rows of 128 bytes
 * (a 1024-byte atom, aligned), each 16-byte chunk c of row r stored at
 * chunk c ^ r.  K-major (k contiguous): row = the operand's m or n, 128
 * bytes of k to a row; sbo steps 8 rows.  MN-major (m or n contiguous):
 * row = k, 64 m or n elements to a row; lbo steps 64 of them (a panel),
 * sbo 8 rows of k. */
typedef struct {
  int64_t start; /* byte address of element (0, 0) before the swizzle */
  int64_t lbo, sbo;
  bool mn_major; /* 16-bit elements only: tf32 is k-major */
  int size;      /* bytes an element: 2, or 4 for tf32 */
} mma_desc;

/* The byte address of element (mn, k) of the operand (mn < the
 * instruction's m or n, k < its k) as the hardware reads it. */
int64_t mma_desc_address(const mma_desc *d, int mn, int k);

/* The instruction for operands of type ab (fp16, bf16: m16n8k16; fp32:
 * m16n8k8 in tf32); NULL for none. */
const mma_instr *mma_instr_for(ts_dtype ab);

/* Row and column in operand w's tile of register r of `lane`. */
void mma_coord(const mma_fragment *f, int lane, int r, int *row, int *col);

/* x rounded to tf32 (10 significand bits) to nearest, ties away from zero,
 * as cvt.rna.tf32.f32 rounds; infinities and NaNs unchanged. */
float mma_round_tf32(float x);
/* x with its 13 low significand bits dropped (toward zero): how wgmma
 * reads fp32 operands from shared memory as tf32, unconverted (measured on
 * an H200 against cvt.rna's rounding, docs/performance.md "wgmma"). */
float mma_truncate_tf32(float x);

/* One warp's instruction: acc[lane][r] += sum over the tile's k of
 * a * b, the operands gathered from every lane's registers by the
 * fragment layouts, products and sums in fp32 (tf32 operands rounded
 * first). */
void mma_warp(const mma_instr *in, float acc[MMA_LANES][MMA_MAX_REGS],
              const float a[MMA_LANES][MMA_MAX_REGS],
              const float b[MMA_LANES][MMA_MAX_REGS]);

#endif
