/*
 * Hand-made schedules and assertions the cache tests share: block-tiled
 * GEMMs to attach caches to, the reference executor's verdict, and a
 * primitive's expected refusal (code, message prefix, schedule unchanged).
 */
#ifndef TS_TEST_TILES_H
#define TS_TEST_TILES_H

#include "helpers.h"

#include "schedule/sched.h"

/* Blocks on ti x tj tiles of C, a thread per element, k in steps of tk. */
static inline void block_tiled(ts_sched *s, int64_t ti, int64_t tj, int64_t tk,
                        ts_loop **ko, ts_loop **ki) {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), ti, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), tj, &jo, &ji);
  ts_split(s, ts_get_loop(s, "k"), tk, ko, ki);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ii, ji, *ko, *ki});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  assert_int_equal(ts_sched_status(s), TS_OK);
}

/* 8x8xK in 4x4 tiles: blocks on i/j tiles, 4x4 threads, k in steps of 4. */
static inline ts_sched *tiled_k(int64_t k, ts_loop **ko, ts_loop **ki) {
  ts_sched *s = sched_of(8, 8, k);
  block_tiled(s, 4, 4, 4, ko, ki);
  return s;
}

static inline ts_sched *tiled(ts_loop **ko, ts_loop **ki) { return tiled_k(8, ko, ki); }

/* def's GEMM in 4 x 4 x 4 tiles with A and B in shared memory at k.outer
 * (*ko, where ko is not NULL), each given to `fill` with `count`
 * (ts_pipeline, ts_double_buffer_tiles); fill NULL: the caches alone. */
static inline ts_sched *shared_tiles(const ts_gemm *def, const char *name,
                                     ts_status (*fill)(ts_sched *, ts_stage *,
                                                       int),
                                     int count, ts_stage **as, ts_stage **bs,
                                     ts_loop **ko) {
  ts_sched *s = ts_matmul_named(def, name);
  ts_loop *k_outer, *ki;
  block_tiled(s, 4, 4, 4, &k_outer, &ki);
  if (ko)
    *ko = k_outer;
  ts_cache_read(s, "A", TS_SHARED, k_outer, as);
  ts_cache_read(s, "B", TS_SHARED, k_outer, bs);
  if (fill) {
    fill(s, *as, count);
    fill(s, *bs, count);
  }
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

/* 8 x 8 x def's K with a serial loop over each thread's two rows around
 * k.outer, so a pipeline there runs twice per block; B in shared memory
 * at k.outer (*bs). */
static inline ts_sched *b_cached_twice(const ts_gemm *def, ts_stage **bs) {
  ts_sched *s = ts_matmul(def);
  ts_loop *io, *ii, *jo, *ji, *ko, *ki, *iio, *iii;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 4, &jo, &ji);
  ts_split(s, ii, 2, &iio, &iii);
  ts_split(s, ts_get_loop(s, "k"), 4, &ko, &ki);
  ts_reorder(s, 7, (ts_loop *[]){io, jo, iii, ji, iio, ko, ki});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, iii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  assert_int_equal(ts_cache_read(s, "B", TS_SHARED, ko, bs), TS_OK);
  return s;
}

/* Lowering's refusal of caches at one loop buffered differently
 * (TS_ERR_STAGES_DIFFER) saying `want`; the schedule stays as it was. */
static inline void expect_lowering_error(ts_sched *s, const char *want) {
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_STAGES_DIFFER);
  if (!strstr(ts_program_errmsg(p), want))
    fail_msg("\"%s\" lacks \"%s\"", ts_program_errmsg(p), want);
  ts_program_free(p);
  assert_int_equal(ts_sched_status(s), TS_OK);
}

static inline void assert_correct(ts_sched *s) {
  char msg[512];
  ts_status st = ts_check(s, 7, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("ts_check: %s", msg);
}

static inline int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
    n++;
  return n;
}

static inline void expect(ts_sched *s, ts_status got, ts_status code, const char *prefix,
                   const ir_stmt *root) {
  assert_int_equal(got, code);
  const char *msg = errmsg_text(s);
  if (strncmp(msg, prefix, strlen(prefix)) != 0)
    fail_msg("message \"%s\" does not start with \"%s\"", msg, prefix);
  assert_ptr_equal(s->root, root);
}

#define EXPECT_FAIL(call, code, prefix)                                       \
  do {                                                                        \
    const ir_stmt *root_ = s->root;                                           \
    expect(s, (call), code, prefix, root_);                                   \
  } while (0)

/* The warpgroup space's schedule for def at `knobs` ("bm=128,tma=1", the
 * others at their first values); it may be pruned: the caller asserts
 * what it expects of its status. */
static inline ts_sched *warpgroup_at(const ts_gemm *def, const char *knobs) {
  char err[256];
  ts_config *c = ts_config_parse(knobs, err, sizeof(err));
  if (!c)
    fail_msg("%s: %s", knobs, err);
  ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), def, c);
  ts_config_free(c);
  return s;
}

/* wgmma's tiles by hand in f16 (wg128's shape): blocks of `warpgroups`
 * warpgroups of 64 x bn, k tiles of 64 in `stages` stages filled by the
 * TMA, with a producer warpgroup where `producer`; B's tile stored
 * k-major in NT, as it lies.  *ko is the k tile loop. */
static inline ts_sched *tma_tiles(const ts_gemm *def, int64_t warpgroups,
                                  int64_t bn, int stages, bool producer,
                                  ts_loop **ko) {
  ts_sched *s = ts_matmul(def);
  ts_loop *io, *ir, *wg, *ii, *jo, *jj, *ki, *kq, *kk, *o, *in;
  ts_split(s, ts_get_loop(s, "i"), 64 * warpgroups, &io, &ir);
  ts_split(s, ir, 64, &wg, &ii);
  ts_split(s, ts_get_loop(s, "j"), bn, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), 64, ko, &ki);
  ts_split(s, ki, 16, &kq, &kk);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, wg, *ko, kq, ii, jj, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  for (int b = 0; b < 2; b++) {
    ts_stage *st;
    ts_cache_read(s, b ? "B" : "A", TS_SHARED, *ko, &st);
    if (b && def->layout == TS_NT)
      ts_storage_transpose(s, st);
    ts_storage_swizzle(s, st);
    ts_split(s, ts_stage_axis(st, ts_stage_contiguous(st)), 8, &o, &in);
    ts_vectorize(s, in);
    ts_pipeline(s, st, stages);
    ts_tma(s, st);
    if (producer)
      ts_warp_specialize(s, st, 4);
  }
  ts_unroll(s, kq);
  ts_tensorize(s, ii, jj, kk);
  return s;
}

/* Lowers s and frees it: lowering's status, its message in msg. */
static inline ts_status lowering_says(ts_sched *s, char *msg, size_t n) {
  ts_program *p = ts_lower(s);
  ts_status st = ts_program_status(p);
  snprintf(msg, n, "%s", ts_program_errmsg(p));
  ts_program_free(p);
  ts_sched_free(s);
  return st;
}

#endif
