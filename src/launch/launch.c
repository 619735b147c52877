/*
 * ts_launch: a compiled kernel on the caller's device memory and stream.
 *
 * The driver is loaded once per process.  A kernel keeps, for each context
 * it ran in, its module there: the functions of its entry points, their
 * grids on that device, the workspace when the caller gives none, and the
 * tensor maps encoded for the buffers seen (cuTensorMapEncodeTiled is host
 * work a launch on the same buffers need not repeat).  That state hangs
 * off the kernel (ts_kernel.launch_state) and is released with it; one
 * lock guards every kernel's, so launches from many threads are safe, and
 * a launch after the first in a context makes no driver call but the
 * launches themselves, so it can be captured in a CUDA graph.
 */
#include "launcher.h"

#include "../base/grid.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One entry point loaded in one context. */
typedef struct loaded_entry {
  CUfunction fn;
  int64_t grid[3];
  launch_map_cache *maps; /* one a parameter; NULL where none is a map */
} loaded_entry;

/* The kernel in one context. */
typedef struct loaded_module {
  CUcontext ctx;
  CUmodule mod;
  loaded_entry *entries; /* the kernel's nentries */
  CUdeviceptr workspace; /* the launcher's own; 0 until a launch needs it */
  int multiprocessors;   /* the device's, for grids sized at each launch */
  struct loaded_module *next;
} loaded_module;

typedef struct launch_state {
  loaded_module *modules;
  int nentries; /* the kernel's, for the release */
} launch_state;

static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static ts_driver_api driver;
static bool driver_loaded;
static char driver_error[512];
static _Thread_local char last_error[2048];

static void load_driver_once(void) {
  driver_loaded = ts_load_driver(&driver, driver_error, sizeof(driver_error));
}

const char *ts_launch_errmsg(void) { return last_error; }

__attribute__((format(printf, 2, 3))) static ts_status
launch_fail(ts_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, ap);
  va_end(ap);
  return code;
}

/* A failed driver call, named, with what the launch was doing. */
static ts_status driver_fail(CUresult r, const char *call, const char *what,
                             const ts_kernel *k) {
  char why[512];
  ts_driver_error(&driver, r, call, why, sizeof(why));
  return launch_fail(r == CUDA_ERROR_NO_DEVICE ? TS_ERR_NO_GPU : TS_ERR_CUDA,
                     "ts_launch: %s kernel \"%s\": %s", what, k->label, why);
}

