/*
 * A tessel kernel in a program of its own: compiled and saved once, then
 * loaded and launched on the program's own device memory and stream,
 * as an application that never lowers or compiles anything would.
 *
 * Each case compiles a built-in schedule for a definition whose matrices
 * are slices of larger ones (leading dimensions past the stored rows),
 * saves the kernel (ts_kernel_save), loads it back (ts_kernel_load),
 * allocates and fills A, B and C with the driver API, launches it on a
 * stream of its own (ts_launch), and checks C against a reference in
 * double at sampled elements and the gap past each row untouched.  Then
 * it captures 100 launches into a CUDA graph, replays it, and checks
 * again.
 *
 * The cases whose kernels take their extents and leading dimensions at
 * launch (ts_gemm.runtime) are compiled once, at a nominal 64x64x64,
 * checked on the CPU at 37x53x29 (ts_program_check_at), and
 * launched at shapes they were not compiled for, from 1x1x1 to 4096^3
 * (three of them: each 4096^3 check fills and reads 200 MB on the host),
 * each with leading dimensions of its own; the graph captures the first.
 *
 *   cc launch.c -ltessel -lcuda && ./a.out [DIR]   (DIR: where kernels go)
 *
 * Exits 0 when every result matches, 1 when one differs, 2 on an error.
 */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessel.h>

typedef struct gemm_case {
  const char *schedule;
  int64_t m, n, k;
  ts_layout layout;
  ts_dtype ab, c; /* A's and B's type, C's */
  int64_t pad;    /* each leading dimension this past the stored row */
  const char *archs; /* a cubin for each; the launch runs the device's */
  unsigned runtime;  /* ts_gemm.runtime: launched at `shapes` */
  int nshapes;       /* how many of them: all, or all but 4096^3 */
} gemm_case;

enum { SHAPES = 4 };
/* Where a kernel with extents chosen at launch runs. */
static const int64_t shapes[SHAPES][3] = {
    {1, 1, 1}, {37, 53, 29}, {999, 1001, 1003}, {4096, 4096, 4096}};

static const gemm_case cases[] = {
    {"naive", 1, 1, 1, TS_NN, TS_F32, TS_F32, 3, "sm_80,sm_90", 0, 0},
    {"warptiled", 37, 53, 29, TS_NN, TS_F32, TS_F32, 7, "sm_80,sm_90", 0, 0},
    {"warptiled", 37, 53, 29, TS_TT, TS_F32, TS_F32, 1, "sm_90", 0, 0},
    {"wgws", 999, 1001, 1003, TS_NT, TS_F16, TS_F16, 13, "sm_90a", 0, 0},
    {"wgws", 999, 1001, 1003, TS_TN, TS_BF16, TS_F32, 9, "sm_90a", 0, 0},
    {"wgws", 4096, 4096, 4096, TS_NN, TS_F16, TS_F32, 64, "sm_90a", 0, 0},
    {"warptiled", 64, 64, 64, TS_NN, TS_F32, TS_F32, 5, "sm_80,sm_90",
     TS_RUNTIME_SHAPE, SHAPES},
    {"warptiled", 64, 64, 64, TS_NT, TS_F16, TS_F16, 3, "sm_90",
     TS_RUNTIME_SHAPE, SHAPES - 1},
    {"warptiled", 64, 64, 64, TS_TN, TS_BF16, TS_F32, 11, "sm_90",
     TS_RUNTIME_SHAPE, SHAPES - 1},
    {"tc64", 64, 64, 64, TS_TT, TS_F16, TS_F32, 2, "sm_90",
     TS_RUNTIME_SHAPE, SHAPES - 1},
    {"wgws", 64, 64, 64, TS_NT, TS_F16, TS_F16, 13, "sm_90a",
     TS_RUNTIME_SHAPE, SHAPES},
    {"wgws", 64, 64, 64, TS_TN, TS_BF16, TS_F32, 9, "sm_90a",
     TS_RUNTIME_SHAPE, SHAPES - 1},
    {"warpgroup:bm=128,bn=128,stages=6,store=1", 64, 64, 64, TS_NN, TS_F16,
     TS_F16, 5, "sm_90a", TS_RUNTIME_SHAPE, SHAPES},
};

