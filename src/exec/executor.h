/*
 * The reference executor: runs a lowered kernel on the CPU with CUDA's
 * semantics and reports what the GPU would not.
 */
#ifndef TS_EXEC_H
#define TS_EXEC_H

#include <stddef.h>

#include "../ir/ir.h"

/* Runs k over the grid on host data in storage order (A and B as their
 * buffers' strides lay them out, C row-major).  c_defined says whether C
 * holds data before the kernel (beta != 0); when false, reading C before a
 * write is a fault.  Returns false with the first fault described in msg:
 * an out-of-bounds access, a race in shared or global memory, a barrier in
 * divergent code, or a read of memory nothing wrote. */
/* One access of a global or shared buffer as the executor makes it, for
 * the threads of a block at once (tessel explain's cross-check). */
typedef struct ir_observed {
  const void *node;     /* the E_LOAD, S_STORE or S_LDMATRIX */
  const ir_buffer *buf;
  int lanes;            /* elements each thread accesses; 1 for ldmatrix */
  bool store;
  int matrices;         /* an ldmatrix's source rows: 1, 2 or 4; else 0 */
  const int64_t *off;   /* each thread's element (off[0] for all: uniform) */
  bool uniform;
  const bool *mask;     /* the threads that access */
  int nthreads;         /* of the block, thread t at (t % bx, ...); with
                         * a cluster, of its blocks run together, thread
                         * t of the block t / (bx * by * bz) */
} ir_observed;

typedef struct ir_observer {
  void (*access)(void *ctx, const ir_observed *a);
  void *ctx;
} ir_observer;

bool ir_execute(const ir_kernel *k, const float *A, const float *B, float *C,
                bool c_defined, char *msg, size_t msglen);
/* Runs n kernels in order, as one stream launches them, on the same
 * matrices and on one workspace (split-K's W and ts_pack's copies of A
 * and B, each starting unwritten: a read before a write is a fault).  A kernel's end orders
 * its accesses before the next one's.  Atomic adds to an element do not
 * race with each other, but do with any other access of their kernel.
 * With several kernels a fault names the kernel. */
bool ir_execute_kernels(const ir_kernel *const *ks, int n, const float *A,
                        const float *B, float *C, bool c_defined, char *msg,
                        size_t msglen);

/* ir_execute_kernels with each global and shared access reported to
 * `observer` (may be NULL) as it is made. */
bool ir_execute_observed(const ir_kernel *const *ks, int n, const float *A,
                         const float *B, float *C, bool c_defined,
                         const ir_observer *observer, char *msg,
                         size_t msglen);

/* ir_execute_observed that also counts its work into *steps (may be
 * NULL): the steps of every statement it ran (ir_stmt_steps) for every
 * thread of the block that ran it. */
bool ir_execute_counted(const ir_kernel *const *ks, int n, const float *A,
                        const float *B, float *C, bool c_defined,
                        const ir_observer *observer, double *steps,
                        char *msg, size_t msglen);

/* ir_execute_counted with the values taken at launch (by
 * ts_param_value: m, n, k, the leading dimensions) given: each kernel
 * whose extents are chosen at launch runs as compiled for them, on
 * matrices of that shape.  NULL: each kernel's nominal values. */
bool ir_execute_at(const ir_kernel *const *ks, int n, const int64_t *values,
                   const float *A, const float *B, float *C, bool c_defined,
                   const ir_observer *observer, double *steps, char *msg,
                   size_t msglen);

/* ---- The executor's work ----------------------------------------------------
 * Its time is counted in steps: a statement run for one thread.  The
 * threads of a block run in lockstep, so a statement any of them reaches
 * costs a loop over all of the block's threads, the ones a guard leaves
 * out (past C's edge) included; a store of `lanes` elements costs `lanes`
 * steps; a condition, barrier or copy's commit or wait one; an mma.sync
 * its registers and multiply-adds; a wgmma or a TMA copy one, and the
 * warpgroup or thread that issues it its work: the wgmma's tiles,
 * multiply-adds and accumulators, the copy's box (exec.c). */

/* A statement's own steps per thread of its block (0 for a loop, a
 * sequence, an allocation or a pipeline: they cost their bodies'). */
double ir_stmt_steps(const ir_stmt *s);
/* The steps a statement adds for each thread or warpgroup that issues
 * it, past its ir_stmt_steps: a TMA copy's box, read and landed (one
 * thread of the block issues each copy); a wgmma's tiles, read at issue
 * and at retirement, its multiply-adds and its accumulators, for each
 * warpgroup; 0 for the others. */
double ir_issue_steps(const ir_stmt *s);
/* One block of k, estimated from the program: every loop's trip count
 * times its body's, both branches of every `if` taken, times the block's
 * threads.  Every block of a kernel runs the same statements but for its
 * guards, so a kernel costs its blocks times this. */
double ir_block_steps(const ir_kernel *k);
double ir_kernel_steps(const ir_kernel *k);

#endif
