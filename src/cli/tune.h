/*
 * What `tessel tune` keeps per shape, shared by the run (tune.c) and its
 * reports (tune_report.c).
 */
#ifndef TS_CLI_TUNE_H
#define TS_CLI_TUNE_H

#include <stdio.h>

#include "options.h"

typedef struct {
  ts_config *config;
  char *text;        /* "block=32x32x32,..." */
  ts_kernel *kernel; /* NULL when pruned, left out or resumed */
  ts_bench_result quick, full;
  bool has_quick, has_full;
  bool resumed;         /* a result comes from the journal */
  bool suspect; /* in flight when a process died (the journal says): timed alone */
  const char *left_out; /* why it was not timed ("--budget"), or NULL */
} candidate;

typedef struct {
  ts_gemm def;
  candidate *c;
  int n;
  ts_bench_result cublas; /* the last cuBLAS timing of the shape */
  bool finished; /* timed to the end, none left out by --time */
} shape_run;

/* The result a candidate is ranked by: the full count's, else the first
 * pass's. */
const ts_bench_result *tune_result(const candidate *c);
/* Whether it was timed (and ran). */
bool tune_timed(const candidate *c);
/* Candidate indices fastest first, untimed ones last; malloc'd. */
int *tune_ranking(const shape_run *r);
void tune_shape_text(const ts_gemm *g, char *out, size_t len);

/* The journal of the run (tune_journal.c): what it holds applied to r's
 * candidates and cuBLAS time (returns how many candidates have results
 * from it), and lines appended: a candidate about to be timed, its result
 * (the first pass's or the full count's; a failure either way), a failure
 * by configuration text, and the shape's last cuBLAS time. */
int tune_resume(const ts_gpu *gpu, const ts_space *sp, shape_run *r);
void tune_journal_timing(const ts_gpu *gpu, const ts_space *sp,
                         const shape_run *r, const candidate *c);
void tune_journal_note(const ts_gpu *gpu, const ts_space *sp,
                       const shape_run *r, const candidate *c, bool full);
void tune_journal_failure(const ts_gpu *gpu, const ts_space *sp,
                          const shape_run *r, const char *config,
                          const char *why);
void tune_journal_cublas(const ts_gpu *gpu, const ts_space *sp,
                         const shape_run *r);

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
  int status;    /* EXIT_FAIL once a step printed had a failure */
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
 * of the last worker, or EXIT_FAIL.  No CUDA call may precede it. */
int tune_supervise(int (*work)(tune_handover *h, void *arg), void *arg);

/* Reports (tune_report.c). */
void tune_print_best(const cli_opts *o, const shape_run *r, const int *order,
                     FILE *csv, const char *gpu);
int tune_print_failures(const shape_run *r);
int tune_count_failures(const shape_run *r);
void tune_print_knob_tables(const shape_run *runs, int nruns);
void tune_record_best(ts_gpu *gpu, const ts_space *sp, const shape_run *r,
                      const int *order);
void tune_print_reproduction(const ts_space *sp, const shape_run *r,
                             const int *order);
/* The --json record of a whole run; start: the GPU's sensors as the
 * space's run began. */
bool tune_write_json(const char *path, const cli_opts *o, int argc,
                     char **argv, ts_gpu *gpu, const ts_gpu_sensors *start,
                     const ts_space *sp, const shape_run *runs, int nruns);

#endif
