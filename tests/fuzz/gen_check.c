/*
 * What a fuzz case must do to pass: every refused call refuses cleanly
 * (the schedule keeps the error, the message names the call), and an
 * accepted schedule is correct on the reference executor, gives its CUDA
 * and its trace, and its trace replays to the same loop nest.
 */
#include "gen_impl.h"
#include "../past_location.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Checking each call ---------------------------------------------------- */

void fz_vfail(char *why, size_t whylen, const char *fmt, va_list ap) {
  if (!why[0])
    vsnprintf(why, whylen, fmt, ap);
}

__attribute__((format(printf, 2, 3))) static void fail(fz_case *c,
                                                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fz_vfail(c->why, sizeof(c->why), fmt, ap);
  va_end(ap);
}

/* A refusal must be the schedule's status from then on, with a message
 * that names the call after its location; once in error, every call must
 * return that error. */
void fz_after_call(fz_case *c, ts_status got, const char *fn) {
  ts_status now = ts_sched_status(c->s);
  const char *msg = got != TS_OK ? message_past_location(c->s) : "";
  if (c->status != TS_OK) {
    if (got != c->status || now != c->status)
      fail(c, "%s after an error returned %s (schedule: %s); expected the "
           "sticky %s", fn, ts_strerror(got), ts_strerror(now),
           ts_strerror(c->status));
    return;
  }
  if (got != now)
    fail(c, "%s returned %s but the schedule's status is %s", fn,
         ts_strerror(got), ts_strerror(now));
  else if (got != TS_OK && !msg)
    fail(c, "%s failed with %s, but its message does not start with the "
         "call's location: \"%.200s\"", fn, ts_strerror(got),
         ts_sched_errmsg(c->s));
  else if (got != TS_OK &&
           (strncmp(msg, fn, strlen(fn)) != 0 || msg[strlen(fn)] != ':'))
    fail(c, "%s failed with %s, but its message does not name it: \"%.200s\"",
         fn, ts_strerror(got), msg);
  c->status = now;
}

/* ---- An accepted schedule ------------------------------------------------ */

/* Replayed onto a fresh definition of the same name: a space's schedule
 * is named after the space, which the IR's first line prints. */
static bool same_ir_after_replay(fz_case *c) {
  ts_sched *again = ts_matmul_named(&c->def, ts_sched_name(c->s));
  ts_status st = ts_replay(c->s, again);
  char *want = ts_print_ir(c->s), *got = ts_print_ir(again);
  bool same = st == TS_OK && want && got && strcmp(want, got) == 0;
  if (!same)
    fail(c, "the trace does not replay to the same loop nest (%s): %s",
         ts_strerror(st), ts_sched_errmsg(again));
  free(want);
  free(got);
  ts_sched_free(again);
  return same;
}

/* An accepted schedule's CUDA does what its Hopper calls asked: the TMA's
 * bulk copies for ts_tma, the producer's setmaxnreg for
 * ts_warp_specialize (lowering refuses where it cannot). */
static void check_hopper_source(fz_case *c, const char *cu,
                                const char *trace) {
  if (strstr(trace, "ts_tma(") && !strstr(cu, "cp.async.bulk.tensor"))
    fail(c, "ts_tma accepted, but the CUDA has no cp.async.bulk.tensor");
  if (strstr(trace, "ts_warp_specialize(") && !strstr(cu, "setmaxnreg.dec"))
    fail(c, "ts_warp_specialize accepted, but the CUDA has no setmaxnreg");
  if (strstr(trace, "\"C\", TS_SHARED") &&
      !strstr(cu, "cp.async.bulk.tensor.2d.global.shared::cta"))
    fail(c, "C's shared stage accepted, but the CUDA has no TMA store");
}

/* A program taking its extents at launch, correct at its nominal shape,
 * is correct at another. */
static bool check_at_launch_shape(fz_case *c) {
  ts_program *p = ts_lower(c->s);
  ts_gemm at = fz_launch_shape(c);
  char msg[2048];
  ts_status st = ts_program_check_at(p, &at, c->seed, msg, sizeof(msg));
  ts_program_free(p);
  if (st != TS_OK)
    fail(c, "correct at %lldx%lldx%lld, but at %lldx%lldx%lld (lda %lld, "
         "ldb %lld, ldc %lld), the extents given at launch: %s: %s",
         (long long)c->def.m, (long long)c->def.n, (long long)c->def.k,
         (long long)at.m, (long long)at.n, (long long)at.k,
         (long long)at.lda, (long long)at.ldb, (long long)at.ldc,
         ts_strerror(st), msg);
  return st == TS_OK;
}

/* The checks of an accepted schedule: the executor's verdict, then the
 * source, the printed trace and its replay. */
fz_outcome fz_check_accepted(fz_case *c) {
  char msg[2048];
  ts_status st = ts_check(c->s, c->seed, msg, sizeof(msg));
  if (st == TS_ERR_EXEC_FAULT || st == TS_ERR_MISMATCH) {
    fail(c, "accepted schedule is wrong: %s: %s", ts_strerror(st), msg);
    return FZ_FAIL;
  }
  if (st != TS_OK) {
    if (!msg[0])
      fail(c, "ts_check refused the schedule with %s and no message",
           ts_strerror(st));
    c->store_refused = strstr(msg, "\"C.shared\"") != NULL;
    /* The verifier's findings are lowering bugs, not the user's errors. */
    if (strstr(msg, "malformed kernel"))
      fail(c, "lowering built a malformed kernel: %s", msg);
    return msg[0] && !c->why[0] ? FZ_PASS_REFUSED : FZ_FAIL;
  }
  if (c->def.runtime && !check_at_launch_shape(c))
    return FZ_FAIL;
  char *cu = ts_cuda_source(c->s), *trace = ts_print_trace(c->s);
  if (!cu || !trace)
    fail(c, "accepted and correct, but ts_cuda_source or ts_print_trace "
         "gave NULL: %s", ts_sched_errmsg(c->s));
  else
    check_hopper_source(c, cu, trace);
  free(cu);
  free(trace);
  if (c->why[0] || !same_ir_after_replay(c))
    return FZ_FAIL;
  return FZ_PASS_CHECKED;
}
