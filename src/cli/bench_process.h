/*
 * tessel bench's GPU process (bench_process.c): the bench runs in a child
 * that a process making no CUDA call starts again after a kernel faults
 * the GPU, the new one resuming at the shape of the fault without the
 * kernels that faulted.
 */
#ifndef TS_CLI_BENCH_PROCESS_H
#define TS_CLI_BENCH_PROCESS_H

#include <stdbool.h>

/* The most faults a run goes past, a restart each; and the exit status of
 * a worker that stopped at one. */
enum { BENCH_MAX_FAULTS = 16, BENCH_WORKER_FAULTED = 75 };

/* A kernel that faulted: its shape and row (indices into the command's
 * shapes and rows) and the device's error. */
typedef struct bench_fault {
  int shape, row;
  char why[1024];
} bench_fault;

/* What one worker leaves the next, in memory they share: where to resume,
 * the exit status of the shapes before it, and every fault so far. */
typedef struct bench_handover {
  int resume_shape;
  int rc;
  int nfaults;
  bench_fault faults[BENCH_MAX_FAULTS];
} bench_handover;

/* Runs work in a child process until it ends other than by a fault (or
 * the faults pass BENCH_MAX_FAULTS); returns the exit status for the
 * command.  No CUDA call may precede it in this process. */
int cli_bench_supervise(int (*work)(bench_handover *h, void *arg), void *arg);

/* The fault of row `row` at shape `shape`, or NULL. */
const bench_fault *cli_bench_fault(const bench_handover *h, int shape,
                                   int row);

/* Notes that row `row` faulted at shape `shape`, the next worker to
 * resume there; false when the faults are too many to go on. */
bool cli_bench_note_fault(bench_handover *h, int shape, int row,
                          const char *why);

#endif
