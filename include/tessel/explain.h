/*
 * tessel explain: a program's accesses costed before compiling (src/explain/).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_EXPLAIN_H
#define TESSEL_EXPLAIN_H

#include "program_read.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Explaining a kernel (tessel explain) -------------------------------
 * What each memory access of a program's kernels costs, and what the
 * kernel asks of a multiprocessor, computed from the lowered IR on the CPU
 * before anything is compiled.  Every warp of one block (the grid's middle
 * one, whose guards are those of the steady state) is walked with each of
 * its lanes' indices evaluated: the k loop's first and last 8 steps and its
 * middle one (standing for the rest), every iteration of the other loops.
 * A global access is counted in 32-byte sectors per warp-wide request, a
 * shared one in wavefronts (32 banks of 4 bytes; a warp served whole for
 * 4-byte accesses, in halves for 8 and quarters for 16; lanes reading one
 * word share it), as Nsight Compute counts them.  docs/explain.md. */

typedef enum {
  TS_ACCESS_GLOBAL_LOAD,
  TS_ACCESS_GLOBAL_STORE,
  TS_ACCESS_GLOBAL_ATOMIC, /* split-K's atomic adds into C */
  TS_ACCESS_SHARED_LOAD,
  TS_ACCESS_SHARED_STORE,
  TS_ACCESS_CP_ASYNC, /* global to shared: sectors read, wavefronts stored */
  TS_ACCESS_LDMATRIX, /* a warp's fragment load from shared memory */
  TS_ACCESS_STMATRIX, /* a warp's 8 x 8 matrices stored to shared memory */
} ts_access_kind;

/* Where an access lies relative to the kernel's k loop (its outermost
 * serial reduction loop). */
typedef enum { TS_BEFORE_K, TS_IN_K, TS_AFTER_K, TS_NO_K } ts_access_phase;

typedef struct ts_access_report {
  int kernel; /* which of the program's kernels, 0 .. */
  ts_access_kind kind;
  ts_access_phase phase;
  const char *buffer; /* the memory side's buffer: "A", "B.shared" */
  const char *text;   /* the access as the IR prints it */
  int bytes;          /* a lane's bytes per access: the vector width, of
                       * the compiler's merged loads where it merges */
  /* A vectorized loop whose lanes run one by one (the rows not aligned
   * for vectors): each lane is an access of its own. */
  bool scalar_lanes;
  /* Warp-wide requests of one block: over the whole kernel, and in one
   * steady-state k step for accesses in the k loop; as compiled (a load
   * the compiler reuses or merges into a wider one counted once), and as
   * the IR makes them. */
  double requests, requests_per_step, ir_requests;
  double active_lanes; /* per request, on average */
  /* Global (and cp.async's global side): 32-byte sectors, and the fewest
   * the requested bytes could take. */
  double sectors, ideal_sectors;
  /* Shared (and cp.async's, ldmatrix's, stmatrix's): wavefronts, and the fewest. */
  double wavefronts, ideal_wavefronts;
  bool misaligned;  /* a lane's address not a multiple of its width */
  int64_t stride;   /* bytes between lanes 0 and 1 (when all lanes agree) */
  bool uniform_stride;
  char verdict[320]; /* one line: "coalesced", "4-way bank conflict ..." */
} ts_access_report;

typedef struct ts_occupancy {
  const char *arch; /* "sm_80" */
  int blocks;       /* resident blocks per multiprocessor */
  int warps;        /* resident warps per multiprocessor */
  double fraction;  /* warps / the architecture's most */
  const char *limit; /* "registers", "shared memory", "threads", "blocks" */
} ts_occupancy;

/* One shape of TMA copy in a stage's fill (ts_tma): a box of the operand
 * into its cache, as the pipeline node's copies say. */
typedef struct ts_tma_report {
  const char *src, *dst; /* "A", "A.shared" */
  int64_t box[2];        /* elements along the contiguous dimension, rows */
  int64_t bytes;         /* a box's */
  int64_t l2_sectors;    /* 32-byte sectors of global memory a box reads */
  int swizzle;           /* the shared layout's swizzle in bytes; 0: none */
  int per_stage;         /* boxes of this shape in one stage's fill */
  /* Multicast to the blocks of a cluster (ts_cluster): each block issues
   * its share of the boxes, L2 serving each box once for the cluster. */
  bool multicast;
} ts_tma_report;

enum { TS_MAX_TMA_REPORTS = 4 };

/* A kernel's TMA pipeline, from its pipeline node; stages 0: none. */
typedef struct ts_pipeline_report {
  int stages;
  int64_t stage_bytes;   /* a stage's fill, every box */
  int consumer_warps;    /* arrivals that release a stage */
  int producer_thread;   /* the thread that issues the copies */
  int producer_threads;  /* a warp-specialized producer's; 0: a consumer */
  /* With that producer, setmaxnreg's split: a thread's registers at
   * launch for `blocks` blocks a multiprocessor, then a producer thread's
   * and a consumer's; all 0 without one. */
  int launch_registers, producer_registers, consumer_registers, blocks;
  ts_tma_report tma[TS_MAX_TMA_REPORTS];
  int ntma;
  int cluster; /* blocks of a cluster sharing it (ts_cluster); 1: none */
  /* Consumer warpgroups taking the tiles in turn, each reading the
   * stages of its own (ts_pingpong); 0: none. */
  int pingpong;
} ts_pipeline_report;

