/*
 * A compiled kernel: the cubin NVRTC made for one architecture, and what
 * launching it needs, copied out of the program it came from: the entry
 * point, the launch geometry, the definition, the ptxas resource report.
 * The runtime sees kernels only, never programs or schedules.
 */
#ifndef TS_KERNEL_H
#define TS_KERNEL_H

#include <stdbool.h>

#include "tessel.h"

struct ts_kernel {
  ts_status status;
  char errmsg[2048];
  char *log;     /* NVRTC's log, verbatim (malloc'd) */
  char arch[16]; /* "sm_90" */
  char *name;    /* entry point (malloc'd) */
  char *label;   /* the program's or hand-written kernel's name (malloc'd) */
  void *cubin;   /* malloc'd */
  size_t cubin_size;
  ts_gemm def;   /* the definition it computes, launched with */
  ts_launch launch;
  /* Split-K: the entry points launched in order (the one above among
   * them), each one's launch, and the bytes of the workspace they share;
   * nkernels is 0 for a kernel of one entry point. */
  int nkernels;
  char *entries[TS_MAX_KERNELS]; /* malloc'd */
  ts_launch launches[TS_MAX_KERNELS];
  int64_t workspace;
  int min_blocks;    /* blocks per multiprocessor it was compiled for */
  bool hand_written; /* a ts_cuda_kernel: (A, B, C, M, N, K, alpha, beta),
                        geometry read from the module when loaded */
  ts_ptxas_info ptxas;
  bool from_cache; /* loaded from the kernel cache, not compiled */
  uint64_t source_hash; /* FNV-1a of the CUDA C given to NVRTC; 0: none */
};

/* Compiles CUDA source text with entry point `entry` as ts_compile does
 * (for tests of NVRTC's failures). */
ts_kernel *kernel_from_source(const char *src, const char *entry,
                              const char *arch);

/* Parses ptxas's -v report ("Used 32 registers, ..."). */
ts_ptxas_info ts_parse_ptxas(const char *log);

#endif
