/*
 * Hand-written kernels as baselines: a CUDA source with an entry point
 * `gemm` and its launch geometry in device ints (see ts_cuda_kernel),
 * compiled by NVRTC with the options a schedule's kernel gets, so that the
 * comparison is of the kernels and not of the compilers.  The geometry is
 * read back from the loaded module, where the kernel's own constants put
 * it: one source of truth for the tile sizes the code and the grid use.
 */
#include <stdio.h>
#include <string.h>

#include "gpu.h"

/* Reads `count` ints of the module's global `name` into out.  A missing
 * optional global leaves out as it was. */
static bool read_ints(ts_gpu *g, const gpu_module *m, const ts_cuda_kernel *k,
                      const char *name, int *out, int count, bool optional) {
  CUdeviceptr p;
  size_t bytes = 0;
  CUresult r = g->cu.cuModuleGetGlobal(&p, &bytes, m->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND && optional)
    return true;
  if (r == CUDA_ERROR_NOT_FOUND)
    return gpu_fail(g, TS_ERR_BAD_ARG, "kernel \"%s\": the source defines no "
                    "extern \"C\" __device__ int %s[%d] (its launch geometry)",
                    k->name, name, count);
  if (!gpu_check(g, r, "cuModuleGetGlobal"))
    return false;
  if (bytes != sizeof(int) * (size_t)count)
    return gpu_fail(g, TS_ERR_BAD_ARG, "kernel \"%s\": %s is %zu bytes; it "
                    "must be int[%d]", k->name, name, bytes, count);
  if (!GPU_CALL(g, cuMemcpyDtoH(out, p, bytes)))
    return false;
  for (int i = 0; i < count; i++)
    if (out[i] < 1)
      return gpu_fail(g, TS_ERR_BAD_ARG, "kernel \"%s\": %s[%d] is %d; each "
                      "must be at least 1", k->name, name, i, out[i]);
  return true;
}

/* The definition against what the kernel's int parameters and
 * tessel_multiple allow; the reason in why when it does not fit. */
static bool shape_fits(const ts_cuda_kernel *k, const ts_gemm *d,
                       const int multiple[3], char *why, size_t len) {
  const int64_t dims[3] = {d->m, d->n, d->k};
  static const char *const names[3] = {"M", "N", "K"};
  for (int i = 0; i < 3; i++) {
    if (dims[i] % multiple[i] != 0) {
      snprintf(why, len, "kernel \"%s\" needs %s to be a multiple of %d "
               "(tessel_multiple); %s is %lld", k->name, names[i],
               multiple[i], names[i], (long long)dims[i]);
      return false;
    }
  }
  /* Its indices are ints: the largest matrix must have fewer elements. */
  int64_t largest = d->m * d->k;
  if (d->k * d->n > largest) largest = d->k * d->n;
  if (d->m * d->n > largest) largest = d->m * d->n;
  if (largest > 0x7fffffff) {
    snprintf(why, len, "kernel \"%s\" takes int indices; a matrix of %lld "
             "elements is past them", k->name, (long long)largest);
    return false;
  }
  return true;
}

static bool read_geometry(ts_gpu *g, const ts_gemm *d,
                          const ts_cuda_kernel *k, gpu_module *m, char *why,
                          size_t len) {
  int block[3], tile[2], multiple[3] = {1, 1, 1};
  if (!read_ints(g, m, k, "tessel_block", block, 3, false) ||
      !read_ints(g, m, k, "tessel_tile", tile, 2, false) ||
      !read_ints(g, m, k, "tessel_multiple", multiple, 3, true))
    return false;
  if (!shape_fits(k, d, multiple, why, len))
    return true;
  m->launch = (ts_launch){
      .grid = {(d->n + tile[1] - 1) / tile[1], (d->m + tile[0] - 1) / tile[0], 1},
      .block = {block[0], block[1], block[2]}};
  return true;
}

bool gpu_load_cuda(ts_gpu *g, const ts_gemm *def, const ts_cuda_kernel *k,
                   gpu_module *m, char *skipped, size_t len) {
  memset(m, 0, sizeof(*m));
  skipped[0] = 0;
  m->hand_written = true;
  m->def = *def;
  ts_kernel *c = kernel_from_source(k->source, "gemm", g->arch);
  bool ok = ts_kernel_status(c) == TS_OK;
  if (!ok)
    gpu_fail(g, ts_kernel_status(c), "kernel \"%s\": %s", k->name,
             ts_kernel_errmsg(c));
  /* A module that loads without the entry point: say what it must have. */
  if (ok && !(ok = gpu_load_module(g, c, m)) && m->mod && !m->fn)
    snprintf(g->errmsg + strlen(g->errmsg),
             sizeof(g->errmsg) - strlen(g->errmsg),
             " (kernel \"%s\" must define extern \"C\" __global__ void gemm)",
             k->name);
  ok = ok && read_geometry(g, def, k, m, skipped, len) &&
       (skipped[0] || gpu_fit_launch(g, k->name, m));
  if (!ok || skipped[0])
    gpu_unload(g, m);
  ts_kernel_free(c);
  return ok;
}
