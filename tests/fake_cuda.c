/*
 * A CUDA driver and cuBLAS that run nothing, for testing on a machine
 * without a GPU what tessel does around the GPU: tune's supervisor,
 * journal and reports (test_tune_faults.sh).  Device memory is host
 * memory; a launch leaves C as it was (so every kernel agrees with
 * "cuBLAS" where beta is 1) and takes a time made from its entry point's
 * name; a kernel whose entry point is `gemm` (a hand-written one, as
 * TESSEL_TUNE_FAULT's) faults as an illegal address does: that launch
 * succeeds and every later call fails with CUDA_ERROR_ILLEGAL_ADDRESS.
 * TESSEL_FAKE_FAULT=NAME,NAME...: kernels with these entry points
 * (tessel_naive, say) fault so too.
 *
 * TESSEL_FAKE_GPUS=N makes it N devices (one by default), each with its
 * UUID; TESSEL_FAKE_GPU_SPEEDS=1,1,0.5,... gives each its speed: device
 * d's launches take 1/speed times as long, and with a speed given they
 * take that long in wall time too (a fake ms a real ms), so that a slow
 * device times fewer candidates of a queue than a fast one.  A speed of 0
 * hangs the device's first launch until the process is killed, once:
 * it creates the file TESSEL_FAKE_HANG_FILE names as it hangs, and where
 * that file exists the device runs at speed 1 (a test kills the runner
 * that hangs and its restart goes on).
 *
 * TESSEL_FAKE_LAUNCH_LOG=FILE: a line a launch appended to FILE, the
 * entry point and its grid ("NAME GX GY GZ"), and a line a cuBLAS GEMM,
 * its shape and device ("cublas M N K device D").
 *
 * TESSEL_FAKE_TENSOR_MAPS=FILE: at exit the fake writes to FILE how many
 * tensor maps cuTensorMapEncodeTiled encoded and how many distinct ones
 * it was asked for (base address, type, dimensions, box), as "encoded N
 * distinct M": the runtime encodes each (parameter, buffer) once; then a
 * line for each distinct one, "map type T dims D0 D1 box B0 B1 base P"
 * (the first 256).
 *
 * tessel loads it as the driver through TESSEL_CUDA_DRIVER, and as
 * cuBLAS under the name libcuBLAS is looked for (libcublas.so.13, in a
 * directory on LD_LIBRARY_PATH); the dynamic loader sees one library.
 */
#include <cuda.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The first error of a fault: CUDA's errors after one are sticky. */
static CUresult sticky = CUDA_SUCCESS;
/* The device's clock, in ms: launches advance it, events read it. */
static double clock_ms;

typedef struct {
  char name[256];
} fake_function;

/* A module owns the functions got from it, as the driver's does. */
enum { MAX_FUNCTIONS = 8 };
typedef struct {
  fake_function fns[MAX_FUNCTIONS];
  int n;
} fake_module;

typedef struct {
  double at;
} fake_event;

/* The device of this process's context (tessel opens one a process). */
static int current_device;

/* TESSEL_FAKE_GPUS: how many devices. */
static int device_count(void) {
  const char *v = getenv("TESSEL_FAKE_GPUS");
  int n = v ? atoi(v) : 1;
  return n > 0 ? n : 1;
}

/* A line in TESSEL_FAKE_LAUNCH_LOG, where it is set: appended whole, so
 * that the processes of a run that share the file keep their order. */
static void log_launch(const char *fmt, ...) {
  const char *log = getenv("TESSEL_FAKE_LAUNCH_LOG");
  FILE *lf = log ? fopen(log, "a") : NULL;
  if (!lf)
    return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fputs(line, lf);
  fclose(lf);
}

/* Device d's speed from TESSEL_FAKE_GPU_SPEEDS, 1 where it gives none;
 * *given says whether it gave one (launches then take wall time). */
static double device_speed(int d, int *given) {
  const char *v = getenv("TESSEL_FAKE_GPU_SPEEDS");
  *given = v && *v;
  for (int i = 0; v && *v; i++) {
    char *end;
    double s = strtod(v, &end);
    if (i == d)
      return s >= 0 ? s : 1;
    v = *end == ',' ? end + 1 : "";
  }
  return 1;
}

/* A launch of ms at speed 1 on the current device: the clock advanced,
 * and as much wall time passed where speeds are given. */
