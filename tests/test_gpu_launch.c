/*
 * ts_launch on the GPU against cuBLAS given the same leading dimensions:
 * kernels compiled for slices of larger matrices (each leading dimension
 * past its stored row), saved and loaded back, launched on device memory
 * the test allocates, in every layout, in fp32 (warptiled), f16 and bf16
 * (wgws), at 1x1x1, 37x53x29, 999x1001x1003 and (NN and NT f16) 4096^3;
 * and kernels compiled at 64x64x64 with their extents and leading
 * dimensions chosen at launch (warptiled in f32, f16 and bf16; tc64's
 * mma.sync; wgws in every layout, f16 and bf16) launched at those
 * shapes.
 * Every C must be cuBLAS's within the definition's tolerance, and the
 * elements between C's rows as they were.  Exits 77 (skipped, saying why)
 * without a GPU.
 */
#include "helpers.h"

#include <unistd.h>

#include "base/dtype.h"
#include "base/random.h"
#include "runtime/gpu_impl.h"

static ts_gpu *gpu;

typedef struct launch_case {
  const char *schedule;
  ts_gemm def; /* what the launch runs */
} launch_case;

enum { MAX_CASES = 128 };
static launch_case cases[MAX_CASES];
static ts_kernel *kernels[MAX_CASES];
static int ncases;

/* Leading dimensions `pad` elements past the stored rows, rounded up to
 * a multiple of `elems` elements, or where 0 of 16 bytes' worth (the TMA
 * reads rows 16 bytes apart). */
static void pad_rows(ts_gemm *d, int64_t pad, int64_t elems) {
  int64_t *ld[TS_OPERAND_COUNT] = {&d->lda, &d->ldb, &d->ldc};
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand o = ts_gemm_operand(d, (ts_operand_role)r);
    int64_t q = elems ? elems : 16 / ts_dtype_size(o.type);
    *ld[r] = (o.cols + pad + q - 1) / q * q;
  }
}

static void add_case(const char *schedule, int64_t m, int64_t n, int64_t k,
                     ts_layout layout, ts_dtype ab, ts_dtype c) {
  assert_true(ncases < MAX_CASES);
  ts_gemm d = ts_gemm_make(m, n, k);
  d.layout = layout;
  d.a_type = d.b_type = ab;
  d.c_type = c;
  d.beta = 0.5f;
  pad_rows(&d, 5 + ncases % 7, 0);
  cases[ncases++] = (launch_case){schedule, d};
}

/* A case whose kernel takes its extents and leading dimensions at launch,
 * compiled at a nominal 64x64x64, packed; its leading dimensions
 * multiples of 8 (16 bytes of 16-bit elements, which the TMA needs), as
 * the kernel is compiled to assume. */
static void add_runtime_case(const char *schedule, int64_t m, int64_t n,
                             int64_t k, ts_layout layout, ts_dtype ab,
                             ts_dtype c) {
  add_case(schedule, m, n, k, layout, ab, c);
  ts_gemm *d = &cases[ncases - 1].def;
  d->runtime = TS_RUNTIME_SHAPE;
  d->runtime_ld_multiple = 8;
  pad_rows(d, 5 + (ncases - 1) % 7, 8);
}

/* The definition a case's kernel is compiled for: its own, or the
 * nominal one where it takes extents at launch. */
static ts_gemm compiled_def(const launch_case *c) {
  ts_gemm d = c->def;
  if (d.runtime) {
    d.m = d.n = d.k = 64;
    d.lda = d.ldb = d.ldc = 0;
  }
  return d;
}

/* Every case compiled on all processors, each saved and loaded back: the
 * launches below run kernels read from files. */
