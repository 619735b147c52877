/*
 * tessel bench: schedules and hand-written kernels timed beside cuBLAS,
 * shape by shape: every candidate of a shape compiled first (schedules in
 * parallel), then timed in one run on the same inputs.  Rows are printed,
 * and written to --csv and to the --json record of the run (record.c).
 * Before any work the run's time is estimated: refused over
 * --max-seconds, and said when over about 10 s once a GPU is found to run
 * it (without one, the one line is why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_process.h"
#include "csv.h"
#include "options.h"
#include "record.h"

static const char *bench_help =
    "usage: tessel bench SCHEDULE... [--cu FILE]... [--shape MxNxK]...\n"
    "                   [--layout L] [--alpha X] [--beta Y] [--dtype T]\n"
    "                   [--c-dtype T] [--csv FILE] [--json FILE] [--repeats N]\n"
    "                   [--warmup N] [--seed N] [--tuned] [--max-seconds S]\n"
    "                   [--gpu N] [--runtime[=N[,L]]]\n"
    "Times each schedule and cuBLAS in one run on the same random inputs\n"
    "(median of --repeats launches, default 50) and prints ms, TFLOP/s, the\n"
    "ratio to cuBLAS, the max relative error against cuBLAS and the ptxas\n"
    "registers and spills.  Where cuBLAS has no GEMM of the element types\n"
    "(fp32 A and B with an fp16 or bf16 C) it runs with an fp32 C, and a\n"
    "line says so.  --csv also writes the rows to FILE; --json FILE\n"
    "writes the record of the run (the GPU, versions, the command, each\n"
    "schedule's trace and .cu hash, every timing; docs/records.md), which\n"
    "tessel compare and tessel plot read.  --shape may repeat; default\n"
    "1024x1024x1024.  Needs a GPU; kernels are compiled for its\n"
    "architecture.  --tuned: spaces at their tuning records.  A schedule\n"
    "that cannot run as asked (tensor cores without --dtype f16, bf16 or\n"
    "tf32) gets a row saying why, and the others run; so does one that\n"
    "faults the GPU (an illegal address), the others timed in a fresh GPU\n"
    "process.\n"
    "  --runtime[=N[,L]]  M, N, K and the leading dimensions taken at\n"
    "             launch: one kernel for every shape, run and checked at the\n"
    "             --shape given (extents multiples of N, leading dimensions\n"
    "             of L, else of N; docs/launch.md)\n"
    "  --gpu N    the GPU to run on, by ordinal (default 0: the first the\n"
    "             driver sees, as nvidia-smi and CUDA_VISIBLE_DEVICES order them)\n"
    "  --max-seconds S  refuse a run estimated to take longer (default\n"
    "             600); the estimate assumes 5 TFLOP/s and 2 s a compile,\n"
    "             and is printed first when over 10 s\n"
    "  --cu FILE  also times a hand-written kernel: FILE defines\n"
    "             extern \"C\" __global__ void gemm(const float *A,\n"
    "             const float *B, float *C, int M, int N, int K, float alpha,\n"
    "             float beta) and the ints tessel_block[3] (threads),\n"
    "             tessel_tile[2] (rows x columns of C per block) and\n"
    "             optionally tessel_multiple[3] (M, N, K it needs to divide)\n"
    "             as extern \"C\" __device__ globals.  The seeds' kernels are\n"
    "             in bench/handwritten/ (installed in share/tessel/handwritten).\n"
    "             May repeat; the row is the file's name.\n"
    CLI_ISOLATION_HELP
    "Exit status: 0 every kernel timed and correct, 1 a failure (no GPU, a\n"
    "compile error, a wrong result), 2 a usage error.\n";

/* ---- The estimate ------------------------------------------------------------ */

/* What the estimate assumes: a kernel's speed (a tuned fp32 kernel of a
 * recent GPU runs 10 to 50 TFLOP/s, the simplest schedules slower), a
 * compile by NVRTC on an empty kernel cache, and host work per element
 * (random inputs, the error against cuBLAS). */
