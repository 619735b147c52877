/*
 * The GPU object shared by gpu.c (device, modules, cuBLAS) and bench.c.
 */
#ifndef TS_GPU_H
#define TS_GPU_H

#include "kernel.h"
#include "loader.h"
#include "resources.h"

struct ts_gpu {
  ts_status status;
  char errmsg[1024];
  ts_driver_api cu;
  ts_cublas_api blas;
  bool have_blas;
  cublasHandle_t handle;
  CUdevice dev;
  CUcontext ctx;
  char name[256];
  char arch[16];
  int sm_count;
  int l2_bytes;
  gpu_limits limits;
};

/* Records the failed call ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY: ...")
 * and returns false. */
bool gpu_check(ts_gpu *g, CUresult r, const char *call);
#define GPU_CALL(g, call) gpu_check((g), (g)->cu.call, #call)

/* A loaded kernel ready to launch. */
typedef struct gpu_module {
  CUmodule mod;
  CUfunction fn;
  ts_launch launch;
  ts_ptxas_info ptxas;
} gpu_module;

bool gpu_load(ts_gpu *g, ts_sched *s, gpu_module *m);
void gpu_unload(ts_gpu *g, gpu_module *m);
bool gpu_launch(ts_gpu *g, const gpu_module *m, CUdeviceptr A, CUdeviceptr B,
                CUdeviceptr C);
bool gpu_cublas_launch(ts_gpu *g, const ts_gemm *def, CUdeviceptr A,
                       CUdeviceptr B, CUdeviceptr C);

#endif
