/*
 * Run-time loading of the CUDA driver, NVRTC and cuBLAS.  Nothing links
 * against them, so tessel builds and runs (everything but the GPU) where
 * they are missing; each loader says which library it could not find.
 * Driver entry points come from cuGetProcAddress for the toolkit's version,
 * so their ABI matches the headers tessel was built with.
 */
#ifndef TS_LOADER_H
#define TS_LOADER_H

#include <cublas_api.h>
#include <cuda.h>
#include <nvrtc.h>
#include <stdbool.h>
#include <stddef.h>

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
  X(cuDeviceGetUuid)

typedef struct ts_driver_api {
  void *lib;
#define TS_PTR(f) __typeof__(&f) f;
#define TS_PTR_AS(f, proto) __typeof__(&proto) f;
  TS_DRIVER_FUNCS(TS_PTR, TS_PTR_AS)
#undef TS_PTR
#undef TS_PTR_AS
} ts_driver_api;

#define TS_NVRTC_FUNCS(X)                                                     \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram)                \
  X(nvrtcDestroyProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize)     \
  X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)                 \
  X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs)

typedef struct ts_nvrtc_api {
  void *lib;
#define TS_PTR(f) __typeof__(&f) f;
  TS_NVRTC_FUNCS(TS_PTR)
#undef TS_PTR
  /* The toolkit's include directory (the one holding cuda_fp16.h), which
   * NVRTC does not search by itself; "" when none was found. */
  char include_dir[512];
  /* The library's file, its links followed ("libnvrtc.so.13.0.88"): its
   * name carries the patch release that nvrtcVersion leaves out; "" when
   * unknown. */
  char lib_file[512];
} ts_nvrtc_api;

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
/* NVRTC, loaded on first use and kept loaded; NULL with the reason in err. */
const ts_nvrtc_api *ts_nvrtc(char *err, size_t errlen);
void ts_unload(void *lib);

#endif
