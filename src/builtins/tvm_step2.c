/*
 * seed003 and tvm_step2: seed 003's TVM schedule, "tiling + loop
 * reordering", and its 3-knob parameter sweep.  Blocks of bm x bn (i on
 * blockIdx.x, j on blockIdx.y), (bm / tm) x (bn / tn) threads each
 * computing a tm x tn tile of C (i on threadIdx.x, j on threadIdx.y), k in
 * steps of bk.  As in the seed, no shared memory: A and B come through the
 * caches.  The sweep's knobs: the block tile, the thread tile and the loop
 * order inside a thread (the seed's three patterns; the seed shows only
 * k_innermost's code, so the other two are read from its descriptions):
 *
 *   k_innermost      ko, ie, je, ki   each result's 32-term dot product in
 *                                     a row, the tile in registers
 *   standard         ko, ki, ie, je   k first: per k, an outer product
 *   k_after_threads  ie, je, ko, ki   each result's whole reduction, one
 *                                     result at a time
 *
 * tvm_step2 is the seed's best configuration, the space's first one:
 * 32x32x32 blocks, 8x4 per thread, k innermost.
 */
#include "builtins_impl.h"

static const char *const blocks[] = {"32x32x32", "32x64x32", "64x32x32",
                                     "64x64x32", "64x64x64"};
static const int64_t block_dims[][3] = {
    {32, 32, 32}, {32, 64, 32}, {64, 32, 32}, {64, 64, 32}, {64, 64, 64}};
static const char *const threads[] = {"8x4", "2x2", "4x4", "4x8", "8x8"};
static const int64_t thread_dims[][2] = {{8, 4}, {2, 2}, {4, 4}, {4, 8},
                                         {8, 8}};
static const char *const orders[] = {"k_innermost", "standard",
                                     "k_after_threads"};

enum { NBLOCKS = 5, NTHREADS = 5, NORDERS = 3 };

ts_status space_seed003(ts_sched *s, ts_config *c) {
  const int64_t *b = block_dims[ts_knob_choice(c, "block", NBLOCKS, blocks)];
  const int64_t *t = thread_dims[ts_knob_choice(c, "thread", NTHREADS,
                                                threads)];
  int order = ts_knob_choice(c, "order", NORDERS, orders);
  ts_loop *ib, *ir, *it, *ie, *jb, *jr, *jt, *je, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), b[0], &ib, &ir);
  ts_split(s, ts_get_loop(s, "j"), b[1], &jb, &jr);
  ts_split(s, ts_get_loop(s, "k"), b[2], &ko, &ki);
  ts_split(s, ir, t[0], &it, &ie);
  ts_split(s, jr, t[1], &jt, &je);
  ts_loop *inner[NORDERS][4] = {
      {ko, ie, je, ki}, {ko, ki, ie, je}, {ie, je, ko, ki}};
  ts_loop **in = inner[order];
  ts_reorder(s, 8, (ts_loop *[]){ib, jb, it, jt, in[0], in[1], in[2], in[3]});
  ts_bind(s, ib, TS_BLOCK_X);
  ts_bind(s, jb, TS_BLOCK_Y);
  ts_bind(s, it, TS_THREAD_X);
  ts_bind(s, jt, TS_THREAD_Y);
  ts_unroll(s, ie);
  ts_unroll(s, je);
  return ts_sched_status(s);
}

ts_status example_tvm_step2(ts_sched *s) { return space_seed003(s, NULL); }
