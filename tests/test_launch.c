/*
 * ts_launch and the saved kernel on the fake driver (tests/fake_cuda.c),
 * which runs nothing but logs each launch (TESSEL_FAKE_LAUNCH_LOG) and
 * keeps the stream of the last: a kernel runs on the caller's buffers
 * and stream, from a file as well as from the compiler; every argument it
 * cannot run is refused with the argument named and nothing launched; the
 * module and workspace are made once a context and shared by threads.
 * The numbers a launch computes are the gpu suite's (test_gpu_launch.c).
 *
 * Usage: test_launch FAKE_DRIVER
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "src/compile/kernel.h"

static const char *fake_path;
static char log_path[320], dir[256];
static struct {
  void *lib;
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*set_current)(CUcontext);
  CUstream (*last_stream)(void);
} fake;

static void *fake_fn(const char *name) {
  CUresult (*get)(const char *, void **, int, cuuint64_t,
                  CUdriverProcAddressQueryResult *) =
      (__typeof__(get))dlsym(fake.lib, "cuGetProcAddress_v2");
  void *fn = NULL;
  assert_non_null(get);
  assert_int_equal(get(name, &fn, CUDA_VERSION, 0, NULL), CUDA_SUCCESS);
  return fn;
}

/* The kernels' launches the fake logged (not cuBLAS's GEMMs). */
static int launches(void) {
  FILE *f = fopen(log_path, "r");
  char line[512];
  int n = 0;
  while (f && fgets(line, sizeof(line), f))
    n += strncmp(line, "cublas ", 7) != 0;
  if (f)
    fclose(f);
  return n;
}

/* The fake's device memory the tests took, freed as the test ends. */
static CUdeviceptr allocated[256];
static int nallocated;

static CUdeviceptr device_alloc(size_t bytes) {
  CUdeviceptr p = 0;
  assert_true(nallocated < 256);
  assert_int_equal(fake.mem_alloc(&p, bytes), CUDA_SUCCESS);
  return allocated[nallocated++] = p;
}

static void free_device_memory(void) {
  while (nallocated > 0)
    fake.mem_free(allocated[--nallocated]);
}

static ts_kernel *compiled(const char *name, ts_gemm def, const char *arch) {
  ts_sched *s = ts_builtin_schedule(name, &def);
  ts_kernel *k = ts_compile_sched(s, arch);
  ts_sched_free(s);
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("%s: %s", name, ts_kernel_errmsg(k));
  return k;
}

/* Arguments on fresh buffers, each with room for its leading dimension. */
static ts_launch_args args_on_buffers(const ts_kernel *k) {
  ts_launch_args a = ts_launch_args_of(k);
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand o = ts_gemm_operand(ts_kernel_gemm(k), (ts_operand_role)r);
    a.operand[r].ptr = device_alloc((size_t)ts_operand_elements(&o) *
                                    (size_t)ts_dtype_size(o.type) + 256);
  }
  return a;
}

static void expect_launched(const ts_kernel *k, const ts_launch_args *a,
                            CUstream stream) {
  int before = launches();
  if (ts_launch(k, a, stream) != TS_OK)
    fail_msg("ts_launch: %s", ts_launch_errmsg());
  assert_string_equal(ts_launch_errmsg(), "");
  assert_int_equal(launches(), before + ts_kernel_count(k));
  assert_ptr_equal(fake.last_stream(), stream);
}

static void expect_refused(const ts_kernel *k, const ts_launch_args *a,
                           ts_status want, const char *says) {
  int before = launches();
  ts_status st = ts_launch(k, a, NULL);
  if (st != want || !strstr(ts_launch_errmsg(), says))
    fail_msg("expected %s saying \"%s\"; got %s: %s", ts_strerror(want), says,
             ts_strerror(st), ts_launch_errmsg());
  assert_int_equal(launches(), before); /* nothing ran */
}

/* The fake's last logged launch, "NAME GX GY GZ". */
static const char *last_launch(void) {
  static char line[512];
  FILE *f = fopen(log_path, "r");
  line[0] = 0;
  char buf[512];
  while (f && fgets(buf, sizeof(buf), f))
    if (strncmp(buf, "cublas ", 7) != 0)
      snprintf(line, sizeof(line), "%s", buf);
  if (f)
    fclose(f);
  line[strcspn(line, "\n")] = 0;
  return line;
}