static void run_for(double ms) {
  int given;
  double speed = device_speed(current_device, &given);
  const char *hang = getenv("TESSEL_FAKE_HANG_FILE");
  if (speed == 0 && hang) {
    FILE *f = fopen(hang, "wx"); /* only where it is not there yet */
    if (f) {
      fclose(f);
      for (;;)
        pause();
    }
  }
  double t = ms / (speed > 0 ? speed : 1);
  clock_ms += t;
  if (given) {
    struct timespec ts = {.tv_sec = (time_t)(t / 1000),
                          .tv_nsec = (long)(t * 1e6) % 1000000000L};
    nanosleep(&ts, NULL);
  }
}

/* Whether a launch of entry point `name` faults: a hand-written kernel's
 * (gemm), or one TESSEL_FAKE_FAULT lists. */
static int faults(const char *name) {
  if (strcmp(name, "gemm") == 0)
    return 1;
  const char *list = getenv("TESSEL_FAKE_FAULT");
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0)
      return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static CUresult fake_cuInit(unsigned flags) {
  (void)flags;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDriverGetVersion(int *v) {
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int *n) {
  *n = device_count();
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice *d, int ordinal) {
  *d = ordinal;
  return ordinal >= 0 && ordinal < device_count() ? CUDA_SUCCESS
                                                  : CUDA_ERROR_INVALID_DEVICE;
}

/* UUIDs fa4e0000-...-00000000000d for device d. */
static CUresult fake_cuDeviceGetUuid(CUuuid *u, CUdevice d) {
  memset(u->bytes, 0, sizeof(u->bytes));
  u->bytes[0] = (char)0xfa;
  u->bytes[1] = 0x4e;
  u->bytes[15] = (char)d;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice d) {
  (void)d;
  strncpy(name, "Fake GPU (tests/fake_cuda.c)", (size_t)len - 1);
  name[len - 1] = 0;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetAttribute(int *v, CUdevice_attribute a,
                                          CUdevice d) {
  (void)d;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  current_device = d;
  *c = (CUcontext)&sticky;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice d) {
  (void)d;
  return CUDA_SUCCESS;
}

/* One context, the device's primary one, current until a thread's
 * cuCtxSetCurrent(NULL). */
static _Thread_local bool no_context;

static CUresult fake_cuCtxSetCurrent(CUcontext c) {
  no_context = c == NULL;
  return sticky;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *c) {
  *c = no_context ? NULL : (CUcontext)&clock_ms;
  return sticky;
}

static CUresult fake_cuCtxGetDevice(CUdevice *d) {
  *d = 0;
  return sticky;
}

static CUresult fake_cuCtxPushCurrent(CUcontext c) {
  (void)c;
  return sticky;
}

static CUresult fake_cuCtxPopCurrent(CUcontext *c) {
  if (c)
    *c = (CUcontext)&clock_ms;
  return sticky;
}

static CUresult fake_cuCtxSynchronize(CUcontext c) {
  (void)c;
  return sticky;
}

static CUresult fake_cuModuleLoadData(CUmodule *m, const void *image) {
  (void)image;
  *m = (CUmodule)calloc(1, sizeof(fake_module));
  return *m ? sticky : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_cuModuleUnload(CUmodule m) {
  free(m);
  return sticky;
}

static CUresult fake_cuModuleGetFunction(CUfunction *f, CUmodule m,
                                         const char *name) {
  fake_module *mod = (fake_module *)m;
  if (mod->n == MAX_FUNCTIONS)
    return CUDA_ERROR_OUT_OF_MEMORY;
  fake_function *fn = &mod->fns[mod->n++];
  strncpy(fn->name, name, sizeof(fn->name) - 1);
  *f = (CUfunction)fn;
  return sticky;
}

/* A hand-written kernel's geometry: 32 threads a block, a block a row of
 * 32 elements of C. */
static int block[3] = {32, 1, 1}, tile[2] = {1, 32};

static CUresult fake_cuModuleGetGlobal(CUdeviceptr *p, size_t *bytes,
                                       CUmodule m, const char *name) {
  (void)m;
  int *v = strcmp(name, "tessel_block") == 0  ? block
           : strcmp(name, "tessel_tile") == 0 ? tile
                                              : NULL;
  if (!v)
    return CUDA_ERROR_NOT_FOUND;
  *p = (CUdeviceptr)(uintptr_t)v;
  *bytes = v == block ? sizeof(block) : sizeof(tile);
  return sticky;
}

static CUresult fake_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a,
                                        int v) {
  (void)f, (void)a, (void)v;
  return sticky;
}

static CUresult fake_cuFuncGetAttribute(int *v, CUfunction_attribute a,
                                        CUfunction f) {
  (void)f;
  *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 32 : 0;
  return sticky;
}

/* The stream of the last launch, for a test to read (fake_last_stream). */
static CUstream last_stream;
CUstream fake_last_stream(void);
CUstream fake_last_stream(void) {
  return __atomic_load_n(&last_stream, __ATOMIC_RELAXED);
}

static CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                                    unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream s,
                                    void **params, void **extra) {
  (void)bx, (void)by, (void)bz, (void)shared;
  (void)params, (void)extra;
  if (sticky != CUDA_SUCCESS)
    return sticky;
  __atomic_store_n(&last_stream, s, __ATOMIC_RELAXED);
  const char *name = ((fake_function *)f)->name;
  /* The grid each launch asked for, a line a launch (a persistent
   * grid's blocks come from the multiprocessor count above). */
  log_launch("%s %u %u %u\n", name, gx, gy, gz);
  if (faults(name))
    sticky = CUDA_ERROR_ILLEGAL_ADDRESS; /* reported by the next call */
  run_for(0.01 + (double)(fnv1a(name) % 1000) * 1e-4);
  return CUDA_SUCCESS;
}

/* The tensor maps encoded, and the distinct ones asked for (the first
 * MAX_MAPS; any more count as distinct). */
enum { MAX_MAPS = 256 };
typedef struct {
  uintptr_t base;
  int type;
  cuuint64_t dims[2];
  cuuint32_t box[2];
} map_key;
static map_key map_keys[MAX_MAPS];
static int maps_encoded, maps_distinct;

static void count_map(map_key key) {
  maps_encoded++;
  for (int i = 0; i < maps_distinct && i < MAX_MAPS; i++)
    if (!memcmp(&map_keys[i], &key, sizeof(key)))
      return;
  if (maps_distinct < MAX_MAPS)
    map_keys[maps_distinct] = key;
  maps_distinct++;
}

/* TESSEL_FAKE_TENSOR_MAPS: the counts, at exit. */
__attribute__((destructor)) static void write_map_counts(void) {
  const char *path = getenv("TESSEL_FAKE_TENSOR_MAPS");
  FILE *f = path && *path ? fopen(path, "w") : NULL;
  if (!f)
    return;
  fprintf(f, "encoded %d distinct %d\n", maps_encoded, maps_distinct);
  for (int i = 0; i < maps_distinct && i < MAX_MAPS; i++)
    fprintf(f, "map type %d dims %llu %llu box %u %u base %llu\n",
            map_keys[i].type, (unsigned long long)map_keys[i].dims[0],
            (unsigned long long)map_keys[i].dims[1], map_keys[i].box[0],
            map_keys[i].box[1], (unsigned long long)map_keys[i].base);
  fclose(f);
}

/* A tensor map: checked as the driver checks the arguments tessel passes
 * (2-D, 16-byte row strides, boxes of 1..256, 128-byte swizzled rows). */
static CUresult fake_cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *base,
    const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
    const cuuint32_t *step, CUtensorMapInterleave il,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill fill) {
  (void)step, (void)il, (void)l2, (void)fill;
  if (rank != 2 || strides[0] % 16 || box[0] < 1 || box[0] > 256 ||
      box[1] < 1 || box[1] > 256 || swizzle != CU_TENSOR_MAP_SWIZZLE_128B ||
      (uintptr_t)base % 16)
    return CUDA_ERROR_INVALID_VALUE;
  memset(map, 0, sizeof(*map));
  map_key key;
  memset(&key, 0, sizeof(key)); /* compared whole, padding too */
  key.base = (uintptr_t)base;
  key.type = (int)type;
  memcpy(key.dims, dims, sizeof(key.dims));
  memcpy(key.box, box, sizeof(key.box));
  count_map(key);
  return sticky;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  void *m = sticky == CUDA_SUCCESS ? malloc(bytes ? bytes : 1) : NULL;
  *p = (CUdeviceptr)(uintptr_t)m;
  return sticky != CUDA_SUCCESS ? sticky
         : m                    ? CUDA_SUCCESS
                                : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_cuMemFree(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  return sticky;
}

static CUresult fake_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  if (sticky == CUDA_SUCCESS)
    memcpy((void *)(uintptr_t)dst, src, n);
  return sticky;
}

