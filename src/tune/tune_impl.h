/*
 * The tuner's parts that share state (src/tune/): the journal (journal.c)
 * and the supervisor and its workers (supervisor.c), used by the run
 * (tuner.c) and driven by the tests; the public API is
 * include/tessel/tune.h.
 */
#ifndef TS_TUNE_IMPL_H
#define TS_TUNE_IMPL_H

#include <pthread.h>
#include <stdio.h>

#include "tessel/tune.h"

enum { TUNE_EXIT_FAIL = 1 };
/* The first pass: few runs each, in groups between which progress is
 * shown and the journal written. */
enum { QUICK_REPEATS = 3, QUICK_WARMUP = 1, CHUNK = 16 };

void tune_shape_text(const ts_gemm *g, char *out, size_t len);

/* Knob i's values as the configuration's last run of its space declared
 * them, "32, 64, 128" (space.c); NULL past the end.  The fuzzer draws a
 * large space's configurations knob by knob with it. */
const char *config_knob_values(const ts_config *c, int i);

/* The journal of the run (journal.c), keyed by the GPU, the space's key
 * and r's definition: what it holds applied to r's candidates and cuBLAS
 * time (returns how many candidates have results from it), and lines
 * appended: a candidate about to be timed, its result (the first pass's
 * or the full count's; a failure either way), a failure by configuration
 * text, and the shape's last cuBLAS time. */
int tune_resume(const ts_gpu *gpu, const char *key, ts_tune_shape *r);
/* Every runner journals what it times on its own device; the other
 * devices' journals (peers: the same key but for the device, so a GPU of
 * the same model) give first passes only.  tune_journal_peers: the whole
 * lines of each peer's journal in the cache directory and of each
 * journal's text in sent[0..nsent) (texts each ended by a NUL, as
 * tune_rank_journals gathers them), concatenated; malloc'd, NULL when out
 * of memory.  tune_resume_peers: their first-pass results and failures
 * applied to r's candidates that have no first-pass result yet; how many.
 * tune_journal_remove_all: every device's journal of the key in the cache
 * directory removed, g's too. */
char *tune_journal_peers(const ts_gpu *g, const char *space,
                         const ts_gemm *def, const char *sent, size_t nsent);
int tune_resume_peers(ts_tune_shape *r, char *lines);
void tune_journal_remove_all(const ts_gpu *g, const char *space,
                             const ts_gemm *def);
/* The journal's text as its file holds it, its key first (malloc'd; NULL
 * when there is none). */
char *tune_journal_text(const ts_gpu *g, const char *space,
                        const ts_gemm *def);
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
  int printed;   /* report steps printed, in order (tuner.c counts them) */
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

/* ---- The queue of candidates runners on several GPUs share (queue.c) ---- */

enum { TUNE_MAX_GPUS = TS_TUNE_MAX_GPUS };
/* Shapes whose first passes the queue holds at once: the lead's next ones,
 * published before it times a shape's fastest in full on its own GPU, so
 * the other GPUs go on meanwhile. */
enum { TUNE_BANKS = 4 };
enum { SLOT_PENDING, SLOT_TAKEN, SLOT_DONE, SLOT_LEFT };

/* A candidate to time: its index in the shape's enumeration, who has it,
 * and its result once timed. */
typedef struct tune_slot {
  int index;
  int state;  /* SLOT_* */
  int runner; /* who took it; -1 when pending */
  bool alone; /* a suspect (in flight when a runner died): timed alone */
  bool collected; /* the lead has its result */
  ts_status status;
  double median_ms, tflops, max_rel_err;
  char message[256];
} tune_slot;

/* One shape's first pass: slots [b * capacity, b * capacity + n) of the
 * queue for bank b. */
typedef struct tune_bank {
  int generation; /* its publish's: a taker's results are for it */
  int unit;       /* the shape's place in the run; -1 when the bank is free */
  int n;
  int group;      /* the most a runner takes at once */
} tune_bank;

typedef struct tune_queue {
  pthread_mutex_t lock;
  int generation; /* the last publish's; each publish gets a new one */
  int nbanks, capacity; /* capacity: slots a bank */
  tune_bank bank[TUNE_BANKS];
  bool closed;    /* the run is over: helpers end */
  int took[TUNE_MAX_GPUS]; /* candidates each runner timed, in the run */
  tune_slot slot[]; /* nbanks * capacity */
} tune_queue;

/* A queue of nbanks (1 to TUNE_BANKS) shapes of `capacity` candidates
 * each; NULL when the memory cannot be mapped or the lock made. */
tune_queue *tune_queue_new(int capacity, int nbanks);
void tune_queue_free(tune_queue *q);
void tune_queue_lock(tune_queue *q);
void tune_queue_unlock(tune_queue *q);
/* The lead: which[0..n) (candidate indices) to be timed at unit, alone[i]
 * for suspects, taken `group` at most at a time, in the bank that holds
 * unit already, else a free one, else the one of the latest unit after
 * this one (the lead publishes each unit as it comes to it).  Returns the
 * generation, 0 when n passes the capacity or no bank can take it. */
