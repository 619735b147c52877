/*
 * The tessel command: the usage text, dispatch to each command, and list
 * and show themselves (check is check.c's, bench bench.c's, tune tune.c's,
 * compare and plot compare.c's and plot.c's; their options are parsed by
 * parse.c).  Exit status: 0 success, 1 a failed check, compile or run (or
 * no GPU for bench), 2 a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const char *usage_text =
    "usage: tessel <command> [options]\n"
    "\n"
    "  list     the built-in schedules, one line each, or what each file\n"
    "           defines (its schedules, and its spaces with their knobs)\n"
    "           tessel list [FILE.c]...\n"
    "  show     the lowered loop nest, the CUDA C (with the ptxas report),\n"
    "           the trace as C, or the nest after each primitive\n"
    "           tessel show SCHEDULE [--ir [--provenance]|--cuda|--trace|\n"
    "             --steps] [--shape MxNxK] [--layout L] [--alpha X]\n"
    "             [--beta Y] [--dtype T] [--c-dtype T] [--arch sm_XX]\n"
    "             [--tuned] [--runtime[=N[,L]]]\n"
    "  check    the reference executor against a plain C GEMM, on the CPU\n"
    "           tessel check SCHEDULE... [--shape MxNxK]... [--layout L]\n"
    "             [--alpha X] [--beta Y] [--dtype T] [--c-dtype T]\n"
    "             [--seed N] [--arch sm_XX] [--tuned] [--blocks N]\n"
    "             [--runtime[=N[,L]]]\n"
    "           tessel check SPACE... --all [options]  (every configuration)\n"
    "  bench    GPU timings beside cuBLAS and hand-written kernels\n"
    "           tessel bench SCHEDULE... [--cu FILE]... [--shape MxNxK]...\n"
    "             [--layout L] [--alpha X] [--beta Y] [--dtype T]\n"
    "             [--c-dtype T] [--csv FILE] [--json FILE] [--repeats N]\n"
    "             [--warmup N] [--seed N] [--tuned] [--max-seconds S]\n"
    "             [--gpu N] [--runtime[=N[,L]]]\n"
    "  tune     every configuration of a space timed on the GPU\n"
    "           tessel tune SPACE... [--shape MxNxK]... [--layout L]\n"
    "             [--dtype T] [--c-dtype T] [--alpha X] [--beta Y]\n"
    "             [--jobs J] [--top N] [--limit N] [--budget N] [--time S]\n"
    "             [--restart] [--repeats N] [--warmup N] [--seed N]\n"
    "             [--csv FILE] [--json FILE] [--gpus all|N|LIST]\n"
    "             [--shapes-from FILE]\n"
    "           tessel tune --list\n"
    "  explain  each access's sectors and bank conflicts, registers,\n"
    "           occupancy: from the IR, before compiling\n"
    "           tessel explain SCHEDULE [--shape MxNxK] [--layout L]\n"
    "             [--alpha X] [--beta Y] [--dtype T] [--c-dtype T]\n"
    "             [--arch sm_XX] [--json FILE] [--tuned] [--runtime[=N[,L]]]\n"
    "  compare  two records of runs: speedups of B over A with their noise\n"
    "           tessel compare A.json B.json\n"
    "  plot     TFLOP/s of a record, cuBLAS the reference\n"
    "           tessel plot RECORD.json -o FILE.png [--knob NAME]\n"
    "\n"
    "A SCHEDULE is a built-in (tessel list), a tuning space (tessel tune\n"
    "--list) as SPACE (its first values; with --tuned, its tuning record for\n"
    "this GPU and definition) or SPACE:name=value,..., or a C file of\n"
    "TS_SCHEDULE and TS_SPACE definitions as FILE.c (each of them),\n"
    "FILE.c:NAME or FILE.c:SPACE:name=value,..., compiled with $CC (else\n"
    "cc) and cached.  tune takes SPACE, FILE.c (its spaces) or FILE.c:SPACE.\n"
    "Layouts L: NN, NT, TN, TT (op(A) op(B), T: stored transposed); --alpha\n"
    "and --beta default to 1 and 0; --dtype f32|f16|bf16|tf32 (A and B,\n"
    "default f32; tf32: f32 rounded to tf32 when multiplied, as tensor\n"
    "cores do) and --c-dtype f32|f16|bf16 (C, default f32), summed in fp32.\n"
    "--runtime[=N[,L]] (show, check, bench, explain): the kernels take M, N,\n"
    "K and the leading dimensions at launch (ts_gemm.runtime), compiled\n"
    "once for every shape (with =N, the extents multiples of N, and the\n"
    "leading dimensions of L, else of N); the shape given is the one run\n"
    "and checked.\n"
    "`tessel COMMAND --help` says what each option does.\n"
    "exit status: 0 done (and every check or benchmark correct), 1 a failure\n"
    "(a wrong result, a compile error, no GPU), 2 a usage error.\n";

static const char *list_help =
    "usage: tessel list [FILE.c]...\n"
    "Prints the built-in schedules, one line each; with files, what each\n"
    "defines: its schedules and its spaces, as the other commands name\n"
    "them (FILE.c:NAME), each space with its knobs and their values as\n"
    "tessel tune enumerates them at 1024x1024x1024 (tessel tune --list\n"
    "does so for the built-in spaces).\n"
    CLI_ISOLATION_HELP
    "Exit status: 0 listed, 1 a file that does not compile or load or a\n"
    "space that fails so, 2 a usage error.\n";

static const char *show_help =
    "usage: tessel show SCHEDULE [--ir [--provenance]|--cuda|--trace|--steps]\n"
    "                  [--shape MxNxK]\n"
    "                  [--layout NN|NT|TN|TT] [--alpha X] [--beta Y]\n"
    "                  [--dtype T] [--c-dtype T] [--arch sm_XX] [--tuned]\n"
    "                  [--runtime[=N[,L]]]\n"
    "  --ir     the lowered loop nest (default)\n"
    "  --cuda   the generated CUDA C, headed by NVRTC's ptxas report for\n"
    "           --arch (default sm_90)\n"
    "  --trace  the schedule's primitive calls as C that replays them\n"
    "  --steps  the loop nest after each primitive, as a diff against the\n"
    "           nest before it under the primitive's call\n"
    "  --provenance  with --ir: each loop and cache followed by the\n"
    "           primitive that made it\n"
    "  --shape  default 1024x1024x1024\n"
    "  --tuned  a space at its tuning record for this GPU and definition\n"
    "  --runtime[=N[,L]]  M, N, K and the leading dimensions taken at\n"
    "           launch (the extents multiples of N, the leading dimensions\n"
    "           of L, else of N)\n"
    "--ir, --cuda, --trace and --steps exclude each other.\n"
    CLI_ISOLATION_HELP
    "Exit status: 0 shown, 1 a schedule, lowering or compile error, 2 a\n"
    "usage error.\n";

/* ---- list ------------------------------------------------------------------- */