#define ASSUMED_TFLOPS 5.0
#define COMPILE_SECONDS 2.0
#define HOST_SECONDS_PER_ELEMENT 5e-9

typedef struct {
  int compiles;
  long long launches;
  double compile_s, gpu_s, host_s;
} bench_estimate;

static bench_estimate estimate(const cli_opts *o) {
  bench_estimate e = {0};
  int kernels = o->nnames + o->ncu;
  for (int j = 0; j < o->nshapes; j++) {
    const ts_gemm *g = &o->shapes[j];
    double m = (double)g->m, n = (double)g->n, k = (double)g->k;
    /* Every kernel and cuBLAS: the checked launch, warm-up and repeats. */
    long long launches = (long long)(kernels + 1) * (o->warmup + o->repeats + 1);
    e.compiles += kernels;
    e.launches += launches;
    e.gpu_s += (double)launches * 2 * m * n * k / (ASSUMED_TFLOPS * 1e12);
    e.host_s += (m * k + k * n + m * n * (kernels + 2)) *
                HOST_SECONDS_PER_ELEMENT;
  }
  e.compile_s = e.compiles * COMPILE_SECONDS;
  return e;
}

/* The estimate's parts in words: "13 compiles (26 s uncached), ...". */
static double estimate_text(const cli_opts *o, char *what, size_t len) {
  bench_estimate e = estimate(o);
  snprintf(what, len, "%d compile%s (%.0f s uncached), %lld launch%s (%.0f "
           "s at an assumed %.0f TFLOP/s) and %.0f s on the host", e.compiles,
           e.compiles == 1 ? "" : "s", e.compile_s, e.launches,
           e.launches == 1 ? "" : "es", e.gpu_s, ASSUMED_TFLOPS, e.host_s);
  return e.compile_s + e.gpu_s + e.host_s;
}

/* False (with the numbers and how to go on) when the run would pass
 * --max-seconds: refused before anything, a GPU or not. */
static bool within_max_seconds(const cli_opts *o) {
  char what[256];
  double total = estimate_text(o, what, sizeof(what));
  if (total <= o->max_seconds)
    return true;
  fprintf(stderr, "tessel: bench would take about %.0f s: %s; that is over "
          "--max-seconds %d: give --max-seconds %.0f to run it, or fewer "
          "--repeats, schedules or shapes\n", total, what, o->max_seconds,
          total + 1);
  return false;
}

/* Says how long a run over 10 s will take, once there is a GPU to run it
 * (without one, the only line is why not). */
static void announce(const cli_opts *o) {
  char what[256];
  double total = estimate_text(o, what, sizeof(what));
  if (total < 10)
    return;
  fprintf(stderr, "tessel: bench will take about %.0f s: %s\n", total, what);
  fflush(stderr);
}

/* ---- Row names -------------------------------------------------------------------- */

/* A space's configuration in full: base:knob=v,... with every knob the
 * configuration declares at g, in the order it declares them (as tune
 * writes a configuration); NULL when the text does not parse or memory
 * runs out. */
static char *full_configuration(const ts_space *sp, const char *base,
                                const char *text, const ts_gemm *g) {
  char err[256];
  ts_config *c = ts_config_parse(text, err, sizeof(err));
  if (!c)
    return NULL;
  ts_sched_free(ts_space_schedule(sp, g, c)); /* declares the knobs */
  char *knobs = ts_config_text(c);
  ts_config_free(c);
  char *name = knobs ? malloc(strlen(base) + strlen(knobs) + 2) : NULL;
  if (name)
    sprintf(name, "%s:%s", base, knobs);
  free(knobs);
  return name;
}

/* The name a schedule's row goes under (malloc'd; NULL when out of
 * memory): the one that gets this very configuration again on the command
 * line, which tune's records use too, so that tessel compare matches a
 * bench row with the configuration tune timed.  A space's configuration is
 * written in full (FILE.c:SPACE:knob=v,..., or SPACE:knob=v,... for a
 * built-in), and so is a space named alone: its first configuration, or
 * with --tuned the one its tuning record gives (cli_schedule's choices).
 * A schedule keeps its name (warptiled, without --tuned, is the
 * schedule). */
