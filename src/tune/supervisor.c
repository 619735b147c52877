/*
 * The tuner's supervisor.  After a kernel faults (an illegal address),
 * CUDA cannot be used again in that process: closing the context,
 * resetting the device's primary context and opening it again all fail
 * (measured).  So tune does its work in a child, the worker, and this
 * process only waits: when the worker catches a fault (it exits with
 * TUNE_WORKER_FAULTED after journaling what it knows) or dies while
 * timing (a signal, or an exit from inside the driver), a new worker
 * starts and resumes from the journal, past the candidate at fault.
 *
 * The supervisor makes no CUDA call: a fork after cuInit gives a child
 * whose CUDA state is undefined.  Worker and supervisor share a
 * tune_handover in anonymous shared memory; the worker's stdout and stderr
 * are this process's, so its output reads as a single run's.
 *
 * A worker outlives no supervisor: the kernel kills it (SIGKILL) when its
 * parent dies, however it dies (kill -9 too), so that it does not go on
 * timing and compiling, holding the GPU and every core, with no one to
 * report to.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune_impl.h"

/* In a worker: killed when the supervisor dies.  A supervisor that died
 * between the fork and the request is seen by the worker's parent having
 * changed, and the worker ends at once. */
static void die_with_parent(pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
    _exit(TUNE_EXIT_FAIL);
}

/* Starts runner k (0 the lead) with its handover; its process id, or -1
 * (with a message) when it could not be started. */