int tune_queue_publish(tune_queue *q, int unit, const int *which,
                       const bool *alone, int n, int group);
/* which[0..n) added to generation gen (another rank's candidates as they
 * come); false when they pass the capacity or gen is over. */
bool tune_queue_append(tune_queue *q, int gen, const int *which,
                       const bool *alone, int n);
/* Under the lock: generation gen's bank, NULL when gen is over; its
 * slots start at *first. */
tune_bank *tune_queue_bank(tune_queue *q, int gen, int *first);
/* Under the lock: the banks that hold a shape, in order of their units,
 * in order[]; how many. */
int tune_queue_open_banks(const tune_queue *q, int *order);
/* Runner k takes up to `most` slots of generation gen (a suspect alone);
 * their numbers in got; returns how many. */
int tune_queue_take(tune_queue *q, int gen, int k, int most, int *got);
/* A group a runner took: its slots, and copied while the queue was locked
 * (a bank may be published anew after), their candidates, whether each is
 * a suspect, and the shape's generation and unit. */
typedef struct tune_group {
  int n;
  int slot[CHUNK], index[CHUNK];
  bool alone[CHUNK];
  int gen, unit;
} tune_group;

/* Runner k takes up to `most` (at most CHUNK) slots of the earliest shape
 * that has any pending, as tune_queue_take does; how many. */
int tune_queue_take_next(tune_queue *q, int k, int most, tune_group *g);
/* Every bank free: a lead worker starting again after one died drops the
 * shapes it had published (their unit's results not yet journaled are
 * timed again). */
void tune_queue_close_all(tune_queue *q);
/* Runner k's result for a slot it took in generation gen. */
void tune_queue_finish(tune_queue *q, int gen, int k, int slot,
                       const ts_bench_result *b);
/* The supervisor, after runner k died: its slots pending again, each to
 * be timed alone when they were in flight; where it had one only in
 * flight and alone_failed is given, that one failed with that reason.
 * Returns how many it had. */
int tune_queue_requeue(tune_queue *q, int k, bool in_flight,
                       const char *alone_failed);
/* Generation gen's shape is over: its bank free. */
void tune_queue_close_unit(tune_queue *q, int gen);
/* The run is over: the helpers end. */
void tune_queue_close_run(tune_queue *q);

/* ---- Compiling ahead of the runners (compile_ahead.c) ---------------------
 *
 * A thread compiling the candidates pending in the queue for the shapes
 * runs[0..nruns) (units unit0 on; read only while it runs) into the
 * kernel cache, the earliest shape first, each in the queue's order,
 * until it is stopped; NULL when it cannot start (the runners then
 * compile all they take). */
typedef struct tune_ahead tune_ahead;
tune_ahead *tune_ahead_start(const ts_tune_space *sp, const ts_tune_opts *o,
                             const char *arch, const ts_tune_shape *runs,
                             int unit0, int nruns, tune_queue *q);
/* Stopped after the batch it is compiling, and freed; NULL is nothing. */
void tune_ahead_stop(tune_ahead *a);

/* ---- The run's parts that the runners share (tuner.c, helper.c) ---------- */

/* What ts_tune_run was given, for its runners. */
typedef struct tune_args {
  const ts_tune_opts *o;
  const ts_tune_space *spaces;
  int nspaces;
  const ts_tune_report *rep;
  int gpus[TUNE_MAX_GPUS]; /* each runner's device */
  int ngpus;
  int nrunners;  /* who times the first pass: ngpus, or the MPI ranks */
  tune_queue *q; /* NULL with one GPU */
  /* On MPI rank 0: the texts of the journals the other ranks hold for the
   * run's shapes, sent once at the start, each ended by a NUL. */
  char *sent;
  size_t nsent;
} tune_args;

/* An MPI rank's journals of the run's shapes on its device: their texts
 * (each ended by a NUL, *n bytes in all; malloc'd, NULL when none can be
 * read), or with remove, none, the journals removed.  Done in a child
 * process: no CUDA call may precede tune_supervise_runners. */
char *tune_rank_journals(const tune_args *a, int device, bool remove,
                         size_t *n);

/* Every configuration of the space for r->def; false when out of memory
 * or over the limit (said on stderr). */
bool tune_enumerate(const ts_tune_space *sp, const ts_tune_opts *o,
                    ts_tune_shape *r);
/* Whether candidate c still needs a kernel: not pruned, not left out, not
 * resumed from the journal. */
bool tune_wanted(const ts_tune_candidate *c);
/* --budget's sample of r's unpruned configurations (the first always in
 * it); the rest left out unless the journal has their results. */
void tune_apply_budget(const ts_tune_opts *o, ts_tune_shape *r);
/* Every wanted candidate compiled (none where lazy: each runner compiles
 * what it takes); how many are wanted, -1 when out of memory. */
