/*
 * The built-in schedules, one file each in examples/.  Each applies its
 * primitives to a fresh ts_matmul schedule and returns its status.
 */
#ifndef TS_EXAMPLES_H
#define TS_EXAMPLES_H

#include "tessel.h"

ts_status example_naive(ts_sched *s);
ts_status example_coalesced(ts_sched *s);
ts_status example_smem32(ts_sched *s);
ts_status example_smem16(ts_sched *s);

#endif
