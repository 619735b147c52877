/*
 * tessel tune's supervisor (src/tune/supervisor.c) with workers that
 * act out what a GPU process can do: end well, fail, catch a fault alone
 * or in a group, die of a signal while timing or outside it, exit from
 * inside the driver, and fault again and again.  No GPU: the workers only
 * write the shared handover as tune's worker does.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "tune/tune_impl.h"

/* What a test's worker ends with, given the handover. */
typedef int (*script)(tune_handover *h);

static int act(tune_handover *h, void *arg) { return (*(script *)arg)(h); }

/* Runs the supervisor over s with stderr captured into err (what it
 * printed); returns its status. */
static int supervise(script s, char *err, size_t len) {
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  dup2(fileno(tmp), STDERR_FILENO);
  int rc = tune_supervise(act, &s);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  rewind(tmp);
  size_t n = fread(err, 1, len - 1, tmp);
  err[n] = 0;
  fclose(tmp);
  return rc;
}

static void in_flight(tune_handover *h, int n, const char *config) {
  h->unit = 3;
  snprintf(h->shape, sizeof(h->shape), "256x256x256");
  snprintf(h->config, sizeof(h->config), "%s", config);
  h->in_flight = n;
}

static int ends_well(tune_handover *h) { return h->restarts; }
static int fails(tune_handover *h) { (void)h; return TUNE_EXIT_FAIL; }

static void test_the_worker_s_status(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(supervise(ends_well, err, sizeof(err)), 0);
  assert_string_equal(err, "");
  assert_int_equal(supervise(fails, err, sizeof(err)), TUNE_EXIT_FAIL);
  assert_string_equal(err, "");
}

/* A group faults; its candidates are timed alone and one faults; the
 * third worker finishes, with no crash to record. */
static int faults_in_a_group_then_alone(tune_handover *h) {
  if (h->restarts < 2) {
    in_flight(h, h->restarts ? 1 : 6, h->restarts ? "bm=64,bn=32" : "");
    snprintf(h->fault, sizeof(h->fault), "cuCtxSynchronize: "
             "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access");
    return TUNE_WORKER_FAULTED;
  }
  return h->crashed_unit == -1 && h->in_flight == 0 ? TUNE_EXIT_FAIL : 42;
}

static void test_faults_caught(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(
      supervise(faults_in_a_group_then_alone, err, sizeof(err)), TUNE_EXIT_FAIL);
  assert_string_equal(err,
      "tessel: tune: one of 6 configurations timed together at 256x256x256 "
      "faulted (cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal "
      "memory access); restarting the GPU process and timing them one at a "
      "time (1 of 16 restarts)\n"
      "tessel: tune: configuration bm=64,bn=32 at 256x256x256 faulted "
      "(cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory "
      "access); restarting the GPU process and resuming (2 of 16 restarts)\n");
}

/* A worker killed while timing one candidate: the next one is told which,
 * where and why, to journal it as failed. */
static int killed_alone(tune_handover *h) {
  if (h->restarts == 0) {
    in_flight(h, 1, "bm=128");
    kill(getpid(), SIGKILL);
  }
  return h->crashed_unit == 3 && strcmp(h->crashed, "bm=128") == 0 &&
                 strstr(h->crashed_why, "crashed the GPU process (signal 9, ")
             ? 0
             : 42;
}

/* Exiting from inside the timing (a library's exit, a sanitizer's report)
 * is a crash as a signal is. */
static int exits_in_flight(tune_handover *h) {
  if (h->restarts == 0) {
    in_flight(h, 2, "");
    exit(1);
  }
  return h->crashed_unit == -1 ? 0 : 42;
}

static void test_crashes_while_timing(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(supervise(killed_alone, err, sizeof(err)), 0);
  assert_non_null(strstr(err, "tessel: tune: configuration bm=128 at "
                              "256x256x256 crashed the GPU process (signal "
                              "9, "));
  assert_non_null(strstr(err, "; restarting the GPU process and resuming (1 "
                              "of 16 restarts)\n"));
  assert_int_equal(supervise(exits_in_flight, err, sizeof(err)), 0);
  assert_string_equal(err,
      "tessel: tune: one of 2 configurations timed together at 256x256x256 "
      "crashed the GPU process (exit status 1); restarting the GPU process "
      "and timing them one at a time (1 of 16 restarts)\n");
}

