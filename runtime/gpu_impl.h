/*
 * The GPU object shared by gpu.c (device, modules, cuBLAS) and bench.c.
 */
#ifndef TS_GPU_H
#define TS_GPU_H

#include "../src/launch/launcher.h"
#include "tessel/gpu.h"
#include "loader.h"
#include "launch_limits.h"

struct ts_gpu {
  ts_status status;
  char errmsg[1024];
  ts_driver_api cu;
  ts_cublas_api blas;
  bool have_blas;
  cublasHandle_t handle;
  CUdevice dev;
  int ordinal;   /* the device's, as the driver counts them */
  char uuid[48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
  CUcontext ctx;
  char name[256];
  char arch[16];
  int sm_count;
  int clock_khz, memory_clock_khz; /* rated; 0 when unknown */
  int l2_bytes;
  int driver_version; /* cuDriverGetVersion's: 13000 for CUDA 13.0 */
  gpu_limits limits;
  struct gpu_bench_inputs *bench_inputs; /* the last ts_bench's; or NULL */
};

/* Records the failed call ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY: ...")
 * and returns false. */
bool gpu_check(ts_gpu *g, CUresult r, const char *call);
#define GPU_CALL(g, call) gpu_check((g), (g)->cu.call, #call)

/* ts_bench's inputs on the host for one definition and seed
 * (bench_inputs.c), kept from one call to the next. */
typedef struct gpu_bench_inputs {
  ts_gemm def;
  uint64_t seed;
  float *A, *B, *C; /* C: NaN where beta is 0 */
  float *ref;       /* cuBLAS's result on them, once has_ref */
  bool has_ref;
} gpu_bench_inputs;

/* The inputs of definition d and seed: the ones kept, or drawn (replacing
 * them); blas_c is cuBLAS's C type for d (ts_cublas_baseline).  NULL, with
 * g's error, when host memory runs out. */
gpu_bench_inputs *gpu_bench_inputs_for(ts_gpu *g, const ts_gemm *d,
                                       ts_dtype blas_c, uint64_t seed);
void gpu_bench_inputs_free(ts_gpu *g);

/* The most input sets ts_bench rotates its launches over (timing.c), and
 * so the base addresses a tensor map parameter is kept encoded for. */
enum { GPU_MAX_SETS = LAUNCH_MAP_SLOTS };

/* One entry point of a loaded module and what launching it takes (the
 * kernel's parameter list). */
typedef struct gpu_function {
  CUfunction fn;
  ts_launch_geometry launch;
  const char *entry;      /* the kernel's */
  const ts_param *params; /* the kernel's, nparams long */
  int nparams;
  launch_map_cache *maps; /* nparams long where a parameter is a tensor map,
                          else NULL; freed with the module */
} gpu_function;

/* A loaded kernel ready to launch: its entry points in launch order (fns,
 * nfns long; fns[main] the schedule's, or the hand-written gemm), the
 * workspace they share, allocated at load and kept until unload, and room
 * for the arguments of the longest parameter list. */
typedef struct gpu_module {
  CUmodule mod;
  int nfns, main;
  gpu_function *fns;
  launch_arg *values;
  void **args;
  CUdeviceptr W;
  ts_ptxas_info ptxas;
  bool hand_written;
  ts_gemm def;
} gpu_module;

/* Loads a compiled kernel and checks it against the device.  A
 * hand-written kernel's geometry is read from its module; where it cannot
 * take the shape (tessel_multiple, int indices) it is not loaded, `skipped`
 * says why, and the result is still true. */
bool gpu_load(ts_gpu *g, const ts_kernel *k, gpu_module *m, char *skipped,
              size_t len);
void gpu_unload(ts_gpu *g, gpu_module *m);
/* handwritten.c: the launch geometry of a hand-written kernel's module. */
bool gpu_read_geometry(ts_gpu *g, const ts_kernel *k, gpu_module *m,
                       char *why, size_t len);
/* matrices.c: n host floats to and from device elements of type t. */
size_t mat_bytes(ts_dtype t, size_t n);
bool mat_upload(ts_gpu *g, CUdeviceptr dst, const float *src, size_t n,
                ts_dtype t);
bool mat_download(ts_gpu *g, float *dst, CUdeviceptr src, size_t n,
                  ts_dtype t);
/* Records a failure with its code and message; returns false. */
bool gpu_fail(ts_gpu *g, ts_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool gpu_launch(ts_gpu *g, const gpu_module *m, CUdeviceptr A, CUdeviceptr B,
                CUdeviceptr C);
bool gpu_cublas_launch(ts_gpu *g, const ts_gemm *def, CUdeviceptr A,
                       CUdeviceptr B, CUdeviceptr C);

#endif