#define CHECK_CU(call)                                                        \
  do {                                                                        \
    CUresult r_ = (call);                                                     \
    if (r_ != CUDA_SUCCESS) {                                                 \
      const char *s_ = "?";                                                   \
      cuGetErrorString(r_, &s_);                                              \
      fprintf(stderr, "%s: %s\n", #call, s_);                                 \
      exit(2);                                                                \
    }                                                                         \
  } while (0)

/* The definition of a case: its shape, layout and types, and leading
 * dimensions `pad` past the stored rows, rounded to 16 bytes' worth of
 * elements so that the TMA can read each row (to 8 elements where they
 * are taken at launch, which the kernel is compiled to assume). */
static ts_gemm definition(const gemm_case *c, const int64_t shape[3]) {
  ts_gemm d = ts_gemm_make(shape[0], shape[1], shape[2]);
  d.layout = c->layout;
  d.a_type = d.b_type = c->ab;
  d.c_type = c->c;
  d.beta = 0.5f;
  d.runtime = c->runtime;
  d.runtime_ld_multiple = c->runtime ? 8 : 0;
  int64_t *ld[TS_OPERAND_COUNT] = {&d.lda, &d.ldb, &d.ldc};
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand o = ts_gemm_operand(&d, (ts_operand_role)r);
    int64_t per16 = c->runtime ? 8 : 16 / ts_dtype_size(o.type);
    *ld[r] = (o.cols + c->pad + per16 - 1) / per16 * per16;
  }
  return d;
}

/* A built-in schedule, or a tuning space's configuration given as
 * "SPACE:knob=value,...". */
static ts_sched *schedule_of(const char *name, const ts_gemm *d) {
  const char *colon = strchr(name, ':');
  if (!colon)
    return ts_builtin_schedule(name, d);
  char space[64], err[256];
  snprintf(space, sizeof(space), "%.*s", (int)(colon - name), name);
  ts_config *config = ts_config_parse(colon + 1, err, sizeof(err));
  if (!config) {
    fprintf(stderr, "%s: %s\n", name, err);
    exit(2);
  }
  ts_sched *s = ts_space_schedule(ts_space_find(space), d, config);
  ts_config_free(config);
  return s;
}

/* The build step: a kernel compiled for the case and saved to path. */
static int compile_and_save(const gemm_case *c, const char *path) {
  const int64_t shape[3] = {c->m, c->n, c->k};
  ts_gemm d = definition(c, shape);
  ts_sched *s = schedule_of(c->schedule, &d);
  ts_program *p = ts_lower(s);
  char msg[1024] = "";
  /* A kernel for every shape is checked first on the CPU's reference
   * executor at a shape it was not compiled for. */
  if (c->runtime) {
    ts_gemm at = definition(c, shapes[1]);
    if (ts_program_check_at(p, &at, 7, msg, sizeof(msg)) != TS_OK) {
      fprintf(stderr, "%s at 37x53x29 on the CPU: %s\n", c->schedule, msg);
      exit(1);
    }
  }
  ts_kernel *k = ts_compile_for(p, c->archs);
  ts_program_free(p);
  ts_sched_free(s);
  ts_status st = ts_kernel_status(k);
  if (st == TS_OK)
    st = ts_kernel_save(k, path, msg, sizeof(msg));
  if (st != TS_OK)
    fprintf(stderr, "%s: %s\n", c->schedule,
            msg[0] ? msg : ts_kernel_errmsg(k));
  ts_kernel_free(k);
  return st == TS_OK;
}

/* A host copy of one operand as it lies in device memory. */
typedef struct host_operand {
  ts_operand o;
  unsigned char *data;
  size_t bytes;
  CUdeviceptr dev;
} host_operand;