/* Arguments at extents other than the kernel's nominal ones, each
 * leading dimension `pad` past its stored row, on fresh buffers. */
static ts_launch_args args_at(const ts_kernel *k, int64_t m, int64_t n,
                              int64_t kk, int64_t pad) {
  ts_launch_args a = ts_launch_args_of(k);
  ts_gemm g = *ts_kernel_gemm(k);
  g.m = a.m = m;
  g.n = a.n = n;
  g.k = a.k = kk;
  g.lda = g.ldb = g.ldc = 0;
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand o = ts_gemm_operand(&g, (ts_operand_role)r);
    a.operand[r].ld = o.cols + pad;
    o.ld = o.cols + pad;
    a.operand[r].ptr = device_alloc((size_t)ts_operand_elements(&o) *
                                    (size_t)ts_dtype_size(o.type) + 256);
  }
  return a;
}

/* The schedule's kernel on the caller's buffers and stream, and again. */
static void test_launch_on_a_stream(void **state) {
  (void)state;
  ts_kernel *k = compiled("naive", ts_gemm_make(37, 53, 29), "sm_90");
  ts_launch_args a = args_on_buffers(k);
  expect_launched(k, &a, (CUstream)0x1234);
  expect_launched(k, &a, NULL);
  ts_kernel_free(k);
}

/* Each argument the kernel cannot run: refused, named, nothing run. */
static void test_bad_arguments(void **state) {
  (void)state;
  ts_gemm def = ts_gemm_make(64, 48, 32);
  def.a_type = def.b_type = TS_F16;
  def.layout = TS_NT;
  ts_kernel *k = compiled("wgws", def, "sm_90a");
  const ts_launch_args good = args_on_buffers(k);
  expect_launched(k, &good, NULL);
  ts_launch_args a = good;
  a.m = 37;
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument m is 37, but kernel "
                 "\"wgws\" was compiled for m = 64");
  a = good;
  a.k = 1;
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument k is 1");
  a = good;
  a.alpha = 2;
  expect_refused(k, &a, TS_ERR_BAD_ARG, "argument alpha is 2, but kernel "
                 "\"wgws\" was compiled with alpha = 1");
  a = good;
  a.operand[TS_OPERAND_B].type = TS_F32;
  expect_refused(k, &a, TS_ERR_BAD_ARG, "argument B holds f32 elements, but "
                 "kernel \"wgws\" takes B in f16");
  a = good;
  a.operand[TS_OPERAND_C].ptr = 0;
  expect_refused(k, &a, TS_ERR_NULL_ARG, "argument C is a null device "
                 "pointer");
  a = good;
  a.operand[TS_OPERAND_A].ptr += 8; /* 2-byte aligned, not 16 */
  expect_refused(k, &a, TS_ERR_BAD_ARG, "is not a multiple of 16 bytes, as "
                 "kernel \"wgws\" accesses it (the TMA's copies)");
  a = good;
  a.operand[TS_OPERAND_C].ptr += 4; /* its stores are of 2 floats */
  expect_refused(k, &a, TS_ERR_BAD_ARG, "argument C (0x");
  expect_refused(k, &a, TS_ERR_BAD_ARG, "is not a multiple of 8 bytes, as "
                 "kernel \"wgws\" accesses it (its widest vector access)");
  a = good;
  a.operand[TS_OPERAND_A].ld = 16;
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument lda is 16, smaller than "
                 "A's stored row of 32 elements (A is 64 x 32 as stored");
  a = good;
  a.operand[TS_OPERAND_B].ld = 40;
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument ldb is 40, but kernel "
                 "\"wgws\" was compiled for ldb = 32");
  expect_refused(k, NULL, TS_ERR_NULL_ARG, "the arguments is NULL");
  expect_refused(NULL, &good, TS_ERR_NULL_ARG, "the kernel is NULL");
  /* No current context: nothing to launch in. */
  assert_int_equal(fake.set_current(NULL), CUDA_SUCCESS);
  expect_refused(k, &good, TS_ERR_CUDA, "no CUDA context is current");
  assert_int_equal(fake.set_current((CUcontext)1), CUDA_SUCCESS);
  ts_kernel_free(k);
}