static int cmd_list(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(list_help, stdout);
    return 0;
  }
  int rc = 0;
  for (int i = 1; i < argc; i++) { /* a file that fails: the next still */
    int file_rc = cli_list_file(argv[i]);
    if (file_rc == EXIT_USAGE)
      return file_rc;
    rc = file_rc ? file_rc : rc;
    if (i + 1 == argc)
      return rc;
  }
  for (int i = 0; i < ts_builtin_count(); i++)
    printf("%-16s %s\n", ts_builtin_at(i)->name, ts_builtin_at(i)->summary);
  return 0;
}

/* ---- show --------------------------------------------------------------------- */

static void print_ptxas(const ts_kernel *k, const char *arch) {
  if (!ts_kernel_ptxas(k).valid) {
    printf("// ptxas (%s): no resource report in NVRTC's log, which reads:\n",
           arch);
    for (const char *l = ts_kernel_log(k); *l;) {
      const char *end = strchr(l, '\n');
      int len = end ? (int)(end - l) : (int)strlen(l);
      printf("//   %.*s\n", len, l);
      l += len + (end != NULL);
    }
    return;
  }
  ts_ptxas_info p = ts_kernel_ptxas(k);
  printf("// ptxas (%s): %d registers, %d bytes shared, %d bytes stack, "
         "%d bytes spill stores, %d bytes spill loads\n",
         arch, p.registers, p.shared_bytes, p.stack_bytes,
         p.spill_store_bytes, p.spill_load_bytes);
}