static void fill(host_operand *h, unsigned seed) {
  size_t size = (size_t)ts_dtype_size(h->o.type);
  for (int64_t i = 0; i < ts_operand_elements(&h->o); i++) {
    seed = seed * 1664525u + 1013904223u;
    float x = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    ts_dtype_store(h->o.type, x, h->data + (size_t)i * size);
  }
}

static float at(const host_operand *h, int64_t row, int64_t col) {
  size_t size = (size_t)ts_dtype_size(h->o.type);
  return ts_dtype_load(h->o.type,
                       h->data + (size_t)(row * h->o.ld + col) * size);
}

/* C after `runs` launches from C0: each is C = alpha AB + beta C, so
 * alpha (1 + beta + ... + beta^(runs-1)) AB + beta^runs C0, with op(A)[i][l]
 * and op(B)[l][j] read as stored. */
static double reference(const host_operand *a, const host_operand *b,
                        const host_operand *c0, const ts_gemm *d, int runs,
                        int64_t i, int64_t j) {
  double sum = 0, scale = 0, power = 1;
  for (int64_t l = 0; l < d->k; l++)
    sum += (double)(a->o.transposed ? at(a, l, i) : at(a, i, l)) *
           (double)(b->o.transposed ? at(b, j, l) : at(b, l, j));
  for (int r = 0; r < runs; r++) {
    scale += power;
    power *= d->beta;
  }
  return d->alpha * scale * sum + power * (double)at(c0, i, j);
}

/* Sampled elements of C against the reference, relative to the largest
 * reference value; the elements past each row as they were. */
static double error_of(const host_operand h[3], const host_operand *c0,
                       const ts_gemm *d, int runs, int *gap_written) {
  double worst = 0, largest = 1e-30;
  unsigned seed = 7;
  for (int s = 0; s < 2000; s++) {
    seed = seed * 1664525u + 1013904223u;
    int64_t i = s == 0 ? 0 : (int64_t)(seed >> 4) % d->m;
    int64_t j = s == 0 ? 0 : (int64_t)(seed >> 12) % d->n;
    double want = reference(&h[0], &h[1], c0, d, runs, i, j);
    worst = fmax(worst, fabs((double)at(&h[2], i, j) - want));
    largest = fmax(largest, fabs(want));
  }
  *gap_written = 0;
  for (int64_t i = 0; i < d->m; i++)
    for (int64_t j = d->n; j < h[2].o.ld && i + 1 < d->m; j++)
      *gap_written |= at(&h[2], i, j) != at(c0, i, j);
  return worst / largest;
}

static void to_device(host_operand *h) {
  CHECK_CU(cuMemAlloc(&h->dev, h->bytes));
  CHECK_CU(cuMemcpyHtoD(h->dev, h->data, h->bytes));
}

/* C back from the device, checked; prints the line of the run. */
static int check(const char *what, host_operand h[3], const host_operand *c0,
                 const ts_gemm *d, int runs) {
  CHECK_CU(cuMemcpyDtoH(h[2].data, h[2].dev, h[2].bytes));
  int gap = 0;
  double err = error_of(h, c0, d, runs, &gap);
  double tol = ts_gemm_tolerance(d);
  bool ok = err <= tol && !gap;
  printf("  %-6s max error %.2e (tolerance %.1e)%s: %s\n", what, err, tol,
         gap ? ", a gap element written" : "", ok ? "matches" : "DIFFERS");
  return ok;
}

/* One launch of kernel k on buffers of its own at definition d (the
 * kernel's, or another shape where it takes extents at launch), then,
 * with `graph`, 100 captured into a CUDA graph and replayed. */
