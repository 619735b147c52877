/*
 * The ranks of a tuning run under mpirun or srun (docs/tuning.md, "Across
 * hosts"): every MPI call of tessel is here, behind tune_impl.h's small
 * interface, so that a build without MPI compiles none of them.
 *
 * Rank 0 does the run as a host with several GPUs does (tuner.c): its
 * lead runner publishes each shape's first pass in the queue, and here,
 * in its supervisor (which makes no CUDA call), rank k is the queue's
 * runner k: a rank that asks gets a group (the candidates' indices in
 * the enumeration, which every rank makes alike from the same command
 * line, and compiles itself), and its results go in the queue as a local
 * runner's do.  A rank other than 0 fills a queue of its own with what
 * rank 0 sends, and one helper runner on its GPU (helper.c) takes from
 * it; the rank's supervisor restarts that runner after a fault as it
 * would on one host.  That runner journals what it times on the rank's
 * GPU; at the start every rank's journals of the run's shapes are
 * gathered on rank 0 (tune_mpi_gather), whose lead takes their results
 * instead of publishing those candidates again.
 *
 * A rank that stops answering (every rank sends a beat twice a second,
 * from its supervisor, whatever its runner is doing) is lost after
 * TESSEL_MPI_TIMEOUT seconds (default 30): what it held goes back in the
 * queue and the run completes without it.  OpenMPI 4 ends the whole job
 * when a rank dies unless mpirun has --enable-recovery; with it, MPI_Finalize
 * waits for every rank, so after a loss no rank finalizes.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tune_impl.h"

/* Whether a launcher started this process as one of several. */
static bool launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
         getenv("PMI_SIZE");
}

bool ts_tune_mpi_launched(void) { return launched(); }

#ifndef TESSEL_HAVE_MPI

bool tune_mpi_start(const ts_tune_opts *o, tune_mpi **m) {
  (void)o;
  *m = NULL;
  if (!launched())
    return true;
  fprintf(stderr, "tessel: tune: started by mpirun or srun, but this build "
          "of tessel has no MPI: every rank would tune alone.  Install "
          "OpenMPI (libopenmpi-dev) and build with -Dmpi=enabled\n");
  return false;
}
int tune_mpi_rank(const tune_mpi *m) { return (void)m, 0; }
int tune_mpi_size(const tune_mpi *m) { return (void)m, 1; }
int tune_mpi_device(const tune_mpi *m) { return (void)m, 0; }
void tune_mpi_attach(tune_mpi *m, tune_queue *q) { (void)m, (void)q; }
int tune_mpi_poll(void *ctx) { return (void)ctx, -1; }
int tune_mpi_finish(tune_mpi *m, int rc) { return (void)m, rc; }
void tune_mpi_gather(tune_mpi *m, const char *mine, size_t n, char **all,
                     size_t *nall) {
  (void)m, (void)mine, (void)n;
  *all = NULL;
  *nall = 0;
}
bool tune_mpi_ended(const tune_mpi *m) { return (void)m, false; }

#else

#include <mpi.h>

enum { TAG_ASK = 1, TAG_WORK, TAG_DONE, TAG_END, TAG_BEAT, TAG_LEAVE };
enum { HOST_LEN = 64 };
static const double BEAT_SECONDS = 0.5;

/* A result of the first pass, as a rank sends it to rank 0. */
typedef struct {
  int gen, slot, status;
  double median_ms, tflops, max_rel_err;
  char message[256];
} wire_result;

