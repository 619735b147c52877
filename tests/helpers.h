/*
 * Shared by the cmocka tests: building schedules and comparing printed IR.
 */
#ifndef TS_TEST_HELPERS_H
#define TS_TEST_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tessel.h"
#include "past_location.h"
#include "src/builtins/builtins_impl.h"
#include "base/arena.h"

/* A new empty file /tmp/PREFIX-XXXXXX, its name into path; 0, or -1
 * (a cmocka setup's failure). */
static inline int make_temp_file(char *path, size_t len, const char *prefix) {
  snprintf(path, len, "/tmp/%s-XXXXXX", prefix);
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  close(fd);
  return 0;
}

/* A new empty directory /tmp/PREFIX-XXXXXX made the kernel and tuning
 * cache (TESSEL_CACHE_DIR), its name into dir; 0, or -1 (a cmocka
 * setup's failure). */
static inline int make_temp_cache_dir(char *dir, size_t len,
                                      const char *prefix) {
  snprintf(dir, len, "/tmp/%s-XXXXXX", prefix);
  if (!mkdtemp(dir))
    return -1;
  setenv("TESSEL_CACHE_DIR", dir, 1);
  return 0;
}

/* The teardown of a fixture that setup calloc'd with the arena its nodes
 * live in as its first member. */
static inline int free_arena_fixture(void **state) {
  ts_arena_release(*state);
  free(*state);
  return 0;
}

/* How many times `what` occurs in src. */
static inline int count_in(const char *src, const char *what) {
  int n = 0;
  for (const char *at = src; (at = strstr(at, what)); at++)
    n++;
  return n;
}

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

/* def as built-in b can take it: a tensor-core built-in gets fp32 A and
 * B multiplied in tf32 (it refuses exact fp32). */
static inline ts_gemm def_for_builtin(const ts_builtin *b, ts_gemm def) {
  if (b && b->tensor_cores && def.a_type == TS_F32 && def.b_type == TS_F32)
    def.math = TS_MATH_TF32;
  return def;
}

/* Built-in number b applied to def (as def_for_builtin makes it). */
static inline ts_sched *builtin_at(int b, ts_gemm def) {
  def = def_for_builtin(ts_builtin_at(b), def);
  return ts_builtin_schedule(ts_builtin_at(b)->name, &def);
}

/* Whether this point of a sweep of checks (over shapes, layouts and
 * types) runs on the executor: every point in the plain build; one in N
 * where the suite sets TESSEL_TEST_SWEEP=N, as the sanitizer build does,
 * whose run looks for memory errors and undefined behaviour on the paths
 * the points share (each point is still scheduled and lowered there), at
 * a third of the executor's time.  A file's sweeps count on from one to
 * the next, so that they start at different points. */
static inline bool sweep_point_runs(void) {
  static unsigned long point, every;
  if (every == 0) {
    const char *v = getenv("TESSEL_TEST_SWEEP");
    long n = v ? strtol(v, NULL, 10) : 1;
    every = n > 1 ? (unsigned long)n : 1;
  }
  return point++ % every == 0;
}

/* s lowers: what a sweep's point that does not run still asserts. */
static inline void assert_lowers(const ts_sched *s) {
  ts_program *p = ts_lower(s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("ts_lower: %s", ts_program_errmsg(p));
  ts_program_free(p);
}

/* s is correct against the plain GEMM on the reference executor, with
 * random data of seed `seed`. */
static inline void assert_checks(ts_sched *s, uint64_t seed) {
  char msg[512];
  ts_status st = ts_check(s, seed, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("ts_check: %s: %s", ts_strerror(st), msg);
}

/* A primitive's refusal: its status returned and kept, its message saying
 * `says`; frees s. */
static inline void assert_refused_with(ts_sched *s, ts_status got,
                                       ts_status want, const char *says) {
  assert_int_equal(got, want);
  assert_int_equal(ts_sched_status(s), want);
  if (!strstr(ts_sched_errmsg(s), says))
    fail_msg("expected \"%s\" in: %s", says, ts_sched_errmsg(s));
  ts_sched_free(s);
}

/* s's trace replayed onto a fresh schedule of its definition and name
 * gives the same loop nest. */
static inline void assert_replays(const ts_sched *s) {
  ts_sched *again = ts_matmul_named(ts_sched_gemm(s), ts_sched_name(s));
  assert_int_equal(ts_replay(s, again), TS_OK);
  char *x = ts_print_ir(s), *y = ts_print_ir(again);
  assert_string_equal(x, y);
  free(x);
  free(y);
  ts_sched_free(again);
}

/* The vectorized example's 128 x 128 tiles over a k step of 64, A and B
 * double-buffered in shared memory: 128 KiB a block, past the 48 KiB a
 * kernel may declare, so its shared memory is dynamic. */
static inline ts_sched *big_shared_schedule(const ts_gemm *def) {
  ts_sched *s = ts_matmul_named(def, "big_shared");
  ts_stage *as, *bs;
  vectorized_tiles(s, 128, 64, &as, &bs);
  ts_double_buffer(s, as);
  ts_double_buffer(s, bs);
  return s;
}

/* A float's bits, and the float of given bits. */
static inline uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof(u));
  return u;
}

static inline float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof(x));
  return x;
}

/* The start of a gpu suite program: an argument runs only the tests whose
 * names match it (cmocka's filter, with * as wildcard: for
 * compute-sanitizer runs of one test).  Says which GPU it runs on; without
 * one the program exits 77 (skipped), saying why. */
static inline ts_gpu *open_gpu_or_skip(int argc, char **argv) {
  if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  ts_gpu *gpu = ts_gpu_open();
  if (ts_gpu_status(gpu) != TS_OK) {
    printf("gpu suite skipped: %s\n", ts_gpu_errmsg(gpu));
    ts_gpu_close(gpu);
    exit(77);
  }
  printf("gpu suite on %s (%s)\n", ts_gpu_name(gpu), ts_gpu_arch(gpu));
  return gpu;
}

/* A whole text file, malloc'd; fails the test where it cannot be read. */
static inline char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot open %s", path);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size > 0);
  rewind(f);
  char *text = malloc((size_t)size + 1);
  assert_non_null(text);
  assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
  text[size] = 0;
  fclose(f);
  return text;
}

/* A schedule's error message past the "FILE:LINE: error: " that the
 * location of the failing call puts first; fails the test where the
 * message does not start with its location. */
static inline const char *errmsg_text(const ts_sched *s) {
  const char *text = message_past_location(s);
  if (!text)
    fail_msg("message \"%s\" does not start with its location",
             ts_sched_errmsg(s));
  return text;
}

#endif
