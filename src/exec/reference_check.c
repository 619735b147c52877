/*
 * Checking a schedule on the CPU: the reference executor runs its lowered
 * kernel on random data, and a plain C GEMM with double accumulation says
 * what the answer should be.  C starts poisoned with NaN when beta is 0, so
 * an element the kernel never wrote cannot pass.  Data of fp16 and bf16
 * matrices is rounded to the type first, as it would be in memory, and the
 * reference sums the rounded values exactly.  The matrices lie as the
 * operand table says (ts_gemm_operand), each stored row its leading
 * dimension from the next; the elements between C's rows are the
 * caller's, and must be as they were after the run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"
#include "../base/dtype.h"
#include "../base/launch_values.h"
#include "../ir/program_ir.h"
#include "check_impl.h"
#include "../base/random.h"

/* x rounded to t where t is narrower than float, in a copy (NULL when out
 * of memory) or, for the output, in place. */
static float *rounded_copy(ts_dtype t, const float *x, size_t n, bool *copied) {
  *copied = t != TS_F32;
  if (!*copied)
    return (float *)x;
  float *c = malloc(n * sizeof(float));
  for (size_t i = 0; c && i < n; i++)
    c[i] = ts_round_to(t, x[i]);
  return c;
}

static void round_in_place(ts_dtype t, float *x, size_t n) {
  for (size_t i = 0; t != TS_F32 && i < n; i++)
    x[i] = ts_round_to(t, x[i]);
}

/* C's rows rounded to its type in place; the elements between them are
 * the caller's and stay as they are. */
static void round_rows(const ts_operand *c, float *x) {
  for (int64_t r = 0; r < c->rows; r++)
    round_in_place(c->type, x + r * c->ld, (size_t)c->cols);
}

static size_t elements(const ts_gemm *g, ts_operand_role role) {
  ts_operand op = ts_gemm_operand(g, role);
  return (size_t)ts_operand_elements(&op);
}

/* ts_program_execute at the shape `at` gives (NULL: p's own), counting
 * the executor's steps into *steps (may be NULL). */
static ts_status execute(const ts_program *p, const ts_gemm *at,
                         const float *A, const float *B, float *C,
                         double *steps, char *msg, size_t msglen) {
  if (msglen)
    msg[0] = 0;
  if (!p || !A || !B || !C)
    return TS_ERR_NULL_ARG;
  if (p->status != TS_OK) {
    if (msglen)
      snprintf(msg, msglen, "%s", p->errmsg);
    return p->status;
  }
  const ts_gemm *g = at ? at : &p->def;
  /* The matrices hold their types' values, as they would in memory. */
  bool copied_a, copied_b;
  ts_operand c = ts_gemm_operand(g, TS_OPERAND_C);
  float *a = rounded_copy(g->a_type, A, elements(g, TS_OPERAND_A), &copied_a);
  float *b = rounded_copy(g->b_type, B, elements(g, TS_OPERAND_B), &copied_b);
  round_rows(&c, C);
  ts_status st = TS_OK;
  int64_t values[TS_VALUE_COUNT];
  if (at)
    ts_param_values_of(at, values);
  if (!a || !b) {
    st = TS_ERR_NO_MEMORY;
    if (msglen)
      snprintf(msg, msglen, "ts_execute: out of memory rounding A and B to "
               "%s and %s", ts_dtype_name(g->a_type), ts_dtype_name(g->b_type));
  } else if (!ir_execute_at(p->order, p->nkernels, at ? values : NULL, a, b,
                            C, g->beta != 0.0f, NULL, steps, msg, msglen)) {
    st = TS_ERR_EXEC_FAULT;
  }
  if (copied_a)
    free(a);
  if (copied_b)
    free(b);
  return st;
}

ts_status ts_program_execute(const ts_program *p, const float *A,
                             const float *B, float *C, char *msg,
                             size_t msglen) {
  return execute(p, NULL, A, B, C, NULL, msg, msglen);
}