/* Outside timing nothing says what to pass over: no restart. */
static int killed_outside_timing(tune_handover *h) {
  (void)h;
  kill(getpid(), SIGKILL);
  return 0;
}

static void test_crash_outside_timing(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(supervise(killed_outside_timing, err, sizeof(err)),
                   TUNE_EXIT_FAIL);
  assert_non_null(strstr(err, "tessel: tune: its GPU process died (signal 9, "));
  assert_non_null(strstr(err, ") outside the timing of a candidate; not "
                              "restarting\n"));
}

static int always_faults(tune_handover *h) {
  in_flight(h, 1, "bm=32");
  snprintf(h->fault, sizeof(h->fault), "CUDA_ERROR_LAUNCH_FAILED");
  return TUNE_WORKER_FAULTED;
}

static void test_restarts_capped(void **state) {
  (void)state;
  char err[8192];
  assert_int_equal(supervise(always_faults, err, sizeof(err)), TUNE_EXIT_FAIL);
  assert_non_null(strstr(err, "(16 of 16 restarts)\n"));
  assert_null(strstr(err, "(17 of"));
  const char *last = strrchr(err, '\n');
  while (last > err && last[-1] != '\n')
    last--;
  assert_string_equal(last,
      "tessel: tune: configuration bm=32 at 256x256x256 faulted "
      "(CUDA_ERROR_LAUNCH_FAILED); not restarting: a run restarts its GPU "
      "process at most 16 times (the journal keeps what was timed; run tune "
      "again to go on)\n");
}

/* What stdout held before the worker started is written once. */
static void test_output_written_once(void **state) {
  (void)state;
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  dup2(fileno(tmp), STDOUT_FILENO);
  printf("before the worker;");
  char err[256];
  assert_int_equal(supervise(ends_well, err, sizeof(err)), 0);
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  rewind(tmp);
  char out[256] = {0};
  assert_true(fread(out, 1, sizeof(out) - 1, tmp) > 0);
  fclose(tmp);
  assert_string_equal(out, "before the worker;");
}

/* A worker that says who it is (in memory the test shares) and then
 * works on, as a runner timing or compiling does: 20 s, far longer than
 * the test waits to kill its supervisor. */
static pid_t *worker_pid;
static int works_on(tune_handover *h) {
  (void)h;
  *worker_pid = getpid();
  for (int i = 0; i < 20; i++)
    sleep(1);
  return 0;
}

/* kill -9 of `tessel tune` takes its worker with it: the worker ends at
 * once, killed, rather than working on with its parent gone (holding the
 * GPU and the cores).  The test adopts orphans (a subreaper), so the
 * worker becomes its child when the supervisor dies, and says how it
 * ended. */
static void test_no_orphan_when_the_supervisor_is_killed(void **state) {
  (void)state;
  worker_pid = mmap(NULL, sizeof(*worker_pid), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(worker_pid != MAP_FAILED);
  *worker_pid = 0;
  assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t supervisor = fork();
  assert_true(supervisor >= 0);
  if (supervisor == 0) {
    script s = works_on;
    _exit(tune_supervise(act, &s));
  }
  while (!__atomic_load_n(worker_pid, __ATOMIC_SEQ_CST))
    usleep(1000);
  pid_t worker = *worker_pid;
  assert_int_equal(kill(supervisor, SIGKILL), 0);
  int status;
  assert_int_equal(waitpid(supervisor, &status, 0), supervisor);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  /* Adopted by now (the kernel reparents before the parent hears). */
  assert_int_equal(waitpid(worker, &status, 0), worker);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGKILL);
  assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
  munmap(worker_pid, sizeof(*worker_pid));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_worker_s_status),
      cmocka_unit_test(test_faults_caught),
      cmocka_unit_test(test_crashes_while_timing),
      cmocka_unit_test(test_crash_outside_timing),
      cmocka_unit_test(test_restarts_capped),
      cmocka_unit_test(test_output_written_once),
      cmocka_unit_test(test_no_orphan_when_the_supervisor_is_killed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
