/*
 * Lowering: a schedule to a program, lowering's artifact (src/lower/);
 * how the program is read is in program_read.h, which this includes.
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_PROGRAM_H
#define TESSEL_PROGRAM_H

#include "program_read.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The lowered kernel -------------------------------------------------- */

/* Lowering turns a schedule into a program: one self-contained, immutable
 * kernel (its body, parameters, launch geometry, shared memory, occupancy
 * hint, entry point and the definition it computes) that owns all of its
 * memory.  The code generator, the reference executor, the compiler and the
 * GPU take only a program, never the schedule, which lowering does not
 * change: a schedule that lowering refuses keeps its TS_OK, and the
 * program carries the error.  Free the schedule whenever you like.
 * Never NULL; check ts_program_status.  A schedule in error gives a
 * program with the schedule's status and message. */
ts_program *ts_lower(const ts_sched *s);
void ts_program_free(ts_program *p); /* NULL is fine */
/* Malloc'd text the caller frees, or NULL when out of memory or the program
 * is in error: the CUDA C (deterministic; the code generator's,
 * src/codegen/). */
char *ts_program_cuda(const ts_program *p);

#ifdef __cplusplus
}
#endif
#endif