/* The largest relative error of operand w's elements as p's tensor cores
 * multiply them: none outside tf32.  In tf32 an element keeps 10 of
 * fp32's 23 significand bits.  Rounded to nearest (a packing kernel's
 * cvt.rna, or mma.sync's in registers) it is off by at most half a unit
 * of the 10th bit, 2^-11 of itself; read as it lies by wgmma (a kernel of
 * sm_90a's instructions, the operand not packed), whose tensor cores
 * drop the low 13 bits, by less than a whole unit, 2^-10 of itself
 * (lower_tensorize.c, tf32_operand). */
static double tf32_input_error(const ts_program *p, int w) {
  if (p->def.math != TS_MATH_TF32)
    return 0;
  bool truncated = p->k.arch_specific && !p->k.packed[w];
  return truncated ? 0x1p-10 : 0x1p-11;
}

/* How far a kernel's C[i, j] may be from `want`, the exact result for the
 * same (rounded) inputs: the worst case of a K-term sum in the accumulator
 * (each addition and the alpha and beta terms rounding by one unit of it,
 * relative to the magnitudes summed, `scale`), then the store's rounding
 * to C's type (relative, or half its smallest subnormal near zero).  In
 * tf32 each product a b is first off by a factor (1 + ea)(1 + eb), so by
 * at most ua + ub + ua ub of itself, ua and ub each operand's
 * tf32_input_error: 2^-10 and a little for two rounded inputs, 2^-9 for
 * two truncated ones (whose errors, both toward zero, do not cancel). */
double check_element_tolerance(const ts_program *p, int64_t k, double want,
                               double scale) {
  const ts_gemm *g = &p->def;
  const dtype_info *acc = dtype_info_of(g->acc_type);
  const dtype_info *c = dtype_info_of(g->c_type);
  double ua = tf32_input_error(p, 0), ub = tf32_input_error(p, 1);
  double inputs = ua + ub + ua * ub;
  double sum = ((double)(k + 4) * acc->epsilon + inputs) * scale;
  return sum * (1 + c->unit_roundoff) + c->unit_roundoff * fabs(want) +
         c->min_subnormal / 2 + 1e-30;
}

/* The elements between C's rows, the caller's, as they were in C0: a
 * kernel that wrote one is wrong even where the executor let it. */
static ts_status compare_gap(const ts_operand *c, const float *C0,
                             const float *out, char *msg, size_t msglen) {
  for (int64_t r = 0; r + 1 < c->rows; r++)
    for (int64_t e = r * c->ld + c->cols; e < (r + 1) * c->ld; e++)
      if (memcmp(&C0[e], &out[e], sizeof(float)) != 0) {
        snprintf(msg, msglen, "C's element %lld, between rows %lld and "
                 "%lld (ldc %lld, rows of %lld), is %.9g, and was %.9g: "
                 "the elements between C's rows belong to the caller",
                 (long long)e, (long long)r, (long long)r + 1,
                 (long long)c->ld, (long long)c->cols, (double)out[e],
                 (double)C0[e]);
        return TS_ERR_MISMATCH;
      }
  return TS_OK;
}

/* Compares out with the GEMM of A, B and C0 element by element. */
static ts_status compare(const ts_program *p, const ts_gemm *g,
                         const float *A, const float *B, const float *C0,
                         const float *out, char *msg, size_t msglen) {
  ts_operand a = ts_gemm_operand(g, TS_OPERAND_A);
  ts_operand b = ts_gemm_operand(g, TS_OPERAND_B);
  ts_operand c = ts_gemm_operand(g, TS_OPERAND_C);
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t j = 0; j < g->n; j++) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < g->k; k++) {
        double p = (double)A[check_index(&a, i, k)] * B[check_index(&b, k, j)];
        sum += p;
        mag += fabs(p);
      }
      double c0 = g->beta != 0.0f ? (double)C0[i * c.ld + j] : 0.0;
      double want = g->alpha * sum + g->beta * c0;
      double scale = fabs(g->alpha) * mag + fabs(g->beta * c0);
      double tol = check_element_tolerance(p, g->k, want, scale);
      double got = out[i * c.ld + j];
      if (!(fabs(got - want) <= tol)) {
        snprintf(msg, msglen, "C[%lld, %lld] is %.9g, expected %.9g "
                 "(tolerance %.3g)", (long long)i, (long long)j, got, want,
                 tol);
        return TS_ERR_MISMATCH;
      }
    }
  }
  return compare_gap(&c, C0, out, msg, msglen);
}

