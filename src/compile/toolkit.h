/*
 * Finding the CUDA toolkit's libraries at run time, and NVRTC's entry
 * points.  Nothing links against them, so tessel builds and runs
 * (everything but compiling and the GPU) where they are missing; each
 * loader says which library it could not find.  The runtime's loader
 * (runtime/loader.h: the driver, cuBLAS) finds its libraries the same way.
 */
#ifndef TS_TOOLKIT_H
#define TS_TOOLKIT_H

#include <nvrtc.h>
#include <stdbool.h>
#include <stddef.h>

#define TS_NVRTC_FUNCS(X)                                                     \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram)                \
  X(nvrtcDestroyProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize)     \
  X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)                 \
  X(nvrtcGetPTXSize) X(nvrtcGetPTX)                                           \
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

/* The first of names (NULL-terminated) that dlopen finds by soname, else
 * under $CUDA_HOME and /usr/local/cuda (lib64, lib); NULL with the names
 * tried in `tried`. */
void *ts_toolkit_open(const char *const *names, char *tried, size_t len);
void ts_unload(void *lib);

/* Resolves symbol f of api->lib by name into api->f, or unloads the
 * library, says which symbol `what` lacks in err and returns false. */
#define TS_DLSYM(f)                                                           \
  {                                                                           \
    void *p = dlsym(api->lib, #f);                                            \
    if (!p) {                                                                 \
      snprintf(err, errlen, "%s has no symbol %s", what, #f);                 \
      ts_unload(api->lib);                                                    \
      api->lib = NULL;                                                        \
      return false;                                                           \
    }                                                                         \
    memcpy(&api->f, &p, sizeof(p));                                           \
  }

/* NVRTC, loaded on first use and kept loaded; NULL with the reason in err. */
const ts_nvrtc_api *ts_nvrtc(char *err, size_t errlen);

#endif
