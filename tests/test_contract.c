/*
 * The API's contract, primitive by primitive: every output pointer comes
 * back NULL from every failure (a call on a schedule already in error as
 * well as a bad argument), the status stays the first error, and the loop
 * nest is untouched; accessors take NULL; a whole schedule written without
 * checks runs through after an early error.
 */
#include "helpers.h"

#include "schedule/sched.h"

/* A non-NULL value that is no object, which a failing call must overwrite. */
#define POISON(type) ((type)(uintptr_t)0x5eed5eedu)

/* What a failing call must leave as it was. */
typedef struct snapshot {
  const ir_stmt *root;
  int nloops, ntrace, nstages;
  ts_status status;
  char errmsg[2048];
} snapshot;

static snapshot take(const ts_sched *s) {
  snapshot p = {s->root, s->nloops, s->ntrace, s->nstages, s->status, ""};
  snprintf(p.errmsg, sizeof(p.errmsg), "%s", ts_sched_errmsg(s));
  return p;
}

/* The call returned `code`, which is now the schedule's status, and
 * nothing else changed; a schedule in error keeps its message. */
static void assert_refused(const ts_sched *s, const snapshot *before,
                           ts_status got, ts_status code) {
  assert_int_equal(got, code);
  assert_int_equal(ts_sched_status(s), code);
  assert_ptr_equal(s->root, before->root);
  assert_int_equal(s->nloops, before->nloops);
  assert_int_equal(s->ntrace, before->ntrace);
  assert_int_equal(s->nstages, before->nstages);
  if (before->status != TS_OK)
    assert_string_equal(ts_sched_errmsg(s), before->errmsg);
}

/* i and j tiled by 4 over blocks and threads, k split by 4: a nest every
 * primitive with an output accepts something of. */
typedef struct tiles {
  ts_sched *s;
  ts_loop *ko, *ki, *ti, *tj;
} tiles;

static tiles make_tiles(void) {
  tiles t = {sched_of(16, 16, 16), NULL, NULL, NULL, NULL};
  ts_loop *io, *jo;
  ts_split(t.s, ts_get_loop(t.s, "i"), 4, &io, &t.ti);
  ts_split(t.s, ts_get_loop(t.s, "j"), 4, &jo, &t.tj);
  ts_split(t.s, ts_get_loop(t.s, "k"), 4, &t.ko, &t.ki);
  ts_reorder(t.s, 4, (ts_loop *[]){io, jo, t.ti, t.tj});
  ts_bind(t.s, io, TS_BLOCK_Y);
  ts_bind(t.s, jo, TS_BLOCK_X);
  ts_bind(t.s, t.ti, TS_THREAD_Y);
  ts_bind(t.s, t.tj, TS_THREAD_X);
  assert_int_equal(ts_sched_status(t.s), TS_OK);
  return t;
}

/* The same tiles with a first error on them. */
static tiles make_tiles_in_error(void) {
  tiles t = make_tiles();
  ts_loop *o = NULL, *i = NULL;
  assert_int_equal(ts_split(t.s, t.ki, 0, &o, &i), TS_ERR_BAD_FACTOR);
  return t;
}

/* ---- Each primitive with an output ----------------------------------------- */

static void test_split_outputs(void **state) {
  (void)state;
  /* (a) after an error: arguments that would otherwise succeed */
  tiles t = make_tiles_in_error();
  snapshot before = take(t.s);
  ts_loop *o = POISON(ts_loop *), *i = POISON(ts_loop *);
  assert_refused(t.s, &before, ts_split(t.s, t.ki, 2, &o, &i),
                 TS_ERR_BAD_FACTOR);
  assert_null(o);
  assert_null(i);
  ts_sched_free(t.s);
  /* (b) bad arguments, each on a fresh schedule */
  const struct {
    int64_t factor;
    bool null_loop, bound_loop;
    ts_status code;
  } bad[] = {
      {0, false, false, TS_ERR_BAD_FACTOR},
      {INT64_MAX, false, false, TS_ERR_INDEX_OVERFLOW},
      {2, true, false, TS_ERR_NULL_ARG},
      {2, false, true, TS_ERR_ALREADY_BOUND},
  };
  for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
    t = make_tiles();
    before = take(t.s);
    ts_loop *loop = bad[b].null_loop ? NULL : bad[b].bound_loop ? t.ti : t.ki;
    o = POISON(ts_loop *);
    i = POISON(ts_loop *);
    assert_refused(t.s, &before, ts_split(t.s, loop, bad[b].factor, &o, &i),
                   bad[b].code);
    assert_null(o);
    assert_null(i);
    ts_sched_free(t.s);
  }
  /* one result pointer missing: the other still comes back NULL */
  t = make_tiles();
  before = take(t.s);
  i = POISON(ts_loop *);
  assert_refused(t.s, &before, ts_split(t.s, t.ki, 2, NULL, &i),
                 TS_ERR_NULL_ARG);
  assert_null(i);
  ts_sched_free(t.s);
  /* no schedule */
  o = POISON(ts_loop *);
  i = POISON(ts_loop *);
  assert_int_equal(ts_split(NULL, NULL, 2, &o, &i), TS_ERR_NULL_ARG);
  assert_null(o);
  assert_null(i);
}

