/*
 * The tessel command: list, show, check and bench the built-in schedules;
 * tune spaces; compare and plot the records of runs.
 * Exit status: 0 success, 1 a failed check, compile or run (or no GPU for
 * bench), 2 a usage error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const char *usage_text =
    "usage: tessel <command> [options]\n"
    "\n"
    "  list                         the built-in schedules, one line each\n"
    "  show SCHEDULE [--ir|--cuda|--trace] [--shape MxNxK] [--layout L]\n"
    "               [--arch sm_XX]  the lowered loop nest, the CUDA C (with\n"
    "                               the ptxas report), or the trace as C\n"
    "  check SCHEDULE... [--shape MxNxK]... [--layout L] [--seed N]\n"
    "                               reference executor vs a plain C GEMM\n"
    "  bench SCHEDULE... [--cu FILE]... [--shape MxNxK]... [--layout L]\n"
    "        [--csv FILE] [--json FILE]\n"
    "                               GPU timings beside cuBLAS and\n"
    "                               hand-written kernels\n"
    "  tune SPACE [--shape MxNxK]... [--jobs J] [--top N] [--csv FILE]\n"
    "        [--json FILE]          every configuration of a space timed\n"
    "  compare A.json B.json        two records of runs: speedups of B over\n"
    "                               A with their noise\n"
    "  plot RECORD.json -o FILE.png TFLOP/s of a record, cuBLAS the reference\n"
    "\n"
    "A SCHEDULE is a built-in (tessel list), a tuning space (tessel tune\n"
    "--list) as SPACE (its first values; with --tuned, its tuning record for\n"
    "this GPU and definition) or SPACE:name=value,..., or a C file of\n"
    "TS_SCHEDULE definitions as FILE.c (each of them) or FILE.c:NAME,\n"
    "compiled with $CC (else cc) and cached.\n"
    "common options: --alpha X --beta Y (default 1 and 0); layouts NN, NT,\n"
    "TN, TT (op(A) op(B), T: stored transposed); --dtype f32|f16|bf16 (A and\n"
    "B, default f32) and --c-dtype f32|f16|bf16 (C, default f32), summed in\n"
    "fp32.  `tessel COMMAND --help` says more.\n"
    "exit status: 0 done (and every check or benchmark correct), 1 a failure\n"
    "(a wrong result, a compile error, no GPU), 2 a usage error.\n";

static const char *show_help =
    "usage: tessel show SCHEDULE [--ir|--cuda|--trace] [--shape MxNxK]\n"
    "                  [--layout NN|NT|TN|TT] [--alpha X] [--beta Y]\n"
    "                  [--arch sm_XX]\n"
    "  --ir     the lowered loop nest (default)\n"
    "  --cuda   the generated CUDA C, headed by NVRTC's ptxas report for\n"
    "           --arch (default sm_90)\n"
    "  --trace  the schedule's primitive calls as C that replays them\n"
    "  --shape  default 1024x1024x1024\n";

static const char *check_help =
    "usage: tessel check SCHEDULE... [--shape MxNxK]... [--layout L]\n"
    "                   [--alpha X] [--beta Y] [--seed N]\n"
    "Runs each schedule on the CPU reference executor on random data and\n"
    "compares with a plain C GEMM; reports out-of-bounds accesses, races,\n"
    "divergent barriers and reads of unwritten memory.  Exit 1 on any\n"
    "mismatch or fault.  --shape may repeat; default 37x53x29.\n";

enum { OPT_IR = 256, OPT_CUDA, OPT_TRACE, OPT_ALPHA, OPT_BETA, OPT_ARCH,
       OPT_CSV, OPT_REPEATS, OPT_WARMUP, OPT_SEED, OPT_CU, OPT_DTYPE,
       OPT_C_DTYPE, OPT_JOBS, OPT_TOP, OPT_LIMIT, OPT_TUNED, OPT_BUDGET,
       OPT_TIME, OPT_JSON, OPT_RESTART, OPT_MAX_SECONDS };

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"shape", required_argument, NULL, 's'},
    {"layout", required_argument, NULL, 'l'},
    {"ir", no_argument, NULL, OPT_IR},
    {"cuda", no_argument, NULL, OPT_CUDA},
    {"trace", no_argument, NULL, OPT_TRACE},
    {"alpha", required_argument, NULL, OPT_ALPHA},
    {"beta", required_argument, NULL, OPT_BETA},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"csv", required_argument, NULL, OPT_CSV},
    {"repeats", required_argument, NULL, OPT_REPEATS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"cu", required_argument, NULL, OPT_CU},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"c-dtype", required_argument, NULL, OPT_C_DTYPE},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"top", required_argument, NULL, OPT_TOP},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"tuned", no_argument, NULL, OPT_TUNED},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"time", required_argument, NULL, OPT_TIME},
    {"json", required_argument, NULL, OPT_JSON},
    {"restart", no_argument, NULL, OPT_RESTART},
    {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
    {NULL, 0, NULL, 0},
};

/* The commands that take an option (CLI_* of any of them), 0 for the
 * common ones. */
