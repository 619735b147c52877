/*
 * Hand-written kernels as baselines: a CUDA source with an entry point
 * `gemm` and its launch geometry in device ints (see ts_cuda_kernel),
 * compiled by NVRTC with the options a schedule's kernel gets
 * (ts_compile_cuda), so that the comparison is of the kernels and not of
 * the compilers.  The geometry is read back from the loaded module, where
 * the kernel's own constants put it: one source of truth for the tile sizes
 * the code and the grid use.
 */
#include <stdio.h>
#include <string.h>

#include "gpu_impl.h"

/* Reads `count` ints of the module's global `name` into out.  A missing
 * optional global leaves out as it was. */
static bool read_ints(ts_gpu *g, const gpu_module *m, const ts_kernel *k,
                      const char *name, int *out, int count, bool optional) {
  CUdeviceptr p;
  size_t bytes = 0;
  CUresult r = g->cu.cuModuleGetGlobal(&p, &bytes, m->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND && optional)
    return true;
  if (r == CUDA_ERROR_NOT_FOUND)
    return gpu_fail(g, TS_ERR_BAD_ARG, "kernel \"%s\": the source defines no "
                    "extern \"C\" __device__ int %s[%d] (its launch geometry)",
                    k->label, name, count);
  if (!gpu_check(g, r, "cuModuleGetGlobal"))
    return false;
  if (bytes != sizeof(int) * (size_t)count)
    return gpu_fail(g, TS_ERR_BAD_ARG, "kernel \"%s\": %s is %zu bytes; it "
                    "must be int[%d]", k->label, name, bytes, count);
  if (!GPU_CALL(g, cuMemcpyDtoH(out, p, bytes)))
    return false;
  for (int i = 0; i < count; i++)
    if (out[i] < 1)
      return gpu_fail(g, TS_ERR_BAD_ARG, "kernel \"%s\": %s[%d] is %d; each "
                      "must be at least 1", k->label, name, i, out[i]);
  return true;
}

/* The definition against what the kernel's int parameters and
 * tessel_multiple allow; the reason in why when it does not fit. */
static bool shape_fits(const ts_kernel *k, const ts_gemm *d,
                       const int multiple[3], char *why, size_t len) {
  const int64_t dims[3] = {d->m, d->n, d->k};
  static const char *const names[3] = {"M", "N", "K"};
  for (int i = 0; i < 3; i++) {
    if (dims[i] % multiple[i] != 0) {
      snprintf(why, len, "kernel \"%s\" needs %s to be a multiple of %d "
               "(tessel_multiple); %s is %lld", k->label, names[i],
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
             "elements is past them", k->label, (long long)largest);
    return false;
  }
  return true;
}

bool gpu_read_geometry(ts_gpu *g, const ts_kernel *k, gpu_module *m,
                       char *why, size_t len) {
  const ts_gemm *d = &k->def;
  int block[3], tile[2], multiple[3] = {1, 1, 1};
  if (!read_ints(g, m, k, "tessel_block", block, 3, false) ||
      !read_ints(g, m, k, "tessel_tile", tile, 2, false) ||
      !read_ints(g, m, k, "tessel_multiple", multiple, 3, true))
    return false;
  if (!shape_fits(k, d, multiple, why, len))
    return true;
  m->fns[m->main].launch = (ts_launch_geometry){
      .grid = {(d->n + tile[1] - 1) / tile[1], (d->m + tile[0] - 1) / tile[0], 1},
      .block = {block[0], block[1], block[2]}};
  return true;
}
