/*
 * Run-time loading of cuBLAS (the driver is the launcher's:
 * src/launch/driver.h; NVRTC the compile stage's: src/compile/toolkit.h).
 * Nothing links against it, so tessel builds and runs (everything but the
 * GPU) where it is missing; the loader says which library it could not
 * find.
 */
#ifndef TS_LOADER_H
#define TS_LOADER_H

#include <cublas_api.h>
#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#include "../src/compile/toolkit.h"
#include "../src/launch/driver.h"

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
bool ts_load_cublas(ts_cublas_api *api, char *err, size_t errlen);

#endif