/* A kernel that reads A and B 16 bytes at a time: their addresses must be
 * multiples of 16, and are enough so. */
static void test_vector_alignment(void **state) {
  (void)state;
  ts_kernel *k = compiled("vectorized", ts_gemm_make(64, 64, 64), "sm_90");
  ts_launch_args good = args_on_buffers(k), a = good;
  a.operand[TS_OPERAND_A].ptr += 4;
  expect_refused(k, &a, TS_ERR_BAD_ARG, "argument A (0x");
  expect_refused(k, &a, TS_ERR_BAD_ARG, "is not a multiple of 16 bytes, as "
                 "kernel \"vectorized\" accesses it (its widest vector access)");
  a = good;
  a.operand[TS_OPERAND_A].ptr += 16;
  expect_launched(k, &a, NULL);
  ts_kernel_free(k);
}

/* A kernel for another architecture, and one that did not compile. */
static void test_refused_kernels(void **state) {
  (void)state;
  ts_kernel *k = compiled("naive", ts_gemm_make(8, 8, 8), "sm_80");
  ts_launch_args a = args_on_buffers(k);
  expect_refused(k, &a, TS_ERR_BAD_ARCH, "was compiled for sm_80; the device "
                 "of the current context is sm_90 (compute capability "
                 "9.0), which cannot run it");
  ts_kernel_free(k);
  ts_gemm def = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul(&def);
  ts_split(s, ts_get_loop(s, "i"), 0, NULL, NULL); /* factor 0: refused */
  k = ts_compile_sched(s, "sm_90");
  ts_sched_free(s);
  expect_refused(k, &a, TS_ERR_BAD_FACTOR, "did not compile");
  ts_kernel_free(k);
}

/* The workspace: the launcher's own, made once; or the caller's. */
static void test_workspace(void **state) {
  (void)state;
  ts_kernel *k = compiled("splitk", ts_gemm_make(64, 64, 256), "sm_90");
  assert_true(ts_kernel_workspace(k) > 0);
  assert_true(ts_kernel_count(k) >= 2);
  ts_launch_args a = args_on_buffers(k);
  expect_launched(k, &a, NULL);
  expect_launched(k, &a, NULL);
  /* The fake's memory is the host's, 16-byte aligned: rounded up. */
  a.workspace = (device_alloc((size_t)ts_kernel_workspace(k) + 256) + 255) /
                256 * 256;
  a.workspace_bytes = ts_kernel_workspace(k) - 1;
  expect_refused(k, &a, TS_ERR_BAD_ARG, "the workspace given is");
  a.workspace_bytes = ts_kernel_workspace(k);
  expect_launched(k, &a, NULL);
  a.workspace += 64;
  expect_refused(k, &a, TS_ERR_BAD_ARG, "is not 256-byte aligned");
  ts_kernel_free(k);
}

typedef struct {
  const ts_kernel *k;
  ts_launch_args a;
  int failures;
} worker;

static void *launch_many(void *p) {
  worker *w = p;
  for (int i = 0; i < 50; i++)
    w->failures += ts_launch(w->k, &w->a, (CUstream)(uintptr_t)(i + 1)) !=
                   TS_OK;
  return NULL;
}

/* Threads launching one kernel at once, its first launch among them. */
static void test_threads(void **state) {
  (void)state;
  ts_gemm def = ts_gemm_make(128, 128, 64);
  def.a_type = def.b_type = TS_F16;
  ts_kernel *k = compiled("wgws", def, "sm_90a");
  ts_launch_args a = args_on_buffers(k);
  worker w[4];
  pthread_t t[4];
  int before = launches();
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){.k = k, .a = a};
    assert_int_equal(pthread_create(&t[i], NULL, launch_many, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].failures, 0);
  }
  assert_int_equal(launches(), before + 4 * 50 * ts_kernel_count(k));
  ts_kernel_free(k);
}

