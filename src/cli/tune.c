/*
 * tessel tune: parses the command line, hands the tuner (src/tune/,
 * include/tessel/tune.h) the spaces and shapes it names, and prints what
 * the tuner reports (tune_report.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune_report.h"

static const char *tune_help =
    "usage: tessel tune SPACE... [--shape MxNxK]... [--layout L] [--dtype T]\n"
    "                  [--c-dtype T] [--alpha X] [--beta Y] [--jobs J]\n"
    "                  [--top N] [--limit N] [--budget N] [--time SECONDS]\n"
    "                  [--restart] [--repeats N] [--warmup N] [--seed N]\n"
    "                  [--csv FILE] [--json FILE] [--gpus all|N|LIST]\n"
    "                  [--shapes-from FILE]\n"
    "       tessel tune --list\n"
    "--list prints the built-in spaces, each with its knobs and their\n"
    "values as tune enumerates them at 1024x1024x1024 (in f16 for tensor\n"
    "cores): a knob declared in some configurations only says in how\n"
    "many, and one declared only at other shapes is not there (docs/\n"
    "tuning.md lists them all); tessel list FILE.c does so for a file's.\n"
    "A SPACE is a built-in space (--list), FILE.c (each TS_SPACE of a C\n"
    "file) or FILE.c:SPACE; a file's space is recorded under its name and\n"
    "the hash of the file's text, so an edited file is tuned afresh.\n"
    "Enumerates every configuration of the space (one value per knob),\n"
    "prunes those a constraint or a primitive refuses (and says why),\n"
    "lowers and compiles the rest on --jobs threads (default: every core),\n"
    "then times them on the GPU with cuBLAS in the same run: 3 runs of\n"
    "each, then the --top N (default 10) again with the median of\n"
    "--repeats (default 50).  Prints the best configurations, the mean and\n"
    "best TFLOP/s by each knob's value over all shapes (first-pass times),\n"
    "and the best configuration of each shape as `name=value` text and as\n"
    "the C calls that make it, and records it in the cache directory for\n"
    "this GPU, space and definition (show, check and bench use it with\n"
    "--tuned).\n"
    "  --budget N    time at most N configurations per shape: the first\n"
    "                and a random sample of the rest (seeded by --seed)\n"
    "  --limit N     refuse a space that has more than N configurations\n"
    "                at a shape, pruned ones included (default and most\n"
    "                100000): a guard against an enumeration without\n"
    "                end, not a sample (that is --budget)\n"
    "  --time S      stop the first pass of a shape after S seconds\n"
    "  --restart     time everything again; by default a run resumes what\n"
    "                an interrupted run of the same space, shape and GPU\n"
    "                timed (its journal in the cache directory)\n"
    "  --shapes-from FILE  the shapes of FILE too, one MxNxK [layout]\n"
    "                [dtype] a line (a model's GEMMs; # comments)\n"
    "  --gpus G      time on several GPUs of this host: all, the first N,\n"
    "                or a list of ordinals (0,2); one runner process per\n"
    "                GPU takes groups of the first pass from one queue (a\n"
    "                slow GPU takes fewer), and the first GPU times the\n"
    "                fastest again, so they are compared on one device\n"
    "Across hosts: mpirun -n RANKS tessel tune ... (or srun) with one rank\n"
    "per GPU: rank 0 hands out groups of the first pass and gathers the\n"
    "results into its record; each rank times on the GPU of its rank on\n"
    "its host and compiles what it takes.  A rank that stops answering for\n"
    "TESSEL_MPI_TIMEOUT seconds (30) is lost, its candidates timed by the\n"
    "others (with OpenMPI, mpirun --enable-recovery keeps the job going).\n"
    "  --csv FILE    every timed row; --json FILE the whole run, with\n"
    "                every configuration and what became of it\n"
    "Progress (timed/total, the best so far, the time left) is one line\n"
    "on a terminal, plain lines otherwise.  A candidate that crashes the\n"
    "GPU (an illegal address) is reported as failed with the CUDA error,\n"
    "and the run goes on in a new GPU process (at most 16 times a run).\n"
    "--shape may repeat; default 1024x1024x1024.  Needs a GPU; kernels are\n"
    "compiled for its architecture.\n"
    "Exit status: 0 every candidate timed, 1 a failure (no GPU, a candidate\n"
    "that failed, a record not written), 2 a usage error.\n";

/* Each built-in space and its knobs at tune's default shape, in fp16 for
 * the tensor-core ones. */