static void test_fuse_outputs(void **state) {
  (void)state;
  tiles t = make_tiles_in_error();
  snapshot before = take(t.s);
  ts_loop *f = POISON(ts_loop *);
  assert_refused(t.s, &before, ts_fuse(t.s, t.ko, t.ki, &f),
                 TS_ERR_BAD_FACTOR);
  assert_null(f);
  ts_sched_free(t.s);
  /* (b) the same loop twice; loops not directly nested; a NULL loop */
  for (int b = 0; b < 3; b++) {
    t = make_tiles();
    before = take(t.s);
    ts_loop *outer = b == 2 ? NULL : t.ko, *inner = b == 0 ? t.ko : t.ki;
    if (b == 1) { /* make ko's body more than ki: a register cache */
      ts_stage *st;
      assert_int_equal(ts_cache_read(t.s, "A", TS_LOCAL, t.ko, &st), TS_OK);
      before = take(t.s);
    }
    f = POISON(ts_loop *);
    const ts_status code[] = {TS_ERR_DUPLICATE_LOOP, TS_ERR_NOT_ADJACENT,
                              TS_ERR_NULL_ARG};
    assert_refused(t.s, &before, ts_fuse(t.s, outer, inner, &f), code[b]);
    assert_null(f);
    ts_sched_free(t.s);
  }
  f = POISON(ts_loop *);
  assert_int_equal(ts_fuse(NULL, NULL, NULL, &f), TS_ERR_NULL_ARG);
  assert_null(f);
}

/* Where a cache is attached in the cases below. */
typedef enum { AT_KO, AT_KI, AT_TJ, AT_BLOCK } attach;

static ts_loop *attach_loop(const tiles *t, attach at) {
  switch (at) {
  case AT_KO: return t->ko;
  case AT_KI: return t->ki;
  case AT_TJ: return t->tj;
  default: return ts_get_loop(t->s, "i.outer");
  }
}

typedef ts_status (*cache_fn)(ts_sched *, const char *, ts_scope, ts_loop *,
                              ts_stage **);

typedef struct cache_case {
  const char *buffer;
  ts_scope scope;
  attach at;
  ts_status code;
} cache_case;

/* ok: arguments the call accepts; bad: n cases it refuses. */
static void check_cache_outputs(cache_fn cache, cache_case ok,
                                const cache_case *bad, size_t n) {
  tiles t = make_tiles_in_error();
  snapshot before = take(t.s);
  ts_stage *st = POISON(ts_stage *);
  assert_refused(t.s, &before,
                 cache(t.s, ok.buffer, ok.scope, attach_loop(&t, ok.at), &st),
                 TS_ERR_BAD_FACTOR);
  assert_null(st);
  ts_sched_free(t.s);
  for (size_t b = 0; b < n; b++) {
    t = make_tiles();
    before = take(t.s);
    st = POISON(ts_stage *);
    assert_refused(t.s, &before,
                   cache(t.s, bad[b].buffer, bad[b].scope,
                         attach_loop(&t, bad[b].at), &st),
                   bad[b].code);
    assert_null(st);
    ts_sched_free(t.s);
  }
  /* the same buffer again: C has one write cache; A, once cached, is read
   * through its cache */
  t = make_tiles();
  assert_int_equal(cache(t.s, ok.buffer, ok.scope, attach_loop(&t, ok.at), &st),
                   TS_OK);
  before = take(t.s);
  st = POISON(ts_stage *);
  ts_status again = cache(t.s, ok.buffer, ok.scope, attach_loop(&t, ok.at),
                          &st);
  assert_refused(t.s, &before, again,
                 cache == ts_cache_write ? TS_ERR_STAGE_USED : TS_ERR_BAD_ARG);
  assert_null(st);
  ts_sched_free(t.s);
  st = POISON(ts_stage *);
  assert_int_equal(cache(NULL, ok.buffer, ok.scope, NULL, &st),
                   TS_ERR_NULL_ARG);
  assert_null(st);
}