static int compile_all(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{1, 1, 1}, {37, 53, 29},
                                      {999, 1001, 1003}};
  for (size_t s = 0; s < 3; s++)
    for (int l = TS_NN; l <= TS_TT; l++) {
      const int64_t *x = shapes[s];
      add_case("warptiled", x[0], x[1], x[2], l, TS_F32, TS_F32);
      add_case("wgws", x[0], x[1], x[2], l, TS_F16, TS_F16);
      add_case("wgws", x[0], x[1], x[2], l, TS_BF16, TS_F32);
    }
  add_case("wgws", 4096, 4096, 4096, TS_NN, TS_F16, TS_F16);
  add_case("wgws", 4096, 4096, 4096, TS_NT, TS_F16, TS_F16);
  /* Kernels compiled at 64x64x64 and launched at other shapes. */
  for (size_t s = 0; s < 3; s++)
    for (int l = TS_NN; l <= TS_TT; l++) {
      const int64_t *x = shapes[s];
      add_runtime_case("warptiled", x[0], x[1], x[2], l, TS_F32, TS_F32);
      if (s > 0)
        add_runtime_case("tc64", x[0], x[1], x[2], l, TS_F16, TS_F32);
    }
  for (int l = TS_NN; l <= TS_NT; l++) {
    add_runtime_case("warptiled", 999, 1001, 1003, l, TS_F16, TS_F16);
    add_runtime_case("warptiled", 999, 1001, 1003, l, TS_BF16, TS_F32);
  }
  add_runtime_case("warptiled", 4096, 4096, 4096, TS_NN, TS_F32, TS_F32);
  add_runtime_case("tc64", 4096, 4096, 4096, TS_NT, TS_BF16, TS_BF16);
  /* wgws compiled once per layout and type, run at every shape. */
  for (size_t s = 0; s < 3; s++)
    for (int l = TS_NN; l <= TS_TT; l++) {
      const int64_t *x = shapes[s];
      add_runtime_case("wgws", x[0], x[1], x[2], l, TS_F16, TS_F16);
      add_runtime_case("wgws", x[0], x[1], x[2], l, TS_BF16, TS_F32);
    }
  add_runtime_case("wgws", 4096, 4096, 4096, TS_NN, TS_F16, TS_F16);
  add_runtime_case("wgws", 4096, 4096, 4096, TS_NT, TS_BF16, TS_F32);
  ts_program *programs[MAX_CASES];
  for (int i = 0; i < ncases; i++) {
    ts_gemm def = compiled_def(&cases[i]);
    ts_sched *s = ts_builtin_schedule(cases[i].schedule, &def);
    programs[i] = ts_lower(s);
    ts_sched_free(s);
  }
  assert_int_equal(ts_compile_all(programs, ncases, ts_gpu_arch(gpu), 0,
                                  kernels), TS_OK);
  char path[64];
  snprintf(path, sizeof(path), "/tmp/tessel-gpu-launch-%d.tsk", (int)getpid());
  for (int i = 0; i < ncases; i++) {
    ts_program_free(programs[i]);
    if (ts_kernel_status(kernels[i]) != TS_OK)
      fail_msg("case %d (%s): %s", i, cases[i].schedule,
               ts_kernel_errmsg(kernels[i]));
    assert_int_equal(ts_kernel_save(kernels[i], path, NULL, 0), TS_OK);
    ts_kernel_free(kernels[i]);
    kernels[i] = ts_kernel_load(path);
    assert_int_equal(ts_kernel_status(kernels[i]), TS_OK);
  }
  unlink(path);
  return 0;
}

static int free_all(void **state) {
  (void)state;
  for (int i = 0; i < ncases; i++)
    ts_kernel_free(kernels[i]);
  return 0;
}

typedef struct operand_buffers {
  ts_operand o;
  size_t n; /* elements, gaps included */
  float *host;
  CUdeviceptr dev;
} operand_buffers;

static void upload_operand(operand_buffers *b, const ts_gemm *d, int r,
                           uint64_t *seed) {
  b->o = ts_gemm_operand(d, (ts_operand_role)r);
  b->n = (size_t)ts_operand_elements(&b->o);
  assert_non_null(b->host = malloc(b->n * sizeof(float)));
  ts_fill_random(b->host, b->n, seed);
  for (size_t i = 0; i < b->n; i++) /* as stored, so both see the same */
    b->host[i] = ts_round_to(b->o.type, b->host[i]);
  assert_true(GPU_CALL(gpu, cuMemAlloc(&b->dev, mat_bytes(b->o.type, b->n))));
  assert_true(mat_upload(gpu, b->dev, b->host, b->n, b->o.type));
}