static char *row_name(const cli_opts *o, const char *name, const ts_gemm *g,
                      const ts_gpu *gpu) {
  const ts_space *sp = cli_space(name);
  char base[4096];
  snprintf(base, sizeof(base), "%s", sp ? cli_space_name(sp) : "");
  size_t n = strlen(base);
  bool alone = sp && strcmp(name, base) == 0;
  if (!sp || (!alone && !(strncmp(name, base, n) == 0 && name[n] == ':')) ||
      (alone && !o->tuned && ts_builtin_find(name)))
    return strdup(name);
  char *recorded = alone && o->tuned && gpu
                       ? ts_tune_record_load(gpu, cli_space_key(sp), g, NULL)
                       : NULL;
  /* Not tuned at g: --tuned takes the nearest tuned shape's record. */
  if (alone && o->tuned && gpu && !recorded)
    recorded = ts_tune_record_nearest(gpu, cli_space_key(sp), g, 0, NULL);
  const char *text = !alone ? name + n + 1 : recorded ? recorded : "";
  char *full = full_configuration(sp, base, text, g);
  free(recorded);
  return full ? full : strdup(name);
}

/* Every schedule's and --cu kernel's row name at each shape: names[j][i]
 * for shape j, and the widest (at least `least`) in *width; false when out
 * of memory. */
static bool row_names(const cli_opts *o, const ts_cuda_kernel *cu,
                      const ts_gpu *gpu, char **names[MAX_SHAPES], int least,
                      int *width) {
  *width = least;
  for (int j = 0; j < o->nshapes; j++) {
    int n = o->nnames + o->ncu;
    if (!(names[j] = calloc((size_t)(n ? n : 1), sizeof(char *))))
      return false;
    for (int i = 0; i < n; i++) {
      names[j][i] = i < o->nnames
                        ? row_name(o, o->names[i], &o->shapes[j], gpu)
                        : strdup(cu[i - o->nnames].name);
      if (!names[j][i])
        return false;
      int len = (int)strlen(names[j][i]);
      *width = len > *width ? len : *width;
    }
  }
  return true;
}

static void free_row_names(const cli_opts *o, char **names[MAX_SHAPES]) {
  for (int j = 0; j < o->nshapes; j++) {
    for (int i = 0; names[j] && i < o->nnames + o->ncu; i++)
      free(names[j][i]);
    free(names[j]);
    names[j] = NULL;
  }
}

/* ---- Rows ------------------------------------------------------------------------ */

static void print_row(FILE *csv, const char *gpu, const char *name, int width,
                      const ts_gemm *g, const ts_bench_result *r) {
  char shape[64];
  snprintf(shape, sizeof(shape), "%lldx%lldx%lld", (long long)g->m,
           (long long)g->n, (long long)g->k);
  printf("%-*s %-16s %-6s %10.4f %9.2f %8.1f%% %9.1e", width, name, shape,
         ts_layout_name(g->layout), r->median_ms, r->tflops,
         100.0 * r->ratio_to_cublas, r->max_rel_err);
  if (r->ptxas.valid && r->ptxas.spill_store_bytes >= 0)
    printf(" %5d %6d\n", r->ptxas.registers,
           r->ptxas.spill_store_bytes + r->ptxas.spill_load_bytes);
  else if (r->ptxas.valid)
    printf(" %5d %6s\n", r->ptxas.registers, "?");
  else
    printf(" %5s %6s\n", "-", "-");
  if (!csv)
    return;
  cli_csv_field(csv, gpu);
  fputc(',', csv);
  cli_csv_field(csv, name);
  fprintf(csv, ",%lld,%lld,%lld,%s,%.6f,%.4f,%.4f,%.3e,%d,%d\n",
          (long long)g->m, (long long)g->n, (long long)g->k,
          ts_layout_name(g->layout), r->median_ms, r->tflops,
          r->ratio_to_cublas, r->max_rel_err,
          r->ptxas.valid ? r->ptxas.registers : -1,
          r->ptxas.valid ? r->ptxas.spill_store_bytes + r->ptxas.spill_load_bytes
                         : -1);
}

