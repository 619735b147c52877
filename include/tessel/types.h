/*
 * Status codes and the GEMM definition: the vocabulary every stage shares.
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_TYPES_H
#define TESSEL_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes ------------------------------------------------------ */

#define TS_STATUS_LIST(X)                                                     \
  X(TS_OK, "no error")                                                        \
  X(TS_ERR_NO_MEMORY, "out of memory")                                        \
  X(TS_ERR_NULL_ARG, "a required argument is NULL")                           \
  X(TS_ERR_BAD_SHAPE, "shape out of range")                                   \
  X(TS_ERR_BAD_LAYOUT, "layout must be NN, NT, TN or TT")                     \
  X(TS_ERR_BAD_FACTOR, "factor must be >= 1")                                 \
  X(TS_ERR_UNKNOWN_LOOP, "no loop of that name")                              \
  X(TS_ERR_FOREIGN_LOOP, "loop belongs to another schedule")                  \
  X(TS_ERR_LOOP_REPLACED, "loop was replaced by an earlier split or fuse")    \
  X(TS_ERR_NOT_PERFECT_NEST, "loops are not in one perfect nest")             \
  X(TS_ERR_NOT_ADJACENT, "loops are not directly nested")                     \
  X(TS_ERR_DUPLICATE_LOOP, "a loop is given twice")                           \
  X(TS_ERR_MIXED_AXES, "a reduction loop cannot be fused with a spatial loop") \
  X(TS_ERR_ALREADY_BOUND, "loop is already bound, unrolled or marked")        \
  X(TS_ERR_TAG_BOUND_TWICE, "that launch index is bound to another loop")     \
  X(TS_ERR_THREAD_OUTSIDE_BLOCK, "a thread loop lies outside a block loop")   \
  X(TS_ERR_TOO_MANY_THREADS, "more than 1024 threads per block")              \
  X(TS_ERR_LAUNCH_LIMIT, "extent over the launch dimension's limit")          \
  X(TS_ERR_BIND_REDUCTION, "a reduction loop cannot be bound")                \
  X(TS_ERR_BOUND_INSIDE_REDUCTION, "a bound loop lies inside a reduction loop") \
  X(TS_ERR_NOT_OUTERMOST_REDUCTION, "split-K needs the outermost reduction loop") \
  X(TS_ERR_BAD_TAG, "the loop cannot take that launch index")                \
  X(TS_ERR_BAD_NAME, "bad loop name")                                         \
  X(TS_ERR_NAME_TAKEN, "loop name already used")                              \
  X(TS_ERR_BAD_ARG, "invalid argument")                                       \
  X(TS_ERR_UNKNOWN_SCHEDULE, "no built-in schedule of that name")             \
  X(TS_ERR_EXEC_FAULT, "the reference executor found a fault")                \
  X(TS_ERR_MISMATCH, "result differs from the reference GEMM")                \
  X(TS_ERR_NO_GPU, "no CUDA driver or GPU")                                   \
  X(TS_ERR_CUDA, "a CUDA driver call failed")                                 \
  X(TS_ERR_NVRTC, "NVRTC failed")                                             \
  X(TS_ERR_BAD_ARCH, "architecture not supported by NVRTC")                   \
  X(TS_ERR_CUBLAS, "cuBLAS failed")                                           \
  X(TS_ERR_IO, "file input/output failed")                                   \
  X(TS_ERR_UNKNOWN_BUFFER, "no buffer of that name")                          \
  X(TS_ERR_BAD_SCOPE, "scope must be TS_SHARED or TS_LOCAL")                  \
  X(TS_ERR_BAD_ATTACH, "the cache cannot be attached at that loop")           \
  X(TS_ERR_CACHE_REGION, "the change would alter a cache's region")           \
  X(TS_ERR_SHARED_LIMIT, "shared memory over the limit")                      \
  X(TS_ERR_BAD_VECTOR, "vector width must be 1, 2 or 4 (8 for 2-byte types)")  \
  X(TS_ERR_NOT_INNERMOST, "vectorized or tensorized loops must be innermost")  \
  X(TS_ERR_NOT_SHARED, "the cache must be in shared memory")                 \
  X(TS_ERR_BAD_PAD, "padding must be in 0..32")                               \
  X(TS_ERR_STAGE_USED, "the cache was already transformed")                  \
  X(TS_ERR_RESOURCES, "the kernel needs more than the device has")           \
  X(TS_ERR_PRUNED, "the configuration breaks a constraint of its space")   \
  X(TS_ERR_BAD_KNOB, "the space declares a knob wrongly")                     \
  X(TS_ERR_BAD_TENSORIZE, "the loops do not form a tensor-core instruction") \
  X(TS_ERR_SCHEDULE_FAULT, "the schedule's code crashed, hung or called exit") \
  X(TS_ERR_TOO_SLOW, "the check would take longer than its budget")           \
  X(TS_ERR_INDEX_OVERFLOW, "an index would overflow the kernel's int")        \
  X(TS_ERR_TENSOR_TYPE, "no tensor-core instruction for the operand types")  \
  X(TS_ERR_CACHE_ORDER, "caches copy global -> shared -> registers")          \
  X(TS_ERR_STAGES_DIFFER, "caches at one loop are buffered differently")   \
  X(TS_ERR_UNKNOWN_KNOB, "the configuration names a knob the space lacks")

