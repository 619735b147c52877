/*
 * Typed host matrices (ts_matrix) against a definition, and their floats:
 * what the entry points that take a ts_matrix share.
 */
#ifndef TS_BASE_MATRIX_H
#define TS_BASE_MATRIX_H

#include <stdbool.h>
#include <stddef.h>

#include "tessel/types.h"

/* Elements of matrix 'A', 'B' or 'C' of def as it lies in memory, its
 * rows its leading dimension apart (ts_operand_elements). */
int64_t matrix_elements(const ts_gemm *def, char which);
/* Whether x can be def's matrix `which` (its data given, its type the
 * definition's); false with "fn: ..." in msg. */
bool matrix_check(const char *fn, const ts_gemm *def, char which,
                  ts_matrix x, char *msg, size_t msglen);
/* x's n elements as floats (exact), malloc'd; NULL when out of memory. */
float *matrix_widen(ts_matrix x, int64_t n);
/* n floats stored into x, rounded to its type (as a store rounds). */
void matrix_narrow(const float *f, ts_matrix x, int64_t n);

/* Matrix `which` of def narrowed from f into x row by row: the elements
 * between its rows are the caller's, and stay as they are. */
void matrix_narrow_rows(const float *f, ts_matrix x, const ts_gemm *def,
                        char which);

/* A, B and C checked against def and widened into out[0..2]: TS_OK, or
 * TS_ERR_NULL_ARG, TS_ERR_BAD_ARG (a type not the definition's) or
 * TS_ERR_NO_MEMORY with "fn: ..." in msg and nothing held. */
ts_status matrices_widen(const char *fn, const ts_gemm *def, ts_matrix A,
                         ts_matrix B, ts_matrix C, float *out[3], char *msg,
                         size_t msglen);
void matrices_free(float *f[3]);

#endif
