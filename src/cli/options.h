/*
 * Command-line options shared by the tessel subcommands.
 */
#ifndef TS_CLI_OPTIONS_H
#define TS_CLI_OPTIONS_H

#include <stdbool.h>
#include "tessel.h"

enum { MAX_SHAPES = 64 };
enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };
/* The commands that parse options, for cli_parse's flags. */
enum { CLI_SHOW = 1, CLI_CHECK = 2, CLI_BENCH = 4, CLI_TUNE = 8,
       CLI_EXPLAIN = 16 };

typedef struct cli_opts {
  ts_gemm shapes[MAX_SHAPES];
  int nshapes;
  /* tune --shapes-from: a line's own layout and A and B type (-1: the
   * command line's; TS_DTYPE_TF32_LINE for tf32). */
  int shape_layout[MAX_SHAPES], shape_dtype[MAX_SHAPES];
  ts_layout layout;
  ts_dtype ab_type, c_type; /* --dtype, --c-dtype */
  ts_math math;             /* --dtype tf32 */
  float alpha, beta;
  const char *arch;
  bool arch_given; /* --arch was given (explain's default is two) */
  const char *csv;
  enum { SHOW_IR, SHOW_CUDA, SHOW_TRACE, SHOW_STEPS } show;
  bool provenance; /* show --ir --provenance */
  bool show_given; /* one of --ir, --cuda, --trace was given */
  int repeats, warmup;
  uint64_t seed;
  char **names; /* the schedules named on the command line */
  int nnames;
  const char *cu_files[MAX_SHAPES]; /* bench --cu: hand-written kernels */
  int ncu;
  int jobs;  /* tune: compile threads; 0: one per core */
  int top;   /* tune: configurations listed per shape */
  int limit; /* tune: at most this many configurations */
  int budget;     /* tune: configurations timed per shape; 0: all */
  int time_limit; /* tune: seconds of first-pass timing per shape; 0: none */
  const char *json; /* bench, tune: the run's record */
  int max_seconds;  /* bench: refuse a run estimated to take longer */
  bool restart;     /* tune: ignore what an interrupted run timed */
  bool tuned; /* spaces at their recorded configuration */
  unsigned runtime; /* --runtime: extents and leading dimensions at launch */
  /* --runtime=N[,L]: the extents multiples of N, the leading dimensions
   * of L (N when not given); 0: any */
  int runtime_multiple, runtime_ld_multiple;
  int blocks; /* check --blocks: random points of a sampled check; 0: none given */
  unsigned command; /* the CLI_* bit of the command parsing them */
  bool all;         /* check --all: every configuration of each space */
  int gpus[16];     /* tune --gpus: the devices, by ordinal */
  int ngpus;        /* how many; 0: device 0; -1: --gpus all */
  int gpu;          /* bench --gpu: the device, by ordinal (default 0) */
  bool names_failed; /* tune: a space of FILE.c said to fail, left out */
} cli_opts;

/* Parses argv after the subcommand (help is its --help text, flags its
 * CLI_* bit: an option another command takes is refused).  Returns -1 to go on, else an exit
 * status (0 after --help). */
int cli_parse(int argc, char **argv, const char *help, unsigned flags,
              cli_opts *o);
/* tessel check (check.c). */
int cli_check(int argc, char **argv);
/* tessel tune (tune.c; the tuner is src/tune/). */
int cli_tune(int argc, char **argv);
/* tessel bench (bench.c), compare (compare.c) and plot (plot.c). */
int cli_bench(int argc, char **argv);
int cli_compare(int argc, char **argv);
int cli_plot(int argc, char **argv);
/* tessel explain (explain.c). */
int cli_explain(int argc, char **argv);

/* The GPU whose tuning records --tuned reads, or NULL (without --tuned,
 * or without a GPU: spaces take their first configurations). */
ts_gpu *cli_gpu_for_records(const cli_opts *o);
/* Parses "MxNxK"; false with a message on stderr. */
bool cli_parse_shape(const char *text, ts_gemm *out);
/* tune --shapes-from FILE: its shapes appended, one "MxNxK [layout]
 * [dtype]" a line (# comments and blank lines passed over); false with a
 * message naming the line. */
bool cli_read_shapes(const char *path, cli_opts *o);
enum { TS_DTYPE_TF32_LINE = 100 };
/* Applies layout, alpha and beta to every shape (or to the default), and
 * a --shapes-from line's own layout and type. */
