/*
 * The device limits tessel plans against, in one table: what a block and
 * a multiprocessor hold on each compute capability (the CUDA programming
 * guide's table of technical specifications).  The schedule bounds shared
 * caches and occupancy hints by them, the compiler checks a kernel's
 * shared memory against its target's, and explain computes occupancy
 * from them.  The runtime reads the device's own limits from the driver.
 */
#ifndef TS_LIMITS_H
#define TS_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ts_arch_limits {
  int cc;               /* compute capability: 90 for sm_90 */
  const char *name;     /* "sm_90" */
  int shared_block;     /* bytes of shared memory a block may have, opted in */
  /* Per multiprocessor, for occupancy: 0 where the table leaves an
   * architecture out of explain (explained false). */
  int registers;        /* 32-bit registers */
  int shared;           /* bytes of shared memory */
  int threads, blocks;  /* resident threads and blocks */
  bool explained;       /* tessel explain reports its occupancy */
} ts_arch_limits;

/* Shared memory a block may declare statically, on every architecture;
 * also the most an architecture the table lacks is allowed. */
enum { TS_STATIC_SHARED = 48 * 1024 };
/* The most shared memory a block has on any architecture (sm_90's). */
enum { TS_SHARED_BLOCK_MAX = 227 * 1024 };
/* sm_90's shared memory a multiprocessor, and what the driver reserves of
 * it for each resident block: n blocks of b bytes fit where
 * n * (b + TS_SHARED_RESERVED_BLOCK) <= TS_SHARED_SM_MAX. */
enum { TS_SHARED_SM_MAX = 228 * 1024, TS_SHARED_RESERVED_BLOCK = 1024 };
/* Resident blocks and threads of a multiprocessor on sm_80 and sm_90,
 * the architectures tessel targets. */
enum { TS_BLOCKS_PER_SM = 32, TS_THREADS_PER_SM = 2048 };
/* Registers a block, and a thread, may use on every architecture listed. */
enum { TS_REGISTERS_PER_BLOCK = 65536, TS_REGISTERS_PER_THREAD = 255 };

/* The registers a thread may have at launch in blocks of `threads`,
 * `blocks` of them a multiprocessor (__launch_bounds__(threads, blocks)),
 * as ptxas bounds them: 65536 / (blocks * threads) rounded down to a
 * multiple of 8 (the allocator's granule), then at most 255; 0 for no
 * threads or blocks.  The launch register cap of every kernel, explain's
 * and the warp-specialized split's. */
int ts_launch_register_cap(int64_t threads, int64_t blocks);

/* A warp-specialized block's registers a thread (ts_warp_specialize):
 * `blocks` blocks of consumer + producer threads a multiprocessor, launched
 * with __launch_bounds__(threads, blocks), so that each thread has at most
 * `cap` registers (ts_launch_register_cap); then the producer warpgroup
 * gives registers back (setmaxnreg.dec `producer`) and the consumers take
 * them (setmaxnreg.inc `consumer`): 24..256, multiples of 8.  ptxas
 * launches such a kernel with the largest setmaxnreg count within that
 * cap, so the block's pool holds launch x threads; setmaxnreg.inc waits
 * until it has what it asks, so the counts never exceed it. */
typedef struct ts_register_split {
  int blocks;    /* blocks a multiprocessor the split is for */
  int launch;    /* a thread's registers at launch, as ptxas counts them */
  int producer;  /* a producer thread's after setmaxnreg.dec */
  int consumer;  /* a consumer thread's after setmaxnreg.inc */
} ts_register_split;

/* setmaxnreg's bounds, and what ts_register_split_of gives at one block
 * a multiprocessor: the producer keeps 40, the consumers take 232 (the
 * file is the block's: 40 x 128 + 232 x 256 = 168 x 384). */
enum { TS_SETMAXNREG_MIN = 24, TS_SETMAXNREG_MAX = 256,
       TS_PRODUCER_REGISTERS_1 = 40, TS_CONSUMER_REGISTERS_1 = 232 };

/* The split for `blocks` (1..) blocks of consumer_threads + producer_threads:
 * at one block 40 and 232; at more every register counts, so the producer
 * keeps setmaxnreg's minimum, 24, and the consumers take what it released,
 * cap + (cap - 24) x producer_threads / consumer_threads rounded down to a
 * multiple of 8, at most 232.  The launch count is the larger of the two
 * within the cap.  False when it does not fit: the launch count under the
 * producer's, or the counts over the pool. */
bool ts_register_split_of(int64_t consumer_threads, int64_t producer_threads,
                          int blocks, ts_register_split *out);

/* The table, by compute capability; count entries. */
const ts_arch_limits *ts_arch_table(int *count);
/* The entry of compute capability cc, or NULL. */
const ts_arch_limits *ts_arch_limits_of(int cc);
/* Shared memory a block may have on cc: its entry's, else
 * TS_STATIC_SHARED. */
int ts_arch_shared_block(int cc);

#endif
