/*
 * Tutorial step 10 (docs/tutorial.md): one schedule for every layout and
 * element type.  Step 9's hopper takes 16-bit A and B only; this file
 * reads the definition (ts_sched_gemm) and decides, as the built-in wgws
 * does (src/builtins/tensorcore.c), what each layout and type needs:
 *
 * - the k step: wgmma multiplies 64 x n x 16 in fp16 and bf16, 64 x n x 8
 *   in tf32 (--dtype tf32); a k tile is one 128-byte row of the swizzle,
 *   64 halves or 32 tf32, copied 16 bytes (8 halves, 4 floats) an access;
 * - the layout: a tile is stored the way its operand lies in memory
 *   (ts_storage_transpose where A is stored K x M, B N x K), so that each
 *   copy is contiguous at both ends;
 * - what wgmma cannot read: it reads tf32 from shared memory k-major only.
 *   An operand that lies m- or n-major is read instead as the
 *   instruction's a, from registers: B in NN, by computing C's transpose
 *   (ts_tensorize(s, jj, ii, kk): the instruction's m on C's columns),
 *   A in TT.  In TN both lie so, and only one can be a: B is packed
 *   (ts_pack copies it k-major).  An operand whose rows the TMA cannot
 *   copy (not 16-byte aligned) is packed too, in any type.  A batch of
 *   wgmma reading registers cannot be left in flight: the next k tile's
 *   fill would overwrite them.
 *
 *   tessel show examples/tutorial/step10.c --trace --dtype tf32
 *   tessel check examples/tutorial/step10.c --dtype tf32 --layout TN \
 *       --shape 37x53x29
 *   tessel bench examples/tutorial/step10.c --dtype tf32 \
 *       --shape 4096x4096x4096
 */
#include <tessel.h>

/* Whether operand A (else B) lies transposed in memory: A stored K x M
 * (TN, TT), B stored N x K (NT, TT). */
static int stored_transposed(const ts_gemm *g, int a) {
  return a ? g->layout == TS_TN || g->layout == TS_TT
           : g->layout == TS_NT || g->layout == TS_TT;
}

/* Whether op(A) (else op(B)) lies k-major in memory, k contiguous: A as
 * stored in NN and NT, B as stored in NT and TT. */
static int k_major(const ts_gemm *g, int a) {
  return a ? !stored_transposed(g, 1) : stored_transposed(g, 0);
}

/* Whether the TMA can copy operand A (else B) as it lies: each stored row
 * a multiple of 16 bytes. */
static int rows_aligned(const ts_gemm *g, int a) {
  int t = stored_transposed(g, a);
  int64_t row = a ? (t ? g->m : g->k) : (t ? g->k : g->n);
  return row * ts_dtype_size(g->a_type) % 16 == 0;
}

/* Step 9's tile: stored as it lies (or k-major where packed), swizzled in
 * 128-byte rows, copied 16 bytes an access, in 4 stages, by the TMA, from
 * a producer warpgroup (4 warps). */
static void hopper_tile(ts_sched *s, const char *operand, ts_loop *at,
                        int transposed, int64_t lanes) {
  ts_stage *st;
  ts_loop *outer, *inner;
  ts_cache_read(s, operand, TS_SHARED, at, &st);
  if (transposed)
    ts_storage_transpose(s, st);
  ts_storage_swizzle(s, st);
  ts_split(s, ts_stage_axis(st, ts_stage_contiguous(st)), lanes, &outer,
           &inner);
  ts_vectorize(s, inner);
  ts_pipeline(s, st, 4);
  ts_tma(s, st);
  ts_warp_specialize(s, st, 4);
}

TS_SCHEDULE(any_type, "hopper in fp16, bf16 and tf32, every layout: "
            "tf32's k steps, C's transpose, a from registers, packs") {
  const ts_gemm *g = ts_sched_gemm(s);
  int tf32 = g->a_type == TS_F32;
  int64_t size = ts_dtype_size(g->a_type);
  /* packed: rows the TMA cannot copy; in tf32 TN, B (neither is k-major) */
  int pack_a = !rows_aligned(g, 1);
  int pack_b = !rows_aligned(g, 0) ||
               (tf32 && !k_major(g, 1) && !k_major(g, 0));
  /* tf32 B read as it lies n-major (NN): wgmma computes C's transpose,
   * B^T A^T, with B's tile as its a, from registers; so is A in TT */
  int transposed = tf32 && !pack_b && !k_major(g, 0);
  int a_in_registers = transposed || (tf32 && !pack_a && !k_major(g, 1));
  ts_loop *io, *ir, *wg, *ii, *jo, *jr, *jj, *ko, *ki, *kq, *kk;
  if (pack_a)
    ts_pack(s, "A"); /* k-major rows padded to 16 bytes, rounded to tf32 */
  if (pack_b)
    ts_pack(s, "B");
  if (!transposed) {
    /* i = block * 128 + warpgroup * 64 + ii, all 256 columns a warpgroup */
    ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
    ts_split(s, ir, 64, &wg, &ii);
    ts_split(s, ts_get_loop(s, "j"), 256, &jo, &jj);
  } else {
    /* C's transpose: 64 of the block's 128 columns a warpgroup, by all
     * its 256 rows (the instruction's n) */
    ts_split(s, ts_get_loop(s, "i"), 256, &io, &ii);
    ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
    ts_split(s, jr, 64, &wg, &jj);
  }
  ts_split(s, ts_get_loop(s, "k"), 128 / size, &ko, &ki);
  ts_split(s, ki, tf32 ? 8 : 16, &kq, &kk);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, wg, ko, kq, ii, jj, kk});
  ts_rename(s, wg, "warpgroup");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y); /* threadIdx.x: the warpgroup's 128 lanes */
  if (!transposed) /* 256-row blocks of C's transpose run in launch order */
    ts_swizzle(s, io, jo, 8);
  /* a packed operand lies k-major: A's rows run along k, B's along n */
  hopper_tile(s, "A", ko, !pack_a && stored_transposed(g, 1), 16 / size);
  hopper_tile(s, "B", ko, pack_b || stored_transposed(g, 0), 16 / size);
  ts_unroll(s, kq); /* each k step's instruction its own registers */
  if (transposed)
    ts_tensorize(s, jj, ii, kk); /* m64n256k8, a = B^T */
  else
    ts_tensorize(s, ii, jj, kk); /* m64n256k16, or m64n256k8 in tf32 */
  if (!a_in_registers)
    ts_wgmma_in_flight(s, ko, 1);
  return ts_sched_status(s);
}
