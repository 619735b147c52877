/*
 * The command line's options, parsed once for every command that takes
 * them (cli_parse): the one table of long options, which command takes
 * which, and each value validated before any work, each error one line
 * naming the option and what it expected.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

enum { OPT_IR = 256, OPT_CUDA, OPT_TRACE, OPT_STEPS, OPT_PROVENANCE, OPT_ALPHA, OPT_BETA, OPT_ARCH,
       OPT_CSV, OPT_REPEATS, OPT_WARMUP, OPT_SEED, OPT_CU, OPT_DTYPE,
       OPT_C_DTYPE, OPT_JOBS, OPT_TOP, OPT_LIMIT, OPT_TUNED, OPT_BUDGET,
       OPT_TIME, OPT_JSON, OPT_RESTART, OPT_BLOCKS,
       OPT_MAX_SECONDS, OPT_ALL, OPT_GPUS, OPT_SHAPES_FROM, OPT_GPU,
       OPT_RUNTIME };

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"shape", required_argument, NULL, 's'},
    {"layout", required_argument, NULL, 'l'},
    {"ir", no_argument, NULL, OPT_IR},
    {"cuda", no_argument, NULL, OPT_CUDA},
    {"trace", no_argument, NULL, OPT_TRACE},
    {"steps", no_argument, NULL, OPT_STEPS},
    {"provenance", no_argument, NULL, OPT_PROVENANCE},
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
    {"blocks", required_argument, NULL, OPT_BLOCKS},
    {"max-seconds", required_argument, NULL, OPT_MAX_SECONDS},
    {"all", no_argument, NULL, OPT_ALL},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"gpu", required_argument, NULL, OPT_GPU},
    {"shapes-from", required_argument, NULL, OPT_SHAPES_FROM},
    {"runtime", optional_argument, NULL, OPT_RUNTIME},
    {NULL, 0, NULL, 0},
};

/* The commands (CLI_*) that take an option: each takes only what it
 * uses.  Bench and tune compile for the GPU's own architecture, so --arch
 * is show's (and check's, which the lowering it does may refuse); --seed
 * seeds check's and the GPU's random data and tune's sample. */
static unsigned option_commands(int c) {
  switch (c) {
  case OPT_CU: case OPT_MAX_SECONDS: case OPT_GPU: return CLI_BENCH;
  case OPT_JSON: return CLI_BENCH | CLI_TUNE | CLI_EXPLAIN;
  case OPT_JOBS: case OPT_TOP: case OPT_LIMIT: case OPT_BUDGET:
  case OPT_TIME: case OPT_RESTART: case OPT_GPUS: case OPT_SHAPES_FROM:
    return CLI_TUNE;
  case OPT_TUNED: case OPT_RUNTIME:
    return CLI_SHOW | CLI_CHECK | CLI_BENCH | CLI_EXPLAIN;
  case OPT_BLOCKS: case OPT_ALL: return CLI_CHECK;
  case OPT_IR: case OPT_CUDA: case OPT_TRACE: case OPT_STEPS:
  case OPT_PROVENANCE:
    return CLI_SHOW;
  case OPT_ARCH: return CLI_SHOW | CLI_CHECK | CLI_EXPLAIN;
  case OPT_CSV: case OPT_REPEATS: case OPT_WARMUP: return CLI_BENCH | CLI_TUNE;
  case OPT_SEED: return CLI_CHECK | CLI_BENCH | CLI_TUNE;
  default: return CLI_SHOW | CLI_CHECK | CLI_BENCH | CLI_TUNE | CLI_EXPLAIN;
  }
}

/* tune --gpus: "all", N (devices 0 to N-1) or a list of ordinals
 * ("0,2"); false with a message. */