static char *path_in_dir(const char *name) {
  static char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  return path;
}

static void expect_same_kernel(const ts_kernel *x, const ts_kernel *y) {
  assert_string_equal(ts_kernel_name(x), ts_kernel_name(y));
  assert_string_equal(ts_kernel_arch(x), ts_kernel_arch(y));
  assert_string_equal(ts_kernel_source(x), ts_kernel_source(y));
  assert_memory_equal(ts_kernel_gemm(x), ts_kernel_gemm(y), sizeof(ts_gemm));
  assert_int_equal(ts_kernel_count(x), ts_kernel_count(y));
  assert_int_equal(ts_kernel_workspace(x), ts_kernel_workspace(y));
  assert_true(ts_kernel_source_hash(x) == ts_kernel_source_hash(y));
  for (int i = 0; i < ts_kernel_count(x); i++) {
    const kernel_entry *a = &x->entries[i], *b = &y->entries[i];
    assert_string_equal(a->name, b->name);
    assert_memory_equal(&a->launch, &b->launch, sizeof(a->launch));
    for (int d = 0; d < 3; d++) {
      assert_int_equal(a->grid_size[d].n, b->grid_size[d].n);
      assert_memory_equal(a->grid_size[d].op, b->grid_size[d].op,
                          (size_t)a->grid_size[d].n);
      assert_memory_equal(a->grid_size[d].arg, b->grid_size[d].arg,
                          (size_t)a->grid_size[d].n * sizeof(int64_t));
    }
    assert_int_equal(a->nparams, b->nparams);
    assert_memory_equal(a->params, b->params,
                        (size_t)a->nparams * sizeof(*a->params));
  }
  size_t nx, ny;
  const void *cx = ts_kernel_cubin(x, &nx), *cy = ts_kernel_cubin(y, &ny);
  assert_int_equal(nx, ny);
  assert_memory_equal(cx, cy, nx);
}

/* Saved and loaded: the same kernel, which launches as the compiled one. */
static void test_save_and_load(void **state) {
  (void)state;
  const char *names[] = {"wgws", "splitk", "warptiled"};
  for (int i = 0; i < 3; i++) {
    ts_gemm def = ts_gemm_make(64, 128, 64);
    if (i == 0)
      def.a_type = def.b_type = TS_F16;
    ts_kernel *k = compiled(names[i], def, i == 0 ? "sm_90a" : "sm_90");
    char msg[512];
    const char *path = path_in_dir("kernel.tsk");
    assert_int_equal(ts_kernel_save(k, path, msg, sizeof(msg)), TS_OK);
    ts_kernel *loaded = ts_kernel_load(path);
    if (ts_kernel_status(loaded) != TS_OK)
      fail_msg("%s", ts_kernel_errmsg(loaded));
    expect_same_kernel(k, loaded);
    ts_launch_args a = args_on_buffers(loaded);
    expect_launched(loaded, &a, (CUstream)0x99);
    ts_kernel_free(loaded);
    ts_kernel_free(k);
  }
}

/* A kernel that takes its extents and leading dimensions at launch,
 * saved and loaded: each launch sizes its grid from the formulas in the
 * file, and the values it cannot run are refused, named. */
