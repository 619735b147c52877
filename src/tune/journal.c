/*
 * The journal of a tuning run: what happens to each configuration is
 * appended as soon as it happens (src/tune/records.c keeps the file
 * beside the tuning records), and a later run of the same space and
 * definition on the same GPU takes those results instead of timing them
 * again, so an interrupted run resumes where it stopped.  Lines:
 *
 *   timing <TAB> configuration                  about to be timed
 *   timed <TAB> median ms <TAB> max relative error <TAB> configuration
 *   failed <TAB> configuration <TAB> why
 *   full <TAB> median ms <TAB> max relative error <TAB> configuration
 *   cublas <TAB> median ms                      cuBLAS in the same timing
 *
 * `timed` is the first pass's result and `full` the full count's.  The
 * last line about a configuration decides: one whose last line is
 * `timing` was in flight when its process died, and is timed alone (a
 * suspect) rather than with others.  A line that does not parse (the torn
 * last line of a killed run), of a kind this version does not know, or
 * naming a configuration the space no longer has is ignored, so journals
 * of earlier versions (timed and failed lines only) read as before.
 *
 * Every runner of a run on several GPUs or MPI ranks journals what it
 * times on its own device; the lead, before it publishes a shape's first
 * pass, takes the first-pass results and failures of the other devices'
 * journals (peers) too, so that what any GPU timed before an interruption
 * is not timed again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune_impl.h"

static ts_tune_candidate *find(ts_tune_shape *r, const char *text) {
  for (int i = 0; i < r->n; i++)
    if (r->c[i].text && strcmp(r->c[i].text, text) == 0 &&
        !ts_config_pruned(r->c[i].config))
      return &r->c[i];
  return NULL;
}

static double tflops_at(const ts_gemm *g, double ms) {
  return 2.0 * (double)g->m * (double)g->n * (double)g->k / (ms * 1e-3) / 1e12;
}

/* A time and an error as a journal writes them; false unless the time is
 * a positive number. */
static bool parse_result(const ts_tune_shape *r, const char *ms, const char *err,
                         ts_bench_result *out) {
  char *end;
  *out = (ts_bench_result){.status = TS_OK, .median_ms = strtod(ms, &end)};
  if (*end || !(out->median_ms > 0))
    return false;
  out->max_rel_err = err ? strtod(err, NULL) : 0;
  out->tflops = tflops_at(&r->def, out->median_ms);
  return true;
}

/* A `timed` or `full` line's result applied to its candidate. */
static bool resume_result(ts_tune_shape *r, char **f, bool full) {
  ts_tune_candidate *c = find(r, f[3]);
  ts_bench_result b;
  if (!c || !parse_result(r, f[1], f[2], &b))
    return false;
  *(full ? &c->full : &c->quick) = b;
  *(full ? &c->has_full : &c->has_quick) = true;
  c->resumed = true;
  c->suspect = false;
  return true;
}

static bool resume_failure(ts_tune_shape *r, char **f) {
  ts_tune_candidate *c = find(r, f[1]);
  if (!c)
    return false;
  c->quick = (ts_bench_result){.status = TS_ERR_CUDA};
  snprintf(c->quick.message, sizeof(c->quick.message), "%s", f[2]);
  c->has_quick = c->resumed = true;
  c->has_full = c->suspect = false;
  return true;
}

/* A line cut at its tabs into f[0..4); how many fields. */
static int split_fields(char *line, char **f) {
  int n = 1;
  f[0] = line;
  for (char *p = line; *p && n < 4; p++)
    if (*p == '\t') {
      *p = 0;
      f[n++] = p + 1;
    }
  return n;
}

/* One line of the journal applied to its candidate (or to the shape's
 * cuBLAS time); false when it does not parse or names no candidate. */
static bool resume_line(ts_tune_shape *r, char *line) {
  char *f[4];
  int n = split_fields(line, f);
  if (strcmp(f[0], "timed") == 0 && n == 4)
    return resume_result(r, f, false);
  if (strcmp(f[0], "full") == 0 && n == 4)
    return resume_result(r, f, true);
  if (strcmp(f[0], "failed") == 0 && n == 3)
    return resume_failure(r, f);
  if (strcmp(f[0], "timing") == 0 && n == 2) {
    ts_tune_candidate *c = find(r, f[1]);
    if (c)
      c->suspect = true;
    return c != NULL;
  }
  if (strcmp(f[0], "cublas") == 0 && n == 2)
    return parse_result(r, f[1], NULL, &r->cublas);
  return false;
}

/* Each whole line of lines (a torn last one passed over) applied to r
 * with apply. */
static void each_line(ts_tune_shape *r, char *lines,
                      bool (*apply)(ts_tune_shape *r, char *line)) {
  for (char *p = lines, *nl; p && *p; p = nl + 1) {
    nl = strchr(p, '\n');
    if (!nl)
      break; /* a torn last line */
    *nl = 0;
    apply(r, p);
  }
}

static int count_resumed(const ts_tune_shape *r) {
  int resumed = 0;
  for (int i = 0; i < r->n; i++)
    resumed += r->c[i].resumed;
  return resumed;
}

int tune_resume(const ts_gpu *gpu, const char *key, ts_tune_shape *r) {
  char *lines = ts_tune_journal_load(gpu, key, &r->def);
  each_line(r, lines, resume_line);
  free(lines);
  return count_resumed(r);
}

/* A line of another device's journal: a first-pass result or a failure,
 * for a candidate that has no first-pass result yet.  Its full counts,
 * marks and cuBLAS times are its GPU's, not this one's: the full count
 * that ranks is the lead's own. */