struct tune_mpi {
  int rank, size, device;
  char (*hosts)[HOST_LEN]; /* each rank's host */
  int *devices;            /* each rank's device */
  tune_queue *q;
  double timeout, last_beat;
  double *heard;    /* when each rank was last heard from */
  bool *lost;       /* rank 0: ranks lost to the run */
  bool *asking;     /* rank 0: ranks waiting for a group */
  int nlost;
  /* A rank other than 0: rank 0's generation its queue holds and its
   * own for it, rank 0's slot of each of its slots, and which results
   * went back. */
  int gen0, gen;
  int *slot0;
  bool *sent;
  bool waiting, ended, others_lost;
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void send_to(const tune_mpi *m, int to, int tag, const void *buf,
                    int bytes) {
  (void)m;
  MPI_Send(buf, bytes, MPI_BYTE, to, tag, MPI_COMM_WORLD);
}

static void send_int(const tune_mpi *m, int to, int tag, int v) {
  send_to(m, to, tag, &v, (int)sizeof(v));
}

/* Each rank's host and device, gathered while every rank is there. */
static bool gather_places(tune_mpi *m) {
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  char mine[HOST_LEN];
  snprintf(mine, sizeof(mine), "%s", host);
  m->hosts = calloc((size_t)m->size, sizeof(*m->hosts));
  m->devices = calloc((size_t)m->size, sizeof(*m->devices));
  m->heard = calloc((size_t)m->size, sizeof(*m->heard));
  m->lost = calloc((size_t)m->size, sizeof(*m->lost));
  m->asking = calloc((size_t)m->size, sizeof(*m->asking));
  if (!m->hosts || !m->devices || !m->heard || !m->lost || !m->asking)
    return false;
  MPI_Allgather(mine, HOST_LEN, MPI_CHAR, m->hosts, HOST_LEN, MPI_CHAR,
                MPI_COMM_WORLD);
  MPI_Allgather(&m->device, 1, MPI_INT, m->devices, 1, MPI_INT,
                MPI_COMM_WORLD);
  for (int r = 0; r < m->size; r++)
    m->heard[r] = now();
  return true;
}

static void free_mpi(tune_mpi *m) {
  if (!m)
    return;
  free(m->hosts);
  free(m->devices);
  free(m->heard);
  free(m->lost);
  free(m->asking);
  free(m->slot0);
  free(m->sent);
  free(m);
}

/* This rank's device: its rank among those sharing its memory (host). */
static int local_rank(void) {
  MPI_Comm node;
  int r = 0;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                          MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
  }
  return r;
}

static double timeout_seconds(void) {
  const char *v = getenv("TESSEL_MPI_TIMEOUT");
  double t = v ? atof(v) : 0;
  return t > 0 ? t : 30;
}

/* The ranks set up once MPI is started: false (said) when the run
 * cannot go on. */
static bool set_up(const ts_tune_opts *o, tune_mpi *m) {
  MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &m->size);
  /* A rank that dies must not take the others with it. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  m->device = local_rank();
  m->timeout = timeout_seconds();
  m->gen0 = -1;
  if (m->size > TS_TUNE_MAX_GPUS) {
    if (m->rank == 0)
      fprintf(stderr, "tessel: tune: %d MPI ranks; a run times on %d GPUs "
              "at most (one a rank)\n", m->size, TS_TUNE_MAX_GPUS);
    return false;
  }
  if (o->ngpus != 0) {
    if (m->rank == 0)
      fprintf(stderr, "tessel: tune: --gpus under mpirun: each rank times "
              "on one GPU, its rank on its host; start one rank per GPU "
              "(mpirun -n GPUS) instead\n");
    return false;
  }
  if (!gather_places(m)) {
    fprintf(stderr, "tessel: out of memory\n");
    return false;
  }
  return true;
}

bool tune_mpi_start(const ts_tune_opts *o, tune_mpi **m) {
  *m = NULL;
  if (!launched())
    return true;
  int provided;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "tessel: tune: MPI_Init failed\n");
    return false;
  }
  tune_mpi *t = calloc(1, sizeof(*t));
  bool ok = t && set_up(o, t);
  if (t && ok && t->size < 2) { /* one rank: a run as without mpirun */
    MPI_Finalize();
    free_mpi(t);
    return true;
  }
  if (!ok) {
    free_mpi(t);
    MPI_Finalize();
    return false;
  }
  *m = t;
  return true;
}

int tune_mpi_rank(const tune_mpi *m) { return m ? m->rank : 0; }
int tune_mpi_size(const tune_mpi *m) { return m ? m->size : 1; }
int tune_mpi_device(const tune_mpi *m) { return m ? m->device : 0; }