static bool parse_gpus(const char *text, cli_opts *o) {
  enum { MOST = sizeof(o->gpus) / sizeof(o->gpus[0]) };
  if (strcmp(text, "all") == 0) {
    o->ngpus = -1;
    return true;
  }
  o->ngpus = 0;
  bool list = strchr(text, ',') != NULL;
  for (const char *p = text; *p; ) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || (*end && *end != ',') || v < 0 || v >= (list ? 1024 : MOST + 1) ||
        (!list && v == 0) || o->ngpus == MOST) {
      fprintf(stderr, "tessel: --gpus takes all, a count from 1 to %d or a "
              "list of device ordinals such as 0,2 (got '%s')\n", MOST, text);
      return false;
    }
    if (!list)
      for (int k = 0; k < v; k++)
        o->gpus[o->ngpus++] = k;
    else
      o->gpus[o->ngpus++] = (int)v;
    p = *end ? end + 1 : end;
  }
  for (int i = 0; i < o->ngpus; i++)
    for (int j = 0; j < i; j++)
      if (o->gpus[i] == o->gpus[j]) {
        fprintf(stderr, "tessel: --gpus names GPU %d twice (got '%s')\n",
                o->gpus[i], text);
        return false;
      }
  return o->ngpus > 0 || (fprintf(stderr, "tessel: --gpus names no GPU\n"), false);
}

/* --runtime=N or N,L: what the extents (N) and the leading dimensions
 * (L; N when not given) taken at launch are multiples of. */
static bool parse_multiples(const char *text, cli_opts *o) {
  char first[32];
  const char *comma = strchr(text, ',');
  size_t n = comma ? (size_t)(comma - text) : strlen(text);
  if (n >= sizeof(first)) {
    fprintf(stderr, "tessel: --runtime takes N or N,L, each in 1..64 (got "
            "'%s')\n", text);
    return false;
  }
  memcpy(first, text, n);
  first[n] = 0;
  if (!cli_parse_int("--runtime", first, 1, 64, &o->runtime_multiple))
    return false;
  o->runtime_ld_multiple = o->runtime_multiple;
  return !comma || cli_parse_int("--runtime", comma + 1, 1, 64,
                                 &o->runtime_ld_multiple);
}

/* "show, check and bench": the commands of a set, in order. */
static void command_list(unsigned set, char *out, size_t len) {
  static const char *const names[] = {"show", "check", "bench", "tune",
                                      "explain"};
  enum { NCOMMANDS = sizeof(names) / sizeof(names[0]) };
  int n = 0, total = 0;
  for (int i = 0; i < NCOMMANDS; i++)
    total += (set >> i) & 1;
  out[0] = 0;
  for (int i = 0; i < NCOMMANDS; i++)
    if ((set >> i) & 1) {
      size_t at = strlen(out);
      snprintf(out + at, len - at, "%s%s", n == 0 ? ""
                                           : n + 1 == total ? " and " : ", ",
               names[i]);
      n++;
    }
}

/* An option the command (flags: its CLI_* bit) does not take is named
 * with the commands that do. */
static bool option_allowed(int c, unsigned flags, const char *opt) {
  unsigned set = option_commands(c);
  if (flags & set)
    return true;
  char list[96];
  command_list(set, list, sizeof(list));
  fprintf(stderr, "tessel: --%s is an option of %s\n", opt, list);
  return false;
}

/* What an option's value must be, for the message when it has none. */
static const char *value_wanted(int c) {
  switch (c) {
  case 's': return "MxNxK";
  case 'l': return "NN, NT, TN or TT";
  case OPT_ALPHA: case OPT_BETA: return "a finite number";
  case OPT_ARCH: return "sm_ and the compute capability, e.g. sm_90";
  case OPT_CSV: case OPT_JSON: return "the file to write";
  case OPT_CU: return "a .cu file";
  case OPT_DTYPE: case OPT_C_DTYPE: return "f32, f16 or bf16";
  default: return "an integer";
  }
}

/* The long option of getopt's value c (-s and -l are --shape, --layout). */
static int option_index(int c) {
  for (int i = 0; long_opts[i].name; i++)
    if (long_opts[i].val == c)
      return i;
  return -1;
}

/* Only --shape and --cu repeat; any other option given twice is an error
 * (the second would silently win). */
