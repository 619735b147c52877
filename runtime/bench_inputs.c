/*
 * The host side of ts_bench's inputs, kept on the GPU's handle from one
 * call to the next: A and B drawn from the seed, C (drawn, or NaN where
 * beta is 0 so that every element must be written), and cuBLAS's result
 * on them, the reference each kernel is checked against.  The tuner
 * times a shape's candidates a group a call; at 8192^3 drawing A and B
 * took longer than timing a group's kernels, and cuBLAS's reference was
 * computed again for each group.  The device buffers are made afresh by
 * each call (timing.c), so a kernel that wrote where it must not cannot
 * spoil the next call's inputs.
 */
#include <math.h>
#include <stdlib.h>

#include "../src/base/dtype.h"
#include "../src/base/random.h"
#include "gpu_impl.h"

void gpu_bench_inputs_free(ts_gpu *g) {
  gpu_bench_inputs *h = g->bench_inputs;
  if (!h)
    return;
  free(h->A);
  free(h->B);
  free(h->C);
  free(h->ref);
  free(h);
  g->bench_inputs = NULL;
}

static bool same_inputs(const gpu_bench_inputs *h, const ts_gemm *d,
                        uint64_t seed) {
  return h->seed == seed && h->def.m == d->m && h->def.n == d->n &&
         h->def.k == d->k && h->def.layout == d->layout &&
         h->def.alpha == d->alpha && h->def.beta == d->beta &&
         h->def.a_type == d->a_type && h->def.b_type == d->b_type &&
         h->def.c_type == d->c_type && h->def.acc_type == d->acc_type &&
         h->def.math == d->math;
}

/* Drawn as ts_bench always drew them: A, then B, then C, from one
 * generator; cuBLAS's own C (blas_c, where it is wider than the
 * kernels') starts from the values the kernels' C holds. */
static void draw(gpu_bench_inputs *h, ts_dtype blas_c) {
  const ts_gemm *d = &h->def;
  size_t na = (size_t)(d->m * d->k), nb = (size_t)(d->k * d->n),
         nc = (size_t)(d->m * d->n);
  uint64_t rng = h->seed;
  ts_fill_random(h->A, na, &rng);
  ts_fill_random(h->B, nb, &rng);
  if (d->beta != 0.0f)
    ts_fill_random(h->C, nc, &rng);
  else
    for (size_t i = 0; i < nc; i++)
      h->C[i] = NAN; /* poison: every element must be written */
  for (size_t i = 0; blas_c != d->c_type && i < nc; i++)
    h->C[i] = ts_round_to(d->c_type, h->C[i]);
}

gpu_bench_inputs *gpu_bench_inputs_for(ts_gpu *g, const ts_gemm *d,
                                       ts_dtype blas_c, uint64_t seed) {
  if (g->bench_inputs && same_inputs(g->bench_inputs, d, seed))
    return g->bench_inputs;
  gpu_bench_inputs_free(g);
  size_t na = (size_t)(d->m * d->k), nb = (size_t)(d->k * d->n),
         nc = (size_t)(d->m * d->n);
  gpu_bench_inputs *h = calloc(1, sizeof(*h));
  if (h) {
    h->A = malloc(na * sizeof(float));
    h->B = malloc(nb * sizeof(float));
    h->C = malloc(nc * sizeof(float));
    h->ref = malloc(nc * sizeof(float));
  }
  if (!h || !h->A || !h->B || !h->C || !h->ref) {
    g->bench_inputs = h;
    gpu_bench_inputs_free(g);
    gpu_fail(g, TS_ERR_NO_MEMORY, "ts_bench: out of host memory for the "
             "inputs of a %lldx%lldx%lld GEMM", (long long)d->m,
             (long long)d->n, (long long)d->k);
    return NULL;
  }
  h->def = *d;
  h->seed = seed;
  draw(h, blas_c);
  g->bench_inputs = h;
  return h;
}
