/*
 * splitk: blocktile2d with the reduction split across 4 blocks along
 * blockIdx.z.  Where C has few 128 x 128 tiles and K is long (a 512 x 512
 * C with K = 16384 has 16 tiles for a GPU of 132 multiprocessors), each
 * block sums a quarter of k into a workspace, and a second kernel adds the
 * four partial sums in order and applies alpha and beta (deterministic).
 */
#include "builtins_impl.h"

ts_status example_splitk(ts_sched *s) {
  ts_loop *kz, *kr;
  ts_split_k(s, ts_get_loop(s, "k"), 4, TS_SPLIT_K_WORKSPACE, &kz, &kr);
  return blocktile2d_over(s, kr);
}
