/*
 * The launcher's parts that the runtime shares (runtime/gpu.c launches
 * through the same code): a kernel parameter's value in a launch's
 * argument array, and a tensor map's encoding.  Only the driver below.
 */
#ifndef TS_LAUNCHER_H
#define TS_LAUNCHER_H

#include "../compile/kernel.h"
#include "driver.h"
#include "tessel/launch.h"

/* A parameter's value in a launch's argument array. */
typedef union launch_arg {
  CUdeviceptr ptr;
  int i;
  float f;
  CUtensorMap map; /* 64-byte aligned: arrays of these are */
} launch_arg;

/* What a launch's parameters take their values from: the device buffers
 * by ts_param_buffer (A, B, C, the workspace), the extents, alpha, beta. */
typedef struct launch_values {
  CUdeviceptr buffers[TS_PARAM_NBUFFERS];
  int64_t values[TS_VALUE_COUNT]; /* m, n, k, the leading dimensions */
  float alpha, beta;
} launch_values;

/* The values of definition g (its extents and resolved leading
 * dimensions) into v. */
void launch_values_of(const ts_gemm *g, launch_values *v);

/* Entry e's grid at values v on `multiprocessors`: its formulas
 * evaluated where its grid follows the launch's extents, then cut as a
 * persistent grid's is (ts_grid_launched).  False where a formula does
 * not evaluate. */
bool launch_grid_at(const kernel_entry *e, const int64_t *values,
                    int multiprocessors, int64_t out[3]);

/* The value of p, a buffer (at its offset) or a scalar; a tensor map's
 * base address (its buffer at its offset) for a map. */
launch_arg launch_scalar(const ts_param *p, const launch_values *v);

/* The tensor map of p over the buffer at `base`: 2-D, innermost dimension
 * first, the box and 128-byte swizzle the kernel's copies and stores
 * expect. */
CUresult launch_encode_map(const ts_driver_api *cu, const ts_param *p,
                           CUdeviceptr base, CUtensorMap *map);

/* The tensor maps one TS_PARAM_TENSOR_MAP parameter was encoded to, one
 * for each base address its launches gave (cuTensorMapEncodeTiled is host
 * work: ts_bench would do it between a timed launch's start event and the
 * launch, and a launch in a loop on the same buffers need not repeat it):
 * a launch on buffers (and at extents) seen before copies the map kept.  Past
 * LAUNCH_MAP_SLOTS addresses the oldest is replaced (ts_bench rotates
 * over at most that many input sets). */
enum { LAUNCH_MAP_SLOTS = 8 };
typedef struct launch_map_cache {
  CUtensorMap map[LAUNCH_MAP_SLOTS];
  CUdeviceptr base[LAUNCH_MAP_SLOTS];
  /* and the shape it was encoded for, which follows the launch's
   * extents where they are chosen at launch */
  int64_t dims[LAUNCH_MAP_SLOTS][2], row_bytes[LAUNCH_MAP_SLOTS];
  int n;    /* maps held */
  int next; /* the one a new address replaces once all are held */
} launch_map_cache;

/* Room for a cache per parameter of a list, where one is a tensor map:
 * *out NULL where none is; false when memory runs out. */
bool launch_map_caches(const ts_param *params, int nparams,
                       launch_map_cache **out);
/* p's map over base at the launch's values (by ts_param_value), from
 * the cache or encoded into it: a map is kept by base address and shape. */
CUresult launch_cached_map(const ts_driver_api *cu, launch_map_cache *c,
                           const ts_param *p, const int64_t *values,
                           CUdeviceptr base, CUtensorMap *out);

/* The leading dimension of operand r at this launch: the one given, or
 * its stored row at the launch's extents where 0. */
int64_t launch_ld(const ts_kernel *k, const ts_launch_args *a,
                  ts_operand_role r);

/* ts_launch's checks of its arguments against the kernel, before anything
 * touches the device: TS_OK, or why not in msg. */
ts_status launch_check(const ts_kernel *k, const ts_launch_args *a,
                       char *msg, size_t len);

#endif
