/*
 * The tuner as a library (include/tessel/tune.h), driven without the
 * command line: ts_tune_run on the fake driver (tests/fake_cuda.c) reports
 * each step through its hooks once, records each shape's best where
 * ts_tune_record_load finds it, and a second run resumes from nothing
 * left over (the journals of a finished run are gone).
 *
 * Usage: test_tune_library FAKE_DRIVER.  The fake is cuBLAS too, found
 * under libcublas.so.13 on LD_LIBRARY_PATH, which the loader reads as the
 * process starts: the test links it into a directory of its own and runs
 * itself again with that directory on the path.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "runtime/gpu_impl.h"

/* What the hooks saw.  They run in the tuner's worker process, so this is
 * memory shared with it. */
typedef struct {
  int space_begin, shape_ready, progress, shape_done, space_done;
  int configurations[4], compiled[4];
  char best[4][512];
  ts_status recorded[4];
  char space_name[64];
} seen;

static seen *shared;
static char dir[256];

static void on_space_begin(void *ctx, const ts_tune_space *sp, ts_gpu *gpu) {
  seen *s = ctx;
  (void)gpu;
  s->space_begin++;
  snprintf(s->space_name, sizeof(s->space_name), "%s", sp->name);
}

static void on_shape_ready(void *ctx, const ts_tune_space *sp,
                           const ts_tune_shape *r) {
  seen *s = ctx;
  (void)sp;
  if (s->shape_ready < 4) {
    s->configurations[s->shape_ready] = r->n;
    s->compiled[s->shape_ready] = r->compiled;
  }
  s->shape_ready++;
}

static void on_progress(void *ctx, const ts_tune_shape *r, int done,
                        int total, double seconds) {
  (void)r;
  (void)seconds;
  ((seen *)ctx)->progress += done <= total;
}

static int on_shape_done(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                         const ts_tune_shape *r, const int *order) {
  seen *s = ctx;
  (void)sp;
  (void)gpu;
  if (s->shape_done < 4 && r->n) {
    snprintf(s->best[s->shape_done], sizeof(s->best[0]), "%s",
             r->c[order[0]].text);
    s->recorded[s->shape_done] = r->record_tried ? r->recorded : TS_ERR_BAD_ARG;
  }
  s->shape_done++;
  return 0;
}

static int on_space_done(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                         const ts_tune_shape *runs, int n, double seconds) {
  (void)sp;
  (void)gpu;
  (void)runs;
  (void)n;
  (void)seconds;
  ((seen *)ctx)->space_done++;
  return 0;
}

static const ts_tune_report hooks = {
    .space_begin = on_space_begin, .shape_ready = on_shape_ready,
    .progress = on_progress, .shape_done = on_shape_done,
    .space_done = on_space_done};

/* seed003 at two small shapes, beta 1 (the fake's kernels leave C as it
 * was, as cuBLAS's then does), a budget of 4. */
static int run_seed003(ts_gemm *shapes) {
  shapes[0] = ts_gemm_make(64, 64, 64);
  shapes[1] = ts_gemm_make(128, 64, 32);
  for (int i = 0; i < 2; i++)
    shapes[i].beta = 1;
  ts_tune_space sp = {.space = ts_space_find("seed003"), .key = "seed003",
                      .name = "seed003"};
  ts_tune_opts o = {.shapes = shapes, .nshapes = 2, .top = 2, .limit = 1000,
                    .budget = 4, .repeats = 3, .warmup = 1, .seed = 1};
  ts_tune_report rep = hooks;
  rep.ctx = shared;
  memset(shared, 0, sizeof(*shared));
  return ts_tune_run(&o, &sp, 1, &rep);
}

static void test_a_run_reports_each_step_once(void **state) {
  (void)state;
  ts_gemm shapes[2];
  assert_int_equal(run_seed003(shapes), 0);
  assert_int_equal(shared->space_begin, 1);
  assert_string_equal(shared->space_name, "seed003");
  assert_int_equal(shared->shape_ready, 2);
  assert_int_equal(shared->shape_done, 2);
  assert_int_equal(shared->space_done, 1);
  assert_true(shared->progress >= 2);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(shared->configurations[i], 75);
    assert_int_equal(shared->compiled[i], 4); /* the budget */
  }
}

static void test_each_shape_s_best_is_recorded(void **state) {
  (void)state;
  ts_gemm shapes[2];
  assert_int_equal(run_seed003(shapes), 0);
  ts_gpu *gpu = ts_gpu_open();
  assert_int_equal(ts_gpu_status(gpu), TS_OK);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(shared->recorded[i], TS_OK);
    char *config = ts_tune_record_load(gpu, "seed003", &shapes[i], NULL);
    assert_non_null(config);
    assert_string_equal(config, shared->best[i]);
    free(config);
  }
  ts_gpu_close(gpu);
}

