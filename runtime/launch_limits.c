/*
 * The launch's needs against the device's limits (see resources.h).
 */
#include "launch_limits.h"

#include "../src/base/grid.h"

#include <stdio.h>

static bool over(char *msg, size_t len, const char *kernel, const char *device,
                 const char *what, long long need, long long have) {
  snprintf(msg, len, "kernel %s on %s: %s, over the device's %lld by %lld",
           kernel, device, what, have, need - have);
  return false;
}

bool resources_fit(const gpu_limits *dev, const char *device,
                   const char *kernel, const ts_launch_geometry *l,
                   const ts_ptxas_info *use, char *msg, size_t len) {
  static const char axis[3] = {'x', 'y', 'z'};
  char what[160];
  long long threads = l->block[0] * l->block[1] * l->block[2];
  for (int d = 0; d < 3; d++) {
    if (l->block[d] > dev->max_block[d]) {
      snprintf(what, sizeof(what), "block.%c is %lld", axis[d],
               (long long)l->block[d]);
      return over(msg, len, kernel, device, what, l->block[d], dev->max_block[d]);
    }
    if (l->grid[d] > dev->max_grid[d]) {
      snprintf(what, sizeof(what), "grid.%c is %lld", axis[d],
               (long long)l->grid[d]);
      return over(msg, len, kernel, device, what, l->grid[d], dev->max_grid[d]);
    }
  }
  if (threads > dev->max_threads_per_block) {
    snprintf(what, sizeof(what), "%lld threads per block", threads);
    return over(msg, len, kernel, device, what, threads,
                dev->max_threads_per_block);
  }
  long long regs = (long long)use->registers * threads;
  if (use->registers > 0 && regs > dev->max_registers_per_block) {
    snprintf(what, sizeof(what), "%d registers x %lld threads = %lld "
             "registers per block", use->registers, threads, regs);
    return over(msg, len, kernel, device, what, regs,
                dev->max_registers_per_block);
  }
  if (use->shared_bytes > dev->max_shared_per_block) {
    snprintf(what, sizeof(what), "%d bytes of static shared memory per block",
             use->shared_bytes);
    return over(msg, len, kernel, device, what, use->shared_bytes,
                dev->max_shared_per_block);
  }
  long long shared = (long long)use->shared_bytes + l->dynamic_shared;
  if (l->dynamic_shared > 0 && shared > dev->max_shared_optin) {
    snprintf(what, sizeof(what), "%lld bytes of shared memory per block "
             "(%lld dynamic)", shared, (long long)l->dynamic_shared);
    return over(msg, len, kernel, device, what, shared, dev->max_shared_optin);
  }
  return true;
}

void launch_grid(const gpu_limits *dev, const ts_launch_geometry *l,
                 int64_t grid[3]) {
  ts_grid_launched(l->grid, l->persistent, l->cluster, dev->multiprocessors,
                   grid);
}