/* What a run of one shape writes to: --csv and the --json record (each
 * may be NULL); the rows' names at this shape and the name column's
 * width; the shape's index and the handover from the worker before (the
 * kernels that faulted). */
typedef struct {
  FILE *csv;
  json_t *record;
  char **names;
  int width;
  int shape;
  bench_handover *h;
} bench_out;

/* Every candidate of one shape: its kernel and, for a schedule, its trace
 * (the record's). */
typedef struct {
  ts_kernel **k;
  char **trace;
  int n;
} candidates;

static void free_candidates(candidates *c) {
  for (int i = 0; c->k && i < c->n; i++)
    ts_kernel_free(c->k[i]);
  for (int i = 0; c->trace && i < c->n; i++)
    free(c->trace[i]);
  free(c->k);
  free(c->trace);
}

/* The schedules lowered and compiled in parallel, the hand-written kernels
 * compiled, all before any timing; false when out of memory. */
static bool compile_candidates(const cli_opts *o, ts_gpu *gpu,
                               const ts_cuda_kernel *cu, const ts_gemm *g,
                               candidates *c) {
  const char *arch = ts_gpu_arch(gpu);
  int n = o->nnames;
  c->n = n + o->ncu;
  ts_program **progs = calloc((size_t)(n ? n : 1), sizeof(*progs));
  c->k = calloc((size_t)(c->n ? c->n : 1), sizeof(*c->k));
  c->trace = calloc((size_t)(c->n ? c->n : 1), sizeof(*c->trace));
  if (!progs || !c->k || !c->trace) {
    free(progs);
    return false;
  }
  for (int i = 0; i < n; i++) {
    ts_sched *s = cli_schedule(o, o->names[i], g, gpu);
    c->trace[i] = ts_print_trace(s);
    progs[i] = ts_lower(s);
    ts_sched_free(s);
  }
  ts_compile_all(progs, n, arch, 0, c->k);
  for (int i = 0; i < n; i++)
    ts_program_free(progs[i]);
  free(progs);
  for (int j = 0; j < o->ncu; j++)
    c->k[n + j] = ts_compile_cuda(&cu[j], g, arch);
  return true;
}

/* The shape and its rows into the record; false when out of memory. */
static bool record_shape(json_t *rec, const cli_opts *o, const ts_gemm *g,
                         const candidates *c, char *const *names,
                         const ts_bench_result *r,
                         const ts_bench_result *blas, const double *times) {
  json_t *shape = record_add_shape(rec, g);
  if (!shape)
    return false;
  bool ok = blas->status == TS_OK
                ? json_object_set_new(shape, "cublas",
                                      record_timing(blas, times, o->repeats)) == 0
                : json_object_set_new(shape, "cublas", json_null()) == 0 &&
                      json_object_set_new(shape, "error",
                                          json_string(blas->message)) == 0;
  ok = ok && json_object_set_new(shape, "rows", json_array()) == 0;
  for (int i = 0; ok && i < c->n; i++) {
    record_entry e = {
        .name = names[i],
        .hand_written = i >= o->nnames, .trace = c->trace[i],
        .cu_hash = ts_kernel_source_hash(c->k[i]), .result = &r[i],
        .times = times + (size_t)(i + 1) * (size_t)o->repeats,
        .repeats = o->repeats, .tolerance = ts_gemm_tolerance(g)};
    ok = record_add_row(shape, &e);
  }
  return ok;
}