static CUresult fake_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  if (sticky == CUDA_SUCCESS)
    memcpy(dst, (const void *)(uintptr_t)src, n);
  return sticky;
}

static CUresult fake_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (sticky == CUDA_SUCCESS)
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return sticky;
}

static CUresult fake_cuMemsetD32(CUdeviceptr dst, unsigned v, size_t n) {
  unsigned *p = (unsigned *)(uintptr_t)dst;
  for (size_t i = 0; sticky == CUDA_SUCCESS && i < n; i++)
    p[i] = v;
  return sticky;
}

static CUresult fake_cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  *e = (CUevent)calloc(1, sizeof(fake_event));
  return sticky;
}

static CUresult fake_cuEventDestroy(CUevent e) {
  free(e);
  return sticky;
}

static CUresult fake_cuEventRecord(CUevent e, CUstream s) {
  (void)s;
  ((fake_event *)e)->at = clock_ms;
  return sticky;
}

static CUresult fake_cuEventSynchronize(CUevent e) {
  (void)e;
  return sticky;
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  *ms = (float)(((fake_event *)b)->at - ((fake_event *)a)->at);
  return sticky;
}

static CUresult fake_cuGetErrorName(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_ILLEGAL_ADDRESS    ? "CUDA_ERROR_ILLEGAL_ADDRESS"
       : r == CUDA_ERROR_NOT_FOUND        ? "CUDA_ERROR_NOT_FOUND"
       : r == CUDA_ERROR_OUT_OF_MEMORY    ? "CUDA_ERROR_OUT_OF_MEMORY"
                                          : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}

