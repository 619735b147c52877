/*
 * The device: the driver loaded at run time, device 0's primary context,
 * modules loaded from NVRTC's cubins, launches, and cuBLAS's SGEMM as the
 * reference and the baseline.  Every driver call is checked, and a failure
 * names the call and CUDA's error string.
 */
#include "gpu_impl.h"

#include "../src/base/dtype.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ts_gpu nomem_gpu = {.status = TS_ERR_NO_MEMORY,
                           .errmsg = "ts_gpu_open: out of memory"};

bool gpu_fail(ts_gpu *g, ts_status code, const char *fmt, ...) {
  if (g->status != TS_OK)
    return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->errmsg, sizeof(g->errmsg), fmt, ap);
  va_end(ap);
  g->status = code;
  return false;
}

bool gpu_check(ts_gpu *g, CUresult r, const char *call) {
  if (r == CUDA_SUCCESS)
    return true;
  const char *name = NULL, *text = NULL;
  if (g->cu.cuGetErrorName)
    g->cu.cuGetErrorName(r, &name);
  if (g->cu.cuGetErrorString)
    g->cu.cuGetErrorString(r, &text);
  char fn[64];
  snprintf(fn, sizeof(fn), "%s", call);
  char *paren = strchr(fn, '(');
  if (paren)
    *paren = 0;
  ts_status code = r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_NOT_INITIALIZED
                       ? TS_ERR_NO_GPU
                       : TS_ERR_CUDA;

  return gpu_fail(g, code, "%s: %s: %s", fn, name ? name : "error",
                  text ? text : "unknown");
}

