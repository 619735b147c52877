/*
 * Tensor-core instructions (mma.h): the PTX ISA's fragment layouts as
 * tables, and one warp's multiply-add for the reference executor.
 *
 * The layouts are those of mma.sync.aligned.m16n8k16 (fp16 and bf16
 * operands) and m16n8k8 (tf32) with .row.col operands and fp32
 * accumulators.  Sums run in fp32 in k order; the hardware's order and
 * intermediate precision are not specified, which the checks' tolerance
 * (a K-term fp32 sum) covers.
 */
#include "mma.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define ACC_16x8                                                             \
  {.regs = 4, .g_row = 1, .t_col = 2, .row_of = {0, 0, 8, 8},                \
   .col_of = {0, 1, 0, 1}}

/* mma.sync m16n8k8's a fragment (tf32), which is also a warp's 16 rows of
 * wgmma's a when the instruction takes it from registers. */
#define A_16x8_TF32                                                          \
  {.regs = 4, .g_row = 1, .t_col = 1, .row_of = {0, 8, 0, 8},                \
   .col_of = {0, 0, 4, 4}}

/* fp16 and bf16 operands: the same instruction shape and fragments. */
#define M16N8K16(types, type)                                                 \
  {.name = "m16n8k16", .ptx_types = types, .ab = type, .m = 16, .n = 8,     \
   .k = 16,                                                                 \
   .frag = {ACC_16x8,                                                       \
            {.regs = 8, .g_row = 1, .t_col = 2,                             \
             .row_of = {0, 0, 8, 8, 0, 0, 8, 8},                            \
             .col_of = {0, 1, 0, 1, 8, 9, 8, 9}},                           \
            {.regs = 4, .t_row = 2, .g_col = 1, .row_of = {0, 1, 8, 9}}}}

static const mma_instr instrs[] = {
    M16N8K16(".f32.f16.f16.f32", TS_F16),
    M16N8K16(".f32.bf16.bf16.f32", TS_BF16),
    {.name = "m16n8k8", .ptx_types = ".f32.tf32.tf32.f32", .ab = TS_F32,
     .tf32 = true, .m = 16, .n = 8, .k = 8,
     .frag = {ACC_16x8,
              A_16x8_TF32,
              {.regs = 2, .t_row = 1, .g_col = 1, .row_of = {0, 4}}}},
};

const mma_instr *mma_instr_for(ts_dtype ab) {
  for (size_t i = 0; i < sizeof(instrs) / sizeof(instrs[0]); i++)
    if (instrs[i].ab == ab)
      return &instrs[i];
  return NULL;
}

/* wgmma.mma_async.sync.aligned.m64nNk16 (fp16 and bf16, fp32
 * accumulators) and m64nNk8 (tf32): a lane holds n / 2 accumulators
 * (mma_acc_coord). */
#define WGMMA(N, types, type)                                                 \
  {.name = "m64n" #N "k16", .ptx_types = types, .ab = type, .m = 64,         \
   .n = N, .k = 16, .frag = {{.regs = N / 2}}, .warpgroup = true}

/* tf32 (fp32 operands rounded): k of 8, both operands k-major in shared
 * memory, or a from registers in any layout (it is only read there). */
#define WGMMA_TF32(N)                                                          \
  {.name = "m64n" #N "k8", .ptx_types = ".f32.tf32.tf32", .ab = TS_F32,     \
   .tf32 = true, .m = 64, .n = N, .k = 8,                                   \
   .frag = {{.regs = N / 2}, A_16x8_TF32}, .warpgroup = true}