static pid_t start_runner(const tune_runners *rs, int k, tune_handover *h) {
  /* What stdio holds would otherwise be written by both processes. */
  fflush(stdout);
  fflush(stderr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    fprintf(stderr, "tessel: tune: cannot start its GPU process: fork: %s\n",
            strerror(errno));
  if (pid == 0) {
    die_with_parent(parent);
    /* As ps and pgrep name it: the runner of GPU N. */
    char name[16];
    snprintf(name, sizeof(name), "tessel-gpu%d", rs->gpus[k]);
    prctl(PR_SET_NAME, name);
    int rc = k == 0 ? rs->lead(h, rs->arg) : rs->helper(k, h, rs->arg);
    /* Under MPI, _exit: the handlers MPI registered at exit are its
     * parent's, not this process's, which never started MPI. */
    if (rs->poll) {
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
    exit(rc); /* exit, not return: the runner ends here */
  }
  return pid;
}

/* How the worker ended, as "signal 11, Segmentation fault" or "exit
 * status 1". */
static void describe_end(int status, char *out, size_t len) {
  if (WIFSIGNALED(status))
    snprintf(out, len, "signal %d, %s", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
  else
    snprintf(out, len, "exit status %d", WEXITSTATUS(status));
}

/* What was in flight, as the subject of the line that reports it. */
static void describe_in_flight(const tune_handover *h, char *out,
                               size_t len) {
  if (h->in_flight == 1)
    snprintf(out, len, "configuration %s at %s", h->config, h->shape);
  else
    snprintf(out, len, "one of %d configurations timed together at %s",
             h->in_flight, h->shape);
}

static bool caught_fault(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == TUNE_WORKER_FAULTED;
}

/* What happened to the worker that ended with status while timing: "...
 * faulted (the driver's error)" or "... crashed the GPU process (signal
 * 11, Segmentation fault)". */
static void describe_event(const tune_handover *h, int status, char *out,
                           size_t len) {
  char what[1600], end[160];
  describe_in_flight(h, what, sizeof(what));
  describe_end(status, end, sizeof(end));
  if (caught_fault(status))
    snprintf(out, len, "%s faulted (%s)", what, h->fault);
  else
    snprintf(out, len, "%s crashed the GPU process (%s)", what, end);
}

/* A crash leaves no failure in the journal: where the candidate was alone,
 * and so surely the one at fault, the next worker journals it.  A group's
 * candidates stay marked in the journal and are timed alone next. */
static void hand_over_crash(tune_handover *h, int status) {
  h->crashed_unit = -1;
  if (caught_fault(status) || h->in_flight != 1)
    return;
  char end[160];
  describe_end(status, end, sizeof(end));
  h->crashed_unit = h->unit;
  snprintf(h->crashed, sizeof(h->crashed), "%s", h->config);
  snprintf(h->crashed_why, sizeof(h->crashed_why), "crashed the GPU process "
           "(%s) while it was timed", end);
}

/* The worker ended with status while timing: says what happened, and
 * readies h for the next worker; false (having said why) when the run
 * stops instead. */
static bool restart_after(tune_handover *h, int status) {
  char event[3000];
  describe_event(h, status, event, sizeof(event));
  if (h->restarts >= TUNE_MAX_RESTARTS) {
    fprintf(stderr, "tessel: tune: %s; not restarting: a run restarts its "
            "GPU process at most %d times (the journal keeps what was "
            "timed; run tune again to go on)\n", event, TUNE_MAX_RESTARTS);
    return false;
  }
  hand_over_crash(h, status);
  h->restarts++;
  /* On a terminal the worker's progress line may be left unfinished. */
  bool mid_line = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  fprintf(stderr, "%stessel: tune: %s; restarting the GPU process and %s "
          "(%d of %d restarts)\n", mid_line ? "\n" : "", event,
          h->in_flight == 1 ? "resuming" : "timing them one at a time",
          h->restarts, TUNE_MAX_RESTARTS);
  h->in_flight = 0;
  return true;
}

/* The status the run ends with when the worker ended with status: -1 to
 * start another worker. */
static int outcome(tune_handover *h, int status) {
  if (h->in_flight)
    return restart_after(h, status) ? -1 : TUNE_EXIT_FAIL;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  /* Outside timing nothing says which candidate to skip: a restart would
   * meet the same end. */
  char end[160];
  describe_end(status, end, sizeof(end));
  fprintf(stderr, "tessel: tune: its GPU process died (%s) outside the "
          "timing of a candidate; not restarting\n", end);
  return TUNE_EXIT_FAIL;
}

/* ---- Helpers ------------------------------------------------------------------ */

/* Helper k ended with status before the run did: its candidates go back
 * to the queue (timed alone where they were in flight; one alone in
 * flight failed, as the lead's would), and it is started again unless it
 * ended by itself outside timing (a GPU it cannot open) or the restarts
 * ran out.  Returns whether to start it again. */
static bool helper_lost(const tune_runners *rs, int k, tune_handover *h,
                        int status, int *restarts) {
  char event[3000], end[160], why[1200];
  describe_end(status, end, sizeof(end));
  /* Killed from outside (kill, the OOM killer, a hangup): not its
   * candidates' doing, which go back as they were. */
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  bool killed = sig == SIGKILL || sig == SIGTERM || sig == SIGINT ||
                sig == SIGHUP;
  bool in_flight = h->in_flight > 0 && !killed;
  if (in_flight)
    describe_event(h, status, event, sizeof(event));
  else if (killed)
    snprintf(event, sizeof(event), "its runner was killed (%s)", end);
  else
    snprintf(event, sizeof(event), "its runner ended (%s) outside the timing "
             "of a candidate", end);
  if (caught_fault(status))
    snprintf(why, sizeof(why), "%s", h->fault);
  else
    snprintf(why, sizeof(why), "crashed the GPU process on GPU %d (%s) while "
             "it was timed", rs->gpus[k], end);
  int had = tune_queue_requeue(rs->q, k, in_flight, why);
  h->in_flight = 0;
  bool again = (in_flight || WIFSIGNALED(status)) &&
               *restarts < TUNE_MAX_RESTARTS;
  if (again)
    ++*restarts;
  bool mid_line = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  fprintf(stderr, "%stessel: tune: GPU %d: %s; %d of its configurations back "
          "in the queue%s", mid_line ? "\n" : "", rs->gpus[k], event, had,
          in_flight && had > 1 ? ", each to be timed alone" : "");
  if (again)
    fprintf(stderr, "; restarting its runner (%d of %d restarts)\n", *restarts,
            TUNE_MAX_RESTARTS);
  else
    fprintf(stderr, "; GPU %d is lost to this run, the other GPUs time the "
            "rest\n", rs->gpus[k]);
  return again;
}

/* The runner whose process is pid, or -1. */
static int runner_of(const pid_t *pids, int n, pid_t pid) {
  for (int k = 0; k < n; k++)
    if (pids[k] == pid)
      return k;
  return -1;
}

/* Waits for every runner still running (helpers end once the queue is
 * closed). */
static void wait_helpers(pid_t *pids, int n) {
  for (int k = 1; k < n; k++)
    while (pids[k] > 0 && waitpid(pids[k], NULL, 0) < 0 && errno == EINTR)
      ;
}

/* The next runner that ended (its status), waiting for one; with MPI,
 * polling instead, the poll's work done between looks: 0 when none ended
 * (and *rc set when the poll ended a run that has no lead). */
static pid_t next_end(const tune_runners *rs, int *status, int *rc) {
  if (!rs->poll)
    return waitpid(-1, status, 0);
  pid_t p = waitpid(-1, status, WNOHANG);
  if (p != 0)
    return p;
  int st = rs->poll(rs->poll_ctx);
  if (st >= 0 && !rs->lead)
    *rc = st;
  else
    usleep(2000);
  return 0;
}

int tune_supervise_runners(const tune_runners *rs) {
  size_t bytes = sizeof(tune_handover) * (size_t)rs->n;
  tune_handover *h = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t pids[TUNE_MAX_GPUS] = {0};
  if (h == MAP_FAILED || rs->n < 1 || rs->n > TUNE_MAX_GPUS) {
    fprintf(stderr, "tessel: tune: cannot map memory to share with its GPU "
            "process: %s\n", strerror(errno));
    return TUNE_EXIT_FAIL;
  }
  memset(h, 0, bytes);
  for (int k = 0; k < rs->n; k++)
    h[k].crashed_unit = -1;
  int rc = -1, helper_restarts = 0, lost = 0;
  /* Without a lead (an MPI rank other than 0), helpers only. */
  for (int k = rs->lead ? 0 : 1; k < rs->n; k++)
    pids[k] = start_runner(rs, k, &h[k]);
  if (pids[0] < 0)
    rc = TUNE_EXIT_FAIL;
  while (rc < 0) {
    int status;
    pid_t p = next_end(rs, &status, &rc);
    if (p == 0 || (p < 0 && errno == EINTR))
      continue;
    if (p < 0 && errno == ECHILD && !rs->lead) {
      rc = TUNE_EXIT_FAIL; /* every helper lost, as said */
      break;
    }
    if (p < 0) {
      fprintf(stderr, "tessel: tune: waiting for its GPU process: %s\n",
              strerror(errno));
      rc = TUNE_EXIT_FAIL;
      break;
    }
    int k = runner_of(pids, rs->n, p);
    if (k < 0)
      continue;
    pids[k] = 0;
    if (k == 0) {
      rc = outcome(&h[0], status);
      if (rc < 0 && (pids[0] = start_runner(rs, 0, &h[0])) < 0)
        rc = TUNE_EXIT_FAIL;
    } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      lost++;
      if (helper_lost(rs, k, &h[k], status, &helper_restarts))
        pids[k] = start_runner(rs, k, &h[k]);
    }
  }
  if (rs->q)
    tune_queue_close_run(rs->q);
  wait_helpers(pids, rs->n);
  munmap(h, bytes);
  if (lost)
    fprintf(stderr, "tessel: tune: %d GPU runner%s ended before the run did "
            "(said above); what they had in flight was timed again\n", lost,
            lost == 1 ? "" : "s");
  return rc ? rc : lost ? TUNE_EXIT_FAIL : 0;
}

int tune_supervise(int (*work)(tune_handover *h, void *arg), void *arg) {
  static const int device0[] = {0};
  tune_runners rs = {.n = 1, .lead = work, .arg = arg, .gpus = device0};
  return tune_supervise_runners(&rs);
}