static int list_spaces(void) {
  for (int i = 0; i < ts_space_count(); i++) {
    const ts_space *sp = ts_space_at(i);
    printf("%-16s %s\n", sp->name, sp->summary);
    ts_gemm g = ts_gemm_make(1024, 1024, 1024);
    if (sp->tensor_cores)
      g.a_type = g.b_type = TS_F16;
    cli_print_knobs(sp, &g, "                 ");
  }
  return 0;
}

/* The spaces the checked names stand for, each with its key and the name
 * the command line gives it (copied: cli_space_key's and cli_space_name's
 * buffers are static); false when out of memory. */
static bool name_spaces(const cli_opts *o, ts_tune_space *spaces,
                        char (*keys)[4200], char (*names)[4200]) {
  for (int i = 0; i < o->nnames; i++) {
    const ts_space *sp = cli_space(o->names[i]);
    if (!sp)
      return false;
    snprintf(keys[i], sizeof(keys[i]), "%s", cli_space_key(sp));
    snprintf(names[i], sizeof(names[i]), "%s", cli_space_name(sp));
    spaces[i] = (ts_tune_space){.space = sp, .key = keys[i],
                                .name = names[i]};
  }
  return true;
}

/* Whether progress is rewritten in place (\r) rather than written as
 * lines: on a terminal, but not under mpirun, which gives a rank's stdout
 * a pseudo-terminal even where the run's output goes to a file. */
static bool progress_in_place(void) {
  return isatty(fileno(stdout)) && !ts_tune_mpi_launched();
}

/* The run, its report printed by tune_report.c's hooks. */
static int run_tuner(const cli_opts *o, int argc, char **argv) {
  ts_tune_space *spaces = calloc((size_t)o->nnames, sizeof(*spaces));
  char (*keys)[4200] = calloc((size_t)o->nnames, sizeof(*keys));
  char (*names)[4200] = calloc((size_t)o->nnames, sizeof(*names));
  int rc = EXIT_FAIL;
  FILE *csv = NULL;
  if (!spaces || !keys || !names || !name_spaces(o, spaces, keys, names))
    fprintf(stderr, "tessel: out of memory\n");
  else if (o->csv && !(csv = fopen(o->csv, "w")))
    fprintf(stderr, "tessel: cannot write --csv %s\n", o->csv);
  else {
    if (csv)
      fclose(csv); /* emptied: each report appends to it */
    tune_printer p = {.o = o, .argc = argc, .argv = argv,
                      .tty = progress_in_place()};
    ts_tune_report rep = {.ctx = &p,
                          .space_begin = tune_print_space_begin,
                          .shape_ready = tune_print_shape_ready,
                          .progress = tune_print_progress,
                          .shape_done = tune_print_shape_done,
                          .space_done = tune_print_space_done};
    ts_tune_opts to = {.shapes = o->shapes, .nshapes = o->nshapes,
                       .jobs = o->jobs, .top = o->top, .limit = o->limit,
                       .budget = o->budget, .time_limit = o->time_limit,
                       .repeats = o->repeats, .warmup = o->warmup,
                       .seed = o->seed, .restart = o->restart,
                       .gpus = o->gpus, .ngpus = o->ngpus};
    rc = ts_tune_run(&to, spaces, o->nnames, &rep);
    if (rc == 0 && o->names_failed)
      rc = EXIT_FAIL; /* a space of the file was left out, said */
  }
  free(spaces);
  free(keys);
  free(names);
  return rc;
}

int cli_tune(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--list") == 0 && argc != 2) {
      fprintf(stderr, "tessel: tune --list takes nothing else (got '%s')\n",
              argv[i == 1 ? 2 : 1]);
      return EXIT_USAGE;
    }
  if (argc == 2 && strcmp(argv[1], "--list") == 0)
    return list_spaces();
  cli_opts o;
  int rc = cli_parse(argc, argv, tune_help, CLI_TUNE, &o);
  if (rc >= 0)
    return rc;
  /* A record holds one space (docs/records.md): a second would overwrite
   * the first. */
  if (o.json && o.nnames > 1) {
    fprintf(stderr, "tessel: tune --json records one space, and these "
            "names make %d (%s, %s%s); run tune once per space, each with "
            "its own --json FILE\n", o.nnames, o.names[0], o.names[1],
            o.nnames > 2 ? ", ..." : "");
    return EXIT_USAGE;
  }
  cli_finish_shapes(&o, 1024, 1024, 1024);
  return run_tuner(&o, argc, argv);
}