static bool read_limits(ts_gpu *g) {
  gpu_limits *l = &g->limits;
  const struct {
    int *into;
    CUdevice_attribute attr;
  } want[] = {
      {&l->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&l->max_block[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X},
      {&l->max_block[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y},
      {&l->max_block[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {&l->max_grid[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {&l->max_grid[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y},
      {&l->max_grid[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z},
      {&l->max_registers_per_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&l->max_shared_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&l->max_shared_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&l->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    if (!GPU_CALL(g, cuDeviceGetAttribute(want[i].into, want[i].attr, g->dev)))
      return false;
  return true;
}

/* The rated clocks, for the record of a run: a driver that does not
 * report them leaves 0 (unknown) and is no error. */
static bool read_clocks(ts_gpu *g) {
  if (g->cu.cuDeviceGetAttribute(&g->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
                                 g->dev) != CUDA_SUCCESS)
    g->clock_khz = 0;
  if (g->cu.cuDeviceGetAttribute(&g->memory_clock_khz,
                                 CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
                                 g->dev) != CUDA_SUCCESS)
    g->memory_clock_khz = 0;
  return true;
}

/* The device's UUID as nvidia-smi prints it. */
static bool read_uuid(ts_gpu *g) {
  CUuuid u;
  if (!GPU_CALL(g, cuDeviceGetUuid(&u, g->dev)))
    return false;
  const unsigned char *b = (const unsigned char *)u.bytes;
  char *p = g->uuid + snprintf(g->uuid, sizeof(g->uuid), "GPU-");
  for (int i = 0; i < 16; i++)
    p += snprintf(p, 4, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10
                                      ? "-" : "", b[i]);
  return true;
}

static bool open_device(ts_gpu *g, int ordinal) {
  int count = 0, major = 0, minor = 0;
  if (!GPU_CALL(g, cuInit(0)) || !GPU_CALL(g, cuDeviceGetCount(&count)))
    return false;
  if (count == 0)
    return gpu_fail(g, TS_ERR_NO_GPU, "no GPU: the CUDA driver sees no device");
  if (ordinal < 0 || ordinal >= count)
    return gpu_fail(g, TS_ERR_NO_GPU, "no GPU %d: the CUDA driver sees %d "
                    "device%s (0 to %d)", ordinal, count, count == 1 ? "" : "s",
                    count - 1);
  g->ordinal = ordinal;
  return GPU_CALL(g, cuDriverGetVersion(&g->driver_version)) &&
         GPU_CALL(g, cuDeviceGet(&g->dev, ordinal)) && read_uuid(g) &&
         GPU_CALL(g, cuDeviceGetName(g->name, sizeof(g->name), g->dev)) &&
         GPU_CALL(g, cuDeviceGetAttribute(
                         &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                         g->dev)) &&
         GPU_CALL(g, cuDeviceGetAttribute(
                         &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                         g->dev)) &&
         GPU_CALL(g, cuDeviceGetAttribute(
                         &g->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                         g->dev)) &&
         GPU_CALL(g, cuDeviceGetAttribute(
                         &g->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                         g->dev)) &&
         read_limits(g) && read_clocks(g) &&
         snprintf(g->arch, sizeof(g->arch), "sm_%d%d", major, minor) > 0 &&
         GPU_CALL(g, cuDevicePrimaryCtxRetain(&g->ctx, g->dev)) &&
         GPU_CALL(g, cuCtxSetCurrent(g->ctx));
}

int ts_gpu_count(void) {
  ts_driver_api cu;
  char err[512];
  int count = 0;
  if (!ts_load_driver(&cu, err, sizeof(err)))
    return 0;
  if (cu.cuInit(0) != CUDA_SUCCESS || cu.cuDeviceGetCount(&count) != CUDA_SUCCESS)
    count = 0;
  ts_unload_driver(&cu);
  return count;
}

ts_gpu *ts_gpu_open(void) { return ts_gpu_open_device(0); }

ts_gpu *ts_gpu_open_device(int ordinal) {
  ts_gpu *g = calloc(1, sizeof(*g));
  if (!g)
    return &nomem_gpu;
  char err[512];
  if (!ts_load_driver(&g->cu, err, sizeof(err))) {
    gpu_fail(g, TS_ERR_NO_GPU, "%s", err);
    return g;
  }
  if (!open_device(g, ordinal))
    return g;
  g->have_blas = ts_load_cublas(&g->blas, err, sizeof(err));
  if (!g->have_blas) {
    gpu_fail(g, TS_ERR_CUBLAS, "%s", err);
  } else {
    int st = g->blas.cublasCreate_v2(&g->handle);
    if (st != CUBLAS_STATUS_SUCCESS) {
      g->have_blas = false;
      gpu_fail(g, TS_ERR_CUBLAS, "cublasCreate failed (cublasStatus_t %d)",
               st);
    }
  }
  return g;
}

void ts_gpu_close(ts_gpu *g) {
  if (!g || g == &nomem_gpu)
    return;
  gpu_bench_inputs_free(g);
  if (g->have_blas && g->handle)
    g->blas.cublasDestroy_v2(g->handle);
  if (g->ctx)
    g->cu.cuDevicePrimaryCtxRelease(g->dev);

  ts_unload(g->blas.lib);
  ts_unload_driver(&g->cu);
  free(g);
}

ts_status ts_gpu_status(const ts_gpu *g) { return g ? g->status : TS_ERR_NULL_ARG; }
const char *ts_gpu_errmsg(const ts_gpu *g) { return g ? g->errmsg : "gpu is NULL"; }
const char *ts_gpu_name(const ts_gpu *g) { return g ? g->name : ""; }
const char *ts_gpu_uuid(const ts_gpu *g) { return g ? g->uuid : ""; }
int ts_gpu_ordinal(const ts_gpu *g) { return g ? g->ordinal : -1; }
int ts_gpu_driver_version(const ts_gpu *g) { return g ? g->driver_version : 0; }
const char *ts_gpu_arch(const ts_gpu *g) { return g ? g->arch : ""; }
int ts_gpu_sm_count(const ts_gpu *g) { return g ? g->sm_count : 0; }
int ts_gpu_clock_khz(const ts_gpu *g) { return g ? g->clock_khz : 0; }
int ts_gpu_memory_clock_khz(const ts_gpu *g) {
  return g ? g->memory_clock_khz : 0;
}

/* ---- Modules and launches ------------------------------------------------- */

/* Some NVRTC builds leave the ptxas report out of the log; the driver
 * knows the registers, static shared memory and local memory of the loaded
 * function.  Spills are known only to be zero when there is no local
 * memory; otherwise they are reported as -1 (unknown). */
static bool resources_from_driver(ts_gpu *g, gpu_module *m) {
  int regs = 0, local = 0, shared = 0;
  CUfunction fn = m->fns[m->main].fn;
  if (!GPU_CALL(g, cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn)) ||
      !GPU_CALL(g, cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                      fn)) ||
      !GPU_CALL(g, cuFuncGetAttribute(&shared,
                                      CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)))
    return false;
  m->ptxas = (ts_ptxas_info){.registers = regs, .shared_bytes = shared,
                             .stack_bytes = local,
                             .spill_store_bytes = local ? -1 : 0,
                             .spill_load_bytes = local ? -1 : 0, .valid = 1};
  return true;
}

/* The kernel's entry points with their launches and parameter lists, room
 * for the longest list's arguments, and the workspace. */
static bool load_functions(ts_gpu *g, const ts_kernel *k, gpu_module *m) {
  int most = 1;
  for (int i = 0; i < k->nentries; i++)
    most = k->entries[i].nparams > most ? k->entries[i].nparams : most;
  m->fns = calloc((size_t)k->nentries, sizeof(*m->fns));
  m->values = aligned_alloc(_Alignof(launch_arg), (size_t)most * sizeof(launch_arg));
  if (m->values)
    memset(m->values, 0, (size_t)most * sizeof(launch_arg));
  m->args = calloc((size_t)most, sizeof(*m->args));
  if (!m->fns || !m->values || !m->args)
    return gpu_fail(g, TS_ERR_NO_MEMORY, "loading kernel %s: out of memory",
                    k->label);
  m->nfns = k->nentries;
  m->main = k->main_entry;
  for (int i = 0; i < k->nentries; i++) {
    const kernel_entry *e = &k->entries[i];
    m->fns[i] = (gpu_function){.launch = e->launch, .entry = e->name,
                               .params = e->params, .nparams = e->nparams};
    if (!launch_map_caches(e->params, e->nparams, &m->fns[i].maps))
      return gpu_fail(g, TS_ERR_NO_MEMORY, "loading kernel %s: out of "
                      "memory for its tensor maps", k->label);
    if (i != m->main &&
        !GPU_CALL(g, cuModuleGetFunction(&m->fns[i].fn, m->mod, e->name)))
      return false;
  }
  return k->workspace <= 0 ||
         GPU_CALL(g, cuMemAlloc(&m->W, (size_t)k->workspace));
}

static bool load_module(ts_gpu *g, const ts_kernel *k, gpu_module *m) {
  if (!GPU_CALL(g, cuModuleLoadData(&m->mod, k->cubin)) ||
      !load_functions(g, k, m))
    return false;
  if (!GPU_CALL(g, cuModuleGetFunction(&m->fns[m->main].fn, m->mod,
                                       k->name))) {
    if (k->hand_written) /* say what the source must have */
      snprintf(g->errmsg + strlen(g->errmsg),
               sizeof(g->errmsg) - strlen(g->errmsg),
               " (kernel \"%s\" must define extern \"C\" __global__ void "
               "gemm)", k->label);
    return false;
  }
  m->ptxas = k->ptxas;
  return m->ptxas.valid || resources_from_driver(g, m);
}

static bool fit_launch(ts_gpu *g, const char *kernel, gpu_module *m) {
  char why[512];
  const gpu_function *main = &m->fns[m->main];
  if (!resources_fit(&g->limits, g->name, kernel, &main->launch, &m->ptxas,
                     why, sizeof(why)))
    return gpu_fail(g, TS_ERR_RESOURCES, "%s", why);
  /* The other kernels: their grids (registers are ptxas's for the
   * schedule's kernel, far more than their few). */
  for (int i = 0; i < m->nfns; i++)
    if (i != m->main &&
        !resources_fit(&g->limits, g->name, m->fns[i].entry,
                       &m->fns[i].launch, &m->ptxas, why, sizeof(why)))
      return gpu_fail(g, TS_ERR_RESOURCES, "%s", why);
  /* Dynamic shared memory past 48 KiB is opted into per function. */
  return main->launch.dynamic_shared <= 0 ||
         GPU_CALL(g, cuFuncSetAttribute(
                         main->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         (int)main->launch.dynamic_shared));
}

bool gpu_load(ts_gpu *g, const ts_kernel *k, gpu_module *m, char *skipped,
              size_t len) {
  memset(m, 0, sizeof(*m));
  if (len)
    skipped[0] = 0;
  if (!k)
    return gpu_fail(g, TS_ERR_NULL_ARG, "the kernel is NULL");
  if (k->status != TS_OK)
    return gpu_fail(g, k->status, "%s", k->errmsg);
  m->def = k->def;
  m->hand_written = k->hand_written;
  const ts_gemm *d = &k->def;
  if (k->hand_written && (d->a_type != TS_F32 || d->b_type != TS_F32 ||
                          d->c_type != TS_F32)) {
    snprintf(skipped, len, "kernel \"%s\" takes fp32 matrices; A, B and C "
             "are %s, %s and %s", k->label, ts_dtype_name(d->a_type),
             ts_dtype_name(d->b_type), ts_dtype_name(d->c_type));
    return true;
  }
  bool ok = load_module(g, k, m) &&
            (!k->hand_written || gpu_read_geometry(g, k, m, skipped, len)) &&
            (skipped[0] || fit_launch(g, k->label, m));
  if (!ok || skipped[0])
    gpu_unload(g, m);
  return ok;
}

void gpu_unload(ts_gpu *g, gpu_module *m) {
  if (m->W)
    g->cu.cuMemFree(m->W);
  m->W = 0;
  if (m->mod)
    g->cu.cuModuleUnload(m->mod);
  m->mod = NULL;
  for (int i = 0; m->fns && i < m->nfns; i++)
    free(m->fns[i].maps);
  free(m->fns);
  free(m->values);
  free(m->args);
  m->fns = NULL;
  m->values = NULL;
  m->args = NULL;
  m->nfns = 0;
}

/* f's arguments from its parameter list: the device buffers (A, B, C and
 * the workspace) at each parameter's offset, the definition's scalars,
 * the operands' tensor maps (for this launch's buffers, encoded at the
 * first launch on them).
 * (A hand-written kernel's int shape was checked to fit when loaded.)
 * NULL where a map cannot be encoded. */
static void *const *launch_args(ts_gpu *g, const gpu_module *m,
                                const gpu_function *f,
                                const CUdeviceptr buffers[TS_PARAM_NBUFFERS]) {
  launch_values v;
  launch_values_of(&m->def, &v);
  memcpy(v.buffers, buffers, sizeof(v.buffers));
  for (int i = 0; i < f->nparams; i++) {
    const ts_param *p = &f->params[i];
    m->values[i] = launch_scalar(p, &v);
    if (p->kind == TS_PARAM_TENSOR_MAP) {
      if (!gpu_check(g, launch_cached_map(&g->cu, &f->maps[i], p, v.values,
                                          m->values[i].ptr,
                                          &m->values[i].map),
                     "cuTensorMapEncodeTiled"))
        return NULL;
    }
    m->args[i] = &m->values[i];
  }
  return m->args;
}

/* The entry points in order, each on the arguments its list names; with
 * several, a failure names the kernel. */
bool gpu_launch(ts_gpu *g, const gpu_module *m, CUdeviceptr A, CUdeviceptr B,
                CUdeviceptr C) {
  const CUdeviceptr buffers[TS_PARAM_NBUFFERS] = {A, B, C, m->W};
  for (int i = 0; i < m->nfns; i++) {
    const gpu_function *f = &m->fns[i];
    const ts_launch_geometry *l = &f->launch;
    int64_t grid[3]; /* a persistent grid's, from the multiprocessors */
    launch_grid(&g->limits, l, grid);
    void *const *args = launch_args(g, m, f, buffers);
    if (!args || !GPU_CALL(g, cuLaunchKernel(f->fn, (unsigned)grid[0],
                                    (unsigned)grid[1], (unsigned)grid[2],
                                    (unsigned)l->block[0],
                                    (unsigned)l->block[1],
                                    (unsigned)l->block[2],
                                    (unsigned)l->dynamic_shared, NULL,
                                    (void **)args, NULL))) {
      if (m->nfns == 1)
        return false;
      char why[sizeof(g->errmsg)];
      snprintf(why, sizeof(why), "%s", g->errmsg);
      return gpu_fail(g, g->status, "kernel %d of %d (%s): %.900s", i + 1,
                      m->nfns, f->entry, why);
    }
  }
  return true;
}

/* The element types cublasGemmEx takes with CUBLAS_COMPUTE_32F and an fp32
 * alpha and beta (the cuBLAS documentation, cublasGemmEx's table of
 * types): A and B always of one type, and C
 *
 *   A and B   C
 *   fp32      fp32 (CUBLAS_COMPUTE_32F_FAST_TF32 too, which takes no other)
 *   fp16      fp16 or fp32
 *   bf16      bf16 or fp32
 *
 * (and int8 and complex types, which tessel has not). */
static const struct {
  ts_dtype ab, c;
} cublas_types[] = {
    {TS_F32, TS_F32}, {TS_F16, TS_F16}, {TS_F16, TS_F32},
    {TS_BF16, TS_BF16}, {TS_BF16, TS_F32},
};

static bool cublas_takes(const ts_gemm *d) {
  for (size_t i = 0; i < sizeof(cublas_types) / sizeof(cublas_types[0]); i++)
    if (d->a_type == cublas_types[i].ab && d->b_type == cublas_types[i].ab &&
        d->c_type == cublas_types[i].c)
      return true;
  return false;
}

ts_status ts_cublas_baseline(const ts_gemm *def, ts_gemm *baseline) {
  if (!def || !baseline)
    return TS_ERR_NULL_ARG;
  *baseline = *def;
  if (cublas_takes(baseline))
    return TS_OK;
  baseline->c_type = TS_F32; /* every A and B type of one kind takes it */
  return cublas_takes(baseline) ? TS_OK : TS_ERR_BAD_ARG;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
 * gets B first, and a matrix stored untransposed is already the transpose
 * it needs.  cublasGemmEx takes each matrix's type, and computes in fp32
 * (CUBLAS_COMPUTE_32F: no TF32 rounding of fp32 inputs), or with fp32
 * inputs rounded to tf32 where the definition allows it. */
bool gpu_cublas_launch(ts_gpu *g, const ts_gemm *d, CUdeviceptr A,
                       CUdeviceptr B, CUdeviceptr C) {
  if (!g->have_blas)
    return gpu_fail(g, TS_ERR_CUBLAS, "cuBLAS is not available");
  if (!cublas_takes(d))
    return gpu_fail(g, TS_ERR_CUBLAS, "cuBLAS has no GEMM of A %s, B %s and "
                    "C %s: cublasGemmEx takes A and B of one type, with C "
                    "fp32 or (fp16, bf16) of their type; ts_bench times the "
                    "nearest it has, an fp32 C", ts_dtype_name(d->a_type),
                    ts_dtype_name(d->b_type), ts_dtype_name(d->c_type));
  bool ta = d->layout == TS_TN || d->layout == TS_TT;
  bool tb = d->layout == TS_NT || d->layout == TS_TT;
  cublasStatus_t r = g->blas.cublasGemmEx(
      g->handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
      (int)d->n, (int)d->m, (int)d->k, &d->alpha, (const void *)B,
      dtype_info_of(d->b_type)->cublas,
      (int)ts_gemm_operand(d, TS_OPERAND_B).ld, (const void *)A,
      dtype_info_of(d->a_type)->cublas,
      (int)ts_gemm_operand(d, TS_OPERAND_A).ld, &d->beta, (void *)C,
      dtype_info_of(d->c_type)->cublas,
      (int)ts_gemm_operand(d, TS_OPERAND_C).ld,
      d->math == TS_MATH_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                              : CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (r != CUBLAS_STATUS_SUCCESS)
    return gpu_fail(g, TS_ERR_CUBLAS, "cublasGemmEx (A %s, B %s, C %s): "
                    "status %d", ts_dtype_name(d->a_type),
                    ts_dtype_name(d->b_type), ts_dtype_name(d->c_type), (int)r);
  return true;
}

/* ---- One run on host data ------------------------------------------------------ */

typedef struct {
  CUdeviceptr A, B, C;
} device_mats;

static bool upload(ts_gpu *g, const ts_gemm *d, const float *A, const float *B,
                   const float *C, device_mats *x) {
  ts_operand a = ts_gemm_operand(d, TS_OPERAND_A),
             b = ts_gemm_operand(d, TS_OPERAND_B),
             c = ts_gemm_operand(d, TS_OPERAND_C);
  size_t na = (size_t)ts_operand_elements(&a),
         nb = (size_t)ts_operand_elements(&b),
         nc = (size_t)ts_operand_elements(&c);
  memset(x, 0, sizeof(*x));
  return GPU_CALL(g, cuMemAlloc(&x->A, mat_bytes(d->a_type, na))) &&
         GPU_CALL(g, cuMemAlloc(&x->B, mat_bytes(d->b_type, nb))) &&
         GPU_CALL(g, cuMemAlloc(&x->C, mat_bytes(d->c_type, nc))) &&
         mat_upload(g, x->A, A, na, d->a_type) &&
         mat_upload(g, x->B, B, nb, d->b_type) &&
         mat_upload(g, x->C, C, nc, d->c_type);
}

static void release(ts_gpu *g, device_mats *x) {
  if (x->A) g->cu.cuMemFree(x->A);
  if (x->B) g->cu.cuMemFree(x->B);
  if (x->C) g->cu.cuMemFree(x->C);
}

static ts_status finish(ts_gpu *g, const ts_gemm *d, device_mats *x, bool ok,
                        float *C) {
  ts_operand c = ts_gemm_operand(d, TS_OPERAND_C);
  ok = ok && GPU_CALL(g, cuCtxSynchronize(g->ctx)) &&
       mat_download(g, C, x->C, (size_t)ts_operand_elements(&c), d->c_type);
  release(g, x);
  return ok ? TS_OK : g->status;
}

ts_status ts_gpu_run(ts_gpu *g, const ts_kernel *k, const float *A,
                     const float *B, float *C) {
  if (!g || !k || !A || !B || !C)
    return TS_ERR_NULL_ARG;
  if (g->status != TS_OK && g->status != TS_ERR_CUBLAS)
    return g->status;
  gpu_module m;
  device_mats x;
  char skipped[512];
  if (!gpu_load(g, k, &m, skipped, sizeof(skipped)))
    return g->status;
  if (skipped[0]) {
    gpu_fail(g, TS_ERR_BAD_SHAPE, "%s", skipped);
    return g->status;
  }
  const ts_gemm *d = &k->def;
  bool ok = upload(g, d, A, B, C, &x) && gpu_launch(g, &m, x.A, x.B, x.C);
  ts_status st = finish(g, d, &x, ok, C);
  gpu_unload(g, &m);
  return st;
}

ts_status ts_gpu_cublas(ts_gpu *g, const ts_gemm *d, const float *A,
                        const float *B, float *C) {
  if (!g || !d || !A || !B || !C)
    return TS_ERR_NULL_ARG;
  if (g->status != TS_OK)
    return g->status;
  device_mats x;
  bool ok = upload(g, d, A, B, C, &x) && gpu_cublas_launch(g, d, x.A, x.B, x.C);
  return finish(g, d, &x, ok, C);
}