static void test_runtime_extents(void **state) {
  (void)state;
  ts_gemm def = ts_gemm_make(64, 64, 64);
  def.runtime = TS_RUNTIME_SHAPE;
  ts_kernel *built = compiled("warptiled", def, "sm_90");
  const char *path = path_in_dir("runtime.tsk");
  assert_int_equal(ts_kernel_save(built, path, NULL, 0), TS_OK);
  ts_kernel *k = ts_kernel_load(path);
  assert_int_equal(ts_kernel_status(k), TS_OK);
  expect_same_kernel(built, k);
  assert_int_equal(ts_kernel_gemm(k)->runtime, TS_RUNTIME_SHAPE);
  /* warptiled's blocks are 128 x 128 tiles of C: (N + 127) / 128 along
   * x, (M + 127) / 128 along y. */
  const struct { int64_t m, n, k; const char *grid; } at[] = {
      {64, 64, 64, "tessel_warptiled 1 1 1"},
      {1, 1, 1, "tessel_warptiled 1 1 1"},
      {999, 1001, 1003, "tessel_warptiled 8 8 1"},
      {129, 300, 7, "tessel_warptiled 3 2 1"}};
  for (int i = 0; i < 4; i++) {
    ts_launch_args a = args_at(k, at[i].m, at[i].n, at[i].k, i);
    expect_launched(k, &a, (CUstream)0x77);
    assert_string_equal(last_launch(), at[i].grid);
  }
  ts_launch_args a = args_at(k, 37, 53, 29, 0);
  a.m = 0;
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument m is 0; kernel "
                 "\"warptiled\" takes m at launch in 1..1073741824");
  /* 65536 blocks of 128 rows along y, past CUDA's 65535. */
  a = args_at(k, 65536 * 128, 1, 1, 0);
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "needs 65536 blocks along "
                 "gridDim.y, past CUDA's 65535");
  /* A of 2^31 elements and more: past the kernel's int indices.  (The
   * buffers need not exist: the check comes first.) */
  a = args_at(k, 1, 1, 1, 0);
  a.m = 50000;
  a.k = 50000;
  a.operand[TS_OPERAND_A].ld = 50000;
  a.operand[TS_OPERAND_C].ld = 1;
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "A spans 2500000000 elements at "
                 "this launch");
  ts_kernel_free(k);
  ts_kernel_free(built);

  /* Values that are multiples of 4, which its accesses may assume. */
  def.runtime_multiple = def.runtime_ld_multiple = 4;
  k = compiled("warptiled", def, "sm_90");
  a = args_at(k, 36, 52, 28, 4);
  expect_launched(k, &a, NULL);
  a = args_at(k, 37, 52, 28, 4);
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument m is 37; kernel "
                 "\"warptiled\" takes m at launch in 1..1073741824, a "
                 "multiple of 4");
  a = args_at(k, 36, 52, 28, 1);
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "takes leading dimensions that "
                 "are multiples of 4");
  a = args_at(k, 36, 52, 28, 4);
  a.operand[TS_OPERAND_B].ld = ((int64_t)1 << 30) + 4;
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument ldb is 1073741828; "
                 "kernel \"warptiled\" takes leading dimensions up to "
                 "1073741824");
  ts_kernel_free(k);

  /* Only k at launch: m and n stay compiled in (an m the multiple does
   * not divide among them), and packed leading dimensions follow k. */
  def = ts_gemm_make(41, 24, 16);
  def.runtime = TS_RUNTIME_K;
  def.runtime_multiple = 4;
  k = compiled("naive", def, "sm_90");
  a = args_at(k, 41, 24, 332, 0);
  a.operand[TS_OPERAND_A].ld = 0;
  expect_launched(k, &a, NULL);
  a = args_at(k, 40, 24, 16, 0);
  expect_refused(k, &a, TS_ERR_BAD_SHAPE, "argument m is 40, but kernel "
                 "\"naive\" was compiled for m = 41 and takes no other");
  ts_kernel_free(k);
}

static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
}

static void expect_load_refused(const char *path, const char *says) {
  ts_kernel *k = ts_kernel_load(path);
  if (ts_kernel_status(k) != TS_ERR_IO || !strstr(ts_kernel_errmsg(k), says))
    fail_msg("expected TS_ERR_IO saying \"%s\"; got %s: %s", says,
             ts_strerror(ts_kernel_status(k)), ts_kernel_errmsg(k));
  assert_int_equal(ts_kernel_count(k), 0);
  ts_kernel_free(k);
}

