/*
 * The compiled kernel, the compile stage's artifact: the cubin NVRTC made
 * for one architecture, the CUDA C it came from, and everything launching
 * it needs, copied out of the program: each entry point with its launch
 * geometry and parameter list, the workspace, the definition, the ptxas
 * resource report.  It describes itself: ts_kernel_save writes it whole
 * and ts_kernel_load reads it back in a process that never lowers or
 * compiles (kernel_file.c).  The launcher (src/launch/) and the runtime
 * see kernels only, never programs or schedules.
 */
#ifndef TS_KERNEL_H
#define TS_KERNEL_H

#include <stdbool.h>

#include "tessel/compile.h"
#include "../base/formula.h"
#include "../ir/params.h"

_Static_assert((int)TS_FORMULA_VALUES == (int)TS_VALUE_COUNT,
               "a formula reads the values by ts_param_value");

/* One entry point of the cubin: how it is launched and what it takes. */
typedef struct kernel_entry {
  char *name;       /* malloc'd */
  /* a hand-written kernel's is read when it is loaded */
  ts_launch_geometry launch;
  /* A grid dimension that follows the extents given at launch: its
   * blocks as a formula of the launch's values (launch.grid holds the
   * nominal count); n 0 where launch.grid is the count. */
  ts_formula grid_size[3];
  ts_param *params; /* malloc'd, nparams long: the arguments in order */
  int nparams;
} kernel_entry;

/* A cubin for an architecture besides the kernel's own (ts_compile_for):
 * the same source and entry points. */
typedef struct kernel_image {
  char arch[16];
  void *cubin; /* malloc'd */
  size_t size;
} kernel_image;

struct ts_kernel {
  ts_status status;
  char errmsg[2048];
  char *log;     /* NVRTC's log, verbatim (malloc'd) */
  char arch[16]; /* "sm_90" */
  char *name;    /* the schedule's entry point (malloc'd) */
  char *label;   /* the program's or hand-written kernel's name (malloc'd) */
  char *source;  /* the CUDA C given to NVRTC (malloc'd); NULL: none */
  void *cubin;   /* malloc'd */
  size_t cubin_size;
  /* More architectures' cubins (ts_compile_for), after arch's. */
  int nimages;
  kernel_image *images; /* malloc'd */
  ts_gemm def;   /* the definition it computes, launched with */
  ts_launch_geometry launch; /* the schedule's entry point's */
  /* The entry points launched in order (ts_pack's, split-K's and the one
   * above among them), each with its launch and parameter list, and the
   * bytes of the workspace they share; at least one when TS_OK. */
  int nentries;
  kernel_entry *entries; /* malloc'd */
  int main_entry;        /* the index of `name` among them */
  int64_t workspace;
  int min_blocks;    /* blocks per multiprocessor it was compiled for */
  bool hand_written; /* a ts_cuda_kernel: (A, B, C, M, N, K, alpha, beta),
                        geometry read from the module when loaded */
  ts_ptxas_info ptxas;
  bool from_cache; /* loaded from the kernel cache, not compiled */
  uint64_t source_hash; /* FNV-1a of the CUDA C given to NVRTC; 0: none */
  /* The launcher's state for this kernel (src/launch/: its module in each
   * context ts_launch ran it in), made by the first ts_launch and released
   * with the kernel through release_launch, which the launcher sets: the
   * compile stage calls no code of a later one. */
  void *launch_state;
  void (*release_launch)(void *state);
};

/* The kernel every failed allocation of one returns (never freed). */
extern ts_kernel kernel_nomem;

/* Records the failure in k and returns k. */
ts_kernel *kernel_fail(ts_kernel *k, ts_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Compiles CUDA source text with entry point `entry` as ts_compile does
 * (for tests of NVRTC's failures). */
ts_kernel *kernel_from_source(const char *src, const char *entry,
                              const char *arch);

/* Parses ptxas's -v report ("Used 32 registers, ..."). */
ts_ptxas_info ts_parse_ptxas(const char *log);

#endif