static unsigned option_needs(int c) {
  switch (c) {
  case OPT_CU: case OPT_MAX_SECONDS: return CLI_CU;
  case OPT_JSON: return CLI_CU | CLI_TUNE;
  case OPT_JOBS: case OPT_TOP: case OPT_LIMIT: case OPT_BUDGET:
  case OPT_TIME: case OPT_RESTART: return CLI_TUNE;
  case OPT_TUNED: return CLI_SCHEDULES;
  case OPT_IR: case OPT_CUDA: case OPT_TRACE: return CLI_SHOW;
  default: return 0;
  }
}

/* An option only some commands take: --cu and --max-seconds (bench),
 * --json (bench and tune), --jobs, --top, --limit, --budget, --time and
 * --restart (tune), --tuned (show, check, bench), --ir, --cuda and --trace
 * (show). */
static bool option_allowed(int c, unsigned flags, const char *opt) {
  unsigned need = option_needs(c);
  if (!need || (flags & need))
    return true;
  fprintf(stderr, "tessel: --%s is an option of %s\n", opt,
          need == CLI_CU                ? "bench"
          : need == CLI_TUNE            ? "tune"
          : need == CLI_SHOW            ? "show"
          : need == (CLI_CU | CLI_TUNE) ? "bench and tune"
                                        : "show, check and bench");
  return false;
}

/* "sm_" and two or three digits: what NVRTC's --gpu-architecture takes. */
static bool valid_arch(const char *a) {
  size_t n = strlen(a);
  if (strncmp(a, "sm_", 3) != 0 || n < 5 || n > 6)
    return false;
  for (size_t i = 3; i < n; i++)
    if (a[i] < '0' || a[i] > '9')
      return false;
  return true;
}

/* --ir, --cuda and --trace: one of them. */
static bool set_show(cli_opts *o, int view) {
  static const char *const names[] = {"--ir", "--cuda", "--trace"};
  if (o->show_given && (int)o->show != view) {
    fprintf(stderr, "tessel: %s and %s exclude each other; give one\n",
            names[o->show], names[view]);
    return false;
  }
  o->show = view;
  o->show_given = true;
  return true;
}

