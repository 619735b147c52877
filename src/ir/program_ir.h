/*
 * The lowered kernel: tessel's one artifact between the schedule and the
 * GPU.  ts_lower makes it from a schedule; the code generator, the
 * reference executor, the compiler and the runtime take only it.  It owns
 * its IR in an arena of its own (no pointer into the schedule it came
 * from), is never changed once made, and carries everything a later stage
 * needs: the definition it computes, each kernel's parameter list (A, B,
 * C with their element types, the workspace), the body, launch geometry, dynamic shared memory, the
 * occupancy hint and the entry point's name.
 */
#ifndef TS_PROGRAM_H
#define TS_PROGRAM_H

#include "ir.h"

struct ts_program {
  ts_arena arena;     /* every node, loop, variable and buffer below */
  ts_status status;   /* TS_OK, or why lowering failed */
  char *errmsg;       /* malloc'd; "" when the status is TS_OK */
  ts_gemm def;        /* what the kernel computes */
  const char *name;   /* the schedule's name (arena) */
  const char *entry;  /* the kernel's entry point, "tessel_<name>" (arena) */
  ir_kernel k;        /* body, parameters, launch, shared memory, hint */
  /* Bytes of dynamic shared memory: the shared caches when they pass the
   * 48 KiB a kernel may declare statically (then one extern array holds
   * them and the launch opts in); 0 otherwise. */
  int64_t dynamic_shared;
  /* The kernels in launch order (an array in the arena, nkernels long),
   * each with its parameter list: ts_pack's (pack[0] for op(A), pack[1]
   * for op(B)) first, then k, with split-K's aux (the workspace's
   * reduction after k, or C's scaling by beta before it); and the bytes of
   * the workspace they share (0: none): split-K's fp32 partial sums, then
   * the packed operands, each at its view's offset (the views'
   * workspace_offset, which each kernel's copy of a view carries). */
  int nkernels;
  const ir_kernel **order;
  ir_kernel aux, pack[2];
  int64_t workspace;
};

#endif
