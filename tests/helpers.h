/*
 * Shared by the cmocka tests: building schedules and comparing printed IR.
 */
#ifndef TS_TEST_HELPERS_H
#define TS_TEST_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessel.h"

static inline ts_sched *sched_of(int64_t m, int64_t n, int64_t k) {
  ts_gemm g = ts_gemm_make(m, n, k);
  ts_sched *s = ts_matmul(&g);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

/* The lowered IR without its two header lines. */
static inline char *ir_body(ts_sched *s) {
  char *text = ts_print_ir(s);
  assert_non_null(text);
  char *p = strchr(text, '\n');
  p = p ? strchr(p + 1, '\n') : NULL;
  assert_non_null(p);
  memmove(text, p + 1, strlen(p + 1) + 1);
  return text;
}

static inline void assert_ir(ts_sched *s, const char *want) {
  char *got = ir_body(s);
  assert_string_equal(got, want);
  free(got);
}

/* 64 x 64 block tiles over a k step of 128, 4 x 4 outputs per thread, A
 * and B double-buffered in shared memory: 128 KiB a block, past the 48 KiB
 * a kernel may declare, so its shared memory is dynamic. */
static inline ts_sched *big_shared_schedule(const ts_gemm *def) {
  ts_sched *s = ts_matmul_named(def, "big_shared");
  ts_loop *io, *ii, *iio, *iii, *jo, *ji, *jio, *jii, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 64, &io, &ii);
  ts_split(s, ii, 4, &iio, &iii);
  ts_split(s, ts_get_loop(s, "j"), 64, &jo, &ji);
  ts_split(s, ji, 4, &jio, &jii);
  ts_split(s, ts_get_loop(s, "k"), 128, &ko, &ki);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, iio, jio, ko, ki, iii, jii});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, iio, TS_THREAD_Y);
  ts_bind(s, jio, TS_THREAD_X);
  ts_stage *as, *bs, *cl;
  ts_cache_write(s, "C", TS_LOCAL, jio, &cl);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  ts_unroll(s, iii);
  ts_unroll(s, jii);
  return s;
}

#endif
