/*
 * A kernel's parameters: what its entry point takes, in order, as plain
 * data.  Lowering writes each kernel's list into the program; the code
 * generator prints the entry point's signature from it, the executor binds
 * its buffers from it, the compiler copies it into the compiled kernel,
 * and the runtime builds each launch's arguments from it and its own
 * device buffers.  So a new kind of parameter (a CUtensorMap of one
 * buffer, say, built on the host and passed __grid_constant__) is a new
 * kind here and a case in each of those readers, not a new launcher.
 */
#ifndef TS_PARAMS_H
#define TS_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "tessel/types.h"

typedef enum ts_param_kind {
  TS_PARAM_BUFFER, /* a pointer into global memory: an operand or the workspace */
  TS_PARAM_INT,    /* an int (32 bits) of the definition or the launch:
                    * M, N, K or a leading dimension (ts_gemm.runtime) */
  TS_PARAM_FLOAT,  /* a float of the definition: alpha or beta */
  TS_PARAM_TENSOR_MAP, /* a CUtensorMap of an operand, __grid_constant__ */
} ts_param_kind;

/* The global memory a buffer parameter points into. */
typedef enum ts_param_buffer {
  TS_PARAM_A,         /* op(A)'s operand as stored */
  TS_PARAM_B,         /* op(B)'s */
  TS_PARAM_C,         /* C, read (beta) and written */
  TS_PARAM_WORKSPACE, /* the program's workspace (ts_kernel_workspace) */
  TS_PARAM_NBUFFERS
} ts_param_buffer;

/* The definition's value a scalar parameter takes. */
typedef enum ts_param_value {
  TS_VALUE_M, TS_VALUE_N, TS_VALUE_K, TS_VALUE_ALPHA, TS_VALUE_BETA,
  TS_VALUE_LDA, TS_VALUE_LDB, TS_VALUE_LDC, /* resolved: packed is the row */
  TS_VALUE_COUNT
} ts_param_value;

typedef struct ts_param {
  ts_param_kind kind;
  ts_param_buffer buffer; /* TS_PARAM_BUFFER, TS_PARAM_TENSOR_MAP: which */
  int64_t offset;         /* and bytes past its start (a packed view's) */
  ts_dtype dtype;         /* TS_PARAM_BUFFER: its elements' type */
  bool read_only;         /* TS_PARAM_BUFFER: the kernel only reads it */
  /* TS_PARAM_BUFFER: the bytes its address (with the offset) must be a
   * multiple of: the widest access the kernel makes of it at once (a
   * vector of 16 bytes, say), whose offsets lowering proved aligned; at
   * least its element's. */
  int align;
  ts_param_value value;   /* TS_PARAM_INT, TS_PARAM_FLOAT: which */
  /* TS_PARAM_TENSOR_MAP (with buffer, offset and dtype): the operand as
   * the map sees it, innermost (contiguous) dimension first: its extents,
   * the bytes between rows, the box a copy moves and the swizzle of the
   * shared tile it lands in (bytes of a swizzled row: 128).  A packed
   * operand's map is of the workspace at the view's offset, with the
   * view's extents and padded rows. */
  int64_t dims[2], row_bytes, box[2];
  int swizzle;
  /* TS_PARAM_TENSOR_MAP of an operand whose extents or leading dimension
   * are chosen at launch (ts_gemm.runtime): 1 + the ts_param_value each
   * dimension and the row pitch (in elements) follow, so the launcher
   * encodes the map at each launch's values; 0 where dims[] or row_bytes
   * is the number. */
  int dim_from[2], pitch_from;
} ts_param;

/* The integer values of definition g by ts_param_value: its extents and
 * its leading dimensions resolved (0 is the packed row); alpha's and
 * beta's slots 0.  What a kernel's VAR_PARAM variables and TS_PARAM_INT
 * parameters take at g's shape. */
static inline void ts_param_values_of(const ts_gemm *g,
                                      int64_t out[TS_VALUE_COUNT]) {
  out[TS_VALUE_M] = g->m;
  out[TS_VALUE_N] = g->n;
  out[TS_VALUE_K] = g->k;
  out[TS_VALUE_ALPHA] = out[TS_VALUE_BETA] = 0;
  for (int r = 0; r < TS_OPERAND_COUNT; r++)
    out[TS_VALUE_LDA + r] = ts_gemm_operand(g, (ts_operand_role)r).ld;
}

/* The name a buffer parameter has in the signature: "A", "B", "C", "W". */
static inline const char *ts_param_buffer_name(ts_param_buffer b) {
  static const char *const names[TS_PARAM_NBUFFERS] = {"A", "B", "C", "W"};
  return b >= 0 && b < TS_PARAM_NBUFFERS ? names[b] : "?";
}

#endif