/* Files that are not a whole kernel of this format: refused, saying so. */
static void test_load_refusals(void **state) {
  (void)state;
  ts_kernel *k = compiled("naive", ts_gemm_make(16, 16, 16), "sm_90");
  const char *path = path_in_dir("good.tsk");
  assert_int_equal(ts_kernel_save(k, path, NULL, 0), TS_OK);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char data[1 << 16];
  size_t n = fread(data, 1, sizeof(data), f);
  fclose(f);
  assert_true(n > 64 && n < sizeof(data));

  expect_load_refused(path_in_dir("missing.tsk"), "cannot read");
  write_bytes(path_in_dir("text.tsk"), "hello, world\n", 13);
  expect_load_refused(path_in_dir("text.tsk"), "is not a tessel kernel file");
  write_bytes(path_in_dir("cut.tsk"), data, n / 2);
  expect_load_refused(path_in_dir("cut.tsk"), "is corrupt or truncated");
  data[n / 2] ^= 1;
  write_bytes(path_in_dir("flip.tsk"), data, n);
  expect_load_refused(path_in_dir("flip.tsk"), "is corrupt or truncated");
  data[n / 2] ^= 1;
  data[8] = 99; /* the format number follows the 8-byte magic */
  write_bytes(path_in_dir("v99.tsk"), data, n);
  expect_load_refused(path_in_dir("v99.tsk"), "was written in kernel file "
                      "format 99 (by tessel " TESSEL_VERSION "); this tessel");

  char msg[512];
  assert_int_equal(ts_kernel_save(k, "/nonexistent/dir/k.tsk", msg,
                                  sizeof(msg)), TS_ERR_IO);
  assert_non_null(strstr(msg, "cannot write /nonexistent/dir/k.tsk"));
  ts_kernel_free(k);
  ts_gemm def = ts_gemm_make(8, 8, 8);
  ts_sched *s = ts_matmul(&def);
  ts_split(s, ts_get_loop(s, "i"), 0, NULL, NULL);
  k = ts_compile_sched(s, "sm_90");
  ts_sched_free(s);
  assert_int_equal(ts_kernel_save(k, path, msg, sizeof(msg)), TS_ERR_BAD_ARG);
  assert_non_null(strstr(msg, "did not compile, so there is nothing to save"));
  ts_kernel_free(k);
}

static ts_kernel *compiled_for(const char *name, ts_gemm def,
                               const char *archs) {
  ts_sched *s = ts_builtin_schedule(name, &def);
  ts_program *p = ts_lower(s);
  ts_kernel *k = ts_compile_for(p, archs);
  ts_program_free(p);
  ts_sched_free(s);
  return k;
}

/* A kernel of several architectures: each kept (and saved), the one the
 * device runs launched, refused where none does. */
static void test_architectures(void **state) {
  (void)state;
  ts_kernel *k = compiled_for("naive", ts_gemm_make(16, 16, 16),
                              "sm_80, sm_90,sm_80");
  assert_int_equal(ts_kernel_status(k), TS_OK);
  assert_int_equal(ts_kernel_image_count(k), 2); /* sm_80 once */
  const char *arch;
  size_t size;
  assert_non_null(ts_kernel_image(k, 1, &arch, &size));
  assert_string_equal(arch, "sm_90");
  assert_true(size > 0);
  size_t none = 1;
  assert_null(ts_kernel_image(k, 2, &arch, &none));
  assert_int_equal(none, 0);
  const char *path = path_in_dir("two.tsk");
  assert_int_equal(ts_kernel_save(k, path, NULL, 0), TS_OK);
  ts_kernel *loaded = ts_kernel_load(path);
  assert_int_equal(ts_kernel_image_count(loaded), 2);
  size_t loaded_size;
  const void *a = ts_kernel_image(k, 1, NULL, NULL);
  const void *b = ts_kernel_image(loaded, 1, &arch, &loaded_size);
  assert_string_equal(arch, "sm_90");
  assert_int_equal(loaded_size, size);
  assert_memory_equal(a, b, size);
  ts_launch_args args = args_on_buffers(loaded);
  expect_launched(loaded, &args, NULL); /* sm_90's, on the fake's 9.0 */
  ts_kernel_free(loaded);
  ts_kernel_free(k);

  k = compiled_for("naive", ts_gemm_make(16, 16, 16), "sm_80,sm_86");
  args = args_on_buffers(k);
  expect_refused(k, &args, TS_ERR_BAD_ARCH, "kernel \"naive\" was compiled "
                 "for sm_80, sm_86; the device of the current context is "
                 "sm_90");
  ts_kernel_free(k);

  ts_gemm def = ts_gemm_make(64, 64, 64);
  def.a_type = def.b_type = TS_F16;
  k = compiled_for("wgws", def, "sm_90a,sm_80");
  assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_ARCH);
  assert_non_null(strstr(ts_kernel_errmsg(k), "ts_compile_for: sm_80: "));
  ts_kernel_free(k);
}

