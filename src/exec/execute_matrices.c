/*
 * The reference executor on typed host matrices (ts_matrix): widened to
 * the floats it holds (exactly), run, and C's rows narrowed back to its
 * type (the elements between them are the caller's and stay untouched).
 */
#include "../base/matrix.h"
#include "../ir/program_ir.h"
#include "tessel/exec.h"
#include "tessel/program_read.h"

#include <stdio.h>

ts_status ts_program_execute_matrices(const ts_program *p, ts_matrix A,
                                      ts_matrix B, ts_matrix C, char *msg,
                                      size_t msglen) {
  if (!p)
    return TS_ERR_NULL_ARG;
  if (ts_program_status(p) != TS_OK) {
    snprintf(msg, msglen, "%s", ts_program_errmsg(p));
    return ts_program_status(p);
  }
  const ts_gemm *def = ts_program_gemm(p);
  float *f[3];
  ts_status st = matrices_widen("ts_program_execute_matrices", def, A, B, C,
                                f, msg, msglen);
  if (st != TS_OK)
    return st;
  st = ts_program_execute(p, f[0], f[1], f[2], msg, msglen);
  if (st == TS_OK)
    matrix_narrow_rows(f[2], C, def, 'C');
  matrices_free(f);
  return st;
}
