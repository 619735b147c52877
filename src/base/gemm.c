/*
 * The GEMM definition's own vocabulary: a definition with cuBLAS's
 * defaults (ts_gemm_make), the layouts' names, and the operand table
 * (ts_gemm_operand: which matrix is stored how, its rows how far apart).
 * Every stage reads definitions, so they live below every stage.
 */
#include <string.h>

#include "tessel/types.h"

static const char *const layout_names[] = {"NN", "NT", "TN", "TT"};

const char *ts_layout_name(ts_layout layout) {
  return (unsigned)layout < 4 ? layout_names[layout] : "??";
}

int ts_layout_parse(const char *text) {
  for (int i = 0; text && i < 4; i++)
    if (strcmp(text, layout_names[i]) == 0)
      return i;
  return -1;
}

ts_gemm ts_gemm_make(int64_t m, int64_t n, int64_t k) {
  return (ts_gemm){.m = m, .n = n, .k = k, .layout = TS_NN, .alpha = 1.0f,
                   .beta = 0.0f};
}

static const char *const operand_names[TS_OPERAND_COUNT] = {"A", "B", "C"};

const char *ts_operand_name(ts_operand_role role) {
  return (unsigned)role < TS_OPERAND_COUNT ? operand_names[role] : "?";
}

/* op(A) is m x k and op(B) k x n: stored transposed, their rows are the
 * other dimension. */
ts_operand ts_gemm_operand(const ts_gemm *def, ts_operand_role role) {
  bool ta = def->layout == TS_TN || def->layout == TS_TT;
  bool tb = def->layout == TS_NT || def->layout == TS_TT;
  ts_operand op;
  switch (role) {
  case TS_OPERAND_A:
    op = (ts_operand){.role = role, .type = def->a_type, .transposed = ta,
                      .rows = ta ? def->k : def->m,
                      .cols = ta ? def->m : def->k, .ld = def->lda,
                      .batch = 1};
    break;
  case TS_OPERAND_B:
    op = (ts_operand){.role = role, .type = def->b_type, .transposed = tb,
                      .rows = tb ? def->n : def->k,
                      .cols = tb ? def->k : def->n, .ld = def->ldb,
                      .batch = 1};
    break;
  default:
    op = (ts_operand){.role = TS_OPERAND_C, .type = def->c_type,
                      .rows = def->m, .cols = def->n, .ld = def->ldc,
                      .batch = 1};
    break;
  }
  if (op.ld == 0)
    op.ld = op.cols;
  return op;
}

int64_t ts_operand_elements(const ts_operand *op) {
  if (!op || op->rows <= 0 || op->cols <= 0)
    return 0;
  return (op->rows - 1) * op->ld + op->cols;
}