/* A row that failed or was skipped, or one timed; returns its status. */
static int report_row(const bench_out *out, ts_gpu *gpu, const char *name,
                      const ts_gemm *g, const ts_bench_result *r) {
  if (r->skipped) {
    printf("%-*s skipped: %s\n", out->width, name, r->message);
    return 0;
  }
  if (r->faulted) { /* the error is the row's point */
    printf("%-*s FAIL: faulted the GPU: %s\n", out->width, name, r->message);
    return EXIT_FAIL;
  }
  if (r->status != TS_OK) {
    printf("%-*s FAIL: %s\n", out->width, name, ts_strerror(r->status));
    fprintf(stderr, "tessel: %s: %s\n", name, r->message);
    return EXIT_FAIL;
  }
  print_row(out->csv, ts_gpu_name(gpu), name, out->width, g, r);
  if (!(r->max_rel_err < ts_gemm_tolerance(g))) {
    fprintf(stderr, "tessel: %s differs from cuBLAS (max relative error "
            "%.2e, over %.2e)\n", name, r->max_rel_err, ts_gemm_tolerance(g));
    return EXIT_FAIL;
  }
  return 0;
}

/* Where cuBLAS has no GEMM of g's element types, which it is timed and
 * checked at instead (ts_bench's choice), said before its row. */
static void say_baseline(const ts_gemm *g) {
  ts_gemm b;
  if (ts_cublas_baseline(g, &b) != TS_OK || b.c_type == g->c_type)
    return;
  printf("# cuBLAS has no GEMM of A %s, B %s and C %s: its row is the "
         "nearest it has, C %s (which moves more bytes of C), and results "
         "are checked against its C rounded to %s\n", ts_dtype_name(g->a_type),
         ts_dtype_name(g->b_type), ts_dtype_name(g->c_type),
         ts_dtype_name(b.c_type), ts_dtype_name(g->c_type));
}

/* ts_bench over c's kernels but those that faulted at this shape in an
 * earlier worker, whose rows give the fault. */
static ts_status bench_unfaulted(ts_gpu *gpu, const candidates *c,
                                 const ts_bench_opts *bo, const bench_out *out,
                                 ts_bench_result *r, ts_bench_result *blas) {
  ts_kernel **k = calloc((size_t)(c->n ? c->n : 1), sizeof(*k));
  if (!k) {
    *blas = (ts_bench_result){.status = TS_ERR_NO_MEMORY,
                              .message = "out of host memory"};
    return TS_ERR_NO_MEMORY;
  }
  for (int i = 0; i < c->n; i++)
    k[i] = cli_bench_fault(out->h, out->shape, i) ? NULL : c->k[i];
  ts_status st = ts_bench(gpu, k, c->n, bo, r, blas);
  for (int i = 0; i < c->n; i++) {
    const bench_fault *f = cli_bench_fault(out->h, out->shape, i);
    if (f) {
      r[i] = (ts_bench_result){.status = TS_ERR_CUDA, .faulted = 1};
      snprintf(r[i].message, sizeof(r[i].message), "%s", f->why);
      st = st == TS_OK ? TS_ERR_CUDA : st;
    }
  }
  free(k);
  return st;
}

/* Whether a row faulted the GPU in this worker: then it is noted for the
 * next worker, which resumes at this shape, and said. */
static bool stop_at_fault(const cli_opts *o, const ts_gemm *g,
                          const bench_out *out, const ts_bench_result *r) {
  for (int i = 0; i < o->nnames + o->ncu; i++) {
    if (!r[i].faulted || cli_bench_fault(out->h, out->shape, i))
      continue;
    bool again = cli_bench_note_fault(out->h, out->shape, i, r[i].message);
    fprintf(stderr, "tessel: bench: %s at %lldx%lldx%lld faulted the GPU "
            "(%s)%s\n", out->names[i], (long long)g->m, (long long)g->n,
            (long long)g->k, r[i].message,
            again ? "; timing the other rows in a fresh GPU process" : "");
    return true;
  }
  return false;
}