typedef enum {
#define TS_STATUS_ENUM(code, text) code,
  TS_STATUS_LIST(TS_STATUS_ENUM)
#undef TS_STATUS_ENUM
  TS_STATUS_COUNT
} ts_status;

/* Fixed text for a status code. */
const char *ts_strerror(ts_status status);

/* ---- The definition ---------------------------------------------------- */

/* op(A) is A (N) or A transposed (T).  NT: A row-major MxK, B stored as an
 * NxK row-major matrix (C = A * B^T, as seed 000 computes). */
typedef enum { TS_NN, TS_NT, TS_TN, TS_TT } ts_layout;

/* Element types of the matrices.  A and B may be fp16 or bf16 with an fp32
 * accumulator and an fp32, fp16 or bf16 C; fp32 everywhere is the default. */
typedef enum {
  TS_F32,  /* IEEE binary32 */
  TS_F16,  /* IEEE binary16 (CUDA's __half) */
  TS_BF16, /* bfloat16 (CUDA's __nv_bfloat16) */
} ts_dtype;

/* How fp32 A and B are multiplied: exactly (the default), or cut to tf32
 * (10 significand bits) first, as tensor cores do and as cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32 allows: rounded to nearest where the
 * schedule rounds an operand (ts_pack; mma.sync's fragments), truncated
 * where wgmma reads it as it lies.  Products are summed in fp32 either
 * way.  The command line's --dtype tf32 is fp32 A and B with TS_MATH_TF32. */
typedef enum { TS_MATH_F32, TS_MATH_TF32 } ts_math;

typedef struct ts_gemm {
  int64_t m, n, k;  /* C is m x n; op(A) is m x k; op(B) is k x n */
  ts_layout layout;
  float alpha;
  float beta; /* C is not read when beta == 0 */
  /* Storage types of A, B and C, and the accumulator's (TS_F32 only). */
  ts_dtype a_type, b_type, c_type, acc_type;
  ts_math math; /* fp32 A and B only */
  /* Leading dimensions: elements from one stored row of A, B and C to the
   * next, as each is stored row-major (A m x k, or k x m where op(A) is
   * its transpose; B k x n or n x k; C m x n), so a slice of a larger
   * matrix is given in place.  0 is packed (the stored row's length);
   * else at least the stored row.  The elements past a row up to the
   * next belong to the caller: no kernel writes C's.  Compiled in as the
   * shape is, unless `runtime` says otherwise. */
  int64_t lda, ldb, ldc;
  /* Which of the extents and leading dimensions the kernel takes at
   * launch instead of compiling in (TS_RUNTIME_* or'ed; 0: all compiled
   * in).  m, n, k and the ld above are then the nominal values the
   * executor and explain use, and a launch gives any others: the grid,
   * the loops' trip counts and the guards follow them at run time. */
  unsigned runtime;
  /* Every extent taken at launch is a multiple of runtime_multiple, and
   * every leading dimension of runtime_ld_multiple (1, the default when
   * 0, runs every shape; 4 or 8 lets vector accesses be proven aligned,
   * as CUTLASS's alignment does, and 16 bytes' worth of rows lets the TMA
   * read them): ts_launch refuses others. */
  int64_t runtime_multiple, runtime_ld_multiple;
} ts_gemm;

/* ts_gemm.runtime's bits. */
enum {
  TS_RUNTIME_M = 1,  /* m given at launch */
  TS_RUNTIME_N = 2,
  TS_RUNTIME_K = 4,
  TS_RUNTIME_LD = 8, /* lda, ldb and ldc given at launch */
  TS_RUNTIME_SHAPE = 15 /* all of them */
};

