/*
 * The CUDA driver, loaded at run time (dlopen of libcuda.so.1, entry
 * points from cuGetProcAddress for the toolkit's version, so that their
 * ABI matches the headers tessel was built with).  Nothing links against
 * it, so tessel builds and runs (everything but the GPU) where it is
 * missing.  The launcher's and the runtime's one table of driver calls;
 * cuBLAS is the runtime's (runtime/loader.h).
 */
#ifndef TS_DRIVER_H
#define TS_DRIVER_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* X(symbol, a function whose prototype is the ABI that cuGetProcAddress
 * returns for CUDA_VERSION): CUDA 13 gave cuCtxSynchronize a context
 * argument under its plain name. */
#define TS_DRIVER_FUNCS(X, X_AS)                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet)          \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)      \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent)          \
  X(cuCtxGetDevice) X(cuCtxPushCurrent) X(cuCtxPopCurrent)                    \
  X_AS(cuCtxSynchronize, cuCtxSynchronize_v2)                                 \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)                \
  X(cuModuleGetGlobal) X(cuFuncSetAttribute) X(cuFuncGetAttribute)           \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree)                                \
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

/* Loads the driver ($TESSEL_CUDA_DRIVER names another library: a test's,
 * or one outside the loader's path); false with a one-line reason in err. */
bool ts_load_driver(ts_driver_api *api, char *err, size_t errlen);
void ts_unload_driver(ts_driver_api *api);

/* "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY: out of memory": the call (its
 * name up to the parenthesis) and the driver's name and text for r. */
void ts_driver_error(const ts_driver_api *api, CUresult r, const char *call,
                     char *out, size_t len);

#endif
