/*
 * Compiling a program into a kernel: NVRTC and the kernel cache (src/compile/).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_COMPILE_H
#define TESSEL_COMPILE_H

#include "program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Compiling (NVRTC; needs no GPU) ------------------------------------ */

typedef struct ts_kernel ts_kernel;

typedef struct ts_ptxas_info {
  int registers;
  int shared_bytes;
  int spill_store_bytes;
  int spill_load_bytes;
  int stack_bytes;
  int valid; /* nonzero when known: from ptxas's report, or after a load on
                the GPU from the driver, where spills are -1 (unknown) if the
                function uses local memory */
} ts_ptxas_info;

/* Compiles the program's kernel for `arch` ("sm_90"; NULL: sm_90).  Never
 * NULL; check ts_kernel_status.  The kernel carries what launching it needs
 * (entry point, launch geometry, dynamic shared memory, the definition) and
 * nothing of the program, which may be freed at once.  A program in error
 * gives a kernel with its status and message. */
ts_kernel *ts_compile(const ts_program *p, const char *arch);
/* Compiles the program for each architecture of a comma-separated list
 * ("sm_80,sm_90"): one kernel holding a cubin for each, the first as
 * ts_kernel_arch and ts_kernel_cubin; ts_launch runs the one the device
 * can run.  An architecture the program cannot be compiled for (sm_90a's
 * wgmma elsewhere) fails the kernel, naming it.  Never NULL. */
ts_kernel *ts_compile_for(const ts_program *p, const char *archs);
/* The kernel's cubins: 1 + the further architectures ts_compile_for gave
 * it (0 for a kernel in error); image i's cubin, with its architecture
 * and size in bytes (NULL, "" and 0 out of range). */
int ts_kernel_image_count(const ts_kernel *k);
const void *ts_kernel_image(const ts_kernel *k, int i, const char **arch,
                            size_t *size);
/* ts_lower then ts_compile. */
ts_kernel *ts_compile_sched(const ts_sched *s, const char *arch);
/* Compiles n programs on `threads` threads (0: one per processor), each
 * into kernels[i] with its own status: one that fails does not stop the
 * others.  Returns TS_OK, or TS_ERR_NULL_ARG / TS_ERR_BAD_ARG for the
 * arguments themselves. */
ts_status ts_compile_all(ts_program *const programs[], int n,
                         const char *arch, int threads, ts_kernel *kernels[]);
void ts_kernel_free(ts_kernel *k);
ts_status ts_kernel_status(const ts_kernel *k);
const char *ts_kernel_errmsg(const ts_kernel *k);
/* The program's name, or a hand-written kernel's. */
const char *ts_kernel_name(const ts_kernel *k);
const ts_gemm *ts_kernel_gemm(const ts_kernel *k);
const char *ts_kernel_log(const ts_kernel *k); /* NVRTC's log, verbatim */
ts_ptxas_info ts_kernel_ptxas(const ts_kernel *k);
const char *ts_kernel_arch(const ts_kernel *k);
/* FNV-1a (64 bits) of the CUDA C the kernel was compiled from, so that a
 * record of a run names the exact source each row timed; 0 when no source
 * reached NVRTC (an error before it). */
uint64_t ts_kernel_source_hash(const ts_kernel *k);
/* Nonzero when the kernel came from the kernel cache (the directory
 * $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else ~/.cache/tessel;
 * TESSEL_NO_CACHE=1 turns it off) instead of NVRTC. */
int ts_kernel_from_cache(const ts_kernel *k);
/* The entry points the cubin holds, launched in order (the program's
 * kernels: 1, or more with split-K and ts_pack), each one's geometry, and
 * the workspace they share in bytes (0: none). */
int ts_kernel_count(const ts_kernel *k);
const char *ts_kernel_entry(const ts_kernel *k, int i);
ts_status ts_kernel_launch(const ts_kernel *k, int i, ts_launch_geometry *out);
int64_t ts_kernel_workspace(const ts_kernel *k);
/* The CUDA C the kernel was compiled from (its hash is
 * ts_kernel_source_hash); "" when none reached NVRTC. */
const char *ts_kernel_source(const ts_kernel *k);
/* The cubin and its size in bytes; NULL and 0 for a kernel in error. */
const void *ts_kernel_cubin(const ts_kernel *k, size_t *size);
/* The PTX of the kernel's source for its architecture (compute_90 for
 * sm_90), compiled by NVRTC when asked: malloc'd text the caller frees,
 * or NULL with the reason in msg. */
char *ts_kernel_ptx(const ts_kernel *k, char *msg, size_t msglen);

/* A hand-written CUDA kernel, timed beside schedules as a baseline.  The
 * source defines the entry point
 *
 *   extern "C" __global__ void gemm(const float *A, const float *B, float *C,
 *                                   int M, int N, int K, float alpha,
 *                                   float beta);
 *
 * computing C = alpha op(A) op(B) + beta C with A, B and C stored as a
 * schedule of the same definition sees them, and its launch geometry as
 * __device__ or __constant__ ints with C linkage:
 *
 *   tessel_block[3]     threads per block, x y z
 *   tessel_tile[2]      rows and columns of C one block computes: the grid
 *                       is ceil(N / columns) x ceil(M / rows)
 *   tessel_multiple[3]  optional: M, N and K must be multiples of these
 *
 * At a shape that is not a multiple the kernel is skipped, with the reason
 * in its result, and the others are timed. */
typedef struct ts_cuda_kernel {
  const char *name;   /* its label in the results */
  const char *source; /* CUDA C */
} ts_cuda_kernel;

/* Compiles a hand-written kernel for the definition `def` (the shape, alpha
 * and beta it is launched with).  Never NULL; check ts_kernel_status.  Its
 * geometry is read when it is loaded on the GPU. */
ts_kernel *ts_compile_cuda(const ts_cuda_kernel *src, const ts_gemm *def,
                           const char *arch);

/* ---- Saving and loading (no NVRTC, no GPU) ---------------------------- */

/* Writes the compiled kernel whole to `path` (replacing it atomically):
 * the cubin, its architecture, each entry point's launch geometry and
 * parameter list, how each tensor map is encoded, the workspace, the
 * definition, and the CUDA C and NVRTC's log.  TS_OK, or the reason in
 * msg (msglen bytes; msg may be NULL): TS_ERR_BAD_ARG for a kernel in
 * error, TS_ERR_IO where the file cannot be written. */
ts_status ts_kernel_save(const ts_kernel *k, const char *path, char *msg,
                         size_t msglen);
/* Reads a kernel ts_kernel_save wrote, in a process that need not lower
 * or compile anything.  Never NULL; check ts_kernel_status: TS_ERR_IO for
 * a file that cannot be read, is not a kernel file, is truncated or
 * corrupt, or was written in another format (the message names the
 * version that wrote it).  ts_launch refuses it on a device of another
 * architecture. */
ts_kernel *ts_kernel_load(const char *path);

#ifdef __cplusplus
}
#endif
#endif
