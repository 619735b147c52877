/*
 * A schedule file with a tuning space: a register-tiled schedule (a block
 * computes a bm x bn tile of C, each thread a column of tm results kept in
 * registers, A and B staged through shared memory bk columns at a time),
 * once with fixed tiles (TS_SCHEDULE) and once with its tiles as knobs
 * (TS_SPACE), whose first configuration is the fixed one.
 *
 *   tessel list examples/regtiles.c
 *   tessel check examples/regtiles.c --shape 100x70x50
 *   tessel show examples/regtiles.c:regtiles:bm=128,bn=32,tm=4,bk=16 --cuda
 *   tessel tune examples/regtiles.c --shape 2048x2048x2048
 *   tessel bench examples/regtiles.c:regtiles --tuned --shape 2048x2048x2048
 *
 * docs/tuning.md ("Tuning your own schedule") walks through it.
 */
#include <tessel.h>

static ts_status register_tiled(ts_sched *s, int64_t bm, int64_t bn,
                                int64_t tm, int64_t bk) {
  ts_loop *io, *ir, *ty, *ti, *jo, *tx, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), bm, &io, &ir);
  ts_split(s, ir, tm, &ty, &ti);
  ts_split(s, ts_get_loop(s, "j"), bn, &jo, &tx);
  ts_split(s, ts_get_loop(s, "k"), bk, &ko, &ki);
  ts_reorder(s, 7, (ts_loop *[]){io, jo, ty, tx, ko, ki, ti});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_unroll(s, ki);
  ts_unroll(s, ti);
  return ts_sched_status(s);
}

TS_SCHEDULE(regtile64, "64x64 block tiles, 8 results per thread, k steps "
            "of 8") {
  return register_tiled(s, 64, 64, 8, 8);
}

/* Each knob's first value is regtile64's.  A configuration with more than
 * 1024 threads a block is pruned with the reason, before it is compiled. */
TS_SPACE(regtiles, "regtile64's block tile, thread tile and k step") {
  int64_t bm = ts_knob(c, "bm", 3, (int64_t[]){64, 32, 128});
  int64_t bn = ts_knob(c, "bn", 2, (int64_t[]){64, 32});
  int64_t tm = ts_knob(c, "tm", 2, (int64_t[]){8, 4});
  int64_t bk = ts_knob(c, "bk", 2, (int64_t[]){8, 16});
  ts_knob_require(c, bm / tm * bn <= 1024, "%lld threads a block, over 1024",
                  (long long)(bm / tm * bn));
  return register_tiled(s, bm, bn, tm, bk);
}