static int bench_shape(ts_gpu *gpu, const cli_opts *o,
                       const ts_cuda_kernel *cu, const ts_gemm *g,
                       const bench_out *out) {
  candidates c = {0};
  bool ok = compile_candidates(o, gpu, cu, g, &c);
  int total = c.n;
  ts_bench_result *r = calloc((size_t)(total ? total : 1), sizeof(*r));
  double *times = out->record ? calloc((size_t)(total + 1) * (size_t)o->repeats,
                                       sizeof(double))
                              : NULL;
  ts_bench_result blas;
  if (!ok || !r || (out->record && !times)) {
    fprintf(stderr, "tessel: out of memory\n");
    free_candidates(&c);
    free(r);
    free(times);
    return EXIT_FAIL;
  }
  ts_bench_opts bo = {.warmup = o->warmup, .repeats = o->repeats,
                      .seed = o->seed, .times = times};
  int rc = 0;
  ts_status st = bench_unfaulted(gpu, &c, &bo, out, r, &blas);
  if (st != TS_OK && stop_at_fault(o, g, out, r)) {
    free_candidates(&c);
    free(r);
    free(times);
    return BENCH_WORKER_FAULTED;
  }
  if (blas.status != TS_OK || ts_gpu_status(gpu) != TS_OK) {
    fprintf(stderr, "tessel: %s\n", st != TS_OK && blas.message[0]
                                        ? blas.message : ts_gpu_errmsg(gpu));
    if (!blas.message[0])
      snprintf(blas.message, sizeof(blas.message), "%s", ts_gpu_errmsg(gpu));
    rc = EXIT_FAIL;
  } else {
    say_baseline(g);
    print_row(out->csv, ts_gpu_name(gpu), "cuBLAS", out->width, g, &blas);
  }
  for (int i = 0; i < total && blas.status == TS_OK; i++) {
    const char *cannot = i < o->nnames ? cli_cannot_run(o, o->names[i])
                                       : NULL;
    if (cannot) /* its row says why, not how its lowering failed */
      printf("%-*s FAIL: %s\n", out->width, out->names[i], cannot);
    if (cannot || report_row(out, gpu, out->names[i], g, &r[i]))
      rc = EXIT_FAIL;
  }
  if (out->record &&
      !record_shape(out->record, o, g, &c, out->names, r, &blas, times)) {
    fprintf(stderr, "tessel: out of memory for the --json record\n");
    rc = EXIT_FAIL;
  }
  free_candidates(&c);
  free(r);
  free(times);
  return rc;
}

/* ---- The command ----------------------------------------------------------------- */

static void free_kernels(ts_cuda_kernel *k, int n) {
  for (int i = 0; i < n; i++) {
    free((char *)k[i].name);
    free((char *)k[i].source);
  }
}

/* Reads every --cu file before the GPU is opened: a bad path is a usage
 * error wherever tessel runs. */
static bool read_kernels(const cli_opts *o, ts_cuda_kernel *k) {
  for (int i = 0; i < o->ncu; i++) {
    char *src, *label;
    if (!cli_read_cu(o->cu_files[i], &src, &label)) {
      free_kernels(k, i);
      return false;
    }
    k[i] = (ts_cuda_kernel){.name = label, .source = src};
  }
  return true;
}

/* --csv: written afresh with its header, or where a worker resumes after
 * a fault, appended to. */
static FILE *open_csv(const char *path, bool resumed) {
  FILE *csv = fopen(path, resumed ? "a" : "w");
  if (!csv) {
    fprintf(stderr, "tessel: cannot write --csv %s\n", path);
    return NULL;
  }
  if (!resumed)
    fputs("gpu,schedule,m,n,k,layout,median_ms,tflops,ratio_to_cublas,"
          "max_rel_err,registers,spill_bytes\n", csv);
  return csv;
}

/* The table's header, once a run (not again where a worker resumes). */
static void print_header(ts_gpu *gpu, const cli_opts *o, int width) {
  printf("# %s (%s), median of %d run%s after %d warm-up\n",
         ts_gpu_name(gpu), ts_gpu_arch(gpu), o->repeats,
         o->repeats == 1 ? "" : "s", o->warmup);
  printf("%-*s %-16s %-6s %10s %9s %9s %9s %5s %6s\n", width, "schedule",
         "shape", "layout", "ms", "TFLOP/s", "cuBLAS", "max_err", "regs",
         "spill");
}

/* Every shape timed and printed, into out, from the one the handover
 * resumes at; returns the exit status, or BENCH_WORKER_FAULTED when a
 * kernel faulted the GPU (the record so far written to --json for the
 * next worker).  The name column is as wide as the longest row name (16
 * at least). */
