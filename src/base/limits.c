/*
 * The table of device limits (see limits.h).
 */
#include "limits.h"

#include <stddef.h>

static const ts_arch_limits table[] = {
    {70, "sm_70", 96 * 1024, 0, 0, 0, 0, false},
    {72, "sm_72", 96 * 1024, 0, 0, 0, 0, false},
    {75, "sm_75", 64 * 1024, 0, 0, 0, 0, false},
    {80, "sm_80", 163 * 1024, 65536, 164 * 1024, 2048, 32, true},
    {86, "sm_86", 99 * 1024, 65536, 100 * 1024, 1536, 16, true},
    {87, "sm_87", 163 * 1024, 0, 0, 0, 0, false},
    {89, "sm_89", 99 * 1024, 65536, 100 * 1024, 1536, 24, true},
    {90, "sm_90", 227 * 1024, 65536, 228 * 1024, 2048, 32, true},
    {100, "sm_100", 227 * 1024, 0, 0, 0, 0, false},
    {103, "sm_103", 227 * 1024, 0, 0, 0, 0, false},
    {110, "sm_110", 227 * 1024, 0, 0, 0, 0, false},
    {120, "sm_120", 99 * 1024, 0, 0, 0, 0, false},
    {121, "sm_121", 99 * 1024, 0, 0, 0, 0, false},
};

const ts_arch_limits *ts_arch_table(int *count) {
  *count = (int)(sizeof(table) / sizeof(table[0]));
  return table;
}

const ts_arch_limits *ts_arch_limits_of(int cc) {
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
    if (table[i].cc == cc)
      return &table[i];
  return NULL;
}

int ts_arch_shared_block(int cc) {
  const ts_arch_limits *a = ts_arch_limits_of(cc);
  return a ? a->shared_block : TS_STATIC_SHARED;
}

/* n rounded down to a multiple of 8: setmaxnreg's and the allocator's
 * granule. */
static int64_t granule_down(int64_t n) { return n / 8 * 8; }

int ts_launch_register_cap(int64_t threads, int64_t blocks) {
  if (threads < 1 || blocks < 1)
    return 0;
  int64_t cap = granule_down(TS_REGISTERS_PER_BLOCK / (blocks * threads));
  return (int)(cap < TS_REGISTERS_PER_THREAD ? cap : TS_REGISTERS_PER_THREAD);
}

bool ts_register_split_of(int64_t consumer_threads, int64_t producer_threads,
                          int blocks, ts_register_split *out) {
  int64_t threads = consumer_threads + producer_threads;
  *out = (ts_register_split){.blocks = blocks};
  if (blocks < 1 || consumer_threads < 1 || producer_threads < 1)
    return false;
  int64_t cap = ts_launch_register_cap(threads, blocks);
  int64_t producer = TS_PRODUCER_REGISTERS_1, consumer = TS_CONSUMER_REGISTERS_1;
  if (blocks > 1) {
    producer = TS_SETMAXNREG_MIN;
    consumer = granule_down(cap + (cap - producer) * producer_threads /
                                      consumer_threads);
    if (consumer > TS_CONSUMER_REGISTERS_1)
      consumer = TS_CONSUMER_REGISTERS_1;
  }
  /* ptxas launches a kernel that has setmaxnreg with its largest count
   * ("the largest temporal register count in the program"), within the
   * cap: one consumer warpgroup at one block launches with 232, not 255. */
  int64_t largest = consumer > producer ? consumer : producer;
  int64_t launch = largest < cap ? largest : cap;
  out->launch = (int)launch;
  out->producer = (int)producer;
  out->consumer = (int)consumer;
  return producer <= launch &&
         producer * producer_threads + consumer * consumer_threads <=
             launch * threads;
}
