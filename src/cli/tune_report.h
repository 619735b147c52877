/*
 * What `tessel tune` prints of a run of the tuner (include/tessel/tune.h):
 * the command (tune.c) hands the tuner these reports (tune_report.c) as its
 * hooks.
 */
#ifndef TS_CLI_TUNE_REPORT_H
#define TS_CLI_TUNE_REPORT_H

#include <stdio.h>

#include "options.h"

/* What the hooks print with: the command line and where its files go. */
typedef struct tune_printer {
  const cli_opts *o;
  int argc;
  char **argv;
  bool tty;                 /* progress rewritten in place on one line */
  double last_progress;     /* seconds into the shape of the last line */
  ts_gpu_sensors start;     /* the sensors as the space began, for --json */
  bool have_start;
} tune_printer;

/* The hooks of include/tessel/tune.h's ts_tune_report, ctx a
 * tune_printer. */
void tune_print_space_begin(void *ctx, const ts_tune_space *sp, ts_gpu *gpu);
void tune_print_shape_ready(void *ctx, const ts_tune_space *sp,
                            const ts_tune_shape *r);
void tune_print_progress(void *ctx, const ts_tune_shape *r, int done,
                         int total, double seconds);
int tune_print_shape_done(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                          const ts_tune_shape *r, const int *order);
int tune_print_space_done(void *ctx, const ts_tune_space *sp, ts_gpu *gpu,
                          const ts_tune_shape *runs, int n, double seconds);

#endif