/* Uniform random data in [-1, 1), rounded to t. */
static void fill(float *x, size_t n, ts_dtype t, uint64_t *rng) {
  ts_fill_random(x, n, rng);
  round_in_place(t, x, n);
}

/* A and B as random data and as the executor's tracked buffers (value,
 * defined, last writer and reader and their epochs, atomic: 30 bytes an
 * element), C the same and twice more (its start and the reference);
 * each with the elements between its rows. */
double ts_check_bytes(const ts_gemm *g) {
  if (!g)
    return 0;
  double ab = (double)elements(g, TS_OPERAND_A) +
              (double)elements(g, TS_OPERAND_B);
  double c = (double)elements(g, TS_OPERAND_C);
  return ab * (4 + 30) + c * (3 * 4 + 30);
}

/* A shape whose check cannot fit in memory is refused before anything is
 * allocated (malloc could succeed and the pages be killed for later). */
ts_status ts_check_fits(const ts_gemm *g, char *msg, size_t msglen) {
  if (msglen)
    msg[0] = 0;
  if (!g)
    return TS_ERR_NULL_ARG;
  double need = ts_check_bytes(g), have = ts_memory_available();
  if (have == 0 || need <= 0.8 * have)
    return TS_OK;
  if (msglen)
    snprintf(msg, msglen, "ts_check: a %lldx%lldx%lld check needs about "
             "%.1f GiB (A, B and C with the executor's record of every "
             "element), and this machine has %.1f GiB available; sample it "
             "(ts_program_check_sampled; tessel check does so by itself) "
             "or check a smaller shape", (long long)g->m, (long long)g->n,
             (long long)g->k, need / 1073741824.0, have / 1073741824.0);
  return TS_ERR_NO_MEMORY;
}

/* C's start when beta is 0: NaN in its rows, so that an element never
 * written cannot pass, and the caller's random data between them. */
static void poison_rows(const ts_gemm *g, float *C0, size_t nc,
                        uint64_t *rng) {
  ts_operand c = ts_gemm_operand(g, TS_OPERAND_C);
  if (c.ld != c.cols)
    fill(C0, nc, g->c_type, rng);
  for (int64_t r = 0; r < c.rows; r++)
    for (int64_t j = 0; j < c.cols; j++)
      C0[r * c.ld + j] = NAN;
}

ts_status ts_program_check(const ts_program *p, uint64_t seed, char *msg,
                           size_t msglen) {
  return ts_program_check_counted(p, seed, NULL, msg, msglen);
}

static ts_status check_at(const ts_program *p, const ts_gemm *at,
                          uint64_t seed, double *steps, char *msg,
                          size_t msglen);

ts_status ts_program_check_counted(const ts_program *p, uint64_t seed,
                                   double *steps, char *msg, size_t msglen) {
  return check_at(p, NULL, seed, steps, msg, msglen);
}

/* at's extents and leading dimensions where p takes them at launch, the
 * rest p's own: TS_OK, or why not in msg. */
