/*
 * The definition of a fuzz case that draws primitives or knobs: its shape
 * (small and odd, often with tiny dimensions), layout, alpha and beta, and
 * element types.  The Hopper cases draw their own (fuzz_hopper.c), the knob
 * cases sometimes make it larger (fuzz_knobs.c).
 */
#include "gen_impl.h"

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
