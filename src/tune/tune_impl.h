/*
 * The tuner's parts that share state (src/tune/): the journal (journal.c)
 * and the supervisor and its workers (supervisor.c), used by the run
 * (tune.c) and driven by the tests; the public API is
 * include/tessel/tune.h.
 */
#ifndef TS_TUNE_IMPL_H
#define TS_TUNE_IMPL_H

#include <stdio.h>

#include "tessel.h"

enum { TUNE_EXIT_FAIL = 1 };

void tune_shape_text(const ts_gemm *g, char *out, size_t len);

/* The journal of the run (journal.c), keyed by the GPU, the space's key
 * and r's definition: what it holds applied to r's candidates and cuBLAS
 * time (returns how many candidates have results from it), and lines
 * appended: a candidate about to be timed, its result (the first pass's
 * or the full count's; a failure either way), a failure by configuration
 * text, and the shape's last cuBLAS time. */
int tune_resume(const ts_gpu *gpu, const char *key, ts_tune_shape *r);
void tune_journal_timing(const ts_gpu *gpu, const char *key,
                         const ts_tune_shape *r, const ts_tune_candidate *c);
void tune_journal_note(const ts_gpu *gpu, const char *key,
                       const ts_tune_shape *r, const ts_tune_candidate *c,
                       bool full);
void tune_journal_failure(const ts_gpu *gpu, const char *key,
                          const ts_tune_shape *r, const char *config,
                          const char *why);
void tune_journal_cublas(const ts_gpu *gpu, const char *key,
                         const ts_tune_shape *r);

/* ---- The supervisor and its workers (tune_supervisor.c) ----------------
 *
 * A kernel that faults leaves CUDA unusable in its process, so tune runs
 * in a worker process that its supervisor, which never touches CUDA,
 * starts again after a fault; the journal carries what was timed from one
 * worker to the next.  They share this, in memory mapped before the fork:
 * the worker writes what it is doing, the supervisor reads it after the
 * worker has ended and writes what the next worker must know. */
typedef struct tune_handover {
  /* Written by the worker. */
  int printed;   /* report steps printed, in order (tune.c counts them) */
  int status;    /* TUNE_EXIT_FAIL once a step printed had a failure */
  int started;   /* shapes begun (see unit): --restart cleared their journals */
  int in_flight; /* candidates being timed now; 0 outside timing */
  int unit;      /* their shape's place in the run: space * shapes + shape */
  char shape[64];
  char config[1024]; /* the candidate in flight, when it is alone */
  char fault[1024];  /* the device error of a fault the worker caught */
  /* Written by the supervisor.  When a worker died with one candidate in
   * flight, the next journals it as failed: `crashed` at crashed_unit
   * (else -1), with crashed_why. */
  int restarts;
  int crashed_unit;
  char crashed[1024];
  char crashed_why[256];
} tune_handover;

/* The status of a worker that caught a fault (after journaling it): start
 * another.  sysexits' EX_TEMPFAIL; never the status of tessel itself. */
enum { TUNE_WORKER_FAULTED = 75 };
/* The most workers one run starts again. */
enum { TUNE_MAX_RESTARTS = 16 };

/* Runs work(h, arg) in a worker process, and again after each fault or
 * crash while timing, up to TUNE_MAX_RESTARTS times; returns the status
 * of the last worker, or TUNE_EXIT_FAIL.  No CUDA call may precede it. */
int tune_supervise(int (*work)(tune_handover *h, void *arg), void *arg);

#endif
