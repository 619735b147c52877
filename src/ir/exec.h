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

#endif