/* C against cuBLAS's over the m x n elements; the gaps as uploaded. */
static void compare(const launch_case *c, const float *mine,
                    const float *blas, const float *before,
                    const ts_operand *o) {
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < o->rows; i++)
    for (int64_t j = 0; j < o->ld; j++) {
      size_t at = (size_t)(i * o->ld + j);
      if (at >= (size_t)ts_operand_elements(o))
        break;
      if (j >= o->cols) {
        if (memcmp(&mine[at], &before[at], sizeof(float)))
          fail_msg("%s %s: C[%lld][%lld], past the row, was written",
                   c->schedule, ts_layout_name(c->def.layout), (long long)i,
                   (long long)j);
        continue;
      }
      worst = fmax(worst, fabs((double)mine[at] - blas[at]));
      largest = fmax(largest, fabs((double)blas[at]));
    }
  double err = largest > 0 ? worst / largest : worst;
  double tol = ts_gemm_tolerance(&c->def);
  printf("%-9s %5lldx%5lldx%5lld %s %-4s lda %5lld ldb %5lld ldc %5lld%s: "
         "error %.2e (tolerance %.1e)\n", c->schedule, (long long)c->def.m,
         (long long)c->def.n, (long long)c->def.k,
         ts_layout_name(c->def.layout), ts_dtype_name(c->def.a_type),
         (long long)c->def.lda, (long long)c->def.ldb, (long long)c->def.ldc,
         c->def.runtime ? " (at launch)" : "", err, tol);
  if (!(err <= tol))
    fail_msg("%s: C differs from cuBLAS's by %g, over %g", c->schedule, err,
             tol);
}

static void run_case(int i) {
  const launch_case *c = &cases[i];
  uint64_t seed = 1234 + (uint64_t)i;
  operand_buffers b[TS_OPERAND_COUNT];
  ts_launch_args args = ts_launch_args_of(kernels[i]);
  args.m = c->def.m;
  args.n = c->def.n;
  args.k = c->def.k;
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    upload_operand(&b[r], &c->def, r, &seed);
    args.operand[r].ptr = b[r].dev;
    args.operand[r].ld = b[r].o.ld;
  }
  CUdeviceptr cb;
  size_t cbytes = mat_bytes(b[2].o.type, b[2].n);
  assert_true(GPU_CALL(gpu, cuMemAlloc(&cb, cbytes)));
  assert_true(GPU_CALL(gpu, cuMemcpyDtoD(cb, b[2].dev, cbytes)));
  if (ts_launch(kernels[i], &args, NULL) != TS_OK)
    fail_msg("%s", ts_launch_errmsg());
  assert_true(gpu_cublas_launch(gpu, &c->def, b[0].dev, b[1].dev, cb));
  assert_true(GPU_CALL(gpu, cuCtxSynchronize(gpu->ctx)));
  float *mine = malloc(b[2].n * sizeof(float));
  float *blas = malloc(b[2].n * sizeof(float));
  assert_non_null(mine);
  assert_non_null(blas);
  assert_true(mat_download(gpu, mine, b[2].dev, b[2].n, b[2].o.type));
  assert_true(mat_download(gpu, blas, cb, b[2].n, b[2].o.type));
  compare(c, mine, blas, b[2].host, &b[2].o);
  free(mine);
  free(blas);
  gpu->cu.cuMemFree(cb);
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    gpu->cu.cuMemFree(b[r].dev);
    free(b[r].host);
  }
}

static void test_launch_matches_cublas(void **state) {
  (void)state;
  for (int i = 0; i < ncases; i++)
    run_case(i);
}

int main(int argc, char **argv) {
  gpu = open_gpu_or_skip(argc, argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launch_matches_cublas),
  };
  int failed = cmocka_run_group_tests(tests, compile_all, free_all);
  ts_gpu_close(gpu);
  return failed;
}