static void test_nothing_to_tune_is_refused(void **state) {
  (void)state;
  ts_tune_opts o = {0};
  ts_tune_space sp = {.space = ts_space_find("seed003"), .key = "seed003",
                      .name = "seed003"};
  assert_int_equal(ts_tune_run(&o, &sp, 1, NULL), 1);
}

/* Devices by ordinal, each with its UUID: a journal is one device's, a
 * record serves every device of the model. */
static void test_devices_by_ordinal(void **state) {
  (void)state;
  setenv("TESSEL_FAKE_GPUS", "3", 1);
  assert_int_equal(ts_gpu_count(), 3);
  ts_gpu *g0 = ts_gpu_open_device(0), *g2 = ts_gpu_open_device(2);
  ts_gpu *g3 = ts_gpu_open_device(3);
  assert_int_equal(ts_gpu_status(g2), TS_OK);
  assert_int_equal(ts_gpu_ordinal(g2), 2);
  assert_string_equal(ts_gpu_uuid(g2), "GPU-fa4e0000-0000-0000-0000-000000000002");
  assert_string_equal(ts_gpu_uuid(g0), "GPU-fa4e0000-0000-0000-0000-000000000000");
  assert_string_equal(ts_gpu_name(g0), ts_gpu_name(g2));
  assert_int_equal(ts_gpu_status(g3), TS_ERR_NO_GPU);
  assert_string_equal(ts_gpu_errmsg(g3),
                      "no GPU 3: the CUDA driver sees 3 devices (0 to 2)");
  ts_gemm g = ts_gemm_make(96, 96, 96);
  assert_int_equal(ts_tune_journal_add(g0, "seed003", &g, "timing\tx=1"), TS_OK);
  char *mine = ts_tune_journal_load(g0, "seed003", &g);
  char *theirs = ts_tune_journal_load(g2, "seed003", &g);
  assert_non_null(mine);
  assert_null(theirs);
  free(mine);
  ts_tune_journal_remove(g0, "seed003", &g);
  assert_int_equal(ts_tune_record_save(g0, "seed003", &g, "x=1", 1.0), TS_OK);
  char *record = ts_tune_record_load(g2, "seed003", &g, NULL);
  assert_non_null(record);
  assert_string_equal(record, "x=1");
  free(record);
  ts_gpu_close(g0);
  ts_gpu_close(g2);
  ts_gpu_close(g3);
  unsetenv("TESSEL_FAKE_GPUS");
}

/* --tuned at a shape not tuned: the nearest tuned shape by sizes' ratios,
 * of the same space, layout, alpha, beta and types; the next rank the
 * next nearest. */
static void test_the_nearest_tuned_shape(void **state) {
  (void)state;
  ts_gpu *gpu = ts_gpu_open();
  assert_int_equal(ts_gpu_status(gpu), TS_OK);
  const int64_t tuned[][3] = {{1024, 1024, 1024}, {4096, 4096, 4096},
                              {1024, 1024, 8192}};
  for (int i = 0; i < 3; i++) {
    ts_gemm g = ts_gemm_make(tuned[i][0], tuned[i][1], tuned[i][2]);
    char config[32];
    snprintf(config, sizeof(config), "rank=%d", i);
    assert_int_equal(ts_tune_record_save(gpu, "nearspace", &g, config, 1.0), TS_OK);
  }
  /* Nearer in M, N and K together than any other, but not the same:
   * another layout, another beta, another space. */
  ts_gemm other = ts_gemm_make(1500, 1500, 1500);
  other.layout = TS_TT;
  assert_int_equal(ts_tune_record_save(gpu, "nearspace", &other, "layout", 1.0), TS_OK);
  other = ts_gemm_make(1500, 1500, 1500);
  other.beta = 1;
  assert_int_equal(ts_tune_record_save(gpu, "nearspace", &other, "beta", 1.0), TS_OK);
  other = ts_gemm_make(1500, 1500, 1500);
  assert_int_equal(ts_tune_record_save(gpu, "farspace", &other, "space", 1.0), TS_OK);

  ts_gemm asked = ts_gemm_make(1500, 1500, 2048), at;
  char *c = ts_tune_record_nearest(gpu, "nearspace", &asked, 0, &at);
  assert_non_null(c);
  assert_string_equal(c, "rank=0"); /* 1.46 away, against 2.15 and 2.70 */
  assert_int_equal(at.m, 1024);
  assert_int_equal(at.k, 1024);
  free(c);
  c = ts_tune_record_nearest(gpu, "nearspace", &asked, 1, &at);
  assert_non_null(c);
  assert_string_equal(c, "rank=2"); /* 1024x1024x8192 */
  free(c);
  c = ts_tune_record_nearest(gpu, "nearspace", &asked, 2, NULL);
  assert_non_null(c);
  assert_string_equal(c, "rank=1");
  free(c);
  assert_null(ts_tune_record_nearest(gpu, "nearspace", &asked, 3, NULL));
  asked.layout = TS_NT;
  assert_null(ts_tune_record_nearest(gpu, "nearspace", &asked, 0, NULL));
  ts_gpu_close(gpu);
}

