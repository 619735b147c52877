/*
 * The reference executor: runs a lowered kernel on the CPU with CUDA's
 * semantics and reports what the GPU would not.
 */
#ifndef TS_EXEC_H
#define TS_EXEC_H

#include <stddef.h>

#include "ir.h"

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
  int nthreads;         /* of the block, thread t at (t % bx, ...) */
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

#endif