void tune_mpi_attach(tune_mpi *m, tune_queue *q) {
  m->q = q;
  if (m->rank == 0)
    return;
  m->slot0 = calloc((size_t)q->capacity, sizeof(*m->slot0));
  m->sent = calloc((size_t)q->capacity, sizeof(*m->sent));
}

/* The next message for this rank, malloc'd in *buf (its bytes, source
 * and tag), or false when none is waiting. */
static bool next_message(void **buf, int *bytes, int *from, int *tag) {
  int flag = 0;
  MPI_Status st;
  if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) !=
          MPI_SUCCESS || !flag)
    return false;
  MPI_Get_count(&st, MPI_BYTE, bytes);
  *buf = malloc((size_t)(*bytes > 0 ? *bytes : 1));
  *from = st.MPI_SOURCE;
  *tag = st.MPI_TAG;
  MPI_Recv(*buf ? *buf : (void *)&flag, *buf ? *bytes : 0, MPI_BYTE, *from,
           *tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return true;
}

/* A beat to `to` (every other rank from rank 0) twice a second. */
static void beat(tune_mpi *m) {
  if (now() - m->last_beat < BEAT_SECONDS)
    return;
  m->last_beat = now();
  for (int r = 0; r < m->size; r++)
    if (r != m->rank && !m->lost[r] && (m->rank == 0 || r == 0))
      send_int(m, r, TAG_BEAT, 0);
}

/* ---- Rank 0 ------------------------------------------------------------------- */

/* Rank r is lost: what it held goes back in the queue, for the others. */
static void lose(tune_mpi *m, int r, const char *why) {
  int had = tune_queue_requeue(m->q, r, false, NULL);
  m->lost[r] = true;
  m->asking[r] = false;
  m->nlost++;
  fprintf(stderr, "tessel: tune: MPI rank %d (host %s, GPU %d) %s; %d of its "
          "configurations back in the queue; rank %d is lost to this run, "
          "the other ranks time the rest\n", r, m->hosts[r], m->devices[r],
          why, had, r);
}

/* Results rank `from` sent, put in the queue as its runner's. */
static void take_results(tune_mpi *m, int from, const wire_result *w, int n) {
  for (int i = 0; i < n; i++) {
    ts_bench_result b = {.status = (ts_status)w[i].status,
                         .median_ms = w[i].median_ms, .tflops = w[i].tflops,
                         .max_rel_err = w[i].max_rel_err};
    snprintf(b.message, sizeof(b.message), "%s", w[i].message);
    if (w[i].slot >= 0 && w[i].slot < m->q->capacity * m->q->nbanks)
      tune_queue_finish(m->q, w[i].gen, from, w[i].slot, &b);
  }
}

/* A group of the earliest shape published with any left, for rank r,
 * sent; false when none is left. */
static bool hand_out(tune_mpi *m, int r) {
  tune_group g;
  int n = tune_queue_take_next(m->q, r, CHUNK, &g);
  if (!n)
    return false;
  int msg[3 + 3 * CHUNK] = {g.gen, g.unit, n};
  for (int i = 0; i < n; i++) {
    msg[3 + 3 * i] = g.slot[i];
    msg[4 + 3 * i] = g.index[i];
    msg[5 + 3 * i] = g.alone[i];
  }
  send_to(m, r, TAG_WORK, msg, (int)sizeof(int) * (3 + 3 * n));
  return true;
}

static void lead_message(tune_mpi *m, int from, int tag, const void *buf,
                         int bytes) {
  if (from <= 0 || from >= m->size || m->lost[from])
    return; /* a lost rank that comes back is not listened to */
  m->heard[from] = now();
  if (tag == TAG_ASK)
    m->asking[from] = true;
  else if (tag == TAG_DONE && buf)
    take_results(m, from, buf, bytes / (int)sizeof(wire_result));
  else if (tag == TAG_LEAVE)
    lose(m, from, "could not go on (its GPU's runner was lost, said on its "
                  "stderr)");
}

