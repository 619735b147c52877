/* The grid a launch makes (grid.h). */
#include "grid.h"

void ts_grid_launched(const int64_t grid[3], int persistent, int cluster,
                      int multiprocessors, int64_t out[3]) {
  for (int d = 0; d < 3; d++)
    out[d] = grid[d];
  int64_t most = (int64_t)multiprocessors * persistent;
  if (persistent && most > 0 && most < out[0])
    out[0] = most;
  /* Lowering makes C's tiles a multiple of the cluster. */
  if (cluster > 1)
    out[0] = out[0] > cluster ? out[0] - out[0] % cluster : cluster;
}
