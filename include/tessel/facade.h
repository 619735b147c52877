/*
 * Conveniences that lower a schedule and use the program once (src/facade.c).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_FACADE_H
#define TESSEL_FACADE_H

#include "compile.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same from a schedule, lowering it each time (the program is freed
 * before they return; lower once with ts_lower to do several things). */
char *ts_print_ir(const ts_sched *s);
char *ts_cuda_source(const ts_sched *s);
ts_status ts_launch_dims(const ts_sched *s, ts_launch_geometry *out);
ts_status ts_execute(const ts_sched *s, const float *A, const float *B,
                     float *C, char *msg, size_t msglen);
ts_status ts_check(const ts_sched *s, uint64_t seed, char *msg,
                   size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
