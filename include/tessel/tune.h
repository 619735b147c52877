/*
 * tessel's tuner as a library (src/tune/): every configuration of a space
 * at each shape, enumerated and pruned on the CPU, compiled on a pool of
 * threads, timed on the GPU beside cuBLAS in two passes by a worker
 * process that a supervisor starts again after a candidate faults,
 * journaled as it is timed (so an interrupted run resumes), ranked, and
 * the best recorded for `--tuned` (docs/tuning.md).
 *
 * The library prints no report: what a run finds reaches the caller
 * through the hooks of a ts_tune_report, as the run goes (`tessel tune`
 * prints them).  Diagnostics that end a worker or the run (a fault, a
 * restart, memory that ran out) go to stderr.
 */
#ifndef TESSEL_TUNE_H
#define TESSEL_TUNE_H

#include "gpu.h"
#include "space.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tuning records -----------------------------------------------------
 *
 * tessel tune keeps the best configuration of each space and definition in
 * the cache directory (beside the kernel cache), keyed by the GPU's name and
 * driver version, tessel's version, the space and the whole definition
 * (shape, layout, alpha, beta, element types). */

/* Records config (ts_config_text's form) with its speed; TS_ERR_NULL_ARG,
 * or TS_ERR_BAD_ARG when the cache is off (TESSEL_NO_CACHE) or cannot be
 * written. */
ts_status ts_tune_record_save(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *config,
                              double tflops);
/* The recorded configuration (malloc'd) and its speed, or NULL when there
 * is none for this GPU, space and definition. */
char *ts_tune_record_load(const ts_gpu *g, const char *space,
                          const ts_gemm *def, double *tflops);

/* The record of the rank-th nearest shape (0 the nearest) that was tuned
 * for this GPU model, space and definition but for its shape: the same
 * layout, alpha, beta and types.  Near is by sizes' ratios (the sum over
 * M, N and K of |log(tuned / asked)|, so 2048 is as near 1024 as 512 is);
 * a tie goes to the smaller shape.  The configuration (malloc'd) and, in
 * tuned_at, the definition at the shape tuned; NULL when there is none.
 * --tuned takes it where a shape was not tuned, so a tuned space serves
 * shapes it was not tuned at. */
char *ts_tune_record_nearest(const ts_gpu *g, const char *space,
                             const ts_gemm *def, int rank, ts_gemm *tuned_at);

/* The journal of a tuning run in progress for this GPU, space and
 * definition: lines appended as configurations are timed (one line, no
 * newline in it; TS_ERR_IO when the cache is off or not writable), read
 * back by a later run to resume (the lines, malloc'd, or NULL when there
 * is no journal), and removed when the run is finished. */
ts_status ts_tune_journal_add(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *line);
char *ts_tune_journal_load(const ts_gpu *g, const char *space,
                           const ts_gemm *def);
void ts_tune_journal_remove(const ts_gpu *g, const char *space,
                            const ts_gemm *def);

/* The most GPUs one run times on. */
enum { TS_TUNE_MAX_GPUS = 16 };

/* A configuration of a space at a shape, and what became of it. */
typedef struct ts_tune_candidate {
  ts_config *config;
  char *text;        /* "block=32x32x32,..." (ts_config_text) */
  ts_kernel *kernel; /* NULL when pruned, left out or resumed */
  ts_bench_result quick, full; /* the first pass's and the full count's */
  bool has_quick, has_full;
  bool resumed; /* a result comes from the journal */
  bool suspect; /* in flight when a process died (the journal says): timed alone */
  const char *left_out; /* why it was not timed ("--budget", "--time"), or NULL */
} ts_tune_candidate;

/* One shape of a space's run: its candidates, cuBLAS's time, and what the
 * report says of how it went. */
typedef struct ts_tune_shape {
  ts_gemm def;
  ts_tune_candidate *c;
  int n;
  ts_bench_result cublas; /* the last cuBLAS timing of the shape */
  bool finished;          /* timed to the end, none left out by --time */
  /* Set as the shape is prepared and timed. */
  int pruned, compiled, resumed, suspects, budget_left_out, time_left_out;
  bool resumed_after_restart; /* the results resumed are a restarted worker's */
  bool compiled_as_taken; /* several runners: each compiles what it takes */
  double compile_seconds, time_seconds;
  /* Whether the best was to be recorded (it was timed and ran right), and
   * ts_tune_record_save's status when it was. */
  bool record_tried;
  ts_status recorded;
  /* With several GPUs: how many candidates of the first pass each timed
   * (in the order of ts_tune_opts.gpus). */
  int ngpus;
  int timed_on[TS_TUNE_MAX_GPUS];
  bool ranks; /* the runners were MPI ranks: timed_on[k] is rank k's */
} ts_tune_shape;

