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
/* Resident blocks and threads of a multiprocessor on sm_80 and sm_90,
 * the architectures tessel targets. */
enum { TS_BLOCKS_PER_SM = 32, TS_THREADS_PER_SM = 2048 };
/* Registers a block, and a thread, may use on every architecture listed. */
enum { TS_REGISTERS_PER_BLOCK = 65536, TS_REGISTERS_PER_THREAD = 255 };

/* The table, by compute capability; count entries. */
const ts_arch_limits *ts_arch_table(int *count);
/* The entry of compute capability cc, or NULL. */
const ts_arch_limits *ts_arch_limits_of(int cc);
/* Shared memory a block may have on cc: its entry's, else
 * TS_STATIC_SHARED. */
int ts_arch_shared_block(int cc);

#endif
