/*
 * The built-in schedules and spaces, one file each in src/builtins/ (the
 * examples/ folder keeps the examples a user reads and copies).  Each
 * applies its primitives to a fresh ts_matmul schedule and returns its
 * status.
 */
#ifndef TS_BUILTINS_H
#define TS_BUILTINS_H

#include "tessel/builtins.h"

ts_status example_naive(ts_sched *s);
ts_status example_coalesced(ts_sched *s);
ts_status example_smem32(ts_sched *s);
ts_status example_smem16(ts_sched *s);
ts_status example_blocktile1d(ts_sched *s);
ts_status example_blocktile2d(ts_sched *s);
ts_status example_tvm_step2(ts_sched *s);
ts_status example_vectorized(ts_sched *s);
ts_status example_bankfree(ts_sched *s);
ts_status example_double_buffered(ts_sched *s);
ts_status example_warptiled(ts_sched *s);
ts_status example_splitk(ts_sched *s);
/* Tensor cores (tensorcore.c): f16 or bf16 A and B, or f32 in tf32. */
ts_status example_tc128(ts_sched *s);
ts_status example_tc64(ts_sched *s);
ts_status example_wg128(ts_sched *s);
ts_status example_wgtma(ts_sched *s);
ts_status example_wgws(ts_sched *s);
ts_status example_wgpers(ts_sched *s);
ts_status example_wgskinny(ts_sched *s);
ts_status example_wgstore(ts_sched *s);
ts_status space_warpgroup(ts_sched *s, ts_config *c);
ts_status space_tensorcore(ts_sched *s, ts_config *c);

/* blocktile2d with `k` as its reduction loop: k itself, or the part of it
 * each block sums after ts_split_k. */
ts_status blocktile2d_over(ts_sched *s, ts_loop *k);
ts_status example_pipelined(ts_sched *s);

/* The tuning spaces (registry.c lists them). */
ts_status space_seed003(ts_sched *s, ts_config *c);
ts_status space_warptiled(ts_sched *s, ts_config *c);

/* Splits off the innermost 4 iterations of loop and vectorizes them. */
void vectorize4(ts_sched *s, ts_loop *loop);
/* The same for a cache's copy along its source's contiguous dimension. */
void vectorize_copy(ts_sched *s, ts_stage *stage);

/* A thread's A and B values in registers, copied from shared memory as
 * float4: A's for one k (attached at ki), B's attached at b_at (ki: for
 * one k; a chunk loop inside it: for one chunk); ki, tm and tno unrolled,
 * C stored as float4 along tni. */
void thread_tile_registers(ts_sched *s, ts_loop *ki, ts_loop *b_at,
                           ts_loop *tm, ts_loop *tno, ts_loop *tni);

/* warptiled's tiling: block tile bm x bn, warp tile wm x wn (8 x 4
 * threads), k tile bk; buffers 1, 2 (ts_double_buffer) or 3..8
 * (ts_pipeline); a swizzle group (0: none); split-K parts (1: none). */
typedef struct warp_tiling {
  int64_t bm, bn, wm, wn, bk, buffers, swizzle, parts;
  int64_t partition; /* 1: ts_partition of the k tile loop */
  /* With buffers 2: k tiles a copy of the shared tiles, one barrier each
   * (ts_double_buffer_tiles); 0 or 1: one tile. */
  int64_t bar_tiles;
  /* A thread's columns of C as blocks of 4 lanes' float4s side by side
   * (column = chunk * 16 + lane column * 4 + c), so that a quarter warp
   * reads 128 contiguous bytes of B.shared, rather than one block of wn/4
   * columns a thread (lane column * wn/4 + ...), whose float4s two lanes
   * of a quarter warp read from the same banks. */
  bool strided;
} warp_tiling;
ts_status warptiled_with(ts_sched *s, const warp_tiling *t);

/* The vectorized schedule with block x block tiles of C, k in steps of
 * `depth`; the shared caches of A and B come back for further changes. */
ts_status vectorized_tiles(ts_sched *s, int64_t block, int64_t depth,
                           ts_stage **as, ts_stage **bs);

/* The compiler's "-I" option that finds tessel.h for a schedule file
 * (src/builtins/schedule_file.c): $TESSEL_INCLUDE_DIR, the installed
 * header's directory, or the source tree's; into buf, which it returns. */
const char *schedule_file_include_flag(char *buf, size_t len);

#endif