static bool resume_peer_line(ts_tune_shape *r, char *line) {
  char *f[4];
  int n = split_fields(line, f);
  bool timed = strcmp(f[0], "timed") == 0 && n == 4;
  bool failed = strcmp(f[0], "failed") == 0 && n == 3;
  ts_tune_candidate *c = timed || failed ? find(r, f[timed ? 3 : 1]) : NULL;
  if (!c || c->has_quick)
    return false;
  return timed ? resume_result(r, f, false) : resume_failure(r, f);
}

int tune_resume_peers(ts_tune_shape *r, char *lines) {
  int before = count_resumed(r);
  each_line(r, lines, resume_peer_line);
  return count_resumed(r) - before;
}

/* Appends one line, its newlines and tabs past the fields made spaces. */
static void append(const ts_gpu *gpu, const char *key, const ts_tune_shape *r,
                   char *line, int fields) {
  for (char *p = line; *p; p++)
    if (*p == '\n' || (*p == '\t' && --fields <= 0))
      *p = ' ';
  ts_tune_journal_add(gpu, key, &r->def, line);
}

void tune_journal_timing(const ts_gpu *gpu, const char *key,
                         const ts_tune_shape *r, const ts_tune_candidate *c) {
  char line[2048];
  snprintf(line, sizeof(line), "timing\t%s", c->text);
  append(gpu, key, r, line, 2);
}

void tune_journal_failure(const ts_gpu *gpu, const char *key,
                          const ts_tune_shape *r, const char *config,
                          const char *why) {
  char line[2048];
  snprintf(line, sizeof(line), "failed\t%.1000s\t%.900s", config, why);
  append(gpu, key, r, line, 3);
}

void tune_journal_note(const ts_gpu *gpu, const char *key,
                       const ts_tune_shape *r, const ts_tune_candidate *c, bool full) {
  const ts_bench_result *b = full ? &c->full : &c->quick;
  if (b->status != TS_OK || b->skipped) {
    tune_journal_failure(gpu, key, r, c->text, b->message);
    return;
  }
  char line[2048];
  snprintf(line, sizeof(line), "%s\t%.6f\t%.3e\t%s", full ? "full" : "timed",
           b->median_ms, b->max_rel_err, c->text);
  append(gpu, key, r, line, 4);
}

void tune_journal_cublas(const ts_gpu *gpu, const char *key,
                         const ts_tune_shape *r) {
  char line[64];
  snprintf(line, sizeof(line), "cublas\t%.6f", r->cublas.median_ms);
  append(gpu, key, r, line, 2);
}

/* ---- An MPI rank's journals ------------------------------------------------
 *
 * A rank other than 0 reads its journals of the run's shapes at the start,
 * for rank 0 (tune_mpi_gather), and removes them once rank 0 has ended the
 * run.  The journal's key names the device's UUID, which only CUDA tells;
 * CUDA must not start in the rank's supervisor, which forks its runner
 * (supervisor.c), so a child process opens the device and does it. */

/* In the child: the texts of the device's journals of the run's shapes
 * written to out, each ended by a NUL, or with remove the journals
 * removed.  Its exit status. */
static int rank_journals_child(const tune_args *a, int device, bool remove,
                               FILE *out) {
  ts_gpu *gpu = ts_gpu_open_device(device);
  bool ok = ts_gpu_status(gpu) == TS_OK;
  for (int s = 0; ok && s < a->nspaces; s++)
    for (int j = 0; ok && j < a->o->nshapes; j++) {
      const char *key = a->spaces[s].key;
      const ts_gemm *def = &a->o->shapes[j];
      char *text = remove ? NULL : tune_journal_text(gpu, key, def);
      if (remove)
        ts_tune_journal_remove(gpu, key, def);
      ok = !text || fwrite(text, 1, strlen(text) + 1, out) == strlen(text) + 1;
      free(text);
    }
  ts_gpu_close(gpu);
  return fclose(out) == 0 && ok ? 0 : TUNE_EXIT_FAIL;
}

/* All that fd gives until its end, malloc'd, its length in *n; NULL when
 * out of memory. */
static char *read_to_end(int fd, size_t *n) {
  size_t cap = 1 << 16;
  char *buf = malloc(cap);
  *n = 0;
  while (buf) {
    if (*n == cap) {
      char *grown = realloc(buf, cap *= 2);
      if (!grown)
        free(buf);
      buf = grown;
      continue;
    }
    ssize_t got = read(fd, buf + *n, cap - *n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    *n += (size_t)got;
  }
  return buf;
}

char *tune_rank_journals(const tune_args *a, int device, bool remove,
                         size_t *n) {
  int fd[2] = {-1, -1};
  *n = 0;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = pipe(fd) == 0 ? fork() : -1;
  if (pid == 0) {
    close(fd[0]);
    FILE *out = fdopen(fd[1], "w");
    /* _exit: the handlers MPI registered at exit are the parent's. */
    _exit(out ? rank_journals_child(a, device, remove, out) : TUNE_EXIT_FAIL);
  }
  if (pid < 0 && fd[0] >= 0) {
    close(fd[0]);
    close(fd[1]);
  }
  if (pid < 0) {
    fprintf(stderr, "tessel: tune: cannot %s the journals of GPU %d: %s; "
            "what it journaled is timed again\n", remove ? "remove" : "read",
            device, strerror(errno));
    return NULL;
  }
  close(fd[1]);
  char *texts = read_to_end(fd[0], n);
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!texts || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    *n = 0; /* a GPU it cannot open: its runner says so */
  return texts;
}
