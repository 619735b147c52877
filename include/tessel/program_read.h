/*
 * The lowered program as the stages after lowering read it: its type, its
 * launch geometry, its status, definition and kernels, its loop nest as
 * text (src/ir/program.c, beside the program's data, src/ir/program_ir.h).
 * The executor and explain take a program and include this header, not
 * program.h, which adds lowering itself.
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_PROGRAM_READ_H
#define TESSEL_PROGRAM_READ_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One self-contained, immutable program (lowering's artifact, made by
 * ts_lower in program.h): its kernels, each with its body, parameters,
 * launch geometry, shared memory, occupancy hint and entry point, and the
 * definition it computes.  It owns all of its memory. */
typedef struct ts_program ts_program;

typedef struct ts_launch_geometry {
  int64_t grid[3], block[3];
  /* Dynamic shared memory, in bytes: the shared caches when they pass the
   * 48 KiB a kernel may declare statically; 0 otherwise. */
  int64_t dynamic_shared;
  /* A persistent grid (ts_persistent): blocks a multiprocessor; grid[0]
   * is then C's tiles, the most blocks it takes, and the launch makes
   * min(grid[0], multiprocessors x persistent) of them, each looping over
   * the tiles.  0: the grid as given. */
  int persistent;
  /* Blocks a cluster along x (ts_cluster; the kernel's __cluster_dims__):
   * the launch keeps grid[0] a multiple of it, a persistent grid's cut
   * rounded down to whole clusters.  0 or 1: none. */
  int cluster;
} ts_launch_geometry;

ts_status ts_program_status(const ts_program *p);
const char *ts_program_errmsg(const ts_program *p); /* "" when TS_OK */
const ts_gemm *ts_program_gemm(const ts_program *p);
const char *ts_program_name(const ts_program *p);  /* the schedule's */
const char *ts_program_entry(const ts_program *p); /* "tessel_<name>" */
ts_status ts_program_launch(const ts_program *p, ts_launch_geometry *out);
/* The kernels a program launches, in order: ts_pack's (op(A)'s, then
 * op(B)'s) first, then the schedule's kernel, with split-K's second (the
 * workspace's reduction after it, or the scaling of C by beta before it).  ts_program_entry and ts_program_launch
 * are the schedule's kernel; these give kernel i (0 .. count - 1). */
int ts_program_kernel_count(const ts_program *p);
const char *ts_program_kernel_entry(const ts_program *p, int i);
ts_status ts_program_kernel_launch(const ts_program *p, int i,
                                   ts_launch_geometry *out);
/* Bytes of the workspace the kernels share (split-K's fp32 partial sums,
 * then ts_pack's copies of the operands), passed to each kernel as a
 * fourth parameter; 0: none. */
int64_t ts_program_workspace(const ts_program *p);
/* Blocks per multiprocessor asked for (__launch_bounds__); 0: any. */
int ts_program_min_blocks(const ts_program *p);
/* The oldest compute capability the kernel runs on, as 80 for sm_80 (which
 * cp.async needs); 0: any. */
int ts_program_min_arch(const ts_program *p);
/* Whether it uses instructions of one architecture only (wgmma: sm_90,
 * compiled for sm_90a), which ts_program_min_arch names. */
bool ts_program_arch_specific(const ts_program *p);
/* Malloc'd text the caller frees, or NULL when out of memory or the program
 * is in error: the loop nest (deterministic). */
char *ts_program_ir(const ts_program *p);
/* ts_program_ir with each loop and buffer followed by the primitive that
 * made it ("# ts_split, step 3"; "# lowering" for what lowering added). */
char *ts_program_ir_provenance(const ts_program *p);

#ifdef __cplusplus
}
#endif
#endif
