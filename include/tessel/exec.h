/*
 * The reference executor and the checks on the CPU (src/exec/).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_EXEC_H
#define TESSEL_EXEC_H

#include "program_read.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The multiprocessors the executor simulates for a persistent grid
 * (ts_persistent): min(tiles, TS_EXEC_MULTIPROCESSORS x blocks a
 * multiprocessor) blocks, so that at small shapes a block takes several
 * tiles, as on the GPU at large ones. */
enum { TS_EXEC_MULTIPROCESSORS = 4 };

/* Runs the program on the CPU with CUDA's semantics, on the given host
 * matrices (A and B in the definition's layouts, C row-major m x n,
 * updated in place), each stored row its leading dimension (lda, ldb,
 * ldc) from the next: each array holds ts_operand_elements of its
 * ts_gemm_operand.  The elements between rows are the caller's: never
 * read, and left as they are in C.  The matrices are floats whatever the
 * definition's types: values of an fp16 or bf16 matrix are first rounded
 * to it (A and B in copies, C's rows in place), and every store rounds to
 * its buffer's type as the GPU does.  Faults (out of bounds, races, a barrier in divergent
 * code, a read of memory nothing wrote) return TS_ERR_EXEC_FAULT with the
 * description in msg. */
ts_status ts_program_execute(const ts_program *p, const float *A,
                             const float *B, float *C, char *msg,
                             size_t msglen);
/* The same on matrices of the definition's own element types (see
 * ts_matrix): A and B are read, C updated in place in its type. */
ts_status ts_program_execute_matrices(const ts_program *p, ts_matrix A,
                                      ts_matrix B, ts_matrix C, char *msg,
                                      size_t msglen);
/* Runs the program on random data (rounded to the definition's types)
 * against a plain C GEMM (double accumulation of the rounded values), the
 * matrices laid out with the definition's leading dimensions; the
 * elements between C's rows must be as they were.  TS_ERR_MISMATCH or
 * TS_ERR_EXEC_FAULT with details in msg; a program in error gives its
 * status and message. */
ts_status ts_program_check(const ts_program *p, uint64_t seed, char *msg,
                           size_t msglen);

/* ts_program_check at the extents and leading dimensions `at` gives, for
 * a program that takes them at launch (ts_gemm.runtime): the same
 * kernels run on matrices of that shape, as a launch with those values
 * runs them.  at's types, layout, alpha and beta must be the program's,
 * and so must each value it compiles in (TS_ERR_BAD_ARG or
 * TS_ERR_BAD_SHAPE, named in msg). */
ts_status ts_program_check_at(const ts_program *p, const ts_gemm *at,
                              uint64_t seed, char *msg, size_t msglen);
/* TS_OK where a check of def fits in the memory this machine has
 * available (ts_memory_available: the inputs, C and the executor's record
 * of every element, ts_check_bytes); else TS_ERR_NO_MEMORY with the
 * numbers in msg.  ts_check refuses such a shape so before it allocates
 * anything. */
ts_status ts_check_fits(const ts_gemm *def, char *msg, size_t msglen);
/* Bytes a full check of def holds at once: about 34 an element of A and
 * B, 42 of C. */
double ts_check_bytes(const ts_gemm *def);
/* Bytes of memory this machine has available now: /proc/meminfo's
 * MemAvailable, or less where a cgroup limits the process (memory.max),
 * else the physical memory; 0 when it cannot say. */
double ts_memory_available(void);

/* A sampled check (ts_program_check_sampled): the blocks of every kernel
 * that write chosen elements of C run on the reference executor with
 * every check a full run makes, on matrices never held whole (A and B are
 * computed from the seed and each element's index; C and the split-K
 * workspace live in pages made on first touch), and the elements they
 * write are compared with a double-precision GEMM of the same elements.
 * The chosen elements: C's four corners, a point on each edge, then
 * `random` points inside; each brings the blocks that may write it (found
 * by interval analysis of the kernels' stores, so a swizzle or split-K is
 * followed), as long as the estimated time stays within `budget_s`. */
typedef struct ts_sample {
  int random;      /* in: random points inside C, beyond corners and edges */
  double budget_s; /* in: seconds the blocks may take (estimated); 0: any */
  int points_run, points_wanted; /* out: the chosen elements run, of all */
  long long blocks_run, blocks_total; /* out: blocks of every kernel */
  long long elements;                 /* out: elements of C compared */
  double bytes;   /* out: memory the sparse matrices took (a plan: the
                     most it may hold at once, estimated) */
  double seconds; /* out: the estimate for the blocks chosen */
  double steps;   /* out: their steps (ts_check_steps' unit), estimated
                     by a plan, counted by a run */
} ts_sample;

/* The reference executor's work is counted in steps: one statement of a
 * kernel run for one thread of its block.  The threads of a block run in
 * lockstep, so every thread of a block that runs a statement counts, those
 * a guard leaves out past C's edge too; a store of a vector counts its
 * lanes, a tensor-core instruction its registers and multiply-adds. */

/* The executor's speed, steps a second on one core: what the estimates of
 * ts_check_seconds and a sample's budget assume. */
double ts_check_rate(void);
/* The steps of a full check of p, estimated from its lowered kernels:
 * their blocks, each block's threads, every loop's trip count, every
 * statement (both branches of an `if`); 0 for a program in error. */
double ts_check_steps(const ts_program *p);
/* ts_check_steps in seconds, at ts_check_rate. */
double ts_check_seconds(const ts_program *p);
/* ts_program_check that also counts the steps the executor took into
 * *steps (may be NULL). */
ts_status ts_program_check_counted(const ts_program *p, uint64_t seed,
                                   double *steps, char *msg, size_t msglen);
/* A sampled check of p (see ts_sample; s's inputs set); TS_OK when every
 * compared element is right and no fault happened in the blocks run, else
 * TS_ERR_MISMATCH or TS_ERR_EXEC_FAULT with details in msg.  s's outputs
 * are filled either way.  Where the blocks of the first point alone would
 * take more than budget_s, nothing runs: TS_ERR_TOO_SLOW, as the plan. */
ts_status ts_program_check_sampled(const ts_program *p, uint64_t seed,
                                   ts_sample *s, char *msg, size_t msglen);
/* The sample ts_program_check_sampled would run, chosen and not run: s's
 * outputs, with `bytes` the most memory the run would hold at once (C's
 * and the workspace's pages, one box's rows of A and columns of B) and
 * `seconds` the executor's time, both estimated.  TS_ERR_NO_MEMORY, with
 * the numbers in msg, where that memory is more than this machine has
 * available; TS_ERR_TOO_SLOW where the blocks of the first point (a corner
 * of C) alone pass budget_s (a block walking a very long K):
 * ts_program_check_sampled refuses such samples so first. */
ts_status ts_program_sample_plan(const ts_program *p, uint64_t seed,
                                 ts_sample *s, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
