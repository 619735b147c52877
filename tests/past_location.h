/*
 * A schedule's error message past the "FILE:LINE: error: " that the
 * location of the failing call puts first (ts_sched_error_location's):
 * shared by the cmocka tests (helpers.h) and the fuzzer (fuzz/gen_check.c).
 */
#ifndef TS_TEST_PAST_LOCATION_H
#define TS_TEST_PAST_LOCATION_H

#include <stdio.h>
#include <string.h>

#include "tessel.h"

/* The message itself where the call has no location (a plain call, or a
 * call through a pointer); NULL where it has one the message does not
 * start with. */
static inline const char *message_past_location(const ts_sched *s) {
  const char *msg = ts_sched_errmsg(s);
  ts_location at = ts_sched_error_location(s);
  if (!at.file)
    return msg;
  char head[4200];
  int n = snprintf(head, sizeof(head), "%s:%d: error: ", at.file, at.line);
  return n > 0 && (size_t)n < sizeof(head) && strncmp(msg, head, (size_t)n) == 0
             ? msg + n
             : NULL;
}

#endif
