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
bool ir_execute(const ir_kernel *k, const float *A, const float *B, float *C,
                bool c_defined, char *msg, size_t msglen);
/* Runs n kernels in order, as one stream launches them, on the same
 * matrices and on one workspace (the kernels' W, fp32, which starts
 * unwritten: a read before a write is a fault).  A kernel's end orders
 * its accesses before the next one's.  Atomic adds to an element do not
 * race with each other, but do with any other access of their kernel.
 * With several kernels a fault names the kernel. */
bool ir_execute_kernels(const ir_kernel *const *ks, int n, const float *A,
                        const float *B, float *C, bool c_defined, char *msg,
                        size_t msglen);

#endif