static int lead_poll(tune_mpi *m) {
  void *buf;
  int bytes, from, tag;
  while (next_message(&buf, &bytes, &from, &tag)) {
    lead_message(m, from, tag, buf, bytes);
    free(buf);
  }
  beat(m);
  for (int r = 1; r < m->size; r++) {
    if (m->asking[r] && hand_out(m, r))
      m->asking[r] = false;
    if (!m->lost[r] && now() - m->heard[r] > m->timeout) {
      char why[128];
      snprintf(why, sizeof(why), "stopped answering for %.0f s",
               m->timeout);
      lose(m, r, why);
    }
  }
  return -1;
}

/* ---- A rank other than 0 ------------------------------------------------------ */

/* A group from rank 0, put in this rank's queue (which the rank asked
 * for when all it held was over): a new generation for a new shape of
 * rank 0's, added to the open one otherwise. */
static void take_work(tune_mpi *m, const int *msg, int bytes) {
  int n = bytes >= 3 * (int)sizeof(int) ? msg[2] : 0;
  if (n < 1 || n > CHUNK || bytes < (int)sizeof(int) * (3 + 3 * n))
    return;
  int which[CHUNK];
  bool alone[CHUNK];
  for (int i = 0; i < n; i++) {
    which[i] = msg[4 + 3 * i];
    alone[i] = msg[5 + 3 * i];
  }
  tune_queue *q = m->q;
  bool more = msg[0] == m->gen0;
  int at = more ? q->bank[0].n : 0; /* one bank: see tune_ranks */
  if (!more) {
    tune_queue_close_unit(q, m->gen);
    m->gen = tune_queue_publish(q, msg[1], which, alone, n, CHUNK);
  }
  if (!(more ? tune_queue_append(q, m->gen, which, alone, n) : m->gen))
    return;
  m->gen0 = msg[0];
  for (int i = 0; i < n; i++) {
    m->slot0[at + i] = msg[3 + 3 * i];
    m->sent[at + i] = false;
  }
  m->waiting = false;
}

/* The results of this rank's queue not yet sent, sent to rank 0; whether
 * every slot is over (the rank is idle). */
static bool send_results(tune_mpi *m) {
  tune_queue *q = m->q;
  wire_result w[CHUNK];
  int n = 0;
  bool idle = true;
  tune_queue_lock(q);
  int first = 0;
  const tune_bank *b = tune_queue_bank(q, m->gen, &first);
  for (int i = first; b && i < first + b->n; i++) {
    tune_slot *s = &q->slot[i];
    idle = idle && (s->state == SLOT_DONE || s->state == SLOT_LEFT);
    if (s->state != SLOT_DONE || m->sent[i] || n == CHUNK)
      continue;
    m->sent[i] = true;
    w[n] = (wire_result){.gen = m->gen0, .slot = m->slot0[i],
                         .status = s->status, .median_ms = s->median_ms,
                         .tflops = s->tflops, .max_rel_err = s->max_rel_err};
    snprintf(w[n++].message, sizeof(w[0].message), "%s", s->message);
  }
  tune_queue_unlock(q);
  if (n)
    send_to(m, 0, TAG_DONE, w, (int)sizeof(w[0]) * n);
  return idle && !n;
}

static int rank_poll(tune_mpi *m) {
  void *buf;
  int bytes, from, tag;
  while (next_message(&buf, &bytes, &from, &tag)) {
    if (from == 0)
      m->heard[0] = now();
    if (from == 0 && tag == TAG_WORK && buf)
      take_work(m, buf, bytes);
    if (from == 0 && tag == TAG_END) {
      m->ended = true;
      m->others_lost = buf && bytes >= (int)sizeof(int) && *(int *)buf > 0;
    }
    free(buf);
  }
  if (m->ended)
    return 0;
  beat(m);
  if (send_results(m) && !m->waiting) {
    send_int(m, 0, TAG_ASK, 0);
    m->waiting = true;
  }
  if (now() - m->heard[0] > m->timeout) {
    fprintf(stderr, "tessel: tune: MPI rank %d: rank 0 stopped answering for "
            "%.0f s; ending (its journal keeps what was timed: run the job "
            "again to resume)\n", m->rank, m->timeout);
    m->lost[0] = true;
    return TUNE_EXIT_FAIL;
  }
  return -1;
}