static const mma_instr wgmma_instrs[] = {
    WGMMA_TF32(8),
    WGMMA_TF32(16),
    WGMMA_TF32(24),
    WGMMA_TF32(32),
    WGMMA_TF32(40),
    WGMMA_TF32(48),
    WGMMA_TF32(56),
    WGMMA_TF32(64),
    WGMMA_TF32(72),
    WGMMA_TF32(80),
    WGMMA_TF32(88),
    WGMMA_TF32(96),
    WGMMA_TF32(104),
    WGMMA_TF32(112),
    WGMMA_TF32(120),
    WGMMA_TF32(128),
    WGMMA_TF32(136),
    WGMMA_TF32(144),
    WGMMA_TF32(152),
    WGMMA_TF32(160),
    WGMMA_TF32(168),
    WGMMA_TF32(176),
    WGMMA_TF32(184),
    WGMMA_TF32(192),
    WGMMA_TF32(200),
    WGMMA_TF32(208),
    WGMMA_TF32(216),
    WGMMA_TF32(224),
    WGMMA_TF32(232),
    WGMMA_TF32(240),
    WGMMA_TF32(248),
    WGMMA_TF32(256),
    WGMMA(8, ".f32.f16.f16", TS_F16),
    WGMMA(16, ".f32.f16.f16", TS_F16),
    WGMMA(24, ".f32.f16.f16", TS_F16),
    WGMMA(32, ".f32.f16.f16", TS_F16),
    WGMMA(40, ".f32.f16.f16", TS_F16),
    WGMMA(48, ".f32.f16.f16", TS_F16),
    WGMMA(56, ".f32.f16.f16", TS_F16),
    WGMMA(64, ".f32.f16.f16", TS_F16),
    WGMMA(72, ".f32.f16.f16", TS_F16),
    WGMMA(80, ".f32.f16.f16", TS_F16),
    WGMMA(88, ".f32.f16.f16", TS_F16),
    WGMMA(96, ".f32.f16.f16", TS_F16),
    WGMMA(104, ".f32.f16.f16", TS_F16),
    WGMMA(112, ".f32.f16.f16", TS_F16),
    WGMMA(120, ".f32.f16.f16", TS_F16),
    WGMMA(128, ".f32.f16.f16", TS_F16),
    WGMMA(136, ".f32.f16.f16", TS_F16),
    WGMMA(144, ".f32.f16.f16", TS_F16),
    WGMMA(152, ".f32.f16.f16", TS_F16),
    WGMMA(160, ".f32.f16.f16", TS_F16),
    WGMMA(168, ".f32.f16.f16", TS_F16),
    WGMMA(176, ".f32.f16.f16", TS_F16),
    WGMMA(184, ".f32.f16.f16", TS_F16),
    WGMMA(192, ".f32.f16.f16", TS_F16),
    WGMMA(200, ".f32.f16.f16", TS_F16),
    WGMMA(208, ".f32.f16.f16", TS_F16),
    WGMMA(216, ".f32.f16.f16", TS_F16),
    WGMMA(224, ".f32.f16.f16", TS_F16),
    WGMMA(232, ".f32.f16.f16", TS_F16),
    WGMMA(240, ".f32.f16.f16", TS_F16),
    WGMMA(248, ".f32.f16.f16", TS_F16),
    WGMMA(256, ".f32.f16.f16", TS_F16),
    WGMMA(8, ".f32.bf16.bf16", TS_BF16),
    WGMMA(16, ".f32.bf16.bf16", TS_BF16),
    WGMMA(24, ".f32.bf16.bf16", TS_BF16),
    WGMMA(32, ".f32.bf16.bf16", TS_BF16),
    WGMMA(40, ".f32.bf16.bf16", TS_BF16),
    WGMMA(48, ".f32.bf16.bf16", TS_BF16),
    WGMMA(56, ".f32.bf16.bf16", TS_BF16),
    WGMMA(64, ".f32.bf16.bf16", TS_BF16),
    WGMMA(72, ".f32.bf16.bf16", TS_BF16),
    WGMMA(80, ".f32.bf16.bf16", TS_BF16),
    WGMMA(88, ".f32.bf16.bf16", TS_BF16),
    WGMMA(96, ".f32.bf16.bf16", TS_BF16),
    WGMMA(104, ".f32.bf16.bf16", TS_BF16),
    WGMMA(112, ".f32.bf16.bf16", TS_BF16),
    WGMMA(120, ".f32.bf16.bf16", TS_BF16),
    WGMMA(128, ".f32.bf16.bf16", TS_BF16),
    WGMMA(136, ".f32.bf16.bf16", TS_BF16),
    WGMMA(144, ".f32.bf16.bf16", TS_BF16),
    WGMMA(152, ".f32.bf16.bf16", TS_BF16),
    WGMMA(160, ".f32.bf16.bf16", TS_BF16),
    WGMMA(168, ".f32.bf16.bf16", TS_BF16),
    WGMMA(176, ".f32.bf16.bf16", TS_BF16),
    WGMMA(184, ".f32.bf16.bf16", TS_BF16),
    WGMMA(192, ".f32.bf16.bf16", TS_BF16),
    WGMMA(200, ".f32.bf16.bf16", TS_BF16),
    WGMMA(208, ".f32.bf16.bf16", TS_BF16),
    WGMMA(216, ".f32.bf16.bf16", TS_BF16),
    WGMMA(224, ".f32.bf16.bf16", TS_BF16),
    WGMMA(232, ".f32.bf16.bf16", TS_BF16),
    WGMMA(240, ".f32.bf16.bf16", TS_BF16),
    WGMMA(248, ".f32.bf16.bf16", TS_BF16),
    WGMMA(256, ".f32.bf16.bf16", TS_BF16),
};

