/*
 * Checking a schedule on the CPU: the reference executor runs its lowered
 * kernel on random data, and a plain C GEMM with double accumulation says
 * what the answer should be.  C starts poisoned with NaN when beta is 0, so
 * an element the kernel never wrote cannot pass.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/exec.h"
#include "ir/dtype.h"
#include "ir/program.h"
#include "random.h"

ts_status ts_program_execute(const ts_program *p, const float *A,
                             const float *B, float *C, char *msg,
                             size_t msglen) {
  if (msglen)
    msg[0] = 0;
  if (!p || !A || !B || !C)
    return TS_ERR_NULL_ARG;
  if (p->status != TS_OK) {
    if (msglen)
      snprintf(msg, msglen, "%s", p->errmsg);
    return p->status;
  }
  if (!ir_execute(&p->k, A, B, C, p->def.beta != 0.0f, msg, msglen))
    return TS_ERR_EXEC_FAULT;
  return TS_OK;
}

/* Element (i, j) of op(A) and op(B) in their storage layouts. */
static float at_a(const ts_gemm *g, const float *A, int64_t i, int64_t k) {
  bool t = g->layout == TS_TN || g->layout == TS_TT;
  return t ? A[k * g->m + i] : A[i * g->k + k];
}

static float at_b(const ts_gemm *g, const float *B, int64_t k, int64_t j) {
  bool t = g->layout == TS_NT || g->layout == TS_TT;
  return t ? B[j * g->k + k] : B[k * g->n + j];
}

/* Compares out with the GEMM of A, B and C0 element by element, against the
 * rounding bound of a K-term fp32 sum. */
static ts_status compare(const ts_gemm *g, const float *A, const float *B,
                         const float *C0, const float *out, char *msg,
                         size_t msglen) {
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t j = 0; j < g->n; j++) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < g->k; k++) {
        double p = (double)at_a(g, A, i, k) * at_b(g, B, k, j);
        sum += p;
        mag += fabs(p);
      }
      double c0 = g->beta != 0.0f ? (double)C0[i * g->n + j] : 0.0;
      double want = g->alpha * sum + g->beta * c0;
      double scale = fabs(g->alpha) * mag + fabs(g->beta * c0);
      double tol = (double)(g->k + 4) * FLT_EPSILON * scale + 1e-30;
      double got = out[i * g->n + j];
      if (!(fabs(got - want) <= tol)) {
        snprintf(msg, msglen, "C[%lld, %lld] is %.9g, expected %.9g "
                 "(tolerance %.3g)", (long long)i, (long long)j, got, want,
                 tol);
        return TS_ERR_MISMATCH;
      }
    }
  }
  return TS_OK;
}

ts_status ts_program_check(const ts_program *p, uint64_t seed, char *msg,
                           size_t msglen) {
  if (msglen)
    msg[0] = 0;
  if (!p)
    return TS_ERR_NULL_ARG;
  if (p->status != TS_OK) {
    if (msglen)
      snprintf(msg, msglen, "%s", p->errmsg);
    return p->status;
  }
  const ts_gemm *g = &p->def;
  size_t na = (size_t)(g->m * g->k), nb = (size_t)(g->k * g->n),
         nc = (size_t)(g->m * g->n);
  float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float));
  float *C0 = malloc(nc * sizeof(float)), *C = malloc(nc * sizeof(float));
  ts_status st = TS_ERR_NO_MEMORY;
  if (A && B && C0 && C) {
    uint64_t rng = seed;
    ts_fill_random(A, na, &rng);
    ts_fill_random(B, nb, &rng);
    if (g->beta != 0.0f)
      ts_fill_random(C0, nc, &rng);
    else
      for (size_t i = 0; i < nc; i++)
        C0[i] = NAN;
    for (size_t i = 0; i < nc; i++)
      C[i] = C0[i];
    st = ts_program_execute(p, A, B, C, msg, msglen);
    if (st == TS_OK)
      st = compare(g, A, B, C0, C, msg, msglen);
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
  return def ? dtype_gemm_tolerance(def->c_type, def->acc_type, def->k) : 0;
}

/* ---- From a schedule, for convenience ----------------------------------- */

ts_status ts_execute(const ts_sched *s, const float *A, const float *B,
                     float *C, char *msg, size_t msglen) {
  ts_program *p = ts_lower(s);
  ts_status st = ts_program_execute(p, A, B, C, msg, msglen);
  ts_program_free(p);
  return st;
}

ts_status ts_check(const ts_sched *s, uint64_t seed, char *msg,
                   size_t msglen) {
  ts_program *p = ts_lower(s);
  ts_status st = ts_program_check(p, seed, msg, msglen);
  ts_program_free(p);
  return st;
}
