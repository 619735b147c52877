/*
 * Tutorial step 2 (docs/tutorial.md): coalesced.  Step 1 with the thread
 * indices swapped: threadIdx.x on the columns of C.  A warp now reads one
 * element of A (the same for all 32 threads, a broadcast) and 32
 * consecutive elements of B, and writes 32 consecutive elements of C.
 *
 *   tessel show examples/tutorial/step2.c --steps
 *   tessel check examples/tutorial/step2.c --shape 37x53x29
 *   tessel bench examples/tutorial/step1.c examples/tutorial/step2.c \
 *       --shape 4096x4096x4096
 */
#include <tessel.h>

TS_SCHEDULE(cols_first, "a thread an element of C, threadIdx.x along the "
            "columns") {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  return ts_sched_status(s);
}