static ts_status check_launch_shape(const ts_program *p, const ts_gemm *at,
                                    char *msg, size_t msglen) {
  const ts_gemm *g = &p->def;
  if (at->a_type != g->a_type || at->b_type != g->b_type ||
      at->c_type != g->c_type || at->layout != g->layout ||
      at->math != g->math || at->alpha != g->alpha || at->beta != g->beta) {
    snprintf(msg, msglen, "ts_program_check_at: the definition given differs "
             "from program \"%s\"'s in its types, layout, alpha or beta, "
             "which are compiled in; only extents and leading dimensions "
             "may differ", p->name);
    return TS_ERR_BAD_ARG;
  }
  const int64_t ld_given[TS_OPERAND_COUNT] = {g->lda, g->ldb, g->ldc};
  for (int i = 0; i < LAUNCH_VALUES; i++) {
    int64_t v = launch_value_of(at, i), q = launch_value_multiple(g, i);
    bool runtime = launch_value_taken(g, i);
    /* A packed leading dimension compiled in follows the extents. */
    int64_t compiled = i < 3 || ld_given[i - 3] ? launch_value_of(g, i)
                       : ts_gemm_operand(at, (ts_operand_role)(i - 3)).cols;
    if (v < 1 || (!runtime && v != compiled) ||
        (runtime && (v % q || v > LAUNCH_VALUE_MOST))) {
      if (!runtime)
        snprintf(msg, msglen, "ts_program_check_at: %s is %lld; program "
                 "\"%s\" compiles it in as %lld: give that, or lower the "
                 "program with it taken at launch (def->runtime)",
                 launch_value_name(i), (long long)v, p->name,
                 (long long)compiled);
      else
        snprintf(msg, msglen, "ts_program_check_at: %s is %lld; program "
                 "\"%s\" takes it at launch as a multiple of %lld in 1..%lld",
                 launch_value_name(i), (long long)v, p->name, (long long)q,
                 (long long)LAUNCH_VALUE_MOST);
      return TS_ERR_BAD_SHAPE;
    }
  }
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand op = ts_gemm_operand(at, (ts_operand_role)r);
    if (op.ld < op.cols) {
      snprintf(msg, msglen, "ts_program_check_at: %s is %lld, shorter than "
               "%s's stored row of %lld", launch_value_name(3 + r),
               (long long)op.ld,
               ts_operand_name((ts_operand_role)r), (long long)op.cols);
      return TS_ERR_BAD_SHAPE;
    }
  }
  return TS_OK;
}

ts_status ts_program_check_at(const ts_program *p, const ts_gemm *at,
                              uint64_t seed, char *msg, size_t msglen) {
  if (msglen)
    msg[0] = 0;
  if (!p || !at)
    return TS_ERR_NULL_ARG;
  if (p->status == TS_OK) {
    ts_status st = check_launch_shape(p, at, msg, msglen);
    if (st != TS_OK)
      return st;
  }
  return check_at(p, at, seed, NULL, msg, msglen);
}

static ts_status check_at(const ts_program *p, const ts_gemm *at,
                          uint64_t seed, double *steps, char *msg,
                          size_t msglen) {
  if (steps)
    *steps = 0;
  if (msglen)
    msg[0] = 0;
  if (!p)
    return TS_ERR_NULL_ARG;
  if (p->status != TS_OK) {
    if (msglen)
      snprintf(msg, msglen, "%s", p->errmsg);
    return p->status;
  }
  const ts_gemm *g = at ? at : &p->def;
  ts_status fit = ts_check_fits(g, msg, msglen);
  if (fit != TS_OK)
    return fit;
  size_t na = elements(g, TS_OPERAND_A), nb = elements(g, TS_OPERAND_B),
         nc = elements(g, TS_OPERAND_C);
  float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float));
  float *C0 = malloc(nc * sizeof(float)), *C = malloc(nc * sizeof(float));
  ts_status st = TS_ERR_NO_MEMORY;
  if (A && B && C0 && C) {
    uint64_t rng = seed;
    fill(A, na, g->a_type, &rng);
    fill(B, nb, g->b_type, &rng);
    if (g->beta != 0.0f)
      fill(C0, nc, g->c_type, &rng);
    else
      poison_rows(g, C0, nc, &rng);
    for (size_t i = 0; i < nc; i++)
      C[i] = C0[i];
    st = execute(p, at, A, B, C, steps, msg, msglen);
    if (st == TS_OK)
      st = compare(p, g, A, B, C0, C, msg, msglen);
  } else if (msglen) {
    snprintf(msg, msglen, "ts_check: out of memory for a %lldx%lldx%lld "
             "problem", (long long)g->m, (long long)g->n, (long long)g->k);
  }
  free(A);
  free(B);
  free(C0);
  free(C);
  return st;
}

double ts_gemm_tolerance(const ts_gemm *def) {
  return def ? dtype_gemm_tolerance(def->c_type, def->acc_type, def->k,
                                           def->math == TS_MATH_TF32)
             : 0;
}