int cli_parse(int argc, char **argv, const char *help, unsigned flags,
              cli_opts *o) {
  *o = (cli_opts){.layout = TS_NN, .alpha = 1.0f, .arch = "sm_90",
                  .repeats = 50, .warmup = 5, .seed = 1, .top = 10,
                  .limit = 100000, .max_seconds = 600};
  int c, v;
  optind = 1;
  opterr = 0;
  int li = -1;
  while ((c = getopt_long(argc, argv, "hs:l:", long_opts, &li)) != -1) {
    if (!option_allowed(c, flags, li >= 0 ? long_opts[li].name : "?"))
      return EXIT_USAGE;
    li = -1;
    switch (c) {
    case 'h': fputs(help, stdout); return 0;
    case 's':
      if (o->nshapes == MAX_SHAPES) {
        fprintf(stderr, "tessel: at most %d --shape options\n", MAX_SHAPES);
        return EXIT_USAGE;
      }
      if (!cli_parse_shape(optarg, &o->shapes[o->nshapes++]))
        return EXIT_USAGE;
      break;
    case 'l':
      if ((v = ts_layout_parse(optarg)) < 0) {
        fprintf(stderr, "tessel: --layout must be NN, NT, TN or TT (got "
                "'%s')\n", optarg);
        return EXIT_USAGE;
      }
      o->layout = (ts_layout)v;
      break;
    case OPT_DTYPE:
    case OPT_C_DTYPE:
      if ((v = ts_dtype_parse(optarg)) < 0) {
        fprintf(stderr, "tessel: --%s must be f32, f16 or bf16 (got '%s')\n",
                c == OPT_DTYPE ? "dtype" : "c-dtype", optarg);
        return EXIT_USAGE;
      }
      *(c == OPT_DTYPE ? &o->ab_type : &o->c_type) = (ts_dtype)v;
      break;
    case OPT_IR: case OPT_CUDA: case OPT_TRACE:
      if (!set_show(o, c == OPT_IR     ? SHOW_IR
                       : c == OPT_CUDA ? SHOW_CUDA
                                       : SHOW_TRACE))
        return EXIT_USAGE;
      break;
    case OPT_ALPHA:
      if (!cli_parse_float("--alpha", optarg, &o->alpha)) return EXIT_USAGE;
      break;
    case OPT_BETA:
      if (!cli_parse_float("--beta", optarg, &o->beta)) return EXIT_USAGE;
      break;
    case OPT_ARCH:
      if (!valid_arch(optarg)) {
        fprintf(stderr, "tessel: --arch must be sm_ and the compute "
                "capability, e.g. sm_90 (got '%s')\n", optarg);
        return EXIT_USAGE;
      }
      o->arch = optarg;
      break;
    case OPT_CSV: o->csv = optarg; break;
    case OPT_REPEATS:
      if (!cli_parse_int("--repeats", optarg, 1, 100000, &o->repeats))
        return EXIT_USAGE;
      break;
    case OPT_WARMUP:
      if (!cli_parse_int("--warmup", optarg, 0, 100000, &o->warmup))
        return EXIT_USAGE;
      break;
    case OPT_SEED:
      if (!cli_parse_int("--seed", optarg, 0, 0x7fffffff, &v))
        return EXIT_USAGE;
      o->seed = (uint64_t)v;
      break;
    case OPT_TUNED: o->tuned = true; break;
    case OPT_JOBS:
      if (!cli_parse_int("--jobs", optarg, 1, 1024, &o->jobs))
        return EXIT_USAGE;
      break;
    case OPT_TOP:
      if (!cli_parse_int("--top", optarg, 1, 100000, &o->top))
        return EXIT_USAGE;
      break;
    case OPT_LIMIT:
      if (!cli_parse_int("--limit", optarg, 1, 100000, &o->limit))
        return EXIT_USAGE;
      break;
    case OPT_BUDGET:
      if (!cli_parse_int("--budget", optarg, 1, 100000, &o->budget))
        return EXIT_USAGE;
      break;
    case OPT_TIME:
      if (!cli_parse_int("--time", optarg, 1, 1000000, &o->time_limit))
        return EXIT_USAGE;
      break;
    case OPT_JSON: o->json = optarg; break;
    case OPT_RESTART: o->restart = true; break;
    case OPT_MAX_SECONDS:
      if (!cli_parse_int("--max-seconds", optarg, 1, 100000000, &o->max_seconds))
        return EXIT_USAGE;
      break;
    case OPT_CU:
      if (o->ncu == MAX_SHAPES) {
        fprintf(stderr, "tessel: at most %d --cu options\n", MAX_SHAPES);
        return EXIT_USAGE;
      }
      o->cu_files[o->ncu++] = optarg;
      break;
    default:
      fprintf(stderr, "tessel: unknown or incomplete option '%s' (see "
              "--help)\n", argv[optind - 1]);
      return EXIT_USAGE;
    }
  }
  o->names = argv + optind;
  o->nnames = argc - optind;
  if (o->nnames == 0 && o->ncu == 0) {
    fprintf(stderr, "tessel: name a %s\n", flags & CLI_TUNE
                        ? "space (tessel tune --list shows them)"
                        : "schedule (tessel list shows them)");
    return EXIT_USAGE;
  }
  return cli_check_names(o, flags & CLI_TUNE);
}

/* ---- list ------------------------------------------------------------------- */

static int cmd_list(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    puts("usage: tessel list\nPrints the built-in schedules, one line each.");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "tessel: list takes no arguments (got '%s')\n", argv[1]);
    return EXIT_USAGE;
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

/* The GPU whose tuning records --tuned reads, or NULL (without --tuned, or
 * without a GPU: the spaces' first configurations are used, with a
 * message). */
