/*
 * Host matrices as they lie in memory (ts_matrix): floats, or the 2-byte
 * fp16 and bf16 bit patterns.  The stages hold host data as floats (every
 * fp16 and bf16 value is a float exactly), so a typed matrix is widened
 * into floats on the way in and narrowed back on the way out; checked
 * first against the definition, so a matrix of one type given where the
 * definition has another is refused, not reinterpreted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "matrix.h"

static ts_operand_role role_of(char which) {
  return which == 'A'   ? TS_OPERAND_A
         : which == 'B' ? TS_OPERAND_B
                        : TS_OPERAND_C;
}

int64_t matrix_elements(const ts_gemm *def, char which) {
  ts_operand op = ts_gemm_operand(def, role_of(which));
  return ts_operand_elements(&op);
}

static ts_dtype wanted(const ts_gemm *def, char which) {
  return ts_gemm_operand(def, role_of(which)).type;
}

bool matrix_check(const char *fn, const ts_gemm *def, char which,
                  ts_matrix x, char *msg, size_t msglen) {
  if (!x.data) {
    snprintf(msg, msglen, "%s: matrix %c's data is NULL", fn, which);
    return false;
  }
  if (x.type != wanted(def, which)) {
    snprintf(msg, msglen, "%s: matrix %c holds %s elements, and the "
             "definition's %c is %s; give it as %s (or define the GEMM with "
             "%s %c)", fn, which, ts_dtype_name(x.type), which,
             ts_dtype_name(wanted(def, which)),
             ts_dtype_name(wanted(def, which)), ts_dtype_name(x.type), which);
    return false;
  }
  return true;
}

float *matrix_widen(ts_matrix x, int64_t n) {
  float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  if (!f)
    return NULL;
  if (x.type == TS_F32) {
    memcpy(f, x.data, (size_t)n * sizeof(float));
    return f;
  }
  const uint16_t *bits = x.data;
  for (int64_t i = 0; i < n; i++)
    f[i] = x.type == TS_F16 ? dtype_f16_to_f32(bits[i])
                            : dtype_bf16_to_f32(bits[i]);
  return f;
}

void matrix_narrow(const float *f, ts_matrix x, int64_t n) {
  if (x.type == TS_F32) {
    memcpy(x.data, f, (size_t)n * sizeof(float));
    return;
  }
  uint16_t *bits = x.data;
  for (int64_t i = 0; i < n; i++)
    bits[i] = x.type == TS_F16 ? dtype_f32_to_f16(f[i])
                               : dtype_f32_to_bf16(f[i]);
}

void matrix_narrow_rows(const float *f, ts_matrix x, const ts_gemm *def,
                        char which) {
  ts_operand op = ts_gemm_operand(def, role_of(which));
  size_t size = (size_t)ts_dtype_size(x.type);
  for (int64_t r = 0; r < op.rows; r++) {
    ts_matrix row = {(char *)x.data + (size_t)(r * op.ld) * size, x.type};
    matrix_narrow(f + r * op.ld, row, op.cols);
  }
}

ts_status matrices_widen(const char *fn, const ts_gemm *def, ts_matrix A,
                         ts_matrix B, ts_matrix C, float *out[3], char *msg,
                         size_t msglen) {
  const ts_matrix m[3] = {A, B, C};
  out[0] = out[1] = out[2] = NULL;
  for (int i = 0; i < 3; i++)
    if (!matrix_check(fn, def, "ABC"[i], m[i], msg, msglen))
      return m[i].data ? TS_ERR_BAD_ARG : TS_ERR_NULL_ARG;
  for (int i = 0; i < 3; i++)
    if (!(out[i] = matrix_widen(m[i], matrix_elements(def, "ABC"[i])))) {
      snprintf(msg, msglen, "%s: out of memory widening matrix %c", fn,
               "ABC"[i]);
      matrices_free(out);
      return TS_ERR_NO_MEMORY;
    }
  return TS_OK;
}

void matrices_free(float *f[3]) {
  for (int i = 0; i < 3; i++) {
    free(f[i]);
    f[i] = NULL;
  }
}
