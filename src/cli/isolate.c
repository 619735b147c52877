/*
 * A schedule file's code run where it cannot take the command down: each
 * schedule and space of a file (never a built-in: that is the library's
 * own code) is built in a child process, which sends the schedule back as
 * text (ts_trace_save) for this process to replay (ts_trace_load), so the
 * command goes on from an ordinary schedule.
 *
 * The child has a time limit, $TESSEL_SCHEDULE_TIMEOUT seconds (default
 * 10; 0 for none): alarm() in the child, and a kill from the parent a
 * little later should the child not end.  When the code crashes (SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL, SIGABRT), runs out of time or calls exit(), a
 * handler (or an atexit hook) sends the trace the schedule has so far,
 * formatted into a static buffer and written with write(2): nothing that
 * allocates.  The parent replays that partial trace and returns a
 * schedule in error (TS_ERR_SCHEDULE_FAULT) whose message says what
 * happened, the trace printed under it; each command reports it as it
 * reports any schedule error, and goes on to its next schedule.
 *
 * The child makes no CUDA call (a fork after cuInit gives a child whose
 * CUDA state is undefined), leaves through _exit, and this process
 * flushes stdio before the fork so that nothing is written twice.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "options.h"

enum {
  DEFAULT_TIMEOUT_S = 10,
  BACKSTOP_S = 2,       /* after the child's own alarm */
  PARTIAL_MAX = 1 << 18 /* bytes of a partial trace */
};

/* The first byte the child sends: what follows. */
enum { SENT_RESULT = 'R', SENT_PARTIAL = 'P', SENT_EXIT = 'X' };

static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                                    SIGALRM};

/* ---- The time limit ------------------------------------------------------------ */

int cli_schedule_timeout(void) {
  static int seconds = -1;
  if (seconds >= 0)
    return seconds;
  seconds = DEFAULT_TIMEOUT_S;
  const char *env = getenv("TESSEL_SCHEDULE_TIMEOUT");
  if (!env || !*env)
    return seconds;
  char *end;
  errno = 0;
  long v = strtol(env, &end, 10);
  if (*end || errno || v < 0 || v > 86400)
    fprintf(stderr, "tessel: TESSEL_SCHEDULE_TIMEOUT must be whole seconds "
            "in 0..86400, 0 for no limit (got '%s'); using %d\n", env,
            DEFAULT_TIMEOUT_S);
  else
    seconds = (int)v;
  return seconds;
}

/* ---- The child ------------------------------------------------------------------ */

/* What the child's handlers read: set in the child only. */
static int child_fd = -1;
static ts_sched *volatile watched; /* the schedule being built */
static const ts_builtin *real_sched;
static const ts_space *real_space;
static char partial[PARTIAL_MAX];

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    p += w;
    n -= (size_t)w;
  }
}

/* The tag and the trace so far: from a signal handler, no allocation. */
static void send_partial(char tag) {
  write_all(child_fd, &tag, 1);
  size_t n = ts_trace_save(watched, partial, sizeof(partial));
  write_all(child_fd, partial, n < sizeof(partial) ? n : sizeof(partial) - 1);
}

static void on_fault(int sig) {
  int saved = errno;
  send_partial(SENT_PARTIAL);
  errno = saved;
  raise(sig); /* the default action now (SA_RESETHAND): the child ends */
}

static void on_exit_called(void) {
  alarm(0);
  send_partial(SENT_EXIT);
  fflush(stdout);
  fflush(stderr);
  _exit(EXIT_FAIL); /* the parent's atexit work is not the child's */
}

/* On an alternate stack, so a stack overflow reaches the handler too. */
static void install_handlers(void) {
  static char stack[1 << 16];
  stack_t ss = {.ss_sp = stack, .ss_size = sizeof(stack)};
  sigaltstack(&ss, NULL);
  struct sigaction sa = {.sa_handler = on_fault,
                         .sa_flags = SA_ONSTACK | SA_RESETHAND | SA_NODEFER};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
    sigaction(fault_signals[i], &sa, NULL);
  atexit(on_exit_called);
}

/* The file's functions, called through these so the handlers know the
 * schedule. */
static ts_status watched_sched_apply(ts_sched *s) {
  watched = s;
  return real_sched->apply(s);
}

static ts_status watched_space_apply(ts_sched *s, ts_config *c) {
  watched = s;
  return real_space->apply(s, c);
}

/* ---- Running a child --------------------------------------------------------- */

/* How a child ended. */
typedef struct {
  char *out; /* what it sent, malloc'd */
  size_t len;
  int status;  /* waitpid's */
  bool killed; /* by the parent, past the time limit */
} child_end;