#define DRIVER(k, what, call)                                                 \
  do {                                                                        \
    CUresult r_ = driver.call;                                                \
    if (r_ != CUDA_SUCCESS)                                                   \
      return driver_fail(r_, #call, what, k);                                 \
  } while (0)

/* ---- Loading into a context ------------------------------------------------ */

static void unload_module(loaded_module *m, int nentries) {
  bool pushed = driver.cuCtxPushCurrent(m->ctx) == CUDA_SUCCESS;
  if (m->workspace)
    driver.cuMemFree(m->workspace);
  if (m->mod)
    driver.cuModuleUnload(m->mod);
  if (pushed)
    driver.cuCtxPopCurrent(NULL);
  for (int i = 0; m->entries && i < nentries; i++)
    free(m->entries[i].maps);
  free(m->entries);
  free(m);
}

/* Released with the kernel (ts_kernel_free); a module's context may be
 * gone by then, and the driver's calls on it fail harmlessly. */
static void release_state(void *p) {
  launch_state *s = p;
  for (loaded_module *m = s->modules, *next; m; m = next) {
    next = m->next;
    unload_module(m, s->nentries);
  }
  free(s);
}

/* "sm_90a" -> 90, and whether it is arch-specific. */
static int arch_of(const char *arch, bool *specific) {
  int n = 0;
  if (sscanf(arch, "sm_%d", &n) != 1)
    return -1;
  *specific = strchr(arch, 'a') != NULL;
  return n;
}

/* A cubin runs on devices of its major version and a minor at least its
 * own; one of the arch-specific instructions (sm_90a's wgmma) on its own
 * architecture only. */
static bool runs_on(const char *arch, int major, int minor) {
  bool specific = false;
  int built = arch_of(arch, &specific);
  return built / 10 == major &&
         (specific ? built == major * 10 + minor : built % 10 <= minor);
}

/* The kernel's cubin the device runs (ts_compile_for gives a kernel
 * several), the first that does; or why none does. */
static ts_status cubin_for(const ts_kernel *k, CUdevice dev,
                           const void **cubin) {
  int major = 0, minor = 0;
  DRIVER(k, "reading the device of", cuDeviceGetAttribute(&major,
         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  DRIVER(k, "reading the device of", cuDeviceGetAttribute(&minor,
         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  char archs[256] = "";
  for (int i = 0; i < ts_kernel_image_count(k); i++) {
    const char *arch;
    const void *image = ts_kernel_image(k, i, &arch, NULL);
    if (runs_on(arch, major, minor)) {
      *cubin = image;
      return TS_OK;
    }
    size_t used = strlen(archs);
    snprintf(archs + used, sizeof(archs) - used, "%s%s", i ? ", " : "", arch);
  }
  return launch_fail(TS_ERR_BAD_ARCH, "ts_launch: kernel \"%s\" was "
                     "compiled for %s; the device of the current context is "
                     "sm_%d%d (compute capability %d.%d), which cannot run "
                     "it: compile it for sm_%d%d (ts_compile_for takes "
                     "several architectures)", k->label, archs, major, minor,
                     major, minor, major, minor);
}

/* The entry points' functions, grids and tensor-map slots. */
static ts_status load_entries(const ts_kernel *k, loaded_module *m,
                              int multiprocessors) {
  for (int i = 0; i < k->nentries; i++) {
    const kernel_entry *e = &k->entries[i];
    loaded_entry *le = &m->entries[i];
    DRIVER(k, "loading", cuModuleGetFunction(&le->fn, m->mod, e->name));
    m->multiprocessors = multiprocessors;
    ts_grid_launched(e->launch.grid, e->launch.persistent, e->launch.cluster,
                     multiprocessors, le->grid);
    if (e->launch.dynamic_shared > 0)
      DRIVER(k, "opting into the dynamic shared memory of",
             cuFuncSetAttribute(le->fn,
                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                (int)e->launch.dynamic_shared));
    if (!launch_map_caches(e->params, e->nparams, &le->maps))
      return launch_fail(TS_ERR_NO_MEMORY, "ts_launch: out of memory for "
                         "the tensor maps of kernel \"%s\"", k->label);
  }
  return TS_OK;
}

static ts_status load_module(const ts_kernel *k, CUcontext ctx,
                             loaded_module *m) {
  CUdevice dev;
  int sms = 0;
  m->ctx = ctx;
  DRIVER(k, "reading the context of", cuCtxGetDevice(&dev));
  const void *cubin = NULL;
  ts_status st = cubin_for(k, dev, &cubin);
  if (st != TS_OK)
    return st;
  DRIVER(k, "reading the device of", cuDeviceGetAttribute(&sms,
         CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  DRIVER(k, "loading the cubin of", cuModuleLoadData(&m->mod, cubin));
  if (!(m->entries = calloc((size_t)k->nentries, sizeof(*m->entries))))
    return launch_fail(TS_ERR_NO_MEMORY, "ts_launch: out of memory loading "
                       "kernel \"%s\"", k->label);
  return load_entries(k, m, sms);
}

/* The kernel's module in ctx: the one loaded, else loaded now.  Called
 * with the lock held. */
static ts_status module_in(const ts_kernel *k, CUcontext ctx,
                           loaded_module **out) {
  ts_kernel *mk = (ts_kernel *)k; /* its launch state only */
  if (!mk->launch_state) {
    launch_state *s = calloc(1, sizeof(*s));
    if (!s)
      return launch_fail(TS_ERR_NO_MEMORY, "ts_launch: out of memory");
    s->nentries = k->nentries;
    mk->launch_state = s;
    mk->release_launch = release_state;
  }
  launch_state *s = mk->launch_state;
  for (loaded_module *m = s->modules; m; m = m->next)
    if (m->ctx == ctx) {
      *out = m;
      return TS_OK;
    }
  loaded_module *m = calloc(1, sizeof(*m));
  if (!m)
    return launch_fail(TS_ERR_NO_MEMORY, "ts_launch: out of memory");
  ts_status st = load_module(k, ctx, m);
  if (st != TS_OK) {
    unload_module(m, k->nentries);
    return st;
  }
  m->next = s->modules;
  s->modules = m;
  *out = m;
  return TS_OK;
}

/* ---- Arguments and the launches --------------------------------------------- */

static ts_status workspace_of(const ts_kernel *k, const ts_launch_args *a,
                              loaded_module *m, CUdeviceptr *out) {
  *out = (CUdeviceptr)a->workspace;
  if (k->workspace <= 0 || *out)
    return TS_OK;
  if (!m->workspace)
    DRIVER(k, "allocating the workspace of",
           cuMemAlloc(&m->workspace, (size_t)k->workspace));
  *out = m->workspace;
  return TS_OK;
}

enum { MAX_ARGS = 32 };

/* Entry i on its arguments, on the stream. */
static ts_status launch_entry(const ts_kernel *k, loaded_module *m, int i,
                              const launch_values *v, CUstream stream) {
  const kernel_entry *e = &k->entries[i];
  loaded_entry *le = &m->entries[i];
  launch_arg values[MAX_ARGS]; /* CUtensorMap: 64-byte aligned */
  void *args[MAX_ARGS];
  if (e->nparams > MAX_ARGS)
    return launch_fail(TS_ERR_BAD_ARG, "ts_launch: kernel \"%s\"'s entry "
                       "%s takes %d parameters, more than the launcher's "
                       "%d", k->label, e->name, e->nparams, MAX_ARGS);
  for (int j = 0; j < e->nparams; j++) {
    const ts_param *p = &e->params[j];
    values[j] = launch_scalar(p, v);
    if (p->kind == TS_PARAM_TENSOR_MAP) {
      CUresult r = launch_cached_map(&driver, &le->maps[j], p, v->values,
                                     values[j].ptr, &values[j].map);
      if (r != CUDA_SUCCESS)
        return driver_fail(r, "cuTensorMapEncodeTiled", "encoding a tensor "
                           "map of", k);
    }
    args[j] = &values[j];
  }
  const ts_launch_geometry *l = &e->launch;
  /* A grid that follows the extents is sized for this launch's (the
   * arguments' check evaluated it already). */
  int64_t grid[3] = {le->grid[0], le->grid[1], le->grid[2]};
  if (e->grid_size[0].n || e->grid_size[1].n || e->grid_size[2].n)
    launch_grid_at(e, v->values, m->multiprocessors, grid);
  CUresult r = driver.cuLaunchKernel(
      le->fn, (unsigned)grid[0], (unsigned)grid[1],
      (unsigned)grid[2], (unsigned)l->block[0], (unsigned)l->block[1],
      (unsigned)l->block[2], (unsigned)l->dynamic_shared, stream, args, NULL);
  if (r != CUDA_SUCCESS) {
    char why[512];
    ts_driver_error(&driver, r, "cuLaunchKernel", why, sizeof(why));
    return launch_fail(TS_ERR_CUDA, "ts_launch: kernel \"%s\", entry %d of "
                       "%d (%s): %s", k->label, i + 1, k->nentries, e->name,
                       why);
  }
  return TS_OK;
}

static ts_status launch_locked(const ts_kernel *k, const ts_launch_args *a,
                               CUcontext ctx, CUstream stream) {
  loaded_module *m = NULL;
  ts_status st = module_in(k, ctx, &m);
  launch_values v = {0};
  launch_values_of(&k->def, &v); /* then the launch's own values */
  v.values[TS_VALUE_M] = a->m;
  v.values[TS_VALUE_N] = a->n;
  v.values[TS_VALUE_K] = a->k;
  v.alpha = a->alpha;
  v.beta = a->beta;
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    v.buffers[r] = (CUdeviceptr)a->operand[r].ptr;
    v.values[TS_VALUE_LDA + r] = launch_ld(k, a, (ts_operand_role)r);
  }
  if (st == TS_OK)
    st = workspace_of(k, a, m, &v.buffers[TS_PARAM_WORKSPACE]);
  for (int i = 0; i < k->nentries && st == TS_OK; i++)
    st = launch_entry(k, m, i, &v, stream);
  return st;
}

ts_status ts_launch(const ts_kernel *k, const ts_launch_args *a,
                    void *stream) {
  last_error[0] = 0;
  ts_status st = launch_check(k, a, last_error, sizeof(last_error));
  if (st != TS_OK)
    return st;
  pthread_once(&driver_once, load_driver_once);
  if (!driver_loaded)
    return launch_fail(TS_ERR_NO_GPU, "ts_launch: %s", driver_error);
  CUcontext ctx = NULL;
  CUresult r = driver.cuCtxGetCurrent(&ctx);
  if (r != CUDA_SUCCESS)
    return driver_fail(r, "cuCtxGetCurrent", "finding the context for", k);
  if (!ctx)
    return launch_fail(TS_ERR_CUDA, "ts_launch: no CUDA context is current "
                       "in this thread: make one current (cuCtxSetCurrent "
                       "with a device's primary context, or any CUDA "
                       "runtime call such as cudaSetDevice) before "
                       "launching kernel \"%s\"", k->label);
  pthread_mutex_lock(&launch_lock);
  st = launch_locked(k, a, ctx, (CUstream)stream);
  pthread_mutex_unlock(&launch_lock);
  return st;
}

ts_launch_args ts_launch_args_of(const ts_kernel *k) {
  ts_launch_args a = {0};
  if (!k)
    return a;
  a.m = k->def.m;
  a.n = k->def.n;
  a.k = k->def.k;
  a.alpha = k->def.alpha;
  a.beta = k->def.beta;
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand o = ts_gemm_operand(&k->def, (ts_operand_role)r);
    a.operand[r] = (ts_launch_operand){.ld = o.ld, .type = o.type};
  }
  return a;
}
