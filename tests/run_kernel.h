/*
 * The reference executor's verdict on one lowered kernel, for the tests
 * that mutate a correct program into a broken one: the kernel runs on
 * small patterned operands (A's elements -3..3, B's -2..2, C zero), and
 * the verdict is the fault it finds.  assert_kernel_faults asks it of a
 * mutant.
 */
#ifndef TS_TEST_RUN_KERNEL_H
#define TS_TEST_RUN_KERNEL_H

#include "helpers.h"

#include "exec/executor.h"
#include "ir/program_ir.h"

/* NULL when k runs on g's operands without a fault, else the executor's
 * message (free() it). */
static inline char *run_kernel(const ir_kernel *k, const ts_gemm *g) {
  float *A = calloc((size_t)(g->m * g->k), sizeof(float));
  float *B = calloc((size_t)(g->k * g->n), sizeof(float));
  float *C = calloc((size_t)(g->m * g->n), sizeof(float));
  assert_true(A && B && C);
  for (int64_t i = 0; i < g->m * g->k; i++)
    A[i] = (float)(i % 7) - 3;
  for (int64_t i = 0; i < g->k * g->n; i++)
    B[i] = (float)(i % 5) - 2;
  char msg[1024];
  bool ok = ir_execute(k, A, B, C, false, msg, sizeof(msg));
  free(A);
  free(B);
  free(C);
  return ok ? NULL : strdup(msg);
}

/* k, a mutation of p's kernel, faults where p's kernel runs clean, and
 * the executor's message holds each of the first n of says (a NULL ends
 * them sooner). */
static inline void assert_kernel_faults(const ts_program *p,
                                        const ir_kernel *k,
                                        const char *const *says, int n) {
  assert_null(run_kernel(&p->k, &p->def));
  assert_true(k->body != p->k.body || k->params != p->k.params);
  char *msg = run_kernel(k, &p->def);
  assert_non_null(msg);
  for (int i = 0; i < n && says[i]; i++)
    if (!strstr(msg, says[i]))
      fail_msg("the executor says: %s", msg);
  free(msg);
}

#endif