/* C's tile stored by the TMA (ts_cache_write(C, TS_SHARED), ts_tma): a
 * block's stores, one box a 128-byte panel of the stage; count 0: none. */
typedef struct ts_tma_store_report {
  const char *src, *dst; /* "C.shared", "C" */
  int64_t box[2];        /* elements along C's rows, rows */
  int64_t bytes;         /* a box's */
  int64_t l2_sectors;    /* 32-byte sectors of global memory a box writes */
  int swizzle;           /* the stage's swizzle in bytes */
  int count;             /* stores a block */
} ts_tma_store_report;

/* A persistent grid (ts_persistent) on an H100 SXM's 132 multiprocessors
 * (TS_EXPLAIN_MULTIPROCESSORS), as the launch there makes it: its blocks,
 * C's tiles they loop over, and the waves, tiles / blocks: every block
 * takes full_waves tiles, and last_wave of them one more (0: the tiles
 * divide evenly).  blocks_per_sm 0: the grid is not persistent. */
enum { TS_EXPLAIN_MULTIPROCESSORS = 132 };

typedef struct ts_persistent_report {
  int blocks_per_sm;
  int multiprocessors;
  int64_t tiles, blocks;
  int64_t full_waves, last_wave;
} ts_persistent_report;

/* How a grid that is not persistent fills an H100 SXM's 132
 * multiprocessors (TS_EXPLAIN_MULTIPROCESSORS) at the occupancy of
 * `arch` (sm_90's where it is reported): `slots` blocks run at once
 * (blocks_per_sm on each multiprocessor), the grid's blocks take `waves`
 * of them, full_waves full and a last of last_wave blocks (0: none).
 * idle: multiprocessors without a block, where the grid has fewer blocks
 * than there are multiprocessors (a defect: the GPU is mostly idle).
 * blocks_per_sm 0: not reported (a persistent grid, or a block that does
 * not fit). */
typedef struct ts_grid_fill_report {
  const char *arch;
  int multiprocessors, blocks_per_sm;
  int64_t blocks, slots;
  double waves;
  int64_t full_waves, last_wave;
  int idle;
} ts_grid_fill_report;

typedef struct ts_kernel_report {
  const char *entry;
  int64_t grid[3], block[3];
  int64_t blocks, threads; /* in the grid; a block's */
  int64_t k_steps;         /* iterations of its k loop; 0: none */
  int64_t shared_bytes;    /* a block's */
  /* 32-bit registers a thread's local buffers need (accumulators, register
   * caches, staging, fragments), and with a fixed allowance for indices
   * and addresses: ptxas decides the real count. */
  int tile_registers, registers;
  const char *register_detail; /* "acc 128, A.shared.local 8" */
  double flops;          /* a block's multiply-adds times two */
  double global_bytes;   /* a block's global bytes requested */
  double intensity;      /* flops / global_bytes */
  ts_occupancy occupancy[4];
  int noccupancy;
  /* Totals over the grid, as Nsight Compute sums them over a launch. */
  double global_ld_requests, global_ld_sectors;
  double global_st_requests, global_st_sectors;
  double ldgsts_requests, ldgsts_sectors, ldgsts_wavefronts, ldgsts_ideal;
  double shared_ld_requests, shared_ld_wavefronts, shared_ld_ideal;
  double shared_st_requests, shared_st_wavefronts, shared_st_ideal;
  ts_pipeline_report pipeline;
  ts_persistent_report persistent;
  ts_grid_fill_report fill;
  ts_tma_store_report stores;
} ts_kernel_report;

typedef struct ts_explain {
  ts_status status;
  char *errmsg;       /* "" when TS_OK */
  ts_gemm def;
  const char *name;
  ts_kernel_report *kernels;
  int nkernels;
  ts_access_report *accesses; /* kernel by kernel, in program order */
  int naccesses;
  void *own_; /* holds the strings above; private */
} ts_explain;

typedef struct ts_explain_opts {
  /* "sm_80", "sm_86", "sm_89" or "sm_90": the occupancy of that one;
   * NULL: sm_80 and sm_90. */
  const char *arch;
  /* Walk every block of the grid rather than the middle one counted for
   * all: exact at edges, slow at large shapes (tests). */
  bool every_block;
  /* Every access of the IR a request, as the reference executor makes
   * them: no loads reused or merged as the compiler does (tests). */
  bool as_written;
} ts_explain_opts;

/* Never NULL except out of memory; status is the program's where it is in
 * error, TS_ERR_BAD_ARCH for an architecture not in the table. */
ts_explain *ts_program_explain(const ts_program *p,
                               const ts_explain_opts *opts);
void ts_explain_free(ts_explain *e); /* NULL is fine */
/* The report as text (tessel explain); free() it. */
char *ts_explain_text(const ts_explain *e);
/* "global load", "cp.async", ...; "before the k loop", ... */
const char *ts_access_kind_name(ts_access_kind k);
const char *ts_access_phase_name(ts_access_phase p);

#ifdef __cplusplus
}
#endif
#endif