static void test_cache_read_outputs(void **state) {
  (void)state;
  const cache_case bad[] = {
      {"Q", TS_SHARED, AT_KO, TS_ERR_UNKNOWN_BUFFER},
      {NULL, TS_SHARED, AT_KO, TS_ERR_NULL_ARG},
      {"A", (ts_scope)7, AT_KO, TS_ERR_BAD_SCOPE},
      {"A", TS_SHARED, AT_BLOCK, TS_ERR_BAD_ATTACH},
  };
  check_cache_outputs(ts_cache_read,
                      (cache_case){"A", TS_SHARED, AT_KO, TS_OK}, bad,
                      sizeof(bad) / sizeof(bad[0]));
}

static void test_cache_write_outputs(void **state) {
  (void)state;
  const cache_case bad[] = {
      {"A", TS_LOCAL, AT_TJ, TS_ERR_BAD_ARG},
      {"C", (ts_scope)7, AT_TJ, TS_ERR_BAD_SCOPE},
      {NULL, TS_LOCAL, AT_TJ, TS_ERR_NULL_ARG},
      {"C", TS_LOCAL, AT_KI, TS_ERR_BAD_ATTACH},
  };
  check_cache_outputs(ts_cache_write,
                      (cache_case){"C", TS_LOCAL, AT_TJ, TS_OK}, bad,
                      sizeof(bad) / sizeof(bad[0]));
}

static void test_get_loop_after_error(void **state) {
  (void)state;
  tiles t = make_tiles_in_error();
  snapshot before = take(t.s);
  assert_null(ts_get_loop(t.s, "k.outer"));
  assert_refused(t.s, &before, ts_sched_status(t.s), TS_ERR_BAD_FACTOR);
  ts_sched_free(t.s);
}

/* ---- Accessors ------------------------------------------------------------- */

static void test_accessors_take_null(void **state) {
  (void)state;
  assert_null(ts_stage_axis(NULL, 0));
  assert_null(ts_stage_axis(NULL, 1));
  assert_int_equal(ts_stage_contiguous(NULL), -1);
  assert_string_equal(ts_stage_name(NULL), "");
  assert_string_equal(ts_loop_name(NULL), "");
  assert_int_equal(ts_loop_extent(NULL), 0);
  assert_int_equal(ts_sched_status(NULL), TS_ERR_NULL_ARG);
  assert_non_null(ts_sched_errmsg(NULL));
  assert_null(ts_sched_gemm(NULL));
  assert_string_equal(ts_sched_name(NULL), "");
  assert_null(ts_get_loop(NULL, "i"));
  ts_sched_free(NULL);
  /* A write cache has no copy loops. */
  tiles t = make_tiles();
  ts_stage *st;
  assert_int_equal(ts_cache_write(t.s, "C", TS_LOCAL, t.tj, &st), TS_OK);
  assert_null(ts_stage_axis(st, 0));
  assert_int_equal(ts_stage_contiguous(st), -1);
  ts_sched_free(t.s);
}

static void test_primitives_take_null_schedule(void **state) {
  (void)state;
  assert_int_equal(ts_reorder(NULL, 0, NULL), TS_ERR_NULL_ARG);
  assert_int_equal(ts_bind(NULL, NULL, TS_BLOCK_X), TS_ERR_NULL_ARG);
  assert_int_equal(ts_unroll(NULL, NULL), TS_ERR_NULL_ARG);
  assert_int_equal(ts_rename(NULL, NULL, "x"), TS_ERR_NULL_ARG);
  assert_int_equal(ts_vectorize(NULL, NULL), TS_ERR_NULL_ARG);
  assert_int_equal(ts_storage_transpose(NULL, NULL), TS_ERR_NULL_ARG);
  assert_int_equal(ts_storage_pad(NULL, NULL, 4), TS_ERR_NULL_ARG);
  assert_int_equal(ts_double_buffer(NULL, NULL), TS_ERR_NULL_ARG);
  assert_int_equal(ts_pipeline(NULL, NULL, 3), TS_ERR_NULL_ARG);
  assert_int_equal(ts_min_blocks_per_sm(NULL, 2), TS_ERR_NULL_ARG);
}

