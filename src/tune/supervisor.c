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

/* Starts a worker running work and waits for it; its wait status in
 * *status, false (with a message) when it could not be started. */
static bool run_worker(int (*work)(tune_handover *, void *), void *arg,
                       tune_handover *h, int *status) {
  /* What stdio holds would otherwise be written by both processes. */
  fflush(stdout);
  fflush(stderr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "tessel: tune: cannot start its GPU process: fork: %s\n",
            strerror(errno));
    return false;
  }
  if (pid == 0) {
    die_with_parent(parent);
    exit(work(h, arg)); /* exit, not return: the worker ends here */
  }
  while (waitpid(pid, status, 0) < 0)
    if (errno != EINTR) {
      fprintf(stderr, "tessel: tune: waiting for its GPU process: %s\n",
              strerror(errno));
      return false;
    }
  return true;
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

int tune_supervise(int (*work)(tune_handover *h, void *arg), void *arg) {
  tune_handover *h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED) {
    fprintf(stderr, "tessel: tune: cannot map memory to share with its GPU "
            "process: %s\n", strerror(errno));
    return TUNE_EXIT_FAIL;
  }
  memset(h, 0, sizeof(*h));
  h->crashed_unit = -1;
  int rc = -1, status;
  while (rc < 0)
    rc = run_worker(work, arg, h, &status) ? outcome(h, status) : TUNE_EXIT_FAIL;
  munmap(h, sizeof(*h));
  return rc;
}
