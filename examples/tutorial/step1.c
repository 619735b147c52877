/*
 * Tutorial step 1 (docs/tutorial.md): the naive GEMM on the GPU.  One
 * thread computes one element of C; a block is 32 x 32 threads, a 32 x 32
 * tile of C.  threadIdx.x walks down the rows of C, so the 32 threads of
 * a warp read A from 32 rows K floats apart and write C a row apart:
 * nothing coalesces.
 *
 *   tessel show examples/tutorial/step1.c --steps
 *   tessel check examples/tutorial/step1.c --shape 37x53x29
 *   tessel bench examples/tutorial/step1.c --shape 4096x4096x4096
 */
#include <tessel.h>

TS_SCHEDULE(rows_first, "a thread an element of C, threadIdx.x down the "
            "rows") {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, jo, TS_BLOCK_Y);
  ts_bind(s, ii, TS_THREAD_X);
  ts_bind(s, ji, TS_THREAD_Y);
  return ts_sched_status(s);
}
