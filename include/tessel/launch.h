/*
 * Launching a compiled kernel on the caller's device memory and stream
 * (src/launch/): the part of tessel an application that only runs kernels
 * needs, with the CUDA driver as its one dependency (no NVRTC, no
 * lowering).  Part of tessel's public API; include <tessel.h> for all of
 * it.
 */
#ifndef TESSEL_LAUNCH_H
#define TESSEL_LAUNCH_H

#include "compile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One operand of a launch: a device pointer (a CUdeviceptr, or a pointer
 * from cudaMalloc as an integer), the elements from one stored row to the
 * next (0: packed, the stored row's length), and the type its elements
 * are stored in.  A is stored m x k (k x m where op(A) is its transpose),
 * B k x n (n x k), C m x n, each row-major. */
typedef struct ts_launch_operand {
  uint64_t ptr;
  int64_t ld;
  ts_dtype type;
} ts_launch_operand;

/* What one GEMM runs on: C = alpha op(A) op(B) + beta C. */
typedef struct ts_launch_args {
  int64_t m, n, k;
  float alpha, beta;
  ts_launch_operand operand[TS_OPERAND_COUNT]; /* by ts_operand_role */
  /* Device memory of at least ts_kernel_workspace(kernel) bytes, 256-byte
   * aligned, for kernels that need one; 0: the launcher's own, allocated
   * at the kernel's first launch in a context and shared by its launches
   * there (launches that run at once on several streams give their own). */
  uint64_t workspace;
  int64_t workspace_bytes;
} ts_launch_args;

/* The arguments a kernel was compiled for: its definition's extents,
 * alpha, beta, types and leading dimensions; pointers 0, no workspace. */
ts_launch_args ts_launch_args_of(const ts_kernel *k);

/* Launches the kernel (its entry points in order: ts_pack's, the
 * schedule's, split-K's) on `stream` (a CUstream; NULL: the context's
 * default stream) in the calling thread's current context, and returns
 * without waiting.  The first launch in a context loads the kernel's
 * module there (and its workspace, unless given); later ones reuse it, so
 * a launch is capturable in a CUDA graph once the kernel has run in the
 * context.  Thread-safe.
 *
 * Arguments the kernel cannot run are refused before anything is
 * launched, with a status and ts_launch_errmsg naming the argument: a
 * NULL or misaligned pointer (the TMA reads 16-byte aligned rows), a
 * leading dimension smaller than the stored row or not the compiled one,
 * an extent, alpha or beta other than the compiled ones, a type other
 * than the definition's, a workspace too small; a kernel compiled for
 * another architecture than the device's (TS_ERR_BAD_ARCH); no current
 * context (TS_ERR_CUDA). */
ts_status ts_launch(const ts_kernel *k, const ts_launch_args *args,
                    void *stream);
/* Why the calling thread's last ts_launch failed; "" after a success. */
const char *ts_launch_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif
