/*
 * pipelined: warptiled's block / warp / thread tiles with the shared tiles
 * filled by cp.async in 3 stages: while the block computes on tile ko,
 * tiles ko + 1 and ko + 2 travel from global memory straight into shared
 * memory, with no registers holding them on the way (double_buffered and
 * warptiled stage the next tile in registers).  Needs sm_80.  It is the
 * warptiled space's configuration buffers=3,cols=strided: a thread's
 * columns strided, which with cp.async stages is 6% faster at 4096^3 on an
 * H200 than the blocked ones (docs/performance.md).
 *
 * B's copy is 16-byte cp.async (float4).  A stays stored transposed, as in
 * warptiled, so that the inner loop reads 4 values of A with one LDS.128:
 * its copy then writes scattered 4-byte elements, so each float4 of A
 * becomes four 4-byte cp.async.  That costs instructions once per tile and
 * keeps the loads that run 16 times per tile vectorized; storing A
 * untransposed would make its copy 16-byte and its reads scalar.  In fp16
 * B's copies are 8 bytes (4 halves) and A's transposed halves, 2 bytes
 * each, have no cp.async: they are plain stores inside the pipeline.
 */
#include "builtins_impl.h"

ts_status example_pipelined(ts_sched *s) {
  const warp_tiling t = {.bm = 128, .bn = 128, .wm = 64, .wn = 64, .bk = 16,
                         .buffers = 3, .swizzle = 0, .parts = 1,
                         .strided = true};
  return warptiled_with(s, &t);
}