void cli_finish_shapes(cli_opts *o, int64_t m, int64_t n, int64_t k);
bool cli_parse_float(const char *opt, const char *text, float *out);
bool cli_parse_int(const char *opt, const char *text, int lo, int hi, int *out);
/* A file an option will write (--csv, --json) can be: an existing file
 * that is writable, or a new one in a writable directory; false with a
 * message on stderr.  Checked before any work, not found out after it. */
bool cli_check_output(const char *opt, const char *path);
/* Reads a hand-written kernel's file (malloc'd text) and labels it with
 * its base name less ".cu"; false with a message on stderr. */
bool cli_read_cu(const char *path, char **source, char **label);

/* ---- Names (names.c) ---------------------------------------------------- */

/* Every named schedule (or, for tune, space) exists: -1, else an exit
 * status with a message on stderr.  A schedule is a built-in, a space as
 * "SPACE" (its first values, or with --tuned its tuning record) or
 * "SPACE:name=value,...", or of a schedule file: "FILE.c:NAME",
 * "FILE.c:SPACE:name=value,..." or "FILE.c" (each of its schedules and
 * spaces; for tune, its spaces: o->names is rewritten with them). */
int cli_check_names(cli_opts *o, bool spaces);
/* Why the checked name cannot run as the options ask ("needs --dtype
 * f16, bf16 or tf32: ..."), or NULL.  check and bench accept such a name
 * and give it a row saying so; the other commands refuse it. */
const char *cli_cannot_run(const cli_opts *o, const char *name);
/* The schedule a checked name gives for g (gpu: whose tuning record
 * --tuned reads; may be NULL); never NULL. */
ts_sched *cli_schedule(const cli_opts *o, const char *name, const ts_gemm *g,
                       const ts_gpu *gpu);
/* The space a checked name stands for, or NULL. */
const ts_space *cli_space(const char *name);
/* What the space's tuning records and journals are keyed by: a built-in's
 * name, a file's space's name and the hash of the file's text
 * ("tiles@0123456789abcdef"; a static buffer, until the next call). */
const char *cli_space_key(const ts_space *sp);
/* How the command line names the space: its name, or FILE.c:NAME (a
 * static buffer, until the next call). */
const char *cli_space_name(const ts_space *sp);
/* tessel list FILE.c: what the file defines, one line each, a space's
 * knobs below it. */
int cli_list_file(const char *path);

/* ---- A schedule file's code, run apart (isolate.c) ----------------------
 *
 * A file's schedule or space runs in a child process, so that a crash, a
 * hang or an exit() in it is reported (a schedule in error,
 * TS_ERR_SCHEDULE_FAULT: "schedule NAME in FILE crashed (SIGSEGV); its
 * primitives until then:" and the trace) and the command goes on. */

/* What the --help of the commands that run a file's code says of it. */
#define CLI_ISOLATION_HELP                                                   \
  "A schedule file's code runs in a process of its own: a schedule or\n"     \
  "space that crashes, calls exit() or runs past $TESSEL_SCHEDULE_TIMEOUT\n"  \
  "seconds (default 10; 0 for no limit) is a failure, reported with the\n"   \
  "primitives it applied, and the others still run.\n"
/* Seconds a file's code may run: $TESSEL_SCHEDULE_TIMEOUT (whole seconds,
 * 0 for no limit; a bad value is said once), else 10. */
int cli_schedule_timeout(void);
/* The schedule of a file's schedule `sched` or, when it is NULL, of its
 * space at configuration c (NULL: the first), for g; never NULL.  `file`
 * names the file in messages. */
ts_sched *cli_isolated_schedule(const char *file, const ts_builtin *sched,
                                const ts_space *space, const ts_gemm *g,
                                ts_config *c);
/* cli_print_knobs of a file's space, in a child; false when it crashed,
 * hung or exited, said on stderr with the trace. */
bool cli_isolated_knobs(const char *file, const ts_space *sp,
                        const ts_gemm *def, const char *indent);

/* A schedule's error on stderr: "FILE:LINE:COL: error: ..." with the call's
 * line where the failing call's place is known (ts_sched_diagnostic), else
 * "tessel: " and the message (main.c). */
void cli_print_sched_error(const ts_sched *s);

/* ---- Knobs (knobs.c) ------------------------------------------------------ */

/* The space's configurations at def, how many are pruned, and each knob
 * with its values in the order tune tries them, a line each after indent
 * (tessel tune --list, tessel list FILE.c). */
void cli_print_knobs(const ts_space *sp, const ts_gemm *def,
                     const char *indent);

#endif
