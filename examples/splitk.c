/*
 * splitk: blocktile2d with the reduction split across 4 blocks along
 * blockIdx.z.  Where C has few 128 x 128 tiles and K is long (a 512 x 512
 * C with K = 16384 has 16 tiles for a GPU of 132 multiprocessors), each
 * block sums a quarter of k into a workspace, and a second kernel adds the
 * four partial sums in order and applies alpha and beta (deterministic).
 */
#include "examples.h"

ts_status example_splitk(ts_sched *s) {
  ts_loop *kz, *kr, *io, *ir, *ty, *tm, *jo, *jr, *tx, *tn, *ko, *ki;
  ts_split_k(s, ts_get_loop(s, "k"), 4, TS_SPLIT_K_WORKSPACE, &kz, &kr);
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 8, &ty, &tm);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 8, &tx, &tn);
  ts_split(s, kr, 8, &ko, &ki);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, ty, tx, ko, ki, tm, tn});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  ts_stage *as, *bs, *ra, *rb;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  ts_cache_read(s, "B.shared", TS_LOCAL, ki, &rb);
  ts_unroll(s, ki);
  ts_unroll(s, tm);
  ts_unroll(s, tn);
  return ts_sched_status(s);
}
