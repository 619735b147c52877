/*
 * A compiled kernel: the cubin NVRTC made for one architecture, its entry
 * point's name, its launch dimensions and the ptxas resource report.
 */
#ifndef TS_KERNEL_H
#define TS_KERNEL_H

#include <stdbool.h>

#include "tessel.h"

struct ts_kernel {
  ts_status status;
  char errmsg[512];
  char *log;     /* NVRTC's log, verbatim (malloc'd) */
  char arch[16]; /* "sm_90" */
  char *name;    /* entry point (malloc'd) */
  void *cubin;   /* malloc'd */
  size_t cubin_size;
  ts_launch launch;
  ts_ptxas_info ptxas;
  bool from_cache; /* loaded from the kernel cache, not compiled */
};

/* Compiles CUDA source text with entry point `entry` as ts_compile does
 * (for tests of NVRTC's failures). */
ts_kernel *kernel_from_source(const char *src, const char *entry,
                              const char *arch);

/* Parses ptxas's -v report ("Used 32 registers, ..."). */
ts_ptxas_info ts_parse_ptxas(const char *log);

#endif