static int bench_all(ts_gpu *gpu, const cli_opts *o, const ts_cuda_kernel *cu,
                     bench_out *out) {
  char **names[MAX_SHAPES] = {0};
  if (!row_names(o, cu, gpu, names, 16, &out->width)) {
    fprintf(stderr, "tessel: out of memory\n");
    free_row_names(o, names);
    return EXIT_FAIL;
  }
  if (!out->h->nfaults)
    print_header(gpu, o, out->width);
  int rc = out->h->rc;
  for (int j = out->h->resume_shape; j < o->nshapes; j++) {
    out->names = names[j];
    out->shape = j;
    int st = bench_shape(gpu, o, cu, &o->shapes[j], out);
    if (st == BENCH_WORKER_FAULTED) {
      out->h->rc = rc;
      free_row_names(o, names);
      if (out->record && !record_write(out->record, o->json))
        fprintf(stderr, "tessel: cannot write --json %s\n", o->json);
      return BENCH_WORKER_FAULTED;
    }
    if (st != 0)
      rc = EXIT_FAIL;
  }
  free_row_names(o, names);
  if (out->record && (!record_end_sensors(out->record, gpu) ||
                      !record_write(out->record, o->json))) {
    fprintf(stderr, "tessel: cannot write --json %s\n", o->json);
    rc = EXIT_FAIL;
  }
  return rc;
}

/* The --json record: a new one, or where a worker resumes after a fault,
 * the one its predecessor wrote so far. */
static json_t *open_record(ts_gpu *gpu, int argc, char **argv,
                           const cli_opts *o, bool resumed) {
  if (resumed) {
    json_error_t err;
    json_t *rec = json_load_file(o->json, 0, &err);
    if (!rec)
      fprintf(stderr, "tessel: cannot read back --json %s after the fault: "
              "%s\n", o->json, err.text);
    return rec;
  }
  record_machine m = record_machine_of(gpu);
  json_t *rec = record_new("bench", argc, argv, &m, o);
  if (!rec)
    fprintf(stderr, "tessel: out of memory\n");
  return rec;
}

/* What the GPU process is given. */
typedef struct {
  const cli_opts *o;
  const ts_cuda_kernel *kernels;
  int argc;
  char **argv;
} bench_args;

/* The bench in the GPU process (bench_process.c): from the start, or
 * from the shape of the last fault. */
static int bench_worker(bench_handover *h, void *arg) {
  const bench_args *a = arg;
  const cli_opts *o = a->o;
  bool resumed = h->nfaults > 0;
  ts_gpu *gpu = ts_gpu_open_device(o->gpu);
  bench_out out = {.h = h};
  int rc = EXIT_FAIL;
  if (ts_gpu_status(gpu) != TS_OK) {
    fprintf(stderr, "tessel: bench needs a GPU (--gpu %d): %s\n", o->gpu,
            ts_gpu_errmsg(gpu));
  } else if ((!o->csv || (out.csv = open_csv(o->csv, resumed))) &&
             (!o->json || (out.record = open_record(gpu, a->argc, a->argv,
                                                    o, resumed)))) {
    if (!resumed)
      announce(o);
    rc = bench_all(gpu, o, a->kernels, &out);
  }
  if (out.csv)
    fclose(out.csv);
  json_decref(out.record);
  ts_gpu_close(gpu);
  return rc;
}

int cli_bench(int argc, char **argv) {
  cli_opts o;
  ts_cuda_kernel kernels[MAX_SHAPES];
  int rc = cli_parse(argc, argv, bench_help, CLI_BENCH, &o);
  if (rc >= 0)
    return rc;
  cli_finish_shapes(&o, 1024, 1024, 1024);
  if (!within_max_seconds(&o))
    return EXIT_USAGE;
  if (!read_kernels(&o, kernels))
    return EXIT_USAGE;
  bench_args a = {.o = &o, .kernels = kernels, .argc = argc, .argv = argv};
  rc = cli_bench_supervise(bench_worker, &a);
  free_kernels(kernels, o.ncu);
  return rc;
}
