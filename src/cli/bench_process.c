/*
 * tessel bench past a kernel that faults the GPU.  After a fault (an
 * illegal address) CUDA cannot be used again in the process (tune's
 * supervisor, src/tune/supervisor.c, says what was measured), so the
 * bench runs in a child, the worker, and this process only waits.  A
 * worker whose kernel faulted notes the kernel and the device's error in
 * the handover and exits BENCH_WORKER_FAULTED before printing that
 * shape's rows; the next worker resumes at that shape, the kernels that
 * faulted left out of the timing and their rows giving the error.  This
 * process makes no CUDA call (a fork after cuInit gives a child whose
 * CUDA state is undefined); the workers write to its stdout and stderr,
 * so the run reads as one.
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

#include "bench_process.h"
#include "options.h"

const bench_fault *cli_bench_fault(const bench_handover *h, int shape,
                                   int row) {
  for (int i = 0; i < h->nfaults; i++)
    if (h->faults[i].shape == shape && h->faults[i].row == row)
      return &h->faults[i];
  return NULL;
}

bool cli_bench_note_fault(bench_handover *h, int shape, int row,
                          const char *why) {
  if (h->nfaults >= BENCH_MAX_FAULTS)
    return false;
  bench_fault *f = &h->faults[h->nfaults++];
  *f = (bench_fault){.shape = shape, .row = row};
  snprintf(f->why, sizeof(f->why), "%s", why);
  h->resume_shape = shape;
  return true;
}

/* A worker: killed when this process dies, so that it does not hold the
 * GPU with no one to report to. */
static pid_t start_worker(int (*work)(bench_handover *, void *), void *arg,
                          bench_handover *h) {
  fflush(stdout); /* else what stdio holds is written twice */
  fflush(stderr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    fprintf(stderr, "tessel: bench: cannot start its GPU process: fork: "
            "%s\n", strerror(errno));
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(EXIT_FAIL);
    exit(work(h, arg));
  }
  return pid;
}

/* The exit status a worker that ended with status leaves the command;
 * -1 to start another. */
static int outcome(const bench_handover *h, int status) {
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "tessel: bench: its GPU process died (signal %d, %s)\n",
            WTERMSIG(status), strsignal(WTERMSIG(status)));
    return EXIT_FAIL;
  }
  int rc = WEXITSTATUS(status);
  if (rc != BENCH_WORKER_FAULTED)
    return rc;
  if (h->nfaults < BENCH_MAX_FAULTS)
    return -1;
  fprintf(stderr, "tessel: bench: %d kernels faulted the GPU; not "
          "restarting it again\n", h->nfaults);
  return EXIT_FAIL;
}

int cli_bench_supervise(int (*work)(bench_handover *h, void *arg), void *arg) {
  bench_handover *h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED) {
    fprintf(stderr, "tessel: bench: cannot map memory to share with its "
            "GPU process: %s\n", strerror(errno));
    return EXIT_FAIL;
  }
  memset(h, 0, sizeof(*h));
  int rc = -1;
  while (rc < 0) {
    pid_t pid = start_worker(work, arg, h);
    int status = 0;
    pid_t ended = -1;
    while (pid > 0 && (ended = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
      ;
    rc = ended > 0 ? outcome(h, status) : EXIT_FAIL;
  }
  munmap(h, sizeof(*h));
  return rc;
}