static ts_gpu *gpu_for_records(const cli_opts *o) {
  if (!o->tuned)
    return NULL;
  ts_gpu *g = ts_gpu_open();
  if (ts_gpu_status(g) == TS_OK)
    return g;
  ts_gpu_close(g);
  return NULL;
}

static int cmd_show(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(argc, argv, show_help, CLI_SCHEDULES | CLI_SHOW, &o);
  if (rc >= 0)
    return rc;
  if (o.nnames != 1 || o.nshapes > 1) {
    fprintf(stderr, "tessel: show takes one schedule and one --shape (got "
            "%d schedules%s and %d shapes)\n", o.nnames,
            o.nnames > 1 ? ", as FILE.c:NAME names one of a file's" : "",
            o.nshapes);
    return EXIT_USAGE;
  }
  cli_finish_shapes(&o, 1024, 1024, 1024);
  ts_gpu *gpu = gpu_for_records(&o);
  ts_sched *s = cli_schedule(&o, o.names[0], &o.shapes[0], gpu);
  ts_gpu_close(gpu);
  rc = 0;
  if (o.show == SHOW_TRACE) {
    char *text = ts_print_trace(s);
    if (text)
      fputs(text, stdout);
    else {
      fprintf(stderr, "tessel: %s\n", ts_sched_errmsg(s));
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
  } else if ((text = ts_program_ir(p))) {
    fputs(text, stdout);
  } else {
    fprintf(stderr, "tessel: out of memory\n");
    rc = EXIT_FAIL;
  }
  free(text);
  ts_program_free(p);
  return rc;
}

/* ---- check --------------------------------------------------------------------- */

/* The reference executor runs every thread of every block, about 10^7
 * multiply-adds a second (measured on one core): a check past about 10 s
 * says so first. */
static void announce_long_check(const char *name, const char *shape,
                                const ts_gemm *g) {
  double seconds = (double)g->m * (double)g->n * (double)g->k / 1e7;
  if (seconds < 10)
    return;
  fprintf(stderr, "tessel: checking %s at %s runs the whole kernel on the "
          "reference executor: about %.0f %s\n", name, shape,
          seconds < 7200 ? seconds : seconds / 3600,
          seconds < 7200 ? "s" : "hours");
  fflush(stderr);
}

static int cmd_check(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(argc, argv, check_help, CLI_SCHEDULES, &o);
  if (rc >= 0)
    return rc;
  cli_finish_shapes(&o, 37, 53, 29);
  ts_gpu *gpu = gpu_for_records(&o);
  rc = 0;
  printf("%-16s %-16s %-6s %s\n", "schedule", "shape", "layout", "result");
  for (int i = 0; i < o.nnames; i++) {
    for (int j = 0; j < o.nshapes; j++) {
      const ts_gemm *g = &o.shapes[j];
      ts_sched *s = cli_schedule(&o, o.names[i], g, gpu);
      char msg[1024], shape[64];
      snprintf(shape, sizeof(shape), "%lldx%lldx%lld", (long long)g->m,
               (long long)g->n, (long long)g->k);
      ts_status st = ts_check_fits(g, msg, sizeof(msg));
      if (st == TS_OK) {
        announce_long_check(o.names[i], shape, g);
        st = ts_check(s, o.seed, msg, sizeof(msg));
      }
      printf("%-16s %-16s %-6s %s%s%s\n", o.names[i], shape,
             ts_layout_name(g->layout), st == TS_OK ? "ok" : "FAIL: ",
             st == TS_OK ? "" : ts_strerror(st), st == TS_OK ? "" : ": ");
      if (st != TS_OK) {
        printf("    %s\n", msg);
        rc = EXIT_FAIL;
      }
      ts_sched_free(s);
    }
  }
  ts_gpu_close(gpu);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_text, stderr);
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
  if (strcmp(cmd, "check") == 0) return cmd_check(argc - 1, argv + 1);
  if (strcmp(cmd, "bench") == 0) return cli_bench(argc - 1, argv + 1);
  if (strcmp(cmd, "compare") == 0) return cli_compare(argc - 1, argv + 1);
  if (strcmp(cmd, "plot") == 0) return cli_plot(argc - 1, argv + 1);
  if (strcmp(cmd, "tune") == 0) return cli_tune(argc - 1, argv + 1);
  fprintf(stderr, "tessel: unknown command '%s' (see tessel --help)\n", cmd);
  return EXIT_USAGE;
}