/* ---- A whole schedule after an early error ---------------------------------- */

/* The vectorized example as a user writes it, checking nothing until the
 * end: every handle after the first error is NULL, every call a no-op. */
static void vectorized_unchecked(ts_sched *s, int64_t first_factor) {
  ts_loop *io, *ir, *ty, *tm, *jo, *jr, *tx, *tn, *ko, *ki, *tno, *tni, *f;
  ts_split(s, ts_get_loop(s, "i"), first_factor, &io, &ir);
  ts_split(s, ir, 8, &ty, &tm);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 8, &tx, &tn);
  ts_split(s, tn, 4, &tno, &tni);
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &ki);
  ts_reorder(s, 9, (ts_loop *[]){io, jo, ty, tx, ko, ki, tm, tno, tni});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ty, TS_THREAD_Y);
  ts_bind(s, tx, TS_THREAD_X);
  ts_stage *as, *bs, *ra, *cw;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_transpose(s, as);
  ts_storage_pad(s, as, 4);
  ts_loop *o, *v;
  ts_split(s, ts_stage_axis(as, ts_stage_contiguous(as)), 4, &o, &v);
  ts_vectorize(s, v);
  ts_bind(s, ts_stage_axis(as, 1 - ts_stage_contiguous(as)), TS_THREAD_X);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_cache_read(s, ts_stage_name(as), TS_LOCAL, ki, &ra);
  ts_fuse(s, ts_stage_axis(ra, 0), ts_stage_axis(ra, 1), &f);
  ts_unroll(s, f);
  ts_rename(s, f, "copy");
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  ts_cache_write(s, "C", TS_LOCAL, tx, &cw);
  ts_unroll(s, ki);
  ts_vectorize(s, tni);
  ts_min_blocks_per_sm(s, 2);
  assert_null(io);
  assert_null(o);
  assert_null(f);
  assert_null(as);
  assert_null(ra);
  assert_null(cw);
  assert_string_equal(ts_loop_name(v), "");
  assert_null(ts_print_ir(s));
  assert_null(ts_print_trace(s));
  assert_null(ts_cuda_source(s));
  ts_launch_geometry dims;
  memset(&dims, 0x5a, sizeof(dims)); /* poisoned: the failure must zero it */
  assert_int_not_equal(ts_launch_dims(s, &dims), TS_OK);
  assert_int_equal(dims.grid[0] | dims.block[0] | dims.dynamic_shared, 0);
  char msg[256];
  assert_int_not_equal(ts_check(s, 1, msg, sizeof(msg)), TS_OK);
}

static void test_whole_schedule_after_an_error(void **state) {
  (void)state;
  ts_sched *s = sched_of(256, 256, 256);
  vectorized_unchecked(s, 0);
  assert_int_equal(ts_sched_status(s), TS_ERR_BAD_FACTOR);
  assert_non_null(strstr(ts_sched_errmsg(s), "ts_split: argument 3 'factor' "
                                             "must be >= 1 (got 0)"));
  assert_int_equal(s->ntrace, 0);
  ts_sched_free(s);
  /* A definition in error has no loop nest at all. */
  ts_gemm g = ts_gemm_make(0, 256, 256);
  s = ts_matmul(&g);
  vectorized_unchecked(s, 128);
  assert_int_equal(ts_sched_status(s), TS_ERR_BAD_SHAPE);
  ts_sched_free(s);
  /* Nor does no schedule. */
  vectorized_unchecked(NULL, 128);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_outputs),
      cmocka_unit_test(test_fuse_outputs),
      cmocka_unit_test(test_cache_read_outputs),
      cmocka_unit_test(test_cache_write_outputs),
      cmocka_unit_test(test_get_loop_after_error),
      cmocka_unit_test(test_accessors_take_null),
      cmocka_unit_test(test_primitives_take_null_schedule),
      cmocka_unit_test(test_whole_schedule_after_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