/* {m, n, k} with layout NN, alpha 1 and beta 0, as cuBLAS's GEMM defaults. */
ts_gemm ts_gemm_make(int64_t m, int64_t n, int64_t k);

/* ---- The operands -------------------------------------------------------- */

/* The definition's matrices as a table: each one's role, type, storage
 * and leading dimension, read from the definition by ts_gemm_operand, so
 * that "A is m x k or k x m, and its rows lie lda apart" is said once. */
typedef enum ts_operand_role {
  TS_OPERAND_A, /* op(A)'s matrix as stored */
  TS_OPERAND_B, /* op(B)'s */
  TS_OPERAND_C, /* C, read (beta != 0) and written */
  TS_OPERAND_COUNT
} ts_operand_role;

typedef struct ts_operand {
  ts_operand_role role;
  ts_dtype type;
  bool transposed;  /* stored as op()'s transpose */
  int64_t rows, cols; /* as stored (row-major) */
  int64_t ld; /* elements from one stored row to the next, >= cols (0 in
               * the definition resolved to cols) */
  int64_t batch, batch_stride; /* reserved for batched GEMM: 1 and 0 */
} ts_operand;

/* Operand `role` of def as it lies in memory; a role out of range gives
 * C's. */
ts_operand ts_gemm_operand(const ts_gemm *def, ts_operand_role role);
/* "A", "B", "C" ("?" out of range). */
const char *ts_operand_name(ts_operand_role role);
/* (rows - 1) * ld + cols: the elements its memory must hold (0 for an
 * empty one). */
int64_t ts_operand_elements(const ts_operand *op);

const char *ts_layout_name(ts_layout layout);
/* "f32", "f16", "bf16"; ts_dtype_parse returns -1 for anything else. */
const char *ts_dtype_name(ts_dtype t);
int ts_dtype_parse(const char *text);
int ts_dtype_size(ts_dtype t); /* bytes: 4, 2, 2 */
/* x rounded to t (to nearest even) and stored at dst as t stores it (a
 * float, or binary16 or bfloat16 bits): how a program fills a matrix of
 * the definition's types. */
void ts_dtype_store(ts_dtype t, float x, void *dst);
/* The element of type t at src, as a float (exact). */
float ts_dtype_load(ts_dtype t, const void *src);
/* How far a correct kernel's C may be from a reference's, as the largest
 * difference over the largest |C| (rounding of the sum in the accumulator's
 * type and of the store to C's): 1e-5 for fp32 up to K = 4096. */
double ts_gemm_tolerance(const ts_gemm *def);
/* Parses "NN", "NT", "TN", "TT"; returns -1 otherwise. */
int ts_layout_parse(const char *text);

/* ---- Host matrices ------------------------------------------------------ */

/* A matrix on the host as it lies in memory: `data` holds its elements as
 * `type` stores them (4-byte floats for TS_F32; the 2-byte IEEE binary16
 * or bfloat16 bit patterns, as uint16_t, for TS_F16 and TS_BF16), in the
 * definition's layout (A m x k, or k x m where it is stored transposed; B
 * k x n or n x k; C m x n; each row-major), each stored row its leading
 * dimension (lda, ldb, ldc) from the next: ts_operand_elements of its
 * ts_gemm_operand elements in all.  The elements between rows are the
 * caller's: read into the floats and back, never written by a kernel.
 * The entry points that take
 * one (ts_program_execute_matrices, ts_gpu_run_matrices,
 * ts_gpu_cublas_matrices) refuse a type other than the definition's, and
 * read A and B without writing them. */
typedef struct ts_matrix {
  void *data;
  ts_dtype type;
} ts_matrix;

/* ---- Loops -------------------------------------------------------------- */

/* A loop of the nest, as a schedule's primitives hand it out and the IR
 * holds it, and what a loop is bound to or marked as. */
typedef struct ts_loop ts_loop;

typedef enum {
  TS_SERIAL,
  TS_UNROLLED,
  TS_BLOCK_X,
  TS_BLOCK_Y,
  TS_BLOCK_Z,
  TS_THREAD_X,
  TS_THREAD_Y,
  TS_THREAD_Z,
  TS_VECTORIZED,
  TS_TENSORIZED, /* one of the three loops of a tensor-core instruction */
} ts_loop_kind;

#ifdef __cplusplus
}
#endif
#endif
