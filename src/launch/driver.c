/*
 * dlopen of libcuda.so.1 and its entry points through cuGetProcAddress.
 */
#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ts_load_driver(ts_driver_api *api, char *err, size_t errlen) {
  memset(api, 0, sizeof(*api));
  /* TESSEL_CUDA_DRIVER names another driver library (a test's, or one
   * outside the loader's path). */
  const char *name = getenv("TESSEL_CUDA_DRIVER");
  if (!name || !*name)
    name = "libcuda.so.1";
  api->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    snprintf(err, errlen, "no CUDA driver: %s could not be loaded (%s)", name,
             dlerror());
    return false;
  }
  __typeof__(&cuGetProcAddress) get =
      (__typeof__(&cuGetProcAddress))dlsym(api->lib, "cuGetProcAddress_v2");
  if (!get) {
    snprintf(err, errlen, "%s is not a CUDA driver for CUDA 12 or later "
             "(cuGetProcAddress_v2 missing); tessel needs a driver for CUDA "
             "%d.%d", name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    dlclose(api->lib);
    api->lib = NULL;
    return false;
  }
#define TS_RESOLVE(f)                                                         \
  {                                                                           \
    CUdriverProcAddressQueryResult found;                                     \
    void *p = NULL;                                                           \
    if (get(#f, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=     \
            CUDA_SUCCESS ||                                                   \
        !p) {                                                                 \
      snprintf(err, errlen, "the CUDA driver lacks %s for CUDA %d.%d; update " \
               "the driver", #f, CUDA_VERSION / 1000,                         \
               CUDA_VERSION % 1000 / 10);                                     \
      dlclose(api->lib);                                                    \
      api->lib = NULL;                                                        \
      return false;                                                           \
    }                                                                         \
    memcpy(&api->f, &p, sizeof(p));                                           \
  }
#define TS_RESOLVE_AS(f, proto) TS_RESOLVE(f)
  TS_DRIVER_FUNCS(TS_RESOLVE, TS_RESOLVE_AS)
#undef TS_RESOLVE_AS
#undef TS_RESOLVE
  return true;
}

void ts_unload_driver(ts_driver_api *api) {
  if (api->lib)
    dlclose(api->lib);
  api->lib = NULL;
}

void ts_driver_error(const ts_driver_api *api, CUresult r, const char *call,
                     char *out, size_t len) {
  const char *name = NULL, *text = NULL;
  if (api->cuGetErrorName)
    api->cuGetErrorName(r, &name);
  if (api->cuGetErrorString)
    api->cuGetErrorString(r, &text);
  int n = (int)strcspn(call, "(");
  snprintf(out, len, "%.*s: %s: %s", n, call, name ? name : "error",
           text ? text : "unknown");
}