/* Milliseconds from now until deadline (a CLOCK_MONOTONIC time), >= 0. */
static int ms_until(const struct timespec *deadline) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long ms = (deadline->tv_sec - now.tv_sec) * 1000LL +
                 (deadline->tv_nsec - now.tv_nsec) / 1000000;
  return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Appends what fd has to e->out: 1, 0 at its end, -1 on an error. */
static int read_some(int fd, child_end *e, size_t *cap) {
  if (e->len + 4096 > *cap) {
    size_t grown = *cap ? *cap * 2 : 8192;
    char *p = realloc(e->out, grown);
    if (!p)
      return -1;
    e->out = p;
    *cap = grown;
  }
  ssize_t n = read(fd, e->out + e->len, *cap - e->len - 1);
  if (n < 0 && errno == EINTR)
    return 1;
  if (n <= 0)
    return n == 0 ? 0 : -1;
  e->len += (size_t)n;
  return 1;
}

/* Reads the child's output until it closes it, killing it past the
 * deadline; then waits for it. */
static void collect(pid_t pid, int fd, int timeout, child_end *e) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout + BACKSTOP_S;
  size_t cap = 0;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, timeout ? ms_until(&deadline) : -1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0 && !e->killed) {
      kill(pid, SIGKILL);
      e->killed = true;
      continue; /* the pipe closes as it dies */
    }
    int got = r < 0 ? -1 : read_some(fd, e, &cap);
    if (got < 0 && !e->killed)
      kill(pid, SIGKILL); /* not to leave it blocked on a full pipe */
    if (got <= 0)
      break;
  }
  if (e->out)
    e->out[e->len] = 0;
  while (waitpid(pid, &e->status, 0) < 0 && errno == EINTR)
    ;
}

/* Runs work(arg) in a child with the time limit; false (with a message)
 * when no child could be started. */
static bool run_child(void (*work)(void *arg, int fd), void *arg,
                      child_end *e) {
  *e = (child_end){0};
  int timeout = cli_schedule_timeout(), fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "tessel: cannot run a schedule file's code apart: "
            "pipe: %s\n", strerror(errno));
    return false;
  }
  fflush(stdout); /* else the child would write it again */
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "tessel: cannot run a schedule file's code apart: "
            "fork: %s\n", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    child_fd = fds[1];
    install_handlers();
    alarm((unsigned)timeout);
    work(arg, child_fd);
    alarm(0);
    fflush(stdout);
    fflush(stderr);
    _exit(0);
  }
  close(fds[1]);
  collect(pid, fds[0], timeout, e);
  close(fds[0]);
  return true;
}

/* ---- What happened ----------------------------------------------------------- */

static const char *signal_name(int sig) {
  switch (sig) {
  case SIGSEGV: return "SIGSEGV";
  case SIGBUS: return "SIGBUS";
  case SIGFPE: return "SIGFPE";
  case SIGILL: return "SIGILL";
  case SIGABRT: return "SIGABRT";
  case SIGKILL: return "SIGKILL";
  default: return NULL;
  }
}

/* "crashed (SIGSEGV)", "did not return in 10 s", "called exit()"; NULL
 * when the child sent its result. */
static const char *what_happened(const child_end *e, char *buf, size_t len) {
  char tag = e->len ? e->out[0] : 0;
  int st = e->status;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && tag == SENT_RESULT)
    return NULL;
  if (e->killed || (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM))
    snprintf(buf, len, "did not return in %d s (TESSEL_SCHEDULE_TIMEOUT)",
             cli_schedule_timeout());
  else if (tag == SENT_EXIT)
    snprintf(buf, len, "called exit()");
  else if (WIFSIGNALED(st) && signal_name(WTERMSIG(st)))
    snprintf(buf, len, "crashed (%s)", signal_name(WTERMSIG(st)));
  else if (WIFSIGNALED(st))
    snprintf(buf, len, "crashed (signal %d, %s)", WTERMSIG(st),
             strsignal(WTERMSIG(st)));
  else
    snprintf(buf, len, "ended its process (exit status %d) without "
             "returning", WEXITSTATUS(st));
  return buf;
}

/* s replayed from the partial trace, failed with what happened and the
 * trace printed under it. */
