/*
 * Tutorial step 9 (docs/tutorial.md): Hopper's tensor cores (sm_90).  A
 * warpgroup (4 warps, 128 lanes) multiplies a 64 x n x 16 tile in one
 * wgmma instruction, reading both operands from shared memory itself, so
 * there are no fragments; the tiles must be stored in 128-byte rows,
 * XOR-swizzled.  The TMA (the Tensor Memory Accelerator) copies a box of
 * a tile, up to 64 elements of 16 bits a row, in one instruction (ts_tma:
 * 1 to 4 boxes a tile a stage, by layout), an mbarrier saying when a
 * stage landed and another when every warp is done with it, and a third
 * warpgroup, the producer, issues those copies while the two consumer
 * warpgroups only wait and multiply (ts_warp_specialize).  A block computes 128 x 256 of C, each consumer
 * 64 x 256 with one m64n256k16 a k step; 4 stages of 64 k; each k tile's
 * batch of wgmma runs on while the next is issued (ts_wgmma_in_flight);
 * the blocks go in groups of 8 block rows (ts_swizzle), so that the
 * running blocks share their tiles in L2.
 *
 * fp16 or bf16 in any layout: a tile is stored the way its operand lies in
 * memory, so that each copy is contiguous at both ends, and wgmma reads it
 * either way.  The TMA copies only rows 16-byte aligned (K, M or N of
 * 16-bit elements a multiple of 8, as the layout stores them), so an
 * operand whose rows are not is packed first (ts_pack: a kernel of its
 * own copies it into rows padded to 16 bytes).  fp32 (tf32) is refused:
 * its k steps are 8, its vectors 4 elements, and wgmma reads it k-major
 * only, which the built-in wgws handles (src/builtins/tensorcore.c).
 * sm_90a only (sm_90 with its architecture-specific instructions).
 *
 *   tessel show examples/tutorial/step9.c --cuda --dtype f16
 *   tessel check examples/tutorial/step9.c --dtype f16 --shape 37x53x29
 *   tessel bench examples/tutorial/step9.c --dtype f16 \
 *       --shape 4096x4096x4096
 */
#include <tessel.h>

/* Whether operand A (else B) lies transposed in memory: A stored K x M
 * (TN, TT), B stored N x K (NT, TT). */
static int stored_transposed(const ts_gemm *g, int a) {
  return a ? g->layout == TS_TN || g->layout == TS_TT
           : g->layout == TS_NT || g->layout == TS_TT;
}

/* Whether the TMA can copy operand A (else B) as it lies: each stored row
 * a multiple of 16 bytes. */
static int rows_aligned(const ts_gemm *g, int a) {
  int t = stored_transposed(g, a);
  int64_t row = a ? (t ? g->m : g->k) : (t ? g->k : g->n);
  return row * ts_dtype_size(g->a_type) % 16 == 0;
}

/* A tile of `operand` at each iteration of `at`: stored as it lies (its
 * rows, or its transposed rows), swizzled in 128-byte rows for wgmma,
 * copied 16 bytes an access, in 4 stages, by the TMA, from a producer
 * warpgroup (4 warps). */
static void hopper_tile(ts_sched *s, const char *operand, ts_loop *at,
                        int transposed) {
  ts_stage *st;
  ts_loop *outer, *inner;
  ts_cache_read(s, operand, TS_SHARED, at, &st);
  if (transposed)
    ts_storage_transpose(s, st);
  ts_storage_swizzle(s, st);
  ts_split(s, ts_stage_axis(st, ts_stage_contiguous(st)), 8, &outer, &inner);
  ts_vectorize(s, inner);
  ts_pipeline(s, st, 4);
  ts_tma(s, st);
  ts_warp_specialize(s, st, 4);
}

TS_SCHEDULE(hopper, "128 x 256 tiles of 2 consumer warpgroups, wgmma, "
            "4 TMA stages from a producer warpgroup") {
  const ts_gemm *g = ts_sched_gemm(s);
  int pack_a = !rows_aligned(g, 1), pack_b = !rows_aligned(g, 0);
  ts_loop *io, *ir, *wg, *ii, *jo, *jj, *ko, *ki, *kq, *kk;
  if (ts_dtype_size(g->a_type) != 2)
    return ts_sched_fail(s, TS_ERR_BAD_ARG, "hopper: A and B must be 16-bit "
                         "(--dtype f16 or bf16); for tf32 use the built-in "
                         "wgws");
  if (pack_a)
    ts_pack(s, "A"); /* k-major rows padded to 16 bytes */
  if (pack_b)
    ts_pack(s, "B");
  /* i = block * 128 + warpgroup * 64 + ii; a k tile is 64 halves, one
   * 128-byte row of the swizzle, in steps of 16 */
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 64, &wg, &ii);
  ts_split(s, ts_get_loop(s, "j"), 256, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), 64, &ko, &ki);
  ts_split(s, ki, 16, &kq, &kk);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, wg, ko, kq, ii, jj, kk});
  ts_rename(s, wg, "warpgroup");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y); /* threadIdx.x: the warpgroup's 128 lanes */
  ts_swizzle(s, io, jo, 8);
  /* a packed operand lies k-major: A's rows run along k, B's along n */
  hopper_tile(s, "A", ko, !pack_a && stored_transposed(g, 1));
  hopper_tile(s, "B", ko, pack_b || stored_transposed(g, 0));
  ts_unroll(s, kq);
  ts_tensorize(s, ii, jj, kk); /* 64 x 256 x 16: wgmma.m64n256k16 */
  ts_wgmma_in_flight(s, ko, 1);
  return ts_sched_status(s);
}