static CUresult fake_cuGetErrorString(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_ILLEGAL_ADDRESS
           ? "an illegal memory access was encountered"
           : "an error of the fake driver";
  return CUDA_SUCCESS;
}

#define FAKE(f) {#f, (void *)fake_##f},
static const struct {
  const char *name;
  void *fn;
} functions[] = {
    FAKE(cuInit) FAKE(cuDriverGetVersion) FAKE(cuDeviceGetCount)
    FAKE(cuDeviceGet) FAKE(cuDeviceGetName) FAKE(cuDeviceGetAttribute)
    FAKE(cuDevicePrimaryCtxRetain) FAKE(cuDevicePrimaryCtxRelease)
    FAKE(cuCtxSetCurrent) FAKE(cuCtxGetCurrent) FAKE(cuCtxGetDevice)
    FAKE(cuCtxPushCurrent) FAKE(cuCtxPopCurrent) FAKE(cuCtxSynchronize) FAKE(cuModuleLoadData)
    FAKE(cuModuleUnload) FAKE(cuModuleGetFunction) FAKE(cuModuleGetGlobal)
    FAKE(cuFuncSetAttribute) FAKE(cuFuncGetAttribute) FAKE(cuLaunchKernel)
    FAKE(cuMemAlloc) FAKE(cuMemFree) FAKE(cuMemcpyHtoD) FAKE(cuMemcpyDtoH)
    FAKE(cuMemcpyDtoD) FAKE(cuMemsetD32) FAKE(cuEventCreate)
    FAKE(cuEventDestroy) FAKE(cuEventRecord) FAKE(cuEventSynchronize)
    FAKE(cuEventElapsedTime) FAKE(cuGetErrorString) FAKE(cuGetErrorName)
    FAKE(cuDeviceGetUuid)
    FAKE(cuTensorMapEncodeTiled)
};

CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
  (void)version, (void)flags;
  for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
    if (strcmp(symbol, functions[i].name) == 0) {
      *fn = functions[i].fn;
      if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *fn = NULL;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

/* ---- The driver by name: what a program linked with -lcuda calls ------- */

/* examples/launch.c, linked against libcuda, runs on the fake found as
 * libcuda.so.1 on LD_LIBRARY_PATH: its calls by name (cuda.h maps some
 * to their _v2) reach the fakes above; streams and graphs run nothing. */
CUresult cuInit(unsigned flags) { return fake_cuInit(flags); }
/* NVRTC looks for the driver's private tables where a libcuda.so.1 is on
 * the path: the fake has none, and says so. */
CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  return fake_cuDeviceGet(d, ordinal);
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  return fake_cuDevicePrimaryCtxRetain(c, d);
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
  return fake_cuDevicePrimaryCtxRelease(d);
}
CUresult cuCtxSetCurrent(CUcontext c) { return fake_cuCtxSetCurrent(c); }
CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  return fake_cuMemAlloc(p, bytes);
}
CUresult cuMemFree(CUdeviceptr p) { return fake_cuMemFree(p); }
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  return fake_cuMemcpyHtoD(dst, src, n);
}
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  return fake_cuMemcpyDtoH(dst, src, n);
}
CUresult cuGetErrorString(CUresult r, const char **text) {
  return fake_cuGetErrorString(r, text);
}
static int fake_object; /* what a stream, graph or executable graph is */
CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  *s = (CUstream)&fake_object;
  return sticky;
}
CUresult cuStreamDestroy(CUstream s) {
  (void)s;
  return sticky;
}
CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  return sticky;
}
CUresult cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  (void)s, (void)mode;
  return sticky;
}
CUresult cuStreamEndCapture(CUstream s, CUgraph *g) {
  (void)s;
  *g = (CUgraph)&fake_object;
  return sticky;
}
CUresult cuGraphInstantiate(CUgraphExec *e, CUgraph g,
                            unsigned long long flags) {
  (void)g, (void)flags;
  *e = (CUgraphExec)&fake_object;
  return sticky;
}
CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  (void)e, (void)s;
  log_launch("graph\n");
  return sticky;
}
CUresult cuGraphExecDestroy(CUgraphExec e) {
  (void)e;
  return sticky;
}
CUresult cuGraphDestroy(CUgraph g) {
  (void)g;
  return sticky;
}

