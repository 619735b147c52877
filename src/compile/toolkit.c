/*
 * dlopen of the toolkit's libraries (see toolkit.h), and NVRTC's: tried by
 * soname first (the loader's path), then under CUDA_HOME and
 * /usr/local/cuda, so a machine whose ld.so.conf lacks the toolkit still
 * finds them.  NVRTC's headers are looked for beside the library.
 */
#include "toolkit.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *ts_toolkit_open(const char *const *names, char *tried, size_t len) {
  tried[0] = 0;
  for (int i = 0; names[i]; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib)
      return lib;
    size_t used = strlen(tried);
    snprintf(tried + used, len - used, "%s%s", used ? ", " : "", names[i]);
  }
  const char *home = getenv("CUDA_HOME");
  for (int i = 0; names[i]; i++) {
    if (strchr(names[i], '/'))
      continue;
    const char *roots[] = {home, "/usr/local/cuda"};
    for (int r = 0; r < 2; r++) {
      if (!roots[r])
        continue;
      char path[512];
      for (int d = 0; d < 2; d++) {
        snprintf(path, sizeof(path), "%s/%s/%s", roots[r], d ? "lib" : "lib64",
                 names[i]);
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib)
          return lib;
      }
    }
  }
  return NULL;
}

void ts_unload(void *lib) {
  if (lib)
    dlclose(lib);
}

static bool has_fp16_header(const char *dir) {
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/cuda_fp16.h", dir);
  return n > 0 && (size_t)n < sizeof(path) && access(path, R_OK) == 0;
}

/* api->include_dir = dir (its real path) when dir holds the headers. */
static bool try_include_dir(ts_nvrtc_api *api, const char *fmt,
                            const char *base) {
  char dir[4096];
  int n = snprintf(dir, sizeof(dir), fmt, base);
  if (!base || n <= 0 || (size_t)n >= sizeof(dir) || !has_fp16_header(dir))
    return false;
  char *real = realpath(dir, NULL);
  n = snprintf(api->include_dir, sizeof(api->include_dir), "%s",
               real ? real : dir);
  free(real);
  if (n > 0 && (size_t)n < sizeof(api->include_dir))
    return true;
  api->include_dir[0] = 0;
  return false;
}

/* api->lib_file: the file NVRTC was loaded from, its links followed, so
 * that a toolkit's patch release names another file. */
static void find_lib_file(ts_nvrtc_api *api, const char *loaded) {
  char *real = loaded ? realpath(loaded, NULL) : NULL;
  int n = snprintf(api->lib_file, sizeof(api->lib_file), "%s",
                   real ? real : loaded ? loaded : "");
  free(real);
  if (n < 0 || (size_t)n >= sizeof(api->lib_file))
    api->lib_file[0] = 0;
}

/* The include directory of the toolkit NVRTC came from: beside the
 * library's directory (lib64/../include, or targets/<arch>/lib/../include),
 * else under CUDA_HOME or /usr/local/cuda; and the library's file. */
static void find_include_dir(ts_nvrtc_api *api) {
  char lib_dir[4096] = "";
  Dl_info info;
  void *sym;
  memcpy(&sym, &api->nvrtcVersion, sizeof(sym));
  if (dladdr(sym, &info) && info.dli_fname) {
    find_lib_file(api, info.dli_fname);
    int n = snprintf(lib_dir, sizeof(lib_dir), "%s", info.dli_fname);
    char *slash = strrchr(lib_dir, '/');
    if (n > 0 && (size_t)n < sizeof(lib_dir) && slash)
      *slash = 0;
    else
      lib_dir[0] = 0;
  }
  const char *lib = lib_dir[0] ? lib_dir : NULL;
  if (try_include_dir(api, "%s/../include", lib) ||
      try_include_dir(api, "%s/../../include", lib) ||
      try_include_dir(api, "%s/include", getenv("CUDA_HOME")) ||
      try_include_dir(api, "%s/include", "/usr/local/cuda"))
    return;
}

static bool load_nvrtc(ts_nvrtc_api *api, char *err, size_t errlen) {
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so", NULL};
  const char *what = "libnvrtc";
  char tried[256];
  memset(api, 0, sizeof(*api));
  api->lib = ts_toolkit_open(names, tried, sizeof(tried));
  if (!api->lib) {
    snprintf(err, errlen, "NVRTC not found (tried %s and CUDA_HOME); "
             "install the CUDA toolkit or set CUDA_HOME", tried);
    return false;
  }
  TS_NVRTC_FUNCS(TS_DLSYM)
  find_include_dir(api);
  return true;
}

/* NVRTC stays loaded for the life of the process, as the CUDA runtime keeps
 * it: unloading it after each compile would leak its C++ runtime's pools
 * (about 70 KB a time) and pay for the dlopen again. */
static struct {
  pthread_once_t once;
  bool ok;
  ts_nvrtc_api api;
  char err[512];
} nvrtc = {.once = PTHREAD_ONCE_INIT};

static void load_nvrtc_once(void) {
  nvrtc.ok = load_nvrtc(&nvrtc.api, nvrtc.err, sizeof(nvrtc.err));
}

const ts_nvrtc_api *ts_nvrtc(char *err, size_t errlen) {
  pthread_once(&nvrtc.once, load_nvrtc_once);
  if (nvrtc.ok)
    return &nvrtc.api;
  snprintf(err, errlen, "%s", nvrtc.err);
  return NULL;
}
