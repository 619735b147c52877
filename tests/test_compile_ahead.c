/*
 * Compiling ahead of the runners (src/tune/compile_ahead.c): while
 * shapes' first passes are in the queue, the lead's thread compiles the
 * candidates still pending into the kernel cache, of every shape
 * published, and leaves those a runner has taken to it.  Needs NVRTC (the
 * CUDA toolkit), not a GPU.
 */
#include <dirent.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "tune/tune_impl.h"

static char dir[256];

typedef struct {
  ts_tune_space sp;
  ts_tune_shape r[2]; /* units 0 and 1: 64^3 and 48^3 */
  tune_queue *q;
} fixture;

static int setup(void **state) {
  if (make_temp_cache_dir(dir, sizeof(dir), "tessel-ahead") != 0)
    return -1;
  fixture *f = calloc(1, sizeof(*f));
  if (!f)
    return -1;
  f->sp = (ts_tune_space){.space = ts_space_find("seed003"),
                          .key = "seed003", .name = "seed003"};
  f->r[0].def = ts_gemm_make(64, 64, 64);
  f->r[1].def = ts_gemm_make(48, 48, 48);
  ts_tune_opts o = {.limit = 1000};
  f->q = tune_queue_new(16, 2);
  if (!f->sp.space || !f->q)
    return -1;
  for (int u = 0; u < 2; u++)
    if (!tune_enumerate(&f->sp, &o, &f->r[u]) || f->r[u].n < 6)
      return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  tune_free_shape(&f->r[0]);
  tune_free_shape(&f->r[1]);
  tune_queue_free(f->q);
  free(f);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The kernel cache's entries under d (not the files being written). */
static int count_entries(const char *d) {
  DIR *h = opendir(d);
  int n = 0;
  for (struct dirent *e; h && (e = readdir(h));) {
    if (e->d_name[0] == '.')
      continue;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
    if (e->d_type == DT_DIR)
      n += count_entries(path);
    else if (!strstr(e->d_name, ".tmp."))
      n++;
  }
  if (h)
    closedir(h);
  return n;
}

static bool from_cache(const fixture *f, int u, int i) {
  const ts_tune_shape *r = &f->r[u];
  ts_sched *s = ts_space_schedule(f->sp.space, &r->def, r->c[i].config);
  ts_kernel *k = ts_compile_sched(s, "sm_80");
  ts_sched_free(s);
  assert_int_equal(ts_kernel_status(k), TS_OK);
  bool cached = ts_kernel_from_cache(k);
  ts_kernel_free(k);
  return cached;
}

/* Waits (up to two minutes) for the thread to put n entries in the
 * cache, then stops it. */
static void stop_at(tune_ahead *a, int n) {
  for (int i = 0; i < 1200 && count_entries(dir) < n; i++)
    usleep(100000);
  tune_ahead_stop(a);
}

/* Six candidates in the queue, two of them taken by a runner: the thread
 * compiles the four pending ones into the cache, not the taken ones. */
static void test_compiles_what_is_pending(void **state) {
  fixture *f = *state;
  int which[6] = {0, 1, 2, 3, 4, 5}, got[2];
  bool alone[6] = {0};
  int gen = tune_queue_publish(f->q, 0, which, alone, 6, 2);
  assert_true(gen > 0);
  assert_int_equal(tune_queue_take(f->q, gen, 1, 2, got), 2);
  ts_tune_opts o = {.jobs = 2, .limit = 1000};
  tune_ahead *a = tune_ahead_start(&f->sp, &o, "sm_80", f->r, 0, 2, f->q);
  assert_non_null(a);
  stop_at(a, 4);
  assert_int_equal(count_entries(dir), 4);
  for (int i = 0; i < 6; i++)
    assert_int_equal(from_cache(f, 0, i), i >= 2);
}

/* Two shapes published, one before the thread starts and one after (as
 * the lead publishes the next shapes while a first pass is on): the
 * thread compiles both shapes' pending candidates. */
static void test_compiles_every_published_shape(void **state) {
  fixture *f = *state;
  int which[3] = {0, 1, 2};
  bool alone[3] = {0};
  assert_true(tune_queue_publish(f->q, 0, which, alone, 3, 1) > 0);
  ts_tune_opts o = {.jobs = 2, .limit = 1000};
  tune_ahead *a = tune_ahead_start(&f->sp, &o, "sm_80", f->r, 0, 2, f->q);
  assert_non_null(a);
  usleep(200000);
  assert_true(tune_queue_publish(f->q, 1, which, alone, 3, 1) > 0);
  stop_at(a, 6);
  assert_int_equal(count_entries(dir), 6);
  for (int u = 0; u < 2; u++)
    for (int i = 0; i < 3; i++)
      assert_true(from_cache(f, u, i));
}

/* A shape whose first pass is over (its unit closed) leaves the thread
 * with nothing to compile, pending or not. */
static void test_closed_unit_compiles_nothing(void **state) {
  fixture *f = *state;
  int which[3] = {0, 1, 2};
  bool alone[3] = {0};
  int gen = tune_queue_publish(f->q, 0, which, alone, 3, 1);
  assert_true(gen > 0);
  tune_queue_close_unit(f->q, gen);
  ts_tune_opts o = {.jobs = 2, .limit = 1000};
  tune_ahead *a = tune_ahead_start(&f->sp, &o, "sm_80", f->r, 0, 2, f->q);
  assert_non_null(a);
  usleep(200000);
  tune_ahead_stop(a);
  assert_int_equal(count_entries(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_compiles_what_is_pending, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_compiles_every_published_shape,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_closed_unit_compiles_nothing,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
