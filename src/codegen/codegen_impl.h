/*
 * The code generator's state, shared by its files: cuda.c prints kernels,
 * wgmma.c the warpgroup instructions and their helpers.
 */
#ifndef TS_CODEGEN_IMPL_H
#define TS_CODEGEN_IMPL_H

#include "codegen.h"

#include "../base/dtype.h"
#include "../ir/printer.h"

typedef struct {
  ts_arena *a;
  ts_buf *b;
  const ir_kernel *k;  /* the kernel whose body is being printed */
  bool wide;          /* 64-bit index arithmetic */
  bool needs_floordiv; /* a division the code must floor itself */
  bool rounds_tf32;    /* ts_pack's kernel rounds to tf32 */
  ir_expr_style style;
  bool dynamic_shared;    /* shared buffers are slots of one extern array */
  int64_t shared_offset;  /* bytes of it given out so far */
  bool uses[TS_DTYPE_COUNT]; /* element types declared: their headers */
  /* Vector types of narrow elements used, a bit per width (1 << lanes). */
  unsigned vectors[TS_DTYPE_COUNT];
  unsigned async_copies; /* cp.async sizes used, a bit per byte count */
  bool mma_used[TS_DTYPE_COUNT]; /* tensor-core helpers, by operand type */
  unsigned ldmatrix_used; /* fragment loads, a bit per matrices (x1, x2, x4)
                           * and one more for .trans */
  unsigned stmatrix_used; /* matrix stores, a bit per matrices */
  bool packs_used[TS_DTYPE_COUNT]; /* two 16-bit values into a register */
  /* wgmma forms used, by operand type, instruction n / 8 - 1 and the
   * operands' majorness (a bit each), or 4: a in registers
   * (cuda_wgmma.c). */
  bool wgmma_used[TS_DTYPE_COUNT][32][5];
  bool unswizzled; /* shared accesses printed without the chunk swizzle */
  bool tma_used;   /* TMA copies and mbarriers: their helpers */
  bool tma_store_used; /* TMA stores: theirs */
  bool cluster_used; /* a cluster's multicasts and remote arrivals */
  /* In ping-pong consumers' part: threadIdx.z, their team, is printed as
   * tessel_team, the value broadcast from the warp's lane 0 (cuda_tma.c). */
  bool team_uniform;
} emitter;

/* The CUDA name of t, noting that its header is needed. */
const char *cuda_type(emitter *em, ts_dtype t);
/* buf[idx..] as C: global buffers flattened, shared and local ones in
 * storage order (swizzled unless em->unswizzled). */
void c_access(ts_buf *b, const ir_buffer *buf, ir_expr *const *idx,
              const ir_expr_style *st);

/* cuda_mma.c: S_MMA, S_LDMATRIX and S_STMATRIX, and the helpers of the
 * types and forms used (with ts_pack's tf32 rounding). */
void c_mma(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st);
void c_ldmatrix(ts_buf *b, const ir_stmt *s, int depth,
                const ir_stmt_style *st);
void c_stmatrix(ts_buf *b, const ir_stmt *s, int depth,
                const ir_stmt_style *st);
void mma_definitions(ts_buf *b, const emitter *em);

/* wgmma.c: S_WGMMA and S_WGMMA_SYNC, and the helpers of the forms used. */
void c_wgmma(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st);
void c_wgmma_sync(ts_buf *b, const ir_stmt *s, int depth,
                  const ir_stmt_style *st);
void wgmma_definitions(ts_buf *b, const emitter *em);

/* cuda_tma.c: S_PIPELINE, S_TMA and S_MBARRIER, S_TMA_STORE and
 * S_TMA_STORE_WAIT, and their helpers. */
void c_pipe(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st);
void tma_definitions(ts_buf *b, const emitter *em);

#endif