static void fail_with_trace(ts_sched *s, const char *subject,
                            const char *what) {
  char *trace = ts_print_trace(s);
  size_t tn = trace ? strlen(trace) : 0;
  if (tn && trace[tn - 1] == '\n')
    trace[tn - 1] = 0; /* the commands end the message's line */
  size_t n = strlen(subject) + strlen(what) + (trace ? strlen(trace) : 0) + 64;
  char *msg = malloc(n);
  if (msg)
    snprintf(msg, n, "%s %s; its primitives until then:\n%s", subject, what,
             trace ? trace : "(none: out of memory)");
  ts_sched_fail(s, TS_ERR_SCHEDULE_FAULT, msg ? msg : what);
  free(msg);
  free(trace);
}

/* The schedule a child sent (e->out past its tag), replayed onto a fresh
 * one; failed when the child did not return. */
static ts_sched *schedule_from(const child_end *e, const ts_gemm *g,
                               const char *name, const char *subject) {
  ts_sched *s = ts_matmul_named(g, name);
  char buf[160];
  const char *what = what_happened(e, buf, sizeof(buf));
  bool complete = false;
  if (e->len > 1)
    ts_trace_load(s, e->out + 1, e->len - 1, &complete);
  if (what)
    fail_with_trace(s, subject, what);
  else if (!complete)
    ts_sched_fail(s, TS_ERR_SCHEDULE_FAULT, "the schedule's process sent "
                  "back less than the whole schedule");
  return s;
}

/* ---- Schedules ---------------------------------------------------------------- */

typedef struct {
  const ts_builtin *sched;
  const ts_space *space;
  const ts_gemm *g;
  ts_config *c;
} build;

/* In the child: the schedule built and sent whole. */
static void build_and_send(void *arg, int fd) {
  const build *b = arg;
  ts_sched *s;
  if (b->sched) {
    real_sched = b->sched;
    s = ts_matmul_named(b->g, b->sched->name);
    watched = s;
    if (ts_sched_status(s) == TS_OK)
      watched_sched_apply(s);
  } else {
    real_space = b->space;
    ts_space watched_space = *b->space;
    watched_space.apply = watched_space_apply;
    s = ts_space_schedule(&watched_space, b->g, b->c);
  }
  alarm(0);
  watched = s; /* ts_space_schedule may have made another */
  size_t n = ts_trace_save(s, NULL, 0);
  char *text = malloc(n + 2);
  if (!text)
    return; /* the parent finds no result */
  text[0] = SENT_RESULT;
  ts_trace_save(s, text + 1, n + 1);
  write_all(fd, text, n + 1);
  free(text);
  ts_sched_free(s);
}

ts_sched *cli_isolated_schedule(const char *file, const ts_builtin *sched,
                                const ts_space *space, const ts_gemm *g,
                                ts_config *c) {
  const char *name = sched ? sched->name : space->name;
  build b = {.sched = sched, .space = sched ? NULL : space, .g = g, .c = c};
  child_end e;
  if (!run_child(build_and_send, &b, &e)) {
    ts_sched *s = ts_matmul_named(g, name);
    ts_sched_fail(s, TS_ERR_SCHEDULE_FAULT, "tessel could not start a "
                  "process to run the schedule's code in");
    return s;
  }
  char subject[4200];
  snprintf(subject, sizeof(subject), "%s %s in %s", sched ? "schedule"
                                                          : "space",
           name, file);
  ts_sched *s = schedule_from(&e, g, name, subject);
  free(e.out);
  return s;
}

/* ---- A space's knobs (tessel list FILE.c) ------------------------------------- */

typedef struct {
  const ts_space *space;
  const ts_gemm *g;
  const char *indent;
} listing;

static void list_knobs(void *arg, int fd) {
  const listing *l = arg;
  real_space = l->space;
  ts_space watched_space = *l->space;
  watched_space.apply = watched_space_apply;
  cli_print_knobs(&watched_space, l->g, l->indent);
  alarm(0);
  watched = NULL;
  char done = SENT_RESULT;
  write_all(fd, &done, 1);
}

bool cli_isolated_knobs(const char *file, const ts_space *sp,
                        const ts_gemm *def, const char *indent) {
  listing l = {sp, def, indent};
  child_end e;
  if (!run_child(list_knobs, &l, &e))
    return false;
  char buf[160];
  const char *what = what_happened(&e, buf, sizeof(buf));
  if (what) {
    char subject[4200];
    snprintf(subject, sizeof(subject), "space %s in %s, enumerating its "
             "configurations at %lldx%lldx%lld,", sp->name, file,
             (long long)def->m, (long long)def->n, (long long)def->k);
    ts_sched *s = schedule_from(&e, def, sp->name, subject);
    fprintf(stderr, "tessel: %s\n", ts_sched_errmsg(s));
    ts_sched_free(s);
  }
  free(e.out);
  return what == NULL;
}