static int print_cuda(const ts_program *p, const char *arch) {
  char *src = ts_program_cuda(p);
  if (!src) {
    fprintf(stderr, "tessel: out of memory\n");
    return EXIT_FAIL;
  }
  ts_kernel *k = ts_compile(p, arch);
  int rc = 0;
  if (ts_kernel_status(k) == TS_OK) {
    print_ptxas(k, arch);
  } else {
    fprintf(stderr, "tessel: %s\n", ts_kernel_errmsg(k));
    rc = EXIT_FAIL;
  }
  fputs(src, stdout);
  ts_kernel_free(k);
  free(src);
  return rc;
}

void cli_print_sched_error(const ts_sched *s) {
  char *text = ts_sched_diagnostic(s);
  /* A message that names its place starts the line, as a compiler's. */
  fprintf(stderr, "%s%s\n", ts_sched_error_location(s).file ? "" : "tessel: ",
          text ? text : ts_sched_errmsg(s));
  free(text);
}

static int cmd_show(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(argc, argv, show_help, CLI_SHOW, &o);
  if (rc >= 0)
    return rc;
  if (o.provenance && o.show != SHOW_IR) {
    fprintf(stderr, "tessel: --provenance annotates --ir's nest; it does not "
            "go with %s\n", o.show == SHOW_CUDA    ? "--cuda"
                            : o.show == SHOW_TRACE ? "--trace"
                                                   : "--steps");
    return EXIT_USAGE;
  }
  if (o.nnames != 1 || o.nshapes > 1) {
    fprintf(stderr, "tessel: show takes one schedule and one --shape (got "
            "%d schedule%s and %d shape%s%s)\n", o.nnames,
            o.nnames == 1 ? "" : "s", o.nshapes, o.nshapes == 1 ? "" : "s",
            o.nnames > 1 ? "; FILE.c:NAME names one of a file's" : "");
    return EXIT_USAGE;
  }
  cli_finish_shapes(&o, 1024, 1024, 1024);
  ts_gpu *gpu = cli_gpu_for_records(&o);
  ts_sched *s = cli_schedule(&o, o.names[0], &o.shapes[0], gpu);
  ts_gpu_close(gpu);
  if (ts_sched_status(s) != TS_OK) {
    cli_print_sched_error(s);
    ts_sched_free(s);
    return EXIT_FAIL;
  }
  rc = 0;
  if (o.show == SHOW_TRACE || o.show == SHOW_STEPS) {
    char *text = o.show == SHOW_TRACE ? ts_print_trace(s) : ts_print_steps(s);
    if (text)
      fputs(text, stdout);
    else {
      fprintf(stderr, "tessel: out of memory\n");
      rc = EXIT_FAIL;
    }
    free(text);
    ts_sched_free(s);
    return rc;
  }
  ts_program *p = ts_lower(s);
  ts_sched_free(s); /* the program stands alone */
  char *text = NULL;
  if (ts_program_status(p) != TS_OK) {
    fprintf(stderr, "tessel: %s\n", ts_program_errmsg(p));
    rc = EXIT_FAIL;
  } else if (o.show == SHOW_CUDA) {
    rc = print_cuda(p, o.arch);
  } else if ((text = o.provenance ? ts_program_ir_provenance(p)
                                   : ts_program_ir(p))) {
    fputs(text, stdout);
  } else {
    fprintf(stderr, "tessel: out of memory\n");
    rc = EXIT_FAIL;
  }
  free(text);
  ts_program_free(p);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "tessel: name a command: list, show, check, bench, "
            "tune, explain, compare or plot (tessel --help says more)\n");
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (strcmp(cmd, "list") == 0) return cmd_list(argc - 1, argv + 1);
  if (strcmp(cmd, "show") == 0) return cmd_show(argc - 1, argv + 1);
  if (strcmp(cmd, "check") == 0) return cli_check(argc - 1, argv + 1);
  if (strcmp(cmd, "bench") == 0) return cli_bench(argc - 1, argv + 1);
  if (strcmp(cmd, "compare") == 0) return cli_compare(argc - 1, argv + 1);
  if (strcmp(cmd, "plot") == 0) return cli_plot(argc - 1, argv + 1);
  if (strcmp(cmd, "tune") == 0) return cli_tune(argc - 1, argv + 1);
  if (strcmp(cmd, "explain") == 0) return cli_explain(argc - 1, argv + 1);
  fprintf(stderr, "tessel: unknown command '%s' (see tessel --help)\n", cmd);
  return EXIT_USAGE;
}