/* The fake as libcublas.so.13 in a directory of the test's own, put on
 * LD_LIBRARY_PATH by running the test again; false when that failed. */
static bool run_again_with_fake_cublas(char **argv) {
  char lib[300], link[400];
  snprintf(lib, sizeof(lib), "%s/lib", dir);
  snprintf(link, sizeof(link), "%s/libcublas.so.13", lib);
  if (mkdir(lib, 0700) != 0 || symlink(argv[1], link) != 0)
    return false;
  setenv("LD_LIBRARY_PATH", lib, 1);
  setenv("TESSEL_TUNE_LIBRARY_TEST_DIR", dir, 1);
  execv("/proc/self/exe", argv);
  return false;
}

/* The tuner times a shape's candidates a group a ts_bench call: the
 * inputs drawn for the first call, and cuBLAS's reference on them, are
 * kept on the GPU's handle for the next call of the same definition and
 * seed, and drawn again for another. */
static void test_bench_keeps_its_inputs(void **state) {
  (void)state;
  ts_gpu *gpu = ts_gpu_open();
  assert_int_equal(ts_gpu_status(gpu), TS_OK);
  ts_gemm g = ts_gemm_make(37, 53, 29);
  g.beta = 1.0f; /* the fake's kernels leave C as it was */
  ts_sched *s = ts_builtin_schedule("naive", &g);
  ts_kernel *k = ts_compile_sched(s, ts_gpu_arch(gpu));
  ts_sched_free(s);
  ts_bench_opts o = {.warmup = 1, .repeats = 3, .seed = 7};
  ts_bench_result r1, r2, blas;
  assert_int_equal(ts_bench(gpu, &k, 1, &o, &r1, &blas), TS_OK);
  const gpu_bench_inputs *kept = gpu->bench_inputs;
  assert_non_null(kept);
  assert_true(kept->has_ref);
  float a0 = kept->A[0];
  assert_int_equal(ts_bench(gpu, &k, 1, &o, &r2, &blas), TS_OK);
  assert_ptr_equal(gpu->bench_inputs, kept);
  assert_true(kept->A[0] == a0);
  assert_true(r1.max_rel_err == r2.max_rel_err);
  o.seed = 8;
  assert_int_equal(ts_bench(gpu, &k, 1, &o, &r2, &blas), TS_OK);
  assert_int_equal(gpu->bench_inputs->seed, 8);
  assert_true(gpu->bench_inputs->A[0] != a0);
  ts_kernel_free(k);
  ts_gpu_close(gpu); /* frees them: the sanitizers' build finds no leak */
}

int main(int argc, char **argv) {
  if (argc != 2 || argv[1][0] != '/') {
    fprintf(stderr, "usage: test_tune_library /ABSOLUTE/PATH/libfake_cuda.so\n");
    return 2;
  }
  const char *again = getenv("TESSEL_TUNE_LIBRARY_TEST_DIR");
  if (!again) {
    snprintf(dir, sizeof(dir), "/tmp/tessel-tune-library-XXXXXX");
    if (!mkdtemp(dir) || !run_again_with_fake_cublas(argv)) {
      perror("test_tune_library: cannot link the fake cuBLAS");
      return 1;
    }
  }
  snprintf(dir, sizeof(dir), "%s", again);
  char cache[300];
  snprintf(cache, sizeof(cache), "%s/cache", dir);
  setenv("TESSEL_CACHE_DIR", cache, 1);
  setenv("TESSEL_CUDA_DRIVER", argv[1], 1);
  unsetenv("TESSEL_TUNE_FAULT");
  shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_run_reports_each_step_once),
      cmocka_unit_test(test_each_shape_s_best_is_recorded),
      cmocka_unit_test(test_nothing_to_tune_is_refused),
      cmocka_unit_test(test_devices_by_ordinal),
      cmocka_unit_test(test_the_nearest_tuned_shape),
      cmocka_unit_test(test_bench_keeps_its_inputs),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  munmap(shared, sizeof(*shared));
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) == 0 ? rc : 1;
}