static bool given_once(int c, unsigned long long *seen) {
  int i = option_index(c);
  if (i < 0 || c == 's' || c == OPT_CU)
    return true;
  if (*seen & (1ull << i)) {
    fprintf(stderr, "tessel: --%s is given twice; give it once (only "
            "--shape and --cu repeat)\n", long_opts[i].name);
    return false;
  }
  *seen |= 1ull << i;
  return true;
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

/* --ir, --cuda, --trace and --steps: one of them. */
static bool set_show(cli_opts *o, int view) {
  static const char *const names[] = {"--ir", "--cuda", "--trace", "--steps"};
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
                  .limit = 100000, .max_seconds = 600, .command = flags};
  for (int i = 0; i < MAX_SHAPES; i++)
    o->shape_layout[i] = o->shape_dtype[i] = -1; /* the command line's */
  int c, v;
  optind = 1;
  opterr = 0;
  unsigned long long seen = 0;
  while ((c = getopt_long(argc, argv, ":hs:l:", long_opts, NULL)) != -1) {
    if (c == ':') {
      fprintf(stderr, "tessel: %s needs a value: %s\n", argv[optind - 1],
              value_wanted(optopt));
      return EXIT_USAGE;
    }
    int at = option_index(c);
    if (c != '?' && (!option_allowed(c, flags, at >= 0 ? long_opts[at].name
                                                        : "?") ||
                     !given_once(c, &seen)))
      return EXIT_USAGE;
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
      if (c == OPT_DTYPE && strcmp(optarg, "tf32") == 0) {
        o->ab_type = TS_F32;
        o->math = TS_MATH_TF32;
        break;
      }
      if ((v = ts_dtype_parse(optarg)) < 0) {
        fprintf(stderr, "tessel: --%s must be f32, f16%s (got '%s')\n",
                c == OPT_DTYPE ? "dtype" : "c-dtype",
                c == OPT_DTYPE ? ", bf16 or tf32" : " or bf16", optarg);
        return EXIT_USAGE;
      }
      if (c == OPT_DTYPE)
        o->math = TS_MATH_F32;
      *(c == OPT_DTYPE ? &o->ab_type : &o->c_type) = (ts_dtype)v;
      break;
    case OPT_PROVENANCE:
      o->provenance = true;
      break;
    case OPT_IR: case OPT_CUDA: case OPT_TRACE: case OPT_STEPS:
      if (!set_show(o, c == OPT_IR      ? SHOW_IR
                       : c == OPT_CUDA  ? SHOW_CUDA
                       : c == OPT_TRACE ? SHOW_TRACE
                                        : SHOW_STEPS))
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
      o->arch_given = true;
      break;
    case OPT_CSV:
      if (!cli_check_output("--csv", optarg)) return EXIT_USAGE;
      o->csv = optarg;
      break;
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
    case OPT_RUNTIME:
      o->runtime = TS_RUNTIME_SHAPE;
      if (optarg && !parse_multiples(optarg, o))
        return EXIT_USAGE;
      break;
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
    case OPT_JSON:
      if (!cli_check_output("--json", optarg)) return EXIT_USAGE;
      o->json = optarg;
      break;
    case OPT_RESTART: o->restart = true; break;
    case OPT_ALL: o->all = true; break;
    case OPT_GPUS:
      if (!parse_gpus(optarg, o))
        return EXIT_USAGE;
      break;
    case OPT_GPU:
      if (!cli_parse_int("--gpu", optarg, 0, 1023, &o->gpu))
        return EXIT_USAGE;
      break;
    case OPT_SHAPES_FROM:
      if (!cli_read_shapes(optarg, o))
        return EXIT_USAGE;
      break;
    case OPT_BLOCKS:
      if (!cli_parse_int("--blocks", optarg, 1, 100000, &o->blocks))
        return EXIT_USAGE;
      break;
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
      fprintf(stderr, "tessel: unknown or ambiguous option '%s' (see "
              "--help)\n", argv[optind - 1]);
      return EXIT_USAGE;
    }
  }
  if (o->csv && o->json && strcmp(o->csv, o->json) == 0) {
    fprintf(stderr, "tessel: --csv and --json both name %s; give each its "
            "own file\n", o->csv);
    return EXIT_USAGE;
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
