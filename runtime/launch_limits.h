/*
 * What a launch needs against what the device has: threads per block,
 * registers per block (ptxas's count times the threads), shared memory per
 * block and grid dimensions.  Checked before every launch, so that a kernel
 * the device cannot run is refused with the limit it passes and by how
 * much, not with the driver's CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES.
 */
#ifndef TS_RESOURCES_H
#define TS_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessel/compile.h"
#include "tessel/program_read.h"

typedef struct gpu_limits {
  int max_threads_per_block;
  int max_block[3];
  int max_grid[3];
  int max_registers_per_block;
  int max_shared_per_block; /* static shared memory */
  int max_shared_optin;     /* static and dynamic, with the opt-in */
  int multiprocessors;      /* a persistent grid's blocks are a multiple */
} gpu_limits;

/* The grid of a launch on the device: a persistent grid's (ts_persistent)
 * min(tiles, multiprocessors x blocks a multiprocessor) blocks, else the
 * launch's own. */
void launch_grid(const gpu_limits *dev, const ts_launch_geometry *launch,
                 int64_t grid[3]);

/* True when the kernel fits; otherwise false with the reason in msg:
 * "kernel tessel_x on NVIDIA H200: 129 registers x 1024 threads = 132096
 * registers per block, over the device's 65536 by 66560". */
bool resources_fit(const gpu_limits *dev, const char *device,
                   const char *kernel, const ts_launch_geometry *launch,
                   const ts_ptxas_info *use, char *msg, size_t len);

#endif