/* ---- cuBLAS: the four entry points tessel loads --------------------------- */

int cublasCreate_v2(void **handle) {
  *handle = &clock_ms;
  return 0;
}

int cublasDestroy_v2(void *handle) {
  (void)handle;
  return 0;
}

int cublasSetMathMode(void *handle, int mode) {
  (void)handle, (void)mode;
  return 0;
}

/* C left as it was; the launch takes 0.05 ms.  A failed context makes it
 * fail, as cuBLAS's launches do.  The launch log has a line for it with
 * the shape and the device, in the order of the launches of every
 * process that shares the log (which shape each GPU of a tuning run timed
 * when). */
int cublasGemmEx(void *handle, int ta, int tb, int m, int n, int k,
                 const void *alpha, const void *A, int at, int lda,
                 const void *B, int bt, int ldb, const void *beta, void *C,
                 int ct, int ldc, int compute, int algo) {
  (void)handle, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha;
  (void)A, (void)at, (void)lda, (void)B, (void)bt, (void)ldb, (void)beta;
  (void)C, (void)ct, (void)ldc, (void)compute, (void)algo;
  /* As cuBLAS, CUBLAS_STATUS_NOT_SUPPORTED for types it has no GEMM of
   * (A and B of two types; fp32 A and B with a narrower C; fp16 with bf16):
   * CUDA_R_32F 0, CUDA_R_16F 2, CUDA_R_16BF 14. */
  if (at != bt || (ct != 0 && ct != at))
    return 15;
  log_launch("cublas %d %d %d device %d\n", m, n, k, current_device);
  run_for(0.05);
  return sticky == CUDA_SUCCESS ? 0 : 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
}

/* ---- NVML, for the sensors a record holds (TESSEL_NVML names this
 * library): a GPU at 1755 MHz, memory at 2619 MHz, 41 C and 123.4 W. --- */

typedef int fake_nvml_return; /* nvmlReturn_t: 0 is success */

fake_nvml_return nvmlInit_v2(void);
fake_nvml_return nvmlShutdown(void);
const char *nvmlErrorString(fake_nvml_return r);
fake_nvml_return nvmlDeviceGetHandleByPciBusId_v2(const char *id, void **d);
fake_nvml_return nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz);
fake_nvml_return nvmlDeviceGetTemperature(void *d, int sensor, unsigned *c);
fake_nvml_return nvmlDeviceGetPowerUsage(void *d, unsigned *mw);

static int fake_nvml_device;

fake_nvml_return nvmlInit_v2(void) { return 0; }
fake_nvml_return nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(fake_nvml_return r) {
  return r ? "fake NVML error" : "success";
}
fake_nvml_return nvmlDeviceGetHandleByPciBusId_v2(const char *id, void **d) {
  /* The fake driver's device sits at PCI address 0. */
  *d = &fake_nvml_device;
  return strcmp(id, "00000000:00:00.0") == 0 ? 0 : 6 /* not found */;
}
fake_nvml_return nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz) {
  (void)d;
  *mhz = type == 0 /* NVML_CLOCK_GRAPHICS */ ? 1755
         : type == 1 /* NVML_CLOCK_SM */     ? 1755
                                             : 2619;
  return 0;
}
fake_nvml_return nvmlDeviceGetTemperature(void *d, int sensor, unsigned *c) {
  (void)d;
  (void)sensor;
  *c = 41;
  return 0;
}
fake_nvml_return nvmlDeviceGetPowerUsage(void *d, unsigned *mw) {
  (void)d;
  *mw = 123400;
  return 0;
}
