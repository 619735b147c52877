/*
 * dlopen of libcublas, found as the compile stage finds NVRTC (src/compile/toolkit.c): by soname, then under
 * CUDA_HOME and /usr/local/cuda.
 */
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ts_load_cublas(ts_cublas_api *api, char *err, size_t errlen) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so", NULL};
  const char *what = "libcublas";
  char tried[256];
  memset(api, 0, sizeof(*api));
  api->lib = ts_toolkit_open(names, tried, sizeof(tried));
  if (!api->lib) {
    snprintf(err, errlen, "cuBLAS not found (tried %s and CUDA_HOME)", tried);
    return false;
  }
  TS_CUBLAS_FUNCS(TS_DLSYM)
  return true;
}