int tune_compile_wanted(const ts_tune_space *sp, const ts_tune_opts *o,
                        const char *arch, ts_tune_shape *r, bool lazy);
/* The candidates listed in `which` lowered and compiled on o->jobs
 * threads (TESSEL_TUNE_FAULT's kernel put in); false when out of memory. */
bool tune_compile_some(const ts_tune_space *sp, const ts_tune_opts *o,
                       const char *arch, ts_tune_shape *r, const int *which,
                       int n);
/* TESSEL_TUNE_FAULT=signal:CONFIG: the process dies if CONFIG is among
 * which[0..n), about to be timed (fault_inject.c). */
void tune_inject_crash(const ts_tune_shape *r, const int *which, int n);
/* TESSEL_TUNE_FAULT=CONFIG: if CONFIG is among which[0..n), just compiled,
 * its kernel becomes one that faults at its first launch. */
void tune_inject_faulting_kernel(const char *arch, ts_tune_shape *r,
                                 const int *which, int n);
/* How many of r's candidates failed (ts_tune_failure; ranking.c). */
int tune_count_failures(const ts_tune_shape *r);
void tune_free_shape(ts_tune_shape *r);
/* The lead runner (tuner.c), in the worker process: every space at every
 * shape on GPU gpus[0].  Its status, or TUNE_WORKER_FAULTED when a fault
 * ended it. */
int tune_worker(tune_handover *h, void *arg);
/* A helper runner (helper.c): times what it takes from the queue on GPU
 * gpus[k] until the run is over.  0, or TUNE_WORKER_FAULTED after a
 * fault (h says what was in flight). */
int tune_helper(int k, tune_handover *h, void *arg);

/* ---- Several runners (supervisor.c) ---------------------------------------
 *
 * With several GPUs the lead (runner 0, on the first) does the run as one
 * worker does, and helpers 1..n-1, one per other GPU, time what they take
 * from the queue.  The supervisor starts them all, restarts the lead as
 * tune_supervise does, and when a helper dies puts its candidates back in
 * the queue and starts it again (within the same count of restarts); the
 * run ends with the lead. */
typedef struct tune_runners {
  int n;
  int (*lead)(tune_handover *h, void *arg);
  int (*helper)(int k, tune_handover *h, void *arg);
  void *arg;
  tune_queue *q;     /* NULL with one runner */
  const int *gpus;   /* each runner's device, for messages */
  /* With MPI (mpi.c): called between looks at the runners, every few ms;
   * without a lead (a rank other than 0) its status >= 0 ends the run. */
  int (*poll)(void *ctx);
  void *poll_ctx;
} tune_runners;

/* Returns the lead's last status, or TUNE_EXIT_FAIL (a helper lost is
 * said on stderr, and fails the run). */
int tune_supervise_runners(const tune_runners *rs);

/* ---- The ranks of an MPI run (mpi.c) ---------------------------------------
 *
 * Under mpirun or srun, rank 0 does the run as with several GPUs, its
 * queue's runner k being rank k: its supervisor hands groups of the
 * first pass to the other ranks and puts their results in the queue.  A
 * rank other than 0 keeps a queue of its own that one helper runner on
 * its GPU takes from, filled from rank 0's.  All MPI calls are in mpi.c;
 * a build without MPI has the same functions, which find no ranks. */
typedef struct tune_mpi tune_mpi;

/* Under a launcher (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE set),
 * MPI started and *m the ranks when there are two or more (else NULL);
 * false, said on stderr, when the run cannot go on (a build without MPI
 * under a launcher, more ranks than TS_TUNE_MAX_GPUS, --gpus). */
bool tune_mpi_start(const ts_tune_opts *o, tune_mpi **m);
int tune_mpi_rank(const tune_mpi *m);
int tune_mpi_size(const tune_mpi *m);
/* This rank's device: its rank among the ranks of its host. */
int tune_mpi_device(const tune_mpi *m);
/* The queue the poll moves work through: rank 0's run's, or the rank's. */
void tune_mpi_attach(tune_mpi *m, tune_queue *q);
/* tune_runners' poll (ctx the tune_mpi). */
int tune_mpi_poll(void *ctx);
/* Once at the start, every rank there: each rank's journal texts
 * (mine[0..n), tune_rank_journals') gathered on rank 0 in *all (malloc'd,
 * *nall bytes, NUL-ended); elsewhere *all is NULL.  Rank 0 out of memory
 * for them ends the job (MPI_Abort, said): the others wait in the gather. */
void tune_mpi_gather(tune_mpi *m, const char *mine, size_t n, char **all,
                     size_t *nall);
/* A rank other than 0: rank 0 ended the run (its journals may go). */
bool tune_mpi_ended(const tune_mpi *m);
/* The run is over with status rc on this rank: the other ranks told,
 * MPI finalized unless a rank was lost; returns the rank's status (1
 * on rank 0 when a rank was lost) and frees m. */
int tune_mpi_finish(tune_mpi *m, int rc);

#endif