static int run_at(ts_kernel *k, const ts_gemm *d, CUstream stream,
                  bool graph) {
  host_operand h[3], c0;
  ts_launch_args args = ts_launch_args_of(k);
  args.m = d->m;
  args.n = d->n;
  args.k = d->k;
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    h[r].o = ts_gemm_operand(d, (ts_operand_role)r);
    h[r].bytes = (size_t)ts_operand_elements(&h[r].o) *
                 (size_t)ts_dtype_size(h[r].o.type);
    if (!(h[r].data = malloc(h[r].bytes)))
      exit(2);
    fill(&h[r], (unsigned)r + 1);
    printf("  %s: %lld x %lld as stored, rows %lld apart\n",
           ts_operand_name((ts_operand_role)r), (long long)h[r].o.rows,
           (long long)h[r].o.cols, (long long)h[r].o.ld);
    to_device(&h[r]);
    args.operand[r].ptr = h[r].dev;
    args.operand[r].ld = h[r].o.ld;
  }
  c0 = h[2];
  if (!(c0.data = malloc(c0.bytes)))
    exit(2);
  memcpy(c0.data, h[2].data, c0.bytes);
  int ok = 1;
  if (ts_launch(k, &args, stream) != TS_OK) {
    fprintf(stderr, "%s\n", ts_launch_errmsg());
    exit(2);
  }
  CHECK_CU(cuStreamSynchronize(stream));
  ok &= check("launch", h, &c0, d, 1);

  /* 100 launches captured and replayed from C0. */
  if (graph) {
    CHECK_CU(cuMemcpyHtoD(h[2].dev, c0.data, c0.bytes));
    CUgraph g;
    CUgraphExec exec;
    CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 100; i++)
      if (ts_launch(k, &args, stream) != TS_OK) {
        fprintf(stderr, "%s\n", ts_launch_errmsg());
        exit(2);
      }
    CHECK_CU(cuStreamEndCapture(stream, &g));
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    CHECK_CU(cuGraphLaunch(exec, stream));
    CHECK_CU(cuStreamSynchronize(stream));
    ok &= check("graph", h, &c0, d, 100);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(g));
  }
  for (int r = 0; r < 3; r++) {
    CHECK_CU(cuMemFree(h[r].dev));
    free(h[r].data);
  }
  free(c0.data);
  return ok;
}

/* The application: the saved kernel loaded and launched on buffers and a
 * stream of its own: at its own shape, or at each of `shapes` where it
 * takes its extents at launch. */
static int load_and_run(const gemm_case *c, const char *path,
                        CUstream stream) {
  ts_kernel *k = ts_kernel_load(path);
  if (ts_kernel_status(k) != TS_OK) {
    fprintf(stderr, "%s\n", ts_kernel_errmsg(k));
    ts_kernel_free(k);
    return 0;
  }
  const ts_gemm *d = ts_kernel_gemm(k);
  printf("%s %lldx%lldx%lld %s %s, lda %lld ldb %lld ldc %lld%s, from %s "
         "(cubins:", ts_kernel_name(k), (long long)d->m, (long long)d->n,
         (long long)d->k, ts_layout_name(d->layout), ts_dtype_name(c->ab),
         (long long)d->lda, (long long)d->ldb, (long long)d->ldc,
         d->runtime ? ", extents and leading dimensions at launch" : "",
         path);
  for (int i = 0; i < ts_kernel_image_count(k); i++) {
    const char *arch;
    ts_kernel_image(k, i, &arch, NULL);
    printf(" %s", arch);
  }
  printf(")\n");
  int ok = 1;
  if (!d->runtime) {
    ok = run_at(k, d, stream, true);
  } else {
    for (int s = 0; s < c->nshapes; s++) {
      ts_gemm at = definition(c, shapes[s]);
      printf(" at %lldx%lldx%lld:\n", (long long)at.m, (long long)at.n,
             (long long)at.k);
      ok &= run_at(k, &at, stream, s == 0);
    }
  }
  ts_kernel_free(k);
  return ok;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&dev, 0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  int all = 1;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/case%zu.tsk", dir, i);
    if (!compile_and_save(&cases[i], path))
      return 2;
    all &= load_and_run(&cases[i], path, stream);
  }
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  printf("%s\n", all ? "every result matches" : "a result differs");
  return all ? 0 : 1;
}
