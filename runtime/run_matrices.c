/*
 * ts_gpu_run and ts_gpu_cublas on typed host matrices (ts_matrix): checked
 * against the definition, widened to the floats the transfers take
 * (exactly; the upload rounds them back to the same bits), run, and C
 * narrowed back to its type.  A refusal is the GPU's error, as a launch's
 * is (sticky, ts_gpu_errmsg says why).
 */
#include "../src/base/matrix.h"
#include "gpu_impl.h"

/* The kernel's (k) or cuBLAS's (def) GEMM on the typed matrices. */
static ts_status run(ts_gpu *g, const ts_kernel *k, const ts_gemm *def,
                     const char *fn, ts_matrix A, ts_matrix B, ts_matrix C) {
  if (!g || !def)
    return TS_ERR_NULL_ARG;
  if (g->status != TS_OK && g->status != TS_ERR_CUBLAS)
    return g->status;
  float *f[3];
  char why[sizeof(g->errmsg)];
  ts_status st = matrices_widen(fn, def, A, B, C, f, why, sizeof(why));
  if (st != TS_OK) {
    gpu_fail(g, st, "%s", why);
    return st;
  }
  st = k ? ts_gpu_run(g, k, f[0], f[1], f[2])
         : ts_gpu_cublas(g, def, f[0], f[1], f[2]);
  if (st == TS_OK)
    matrix_narrow_rows(f[2], C, def, 'C'); /* the gaps left as they are */
  matrices_free(f);
  return st;
}

ts_status ts_gpu_run_matrices(ts_gpu *g, const ts_kernel *k, ts_matrix A,
                              ts_matrix B, ts_matrix C) {
  if (!k)
    return TS_ERR_NULL_ARG;
  return run(g, k, ts_kernel_gemm(k), "ts_gpu_run_matrices", A, B, C);
}

ts_status ts_gpu_cublas_matrices(ts_gpu *g, const ts_gemm *def, ts_matrix A,
                                 ts_matrix B, ts_matrix C) {
  return run(g, NULL, def, "ts_gpu_cublas_matrices", A, B, C);
}
