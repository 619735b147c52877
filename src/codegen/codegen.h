/*
 * CUDA C code generation from a lowered kernel.
 */
#ifndef TS_CODEGEN_H
#define TS_CODEGEN_H

#include "../schedule/sched.h"

/* The kernel's entry point name: "tessel_" and the schedule's name. */
void codegen_kernel_name(ts_buf *b, const ts_sched *s);

#endif
