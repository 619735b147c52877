/*
 * Parameters' values: buffers at their offsets, the definition's scalars,
 * and the tensor maps the TMA kernels take (__grid_constant__), encoded on
 * the host from the parameter's description and the launch's buffer.
 */
#include "launcher.h"

#include "../base/dtype.h"
#include "../base/grid.h"

#include <stdlib.h>
#include <string.h>

void launch_values_of(const ts_gemm *g, launch_values *v) {
  ts_param_values_of(g, v->values);
  v->alpha = g->alpha;
  v->beta = g->beta;
}

bool launch_grid_at(const kernel_entry *e, const int64_t *values,
                    int multiprocessors, int64_t out[3]) {
  int64_t grid[3];
  for (int d = 0; d < 3; d++) {
    grid[d] = e->launch.grid[d];
    if (e->grid_size[d].n && !ts_formula_eval(&e->grid_size[d], values,
                                              &grid[d]))
      return false;
  }
  ts_grid_launched(grid, e->launch.persistent, e->launch.cluster,
                   multiprocessors, out);
  return true;
}

launch_arg launch_scalar(const ts_param *p, const launch_values *v) {
  launch_arg a = {0};
  switch (p->kind) {
  case TS_PARAM_BUFFER:
  case TS_PARAM_TENSOR_MAP:
    a.ptr = v->buffers[p->buffer] + (CUdeviceptr)p->offset;
    break;
  case TS_PARAM_INT:
    a.i = (int)v->values[p->value];
    break;
  case TS_PARAM_FLOAT:
    a.f = p->value == TS_VALUE_ALPHA ? v->alpha : v->beta;
    break;
  }
  return a;
}

/* A copy reads zeros past the edges (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
 * fills zeros), a store writes nothing there.  tf32's packed operands are
 * FLOAT32: the pack rounded them already, and the copy must move their
 * bits unchanged. */
CUresult launch_encode_map(const ts_driver_api *cu, const ts_param *p,
                           CUdeviceptr base, CUtensorMap *map) {
  static const CUtensorMapDataType types[TS_DTYPE_COUNT] = {
      [TS_F32] = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
      [TS_F16] = CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      [TS_BF16] = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16};
  cuuint64_t dims[2] = {(cuuint64_t)p->dims[0], (cuuint64_t)p->dims[1]};
  cuuint64_t strides[1] = {(cuuint64_t)p->row_bytes};
  cuuint32_t box[2] = {(cuuint32_t)p->box[0], (cuuint32_t)p->box[1]};
  cuuint32_t step[2] = {1, 1};
  return cu->cuTensorMapEncodeTiled(
      map, types[p->dtype], 2, (void *)(uintptr_t)base, dims, strides, box,
      step, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

bool launch_map_caches(const ts_param *params, int nparams,
                       launch_map_cache **out) {
  *out = NULL;
  bool any = false;
  for (int i = 0; i < nparams; i++)
    any |= params[i].kind == TS_PARAM_TENSOR_MAP;
  if (!any)
    return true;
  size_t bytes = (size_t)nparams * sizeof(launch_map_cache);
  if (!(*out = aligned_alloc(_Alignof(launch_map_cache), bytes)))
    return false;
  memset(*out, 0, bytes);
  return true;
}

/* p's map at the launch's values: each dimension and the row pitch that
 * follows one of them takes it. */
static ts_param map_at(const ts_param *p, const int64_t *values) {
  ts_param q = *p;
  for (int d = 0; d < 2; d++)
    if (p->dim_from[d])
      q.dims[d] = values[p->dim_from[d] - 1];
  if (p->pitch_from)
    q.row_bytes = values[p->pitch_from - 1] * ts_dtype_size(p->dtype);
  q.dim_from[0] = q.dim_from[1] = q.pitch_from = 0;
  return q;
}

CUresult launch_cached_map(const ts_driver_api *cu, launch_map_cache *c,
                           const ts_param *given, const int64_t *values,
                           CUdeviceptr base, CUtensorMap *out) {
  ts_param p = map_at(given, values);
  for (int i = 0; i < c->n; i++)
    if (c->base[i] == base && c->dims[i][0] == p.dims[0] &&
        c->dims[i][1] == p.dims[1] && c->row_bytes[i] == p.row_bytes) {
      *out = c->map[i];
      return CUDA_SUCCESS;
    }
  CUresult r = launch_encode_map(cu, &p, base, out);
  if (r != CUDA_SUCCESS)
    return r;
  int i = c->n;
  if (c->n < LAUNCH_MAP_SLOTS) {
    c->n++;
  } else {
    i = c->next;
    c->next = (c->next + 1) % LAUNCH_MAP_SLOTS;
  }
  c->map[i] = *out;
  c->base[i] = base;
  c->dims[i][0] = p.dims[0];
  c->dims[i][1] = p.dims[1];
  c->row_bytes[i] = p.row_bytes;
  return CUDA_SUCCESS;
}