/* A space as a run names it: `key` keys its records and journals (a
 * built-in's name; a file's space's name and the file's hash), `name` is
 * how messages and reports call it. */
typedef struct ts_tune_space {
  const ts_space *space;
  const char *key;
  const char *name;
} ts_tune_space;

/* What a run does (the defaults `tessel tune` gives in brackets). */
typedef struct ts_tune_opts {
  const ts_gemm *shapes; /* each a definition: shape, layout, types, alpha, beta */
  int nshapes;
  int jobs;       /* compile threads; 0: one per core */
  int top;        /* the first pass's fastest timed again in full [10] */
  int limit;      /* refuse a space with more configurations at a shape [100000] */
  int budget;     /* configurations timed per shape; 0: all */
  int time_limit; /* seconds of first-pass timing per shape; 0: none */
  int repeats, warmup; /* the full count's [50, 5] */
  uint64_t seed;  /* the inputs' and --budget's sample's */
  bool restart;   /* ignore what an interrupted run journaled */
  /* The GPUs to time on, by ordinal: gpus[0..ngpus), the first of them the
   * one that times the fastest again and whose journal the run keeps;
   * ngpus 0: device 0 alone; ngpus -1: every device the driver sees. */
  const int *gpus;
  int ngpus;
} ts_tune_opts;

/* The hooks a run reports through, each optional; ctx is passed back.
 * A run's report comes out once even when several workers make it: a
 * worker started after a fault calls only the hooks of the steps (a
 * space's beginning, each shape, the space's end) not yet reported. */
typedef struct ts_tune_report {
  void *ctx;
  /* A space's run begins on gpu. */
  void (*space_begin)(void *ctx, const ts_tune_space *sp, ts_gpu *gpu);
  /* A shape is enumerated, resumed, sampled and compiled (r's counts). */
  void (*shape_ready)(void *ctx, const ts_tune_space *sp,
                      const ts_tune_shape *r);
  /* After each group of the first pass: done of total timed, in seconds. */
  void (*progress)(void *ctx, const ts_tune_shape *r, int done, int total,
                   double seconds);
  /* A shape is timed, ranked (order: candidate indices fastest first) and
   * its best recorded; returns nonzero when the report of it fails the
   * run. */
  int (*shape_done)(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                    const ts_tune_shape *r, const int *order);
  /* Every shape of the space is done (runs[0..n)), in seconds; returns
   * nonzero when the run fails (a record not written). */
  int (*space_done)(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                    const ts_tune_shape *runs, int n, double seconds);
} ts_tune_report;

/* Tunes spaces[0..nspaces) at every shape of o, reporting through rep.
 * Forks the worker that uses the GPU: no CUDA call may precede it in the
 * calling process.  Returns 0 when every candidate was timed, 1 when one
 * failed (or the GPU, memory or a record did), as `tessel tune` exits. */
int ts_tune_run(const ts_tune_opts *o, const ts_tune_space *spaces,
                int nspaces, const ts_tune_report *rep);

/* Whether mpirun or srun started this process as one of several ranks
 * (their environment says so). */
bool ts_tune_mpi_launched(void);

/* The result a candidate is ranked by: the full count's, else the first
 * pass's; and whether it was timed (and ran). */
const ts_bench_result *ts_tune_result(const ts_tune_candidate *c);
bool ts_tune_timed(const ts_tune_candidate *c);
/* Whether candidate c of r was timed and its C is within the tolerance
 * of cuBLAS's (ts_gemm_tolerance). */
bool ts_tune_correct(const ts_tune_shape *r, const ts_tune_candidate *c);
/* r's candidate indices: those that ran right fastest first, then those
 * timed whose C differs from cuBLAS's, fastest first, untimed ones last;
 * malloc'd, NULL when out of memory. */
int *ts_tune_ranking(const ts_tune_shape *r);
/* Why candidate c of r failed to compile or run, or ran wrong (text may
 * hold the words), or NULL. */
const char *ts_tune_failure(const ts_tune_shape *r, const ts_tune_candidate *c,
                            char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