int tune_mpi_poll(void *ctx) {
  tune_mpi *m = ctx;
  return m->rank == 0 ? lead_poll(m) : rank_poll(m);
}

/* ---- The journals at the start ------------------------------------------------
 *
 * Every rank is there, as for gather_places: one gather brings each rank's
 * journals to rank 0 before its lead starts, which takes their results
 * instead of publishing those candidates again. */

/* The bytes of mine that a gather carries: all, or where they pass what
 * its int counts hold (a rank's share of them), the texts that fit whole. */
static int bytes_to_send(const char *mine, size_t n) {
  size_t most = (size_t)INT_MAX / TS_TUNE_MAX_GPUS;
  if (n <= most)
    return (int)n;
  while (most > 0 && mine[most - 1] != 0)
    most--;
  return (int)most;
}

void tune_mpi_gather(tune_mpi *m, const char *mine, size_t n, char **all,
                     size_t *nall) {
  int bytes = mine ? bytes_to_send(mine, n) : 0;
  bool root = m->rank == 0;
  int *counts = root ? calloc((size_t)m->size, sizeof(*counts)) : NULL;
  int *at = root ? calloc((size_t)m->size, sizeof(*at)) : NULL;
  *all = NULL;
  *nall = 0;
  if (root && (!counts || !at)) {
    /* The other ranks wait in the gather: the job cannot go on. */
    fprintf(stderr, "tessel: tune: MPI rank 0: out of memory gathering the "
            "ranks' journals\n");
    MPI_Abort(MPI_COMM_WORLD, TUNE_EXIT_FAIL);
  }
  MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int r = 0; root && r < m->size; r++) {
    at[r] = (int)*nall;
    *nall += (size_t)counts[r];
  }
  if (root && !(*all = malloc(*nall + 1))) {
    fprintf(stderr, "tessel: tune: MPI rank 0: out of memory for the ranks' "
            "journals (%zu bytes)\n", *nall);
    MPI_Abort(MPI_COMM_WORLD, TUNE_EXIT_FAIL);
  }
  MPI_Gatherv(mine, bytes, MPI_BYTE, *all, counts, at, MPI_BYTE, 0,
              MPI_COMM_WORLD);
  if (root)
    (*all)[*nall] = 0;
  free(counts);
  free(at);
}

/* ---- The end ------------------------------------------------------------------ */

bool tune_mpi_ended(const tune_mpi *m) { return m && m->rank != 0 && m->ended; }

/* Rank 0: the ranks lost, named in the summary. */
static void say_lost(const tune_mpi *m) {
  fprintf(stderr, "tessel: tune: %d MPI rank%s lost before the run ended:",
          m->nlost, m->nlost == 1 ? "" : "s");
  for (int r = 1, said = 0; r < m->size; r++)
    if (m->lost[r])
      fprintf(stderr, "%s rank %d (host %s, GPU %d)", said++ ? "," : "", r,
              m->hosts[r], m->devices[r]);
  fprintf(stderr, "; what they held was timed by the others\n");
}

int tune_mpi_finish(tune_mpi *m, int rc) {
  if (!m)
    return rc;
  bool finalize;
  if (m->rank == 0) {
    for (int r = 1; r < m->size; r++)
      if (!m->lost[r])
        send_int(m, r, TAG_END, m->nlost);
    if (m->nlost)
      say_lost(m);
    rc = rc ? rc : m->nlost ? TUNE_EXIT_FAIL : 0;
    finalize = !m->nlost;
  } else {
    if (!m->ended && !m->lost[0])
      send_int(m, 0, TAG_LEAVE, rc);
    finalize = m->ended && !m->others_lost;
  }
  fflush(stdout);
  fflush(stderr);
  /* After a loss MPI_Finalize would wait for the lost rank for ever. */
  if (finalize)
    MPI_Finalize();
  free_mpi(m);
  return rc;
}

#endif
