/*
 * The tables of built-in schedules that `tessel list` prints and that
 * ts_builtin_schedule applies by name, and of the tuning spaces.
 */
#include <string.h>

#include "../schedule/sched.h"
#include "builtins_impl.h"

static const ts_builtin builtins[] = {
    {"naive", "one thread per C element, threadIdx.x on rows (uncoalesced)",
     example_naive, false, false},
    {"coalesced", "one thread per C element, threadIdx.x on columns (seeds "
     "001, 004)", example_coalesced, false, false},
    {"smem32", "32x32 tiles of A and B in shared memory (seed 001)",
     example_smem32, false, false},
    {"smem16", "16x16 tiles of A and B in shared memory (seed 004)",
     example_smem16, false, false},
    {"blocktile1d", "64x64 block tiles, 8 results per thread in registers",
     example_blocktile1d, false, false},
    {"blocktile2d", "128x128 block tiles, 8x8 results per thread, register "
     "copies of A and B (seed 000 matmul3)", example_blocktile2d, false, false},
    {"tvm_step2", "seed 003's TVM schedule: 32x32x32 tiles, 8x4 per thread, "
     "k innermost", example_tvm_step2, false, false},
    {"vectorized", "blocktile2d with float4 loads, A stored transposed "
     "(seed 000 matmul4)", example_vectorized, false, false},
    {"bankfree", "vectorized with padded shared A: no bank conflicts",
     example_bankfree, false, false},
    {"double_buffered", "bankfree with two shared copies, next tile "
     "prefetched into registers (seed 000)", example_double_buffered, false, false},
    {"warptiled", "block / warp / thread tiles, 8x16 outer products per "
     "thread (seed 002)", example_warptiled, false, false},
    {"splitk", "blocktile2d with k split across 4 blocks (blockIdx.z), "
     "partial sums reduced by a second kernel", example_splitk, false, false},
    {"pipelined", "warptiled with 3 shared copies filled by cp.async "
     "(sm_80+), no register staging", example_pipelined, false, false},
    {"tc128", "tensor cores (mma.sync, ldmatrix): 128x128 tiles of 4 warps "
     "of 64x64, 3 cp.async stages; f16, bf16 or tf32", example_tc128, true, false},
    {"tc64", "tensor cores as tc128, 64x64 tiles of 4 warps of 32x32: for "
     "small and skinny shapes", example_tc64, true, false},
    {"wg128", "tensor cores (wgmma, sm_90): 128x256 tiles of 2 warpgroups "
     "of 64x256, 4 cp.async stages into swizzled tiles, a batch of wgmma "
     "in flight; f16, bf16, or tf32 with A and B packed", example_wg128,
     true, true},
    {"wgtma", "wg128 with its tiles copied by the TMA (cp.async.bulk.tensor) "
     "on an mbarrier pipeline, no __syncthreads in the k loop; in tf32 "
     "from A and B packed in the workspace, and so in f16 and bf16 an "
     "operand whose rows are not 16-byte aligned", example_wgtma,
     true, true},
    {"wgws", "wgtma warp-specialized: a producer warpgroup issues the TMA's "
     "copies, the 2 consumer warpgroups take its registers (setmaxnreg)",
     example_wgws, true, true},
    {"wgpers", "wgws in a persistent grid: one block a multiprocessor loops "
     "over the tiles in swizzled groups of 8 rows, the producer loading the "
     "next tile while the consumers write the last one's C",
     example_wgpers, true, true},
    {"wgskinny", "wgws in 128x128 tiles, 6 stages, no wgmma batch in "
     "flight: for small and skinny shapes (8192x128x8192, 128x8192x8192), "
     "where wgws's 128x256 tiles fill few multiprocessors or lie half past C",
     example_wgskinny, true, true},
    {"wgstore", "wgws with C's tile written into shared memory over the "
     "pipeline's stages and stored by the TMA a 128-byte panel at a time, "
     "where C's rows are 16-byte aligned: for a 16-bit C",
     example_wgstore, true, true},
};

enum { NBUILTINS = sizeof(builtins) / sizeof(builtins[0]) };

int ts_builtin_count(void) { return NBUILTINS; }

const ts_builtin *ts_builtin_at(int index) {
  return index >= 0 && index < NBUILTINS ? &builtins[index] : NULL;
}

const ts_builtin *ts_builtin_find(const char *name) {
  for (int i = 0; name && i < NBUILTINS; i++)
    if (strcmp(builtins[i].name, name) == 0)
      return &builtins[i];
  return NULL;
}

ts_sched *ts_builtin_schedule(const char *name, const ts_gemm *def) {
  ts_sched *s = ts_matmul_named(def, name);
  const ts_builtin *b = ts_builtin_find(name);
  if (b)
    b->apply(s);
  else if (ts_sched_status(s) == TS_OK)
    sched_fail(s, TS_ERR_UNKNOWN_SCHEDULE, NULL,
               "ts_builtin_schedule: no built-in schedule named \"%s\" "
               "(tessel list shows them)", name ? name : "(null)");
  return s;
}

/* ---- Spaces ----------------------------------------------------------------- */

static const ts_space spaces[] = {
    {"seed003", "seed 003's sweep of its TVM schedule: 5 block tiles x 5 "
     "thread tiles x 3 loop orders", space_seed003, false, false},
    {"warptiled", "warptiled's block, warp and k tiles and double buffering, "
     "for small, skinny and odd shapes", space_warptiled, false, false},
    {"tensorcore", "tc128's block, warp and k tiles, cp.async stages and "
     "block swizzle (tensor cores: f16, bf16 or tf32)", space_tensorcore,
     true, false},
    {"warpgroup", "wg128's block tiles, warpgroups, cp.async stages, "
     "block swizzle, wgmma batches in flight, TMA copies, a producer "
     "warpgroup, a persistent grid, blocks a multiprocessor, packed "
     "operands, C stored by the TMA, 2-block clusters and ping-pong "
     "consumers (wgmma, sm_90: f16, bf16 or tf32)",
     space_warpgroup, true,
     true},
};

enum { NSPACES = sizeof(spaces) / sizeof(spaces[0]) };

int ts_space_count(void) { return NSPACES; }

const ts_space *ts_space_at(int index) {
  return index >= 0 && index < NSPACES ? &spaces[index] : NULL;
}

const ts_space *ts_space_find(const char *name) {
  for (int i = 0; name && i < NSPACES; i++)
    if (strcmp(spaces[i].name, name) == 0)
      return &spaces[i];
  return NULL;
}