/* ts_bench times packed matrices: a kernel of leading dimensions past the
 * rows gets a row that says so, and is not run. */
static void test_bench_refuses_leading_dimensions(void **state) {
  (void)state;
  ts_gemm def = ts_gemm_make(32, 32, 32);
  def.lda = 40;
  ts_kernel *k = compiled("naive", def, "sm_90");
  ts_gpu *g = ts_gpu_open();
  assert_int_equal(ts_gpu_status(g), TS_OK);
  ts_bench_result row, blas;
  ts_bench_opts opts = {.repeats = 1, .warmup = 1};
  int before = launches();
  assert_int_equal(ts_bench(g, &k, 1, &opts, &row, &blas), TS_ERR_BAD_ARG);
  assert_non_null(strstr(row.message, "is compiled for leading dimensions "
                         "past the rows (lda 40, ldb 0, ldc 0); ts_bench "
                         "times packed matrices"));
  assert_int_equal(launches(), before);
  ts_gpu_close(g);
  ts_kernel_free(k);
  /* A hand-written kernel's gemm has no leading dimensions. */
  ts_cuda_kernel src = {"plain", "extern \"C\" __global__ void gemm() {}"};
  k = ts_compile_cuda(&src, &def, "sm_90");
  assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_kernel_errmsg(k), "kernel \"plain\" takes packed "
                         "matrices (its gemm has no leading dimensions); the "
                         "definition's lda is 40, past A's stored row of 32"));
  ts_kernel_free(k);
}

/* The fake as libcuBLAS too (libcublas.so.13 in a directory of the
 * test's own, on LD_LIBRARY_PATH, which the loader reads as the process
 * starts): the test runs itself again with it. */
static void run_again_with_fake_cublas(char **argv) {
  char lib[300], link[400];
  snprintf(lib, sizeof(lib), "%s/lib", dir);
  snprintf(link, sizeof(link), "%s/libcublas.so.13", lib);
  if (mkdir(lib, 0700) == 0 && symlink(argv[1], link) == 0) {
    setenv("LD_LIBRARY_PATH", lib, 1);
    setenv("TESSEL_LAUNCH_TEST_DIR", dir, 1);
    execv("/proc/self/exe", argv);
  }
  perror("test_launch: running again with the fake as cuBLAS");
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FAKE_DRIVER\n", argv[0]);
    return 2;
  }
  fake_path = argv[1];
  const char *again = getenv("TESSEL_LAUNCH_TEST_DIR");
  if (again) {
    snprintf(dir, sizeof(dir), "%s", again);
  } else {
    snprintf(dir, sizeof(dir), "/tmp/tessel-launch-XXXXXX");
    if (!mkdtemp(dir))
      return 1;
    run_again_with_fake_cublas(argv);
  }
  snprintf(log_path, sizeof(log_path), "%s/launches.txt", dir);
  setenv("TESSEL_FAKE_LAUNCH_LOG", log_path, 1);
  setenv("TESSEL_CUDA_DRIVER", fake_path, 1);
  fake.lib = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
  if (!fake.lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  fake.mem_alloc = (__typeof__(fake.mem_alloc))fake_fn("cuMemAlloc");
  fake.mem_free = (__typeof__(fake.mem_free))fake_fn("cuMemFree");
  fake.set_current = (__typeof__(fake.set_current))fake_fn("cuCtxSetCurrent");
  fake.last_stream =
      (__typeof__(fake.last_stream))dlsym(fake.lib, "fake_last_stream");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_on_a_stream),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_vector_alignment),
      cmocka_unit_test(test_refused_kernels),
      cmocka_unit_test(test_workspace),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_save_and_load),
      cmocka_unit_test(test_load_refusals),
      cmocka_unit_test(test_bench_refuses_leading_dimensions),
      cmocka_unit_test(test_architectures),
      cmocka_unit_test(test_runtime_extents),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  free_device_memory();
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    failed++;
  return failed;
}
