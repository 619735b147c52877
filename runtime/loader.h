/*
 * Run-time loading of the CUDA driver and cuBLAS (NVRTC is the compile
 * stage's: src/compile/toolkit.h).  Nothing links against them, so tessel
 * builds and runs (everything but the GPU) where they are missing; each
 * loader says which library it could not find.
 * Driver entry points come from cuGetProcAddress for the toolkit's version,
 * so their ABI matches the headers tessel was built with.
 */
#ifndef TS_LOADER_H
#define TS_LOADER_H

#include <cublas_api.h>
#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "../src/compile/toolkit.h"

/* X(symbol, a function whose prototype is the ABI that cuGetProcAddress
 * returns for CUDA_VERSION): CUDA 13 gave cuCtxSynchronize a context
 * argument under its plain name. */
#define TS_DRIVER_FUNCS(X, X_AS)                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet)          \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)      \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)                             \
  X_AS(cuCtxSynchronize, cuCtxSynchronize_v2)                                 \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)                \
  X(cuModuleGetGlobal)                                                        \
  X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree)          \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD32)              \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)   \
  X(cuEventElapsedTime) X(cuGetErrorString) X(cuGetErrorName)                \
  X(cuDeviceGetUuid) X(cuTensorMapEncodeTiled)

typedef struct ts_driver_api {
  void *lib;
#define TS_PTR(f) __typeof__(&f) f;
#define TS_PTR_AS(f, proto) __typeof__(&proto) f;
  TS_DRIVER_FUNCS(TS_PTR, TS_PTR_AS)
#undef TS_PTR
#undef TS_PTR_AS
} ts_driver_api;

#define TS_CUBLAS_FUNCS(X)                                                    \
  X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasGemmEx)                    \
  X(cublasSetMathMode)

typedef struct ts_cublas_api {
  void *lib;
#define TS_PTR(f) __typeof__(&f) f;
  TS_CUBLAS_FUNCS(TS_PTR)
#undef TS_PTR
} ts_cublas_api;

/* Each returns false with a one-line reason in err. */
bool ts_load_driver(ts_driver_api *api, char *err, size_t errlen);
bool ts_load_cublas(ts_cublas_api *api, char *err, size_t errlen);

#endif
