/*
 * Tutorial step 8 (docs/tutorial.md): tensor cores.  fp16 (or bf16) A and
 * B, fp32 accumulators: a warp's 16 x 8 x 16 tile of the product is one
 * mma.sync instruction (ts_tensorize), which the 32 lanes of the warp
 * execute together, each holding its share of the operands in registers
 * (fragments).  A block of 4 warps computes a 128 x 128 tile of C, each
 * warp 64 x 64 as a 4 x 8 grid of instruction tiles; k goes in tiles of
 * 32, in steps of 16.  The shared tiles are filled by cp.async in 3 stages
 * and their rows padded by 8 halves (16 bytes), so that each row stays
 * 16-byte aligned and lowering fills the fragments with ldmatrix.
 * Tensor cores round fp32 to tf32, so fp32 is refused unless --dtype tf32
 * asks for that; sm_80 or newer.  TS_TENSOR_SCHEDULE says the schedule is
 * written for those types, so run without --dtype it asks for one.
 *
 *   tessel show examples/tutorial/step8.c --ir --dtype f16
 *   tessel check examples/tutorial/step8.c --dtype f16 --shape 37x53x29
 *   tessel bench examples/tutorial/step8.c --dtype f16 \
 *       --shape 4096x4096x4096
 */
#include <tessel.h>

/* A tile of `operand` in shared memory at each iteration of `at`: rows
 * padded by 16 bytes, copied 16 bytes an access by cp.async in 3 stages. */
static void shared_tile(ts_sched *s, const char *operand, ts_loop *at,
                        int64_t lanes) {
  ts_stage *st;
  ts_loop *outer, *inner;
  ts_cache_read(s, operand, TS_SHARED, at, &st);
  ts_storage_pad(s, st, lanes);
  ts_split(s, ts_stage_axis(st, ts_stage_contiguous(st)), lanes, &outer,
           &inner);
  ts_vectorize(s, inner);
  ts_pipeline(s, st, 3);
}

TS_TENSOR_SCHEDULE(mma128, "128 x 128 tiles of 4 warps of 64 x 64, mma.sync, "
            "ldmatrix, 3 cp.async stages") {
  /* m16n8k16 for fp16 and bf16; m16n8k8 for fp32 as tf32 (--dtype tf32) */
  int tf32 = ts_sched_gemm(s)->a_type == TS_F32;
  int64_t kstep = tf32 ? 8 : 16, lanes = tf32 ? 4 : 8; /* 16 bytes */
  ts_loop *io, *ir, *wy, *r, *mi, *ii, *jo, *jr, *wx, *c, *nj, *jj, *ko, *ki,
      *kq, *kk, *warp;
  /* i = block * 128 + warp row * 64 + tile * 16 + ii; j likewise by 8 */
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 64, &wy, &r);
  ts_split(s, r, 16, &mi, &ii);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 64, &wx, &c);
  ts_split(s, c, 8, &nj, &jj);
  ts_split(s, ts_get_loop(s, "k"), 32, &ko, &ki);
  ts_split(s, ki, kstep, &kq, &kk);
  ts_reorder(s, 11,
             (ts_loop *[]){io, jo, wy, wx, ko, kq, mi, nj, ii, jj, kk});
  ts_fuse(s, wy, wx, &warp);
  ts_rename(s, warp, "warp");
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, warp, TS_THREAD_Y); /* threadIdx.x: the lanes of mma.sync */
  shared_tile(s, "A", ko, lanes);
  shared_tile(s, "B", ko, lanes);
  ts_unroll(s, kq);
  ts_unroll(s, mi);
  ts_unroll(s, nj);
  ts_tensorize(s, ii, jj, kk);
  return ts_sched_status(s);
}
