/*
 * The grid a launch makes of a kernel's: a persistent grid's blocks cut to
 * the multiprocessors it runs on, kept whole clusters.  One formula for
 * the runtime (the device's multiprocessors), the reference executor and
 * explain (the ones they simulate), so that the grid checked on the CPU is
 * the grid launched.
 */
#ifndef TS_GRID_H
#define TS_GRID_H

#include <stdint.h>

/* out = grid, where `persistent` (blocks a multiprocessor; 0: none) cuts
 * grid[0] (C's tiles) to multiprocessors x persistent, and `cluster`
 * (blocks a cluster along x; 0 or 1: none) keeps grid[0] a multiple of
 * it: __cluster_dims__ refuses any other launch. */
void ts_grid_launched(const int64_t grid[3], int persistent, int cluster,
                      int multiprocessors, int64_t out[3]);

#endif
