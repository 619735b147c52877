/*
 * A tuning run laid over its GPUs: the devices it times on (--gpus, or
 * every one the driver sees), one runner a GPU under the supervisor
 * (supervisor.c), the lead (tuner.c) and its helpers (helper.c) sharing a
 * queue; or, under mpirun, one rank a GPU, rank 0 the lead, the ranks'
 * journals of an interrupted run gathered on rank 0 before it starts
 * (mpi.c, journal.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune_impl.h"

/* How many devices the driver sees, asked in a child process: CUDA must
 * not be initialized in this one, which forks the runners.  0 when it
 * cannot tell. */
static int count_gpus(void) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0)
    _exit(ts_gpu_count() > TUNE_MAX_GPUS ? TUNE_MAX_GPUS : ts_gpu_count());
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

/* Whether every GPU --gpus names is one the driver sees (where it sees
 * any: without, device 0 says why); else says which is not, before any
 * runner starts. */
static bool gpus_present(const ts_tune_opts *o) {
  int seen = o->ngpus > 0 ? count_gpus() : 0;
  for (int k = 0; seen > 0 && k < o->ngpus; k++)
    if (o->gpus[k] < 0 || o->gpus[k] >= seen) {
      fprintf(stderr, "tessel: tune: --gpus names GPU %d, but the CUDA "
              "driver sees %d GPU%s (0 to %d)\n", o->gpus[k], seen,
              seen == 1 ? "" : "s", seen - 1);
      return false;
    }
  return true;
}

/* The devices of the run in a->gpus: o's, every one (ngpus -1), or 0;
 * false with a message when there are too many or one is not there. */
static bool choose_gpus(const ts_tune_opts *o, tune_args *a) {
  if (!gpus_present(o))
    return false;
  a->ngpus = o->ngpus < 0 ? count_gpus() : o->ngpus;
  if (a->ngpus > TUNE_MAX_GPUS) {
    fprintf(stderr, "tessel: tune: %d GPUs asked for; a run times on %d at "
            "most\n", a->ngpus, TUNE_MAX_GPUS);
    return false;
  }
  for (int k = 0; k < a->ngpus; k++)
    a->gpus[k] = o->ngpus < 0 ? k : o->gpus[k];
  if (a->ngpus <= 0) { /* none seen: device 0 says why */
    a->ngpus = 1;
    a->gpus[0] = 0;
  }
  return true;
}

/* Before rank 0's lead starts: what each other rank's GPU journaled of
 * the run's shapes (an interrupted run's) sent to rank 0, for its lead to
 * take instead of publishing those candidates again; with --restart each
 * rank removes its journals instead. */
static void exchange_journals(tune_args *a, tune_mpi *m) {
  size_t n = 0;
  char *mine = tune_mpi_rank(m) == 0
                   ? NULL
                   : tune_rank_journals(a, a->gpus[0], a->o->restart, &n);
  tune_mpi_gather(m, mine, n, &a->sent, &a->nsent);
  free(mine);
}

/* An MPI rank's part of the run, on its GPU (its rank on its host):
 * rank 0 the lead, whose queue's runner k is rank k; another rank a
 * helper that takes from a queue of its own, which rank 0 fills
 * (mpi.c). */
static int tune_ranks(tune_args *a, tune_mpi *m) {
  int rank = tune_mpi_rank(m);
  a->ngpus = rank == 0 ? 1 : 2; /* a rank other than 0: runner 1 only */
  a->gpus[0] = a->gpus[1] = tune_mpi_device(m);
  a->nrunners = tune_mpi_size(m);
  exchange_journals(a, m);
  /* Rank 0 publishes shapes ahead; another rank's queue holds the group
   * rank 0 sent it last. */
  a->q = tune_queue_new(a->o->limit > 0 ? a->o->limit : 1,
                        rank == 0 ? TUNE_BANKS : 1);
  if (!a->q) {
    fprintf(stderr, "tessel: tune: cannot map the queue of MPI rank %d\n", rank);
    free(a->sent);
    return tune_mpi_finish(m, TUNE_EXIT_FAIL);
  }
  tune_mpi_attach(m, a->q);
  tune_runners rs = {.n = a->ngpus, .lead = rank == 0 ? tune_worker : NULL,
                     .helper = tune_helper, .arg = a, .q = a->q,
                     .gpus = a->gpus, .poll = tune_mpi_poll, .poll_ctx = m};
  int rc = tune_supervise_runners(&rs);
  tune_queue_free(a->q);
  free(a->sent);
  size_t none;
  if (tune_mpi_ended(m)) /* rank 0's journal holds what it still needs */
    free(tune_rank_journals(a, a->gpus[0], true, &none));
  return tune_mpi_finish(m, rc);
}

int ts_tune_run(const ts_tune_opts *o, const ts_tune_space *spaces,
                int nspaces, const ts_tune_report *rep) {
  static const ts_tune_report silent = {0};
  if (!o || !o->shapes || o->nshapes <= 0 || !spaces || nspaces <= 0) {
    fprintf(stderr, "tessel: ts_tune_run: no %s to tune\n",
                    !o || !o->shapes || o->nshapes <= 0 ? "shape" : "space");
    return TUNE_EXIT_FAIL;
  }
  tune_args a = {.o = o, .spaces = spaces, .nspaces = nspaces,
                 .rep = rep ? rep : &silent};
  tune_mpi *m;
  if (!tune_mpi_start(o, &m))
    return TUNE_EXIT_FAIL;
  if (m)
    return tune_ranks(&a, m);
  if (!choose_gpus(o, &a))
    return TUNE_EXIT_FAIL;
  a.nrunners = a.ngpus;
  if (a.ngpus > 1 &&
      !(a.q = tune_queue_new(o->limit > 0 ? o->limit : 1, TUNE_BANKS))) {
    fprintf(stderr, "tessel: tune: cannot map the queue the GPUs share\n");
    return TUNE_EXIT_FAIL;
  }
  tune_runners rs = {.n = a.ngpus, .lead = tune_worker, .helper = tune_helper,
                     .arg = &a, .q = a.q, .gpus = a.gpus};
  int rc = tune_supervise_runners(&rs);
  tune_queue_free(a.q);
  return rc;
}