int mma_lanes(const mma_instr *in) {
  return in->warpgroup ? WGMMA_LANES : MMA_LANES;
}

const mma_instr *mma_instr_for_tile(ts_dtype ab, int64_t m, int64_t n,
                                    int64_t k) {
  const mma_instr *in = mma_instr_for(ab);
  if (in && in->m == m && in->n == n && in->k == k)
    return in;
  for (size_t i = 0; i < sizeof(wgmma_instrs) / sizeof(wgmma_instrs[0]); i++)
    if (wgmma_instrs[i].ab == ab && wgmma_instrs[i].m == m &&
        wgmma_instrs[i].n == n && wgmma_instrs[i].k == k)
      return &wgmma_instrs[i];
  return NULL;
}

/* wgmma's accumulators: warp w of the warpgroup holds rows 16w..16w+15,
 * in each 8 columns as mma.sync's 16 x 8 tile. */
void mma_acc_coord(const mma_instr *in, int lane, int r, int *row, int *col) {
  if (!in->warpgroup) {
    mma_coord(&in->frag[MMA_ACC], lane, r, row, col);
    return;
  }
  int w = lane / 32, g = lane % 32 / 4, t = lane % 4;
  *row = 16 * w + g + 8 * (r / 2 % 2);
  *col = r / 4 * 8 + 2 * t + r % 2;
}

void mma_wgmma_a_coord(const mma_instr *in, int lane, int r, int *row,
                       int *col) {
  mma_coord(&in->frag[MMA_A], lane % 32, r, row, col);
  *row += 16 * (lane / 32);
}

int64_t mma_desc_address(const mma_desc *d, int mn, int k) {
  int64_t per_row = 128 / d->size; /* elements in a 128-byte row */
  int64_t off = d->mn_major
                    ? d->size * (mn % per_row) + d->lbo * (mn / per_row) +
                          128 * (k % 8) + d->sbo * (k / 8)
                    : 128 * (mn % 8) + d->sbo * (mn / 8) + d->size * k;
  int64_t addr = d->start + off;
  return addr ^ ((addr >> 7) & 7) << 4; /* the 128-byte swizzle */
}

void mma_coord(const mma_fragment *f, int lane, int r, int *row, int *col) {
  int g = lane / 4, t = lane % 4;
  *row = g * f->g_row + t * f->t_row + f->row_of[r];
  *col = g * f->g_col + t * f->t_col + f->col_of[r];
}

float mma_truncate_tf32(float x) {
  if (!isfinite(x))
    return x;
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  bits &= ~(uint32_t)0x1FFF;
  memcpy(&x, &bits, sizeof(bits));
  return x;
}

float mma_round_tf32(float x) {
  if (!isfinite(x))
    return x;
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  /* Half of the 13 dropped bits' weight, added to the magnitude, carries
   * exactly the halfway and larger cases up: ties away from zero. */
  bits = (bits + 0x1000u) & ~0x1fffu;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

enum { MAX_DIM = 16 };

/* One operand's tile assembled from the 32 lanes' registers. */
static void gather(const mma_fragment *f,
                   const float regs[MMA_LANES][MMA_MAX_REGS], bool tf32,
                   float tile[MAX_DIM][MAX_DIM]) {
  for (int lane = 0; lane < MMA_LANES; lane++)
    for (int r = 0; r < f->regs; r++) {
      int row, col;
      mma_coord(f, lane, r, &row, &col);
      tile[row][col] = tf32 ? mma_round_tf32(regs[lane][r]) : regs[lane][r];
    }
}

void mma_warp(const mma_instr *in, float acc[MMA_LANES][MMA_MAX_REGS],
              const float a[MMA_LANES][MMA_MAX_REGS],
              const float b[MMA_LANES][MMA_MAX_REGS]) {
  float ta[MAX_DIM][MAX_DIM], tb[MAX_DIM][MAX_DIM], tc[MAX_DIM][MAX_DIM];
  gather(&in->frag[MMA_A], a, in->tf32, ta);
  gather(&in->frag[MMA_B], b, in->tf32, tb);
  gather(&in->frag[MMA_ACC], (const float(*)[MMA_MAX_REGS])acc, false, tc);
  for (int i = 0; i < in->m; i++)
    for (int j = 0; j < in->n; j++)
      for (int k = 0; k < in->k; k++)
        tc[i][j] += ta[i][k] * tb[k][j];
  for (int lane = 0; lane < MMA_LANES; lane++)
    for (int r = 0; r < in->frag[MMA_ACC].regs; r++) {
      int row, col;
      mma_coord(&in->frag[MMA_ACC], lane, r, &row, &col);
      acc[lane][r] = tc[row][col];
    }
}
