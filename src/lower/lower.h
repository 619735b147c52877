/*
 * Lowering: the schedule's loop tree becomes a kernel that codegen and the
 * reference executor consume.  lower.c runs the passes in order; each pass
 * is one file exposing one function.
 */
#ifndef TS_LOWER_H
#define TS_LOWER_H

#include "../schedule/sched.h"

/* The lowered kernel of a schedule, cached on it until the next primitive;
 * NULL with the schedule's error set when lowering fails. */
ir_kernel *ts_lower(ts_sched *s);

/* Passes. */
ir_stmt *lower_reduction(ts_sched *s, ir_stmt *root); /* reduction.c */
ir_stmt *lower_stages(ts_sched *s, ir_stmt *root);    /* stages.c */
ir_stmt *lower_guards(ts_arena *a, ir_stmt *root);    /* guards.c */
ir_stmt *lower_vectors(ts_arena *a, ir_stmt *root);   /* vectors.c */
void lower_launch_dims(const ir_stmt *root, ir_kernel *k); /* launch.c */
/* verify.c: a message describing the first malformed node, or NULL. */
const char *lower_verify(ts_arena *a, const ir_kernel *k);

#endif
