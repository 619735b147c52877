/*
 * The definition of a fuzz case that draws primitives or knobs: its shape
 * (small and odd, often with tiny dimensions), layout, alpha and beta, and
 * element types.  The Hopper cases draw their own (fuzz_hopper.c), the knob
 * cases sometimes make it larger (fuzz_knobs.c).
 */
#include "gen_impl.h"

#include "base/random.h"

/* Element types: fp32 in half the cases (a third of them multiplied in
 * tf32, which tensor cores need), else fp16 or bf16 A and B (in one case
 * of ten of two different types) with a C of theirs or fp32. */
static void random_types(fz_case *c) {
  static const ts_dtype narrow[] = {TS_F16, TS_BF16};
  if (fz_chance(c, 50)) {
    if (fz_chance(c, 33))
      c->def.math = TS_MATH_TF32;
    return;
  }
  c->def.a_type = c->def.b_type = narrow[fz_pick(c->src, 2)];
  if (fz_chance(c, 10))
    c->def.b_type = narrow[fz_pick(c->src, 2)];
  c->def.c_type = fz_chance(c, 50) ? c->def.a_type : TS_F32;
}

/* A definition at a small odd shape; in a third of the cases every
 * dimension, and in a fifth one of them, is tiny (1..4), far below any
 * tile the schedule's splits make. */
void fz_random_definition(fz_case *c) {
  static const float alphas[] = {1.0f, -0.5f, 2.0f};
  static const float betas[] = {0.0f, 0.5f, 1.0f};
  int64_t small = 1 + fz_pick(c->src, 40);
  c->def = ts_gemm_make(1 + fz_pick(c->src, 48), 1 + fz_pick(c->src, 48),
                        fz_chance(c, 30) ? small / 4 + 1 : 1 + fz_pick(c->src, 40));
  uint32_t tiny = fz_pick(c->src, 100);
  int64_t *dims[3] = {&c->def.m, &c->def.n, &c->def.k};
  int one = (int)fz_pick(c->src, 3);
  for (int d = 0; d < 3; d++)
    if (tiny < 33 || (tiny < 53 && d == one))
      *dims[d] = 1 + fz_pick(c->src, 4);
  c->work = (double)(c->def.m * c->def.n * c->def.k);
  c->def.layout = (ts_layout)fz_pick(c->src, 4);
  c->def.alpha = alphas[fz_pick(c->src, 3)];
  c->def.beta = betas[fz_pick(c->src, 3)];
  random_types(c);
}

/* One operand's leading dimension past its stored row: `cols` plus 1 to
 * 12 elements, or plus whole 16-byte chunks where the row's alignment is
 * kept and packed rows are aligned. */
static int64_t padded_ld(uint64_t *rng, ts_operand op, bool keep_alignment) {
  int64_t chunk = 16 / ts_dtype_size(op.type);
  uint64_t r = ts_random_next(rng);
  if (keep_alignment && op.cols % chunk == 0)
    return op.cols + chunk * (int64_t)(1 + r % 3);
  if (keep_alignment)
    return op.cols + chunk * (int64_t)(r % 3);
  return op.cols + 1 + (int64_t)(r % 12);
}

void fz_leading_dimensions(fz_case *c, bool keep_alignment) {
  uint64_t rng = c->seed ^ 0x6c64u; /* "ld" */
  if (ts_random_next(&rng) % 100 >= 20)
    return;
  int64_t *ld[TS_OPERAND_COUNT] = {&c->def.lda, &c->def.ldb, &c->def.ldc};
  for (int r = 0; r < TS_OPERAND_COUNT; r++)
    if (ts_random_next(&rng) % 100 < 60)
      *ld[r] = padded_ld(&rng, ts_gemm_operand(&c->def, (ts_operand_role)r),
                         keep_alignment);
}

void fz_runtime_extents(fz_case *c) {
  uint64_t rng = c->seed ^ 0x7274u; /* "rt" */
  if (ts_random_next(&rng) % 100 >= 12)
    return;
  c->def.runtime = TS_RUNTIME_SHAPE;
  bool eights = true;
  for (int r = 0; r < TS_OPERAND_COUNT; r++)
    eights &= ts_gemm_operand(&c->def, (ts_operand_role)r).ld % 8 == 0;
  c->def.runtime_ld_multiple = eights ? 8 : 0;
}

ts_gemm fz_launch_shape(const fz_case *c) {
  uint64_t rng = c->seed ^ 0x6174u; /* "at" */
  ts_gemm at = c->def;
  bool tiny = ts_random_next(&rng) % 4 == 0;
  at.m = 1 + (int64_t)(ts_random_next(&rng) % (tiny ? 4 : 70));
  at.n = 1 + (int64_t)(ts_random_next(&rng) % (tiny ? 4 : 70));
  at.k = 1 + (int64_t)(ts_random_next(&rng) % (tiny ? 4 : 70));
  int64_t q = at.runtime_ld_multiple > 1 ? at.runtime_ld_multiple : 1;
  int64_t *ld[TS_OPERAND_COUNT] = {&at.lda, &at.ldb, &at.ldc};
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    *ld[r] = 0;
    int64_t cols = ts_gemm_operand(&at, (ts_operand_role)r).cols;
    int64_t pad = (int64_t)(ts_random_next(&rng) % 3) * q;
    *ld[r] = (cols + q - 1) / q * q + pad;
  }
  return at;
}
