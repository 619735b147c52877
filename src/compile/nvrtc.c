/*
 * Compiling generated CUDA C with NVRTC into a cubin for one architecture.
 * ptxas runs verbosely, so the log carries the resource report (registers,
 * shared memory, spills, stack frame) that ts_kernel_ptxas returns.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "../base/limits.h"
#include "../ir/program_ir.h"
#include "../base/strbuf.h"
#include "kernel_cache.h"
#include "kernel.h"
#include "toolkit.h"

static int parse_int_after(const char *log, const char *before_num,
                           const char *after_num) {
  /* Finds "<number><after_num>" on the line starting at before_num. */
  const char *p = strstr(log, before_num);
  if (!p)
    return -1;
  const char *end = strchr(p, '\n');
  const char *q = strstr(p, after_num);
  if (!q || (end && q > end))
    return -1;
  while (q > p && q[-1] == ' ')
    q--;
  while (q > p && q[-1] >= '0' && q[-1] <= '9')
    q--;
  return atoi(q);
}

ts_ptxas_info ts_parse_ptxas(const char *log) {
  ts_ptxas_info info = {0};
  if (!log)
    return info;
  const char *used = strstr(log, "Used ");
  const char *frame = strstr(log, "bytes stack frame");
  if (!used || !frame)
    return info;
  info.registers = parse_int_after(used, "Used ", " registers");
  int smem = parse_int_after(used, "Used ", " bytes smem");
  info.shared_bytes = smem < 0 ? 0 : smem;
  const char *line = frame;
  while (line > log && line[-1] != '\n')
    line--;
  info.stack_bytes = parse_int_after(line, "", " bytes stack frame");
  info.spill_store_bytes = parse_int_after(line, "", " bytes spill stores");
  info.spill_load_bytes = parse_int_after(line, "", " bytes spill loads");
  info.valid = info.registers >= 0 && info.stack_bytes >= 0 &&
               info.spill_store_bytes >= 0 && info.spill_load_bytes >= 0;
  return info;
}

/* The part of ptxas's report about `entry`: a source of several entry
 * points (split-K) has a section for each, in no order we choose. */
static const char *entry_report(const char *log, const char *entry) {
  char head[300];
  snprintf(head, sizeof(head), "entry function '%s'", entry ? entry : "");
  const char *at = log && entry ? strstr(log, head) : NULL;
  return at ? at : log;
}

/* "sm_90" or "sm_90a" -> 90; -1 when malformed. */
static int arch_number(const char *arch) {
  if (strncmp(arch, "sm_", 3) != 0)
    return -1;
  char *end;
  long n = strtol(arch + 3, &end, 10);
  if (end == arch + 3 || (*end && strcmp(end, "a") != 0) || n <= 0 || n > 999)
    return -1;
  return (int)n;
}

static bool arch_supported(const ts_nvrtc_api *api, int n, char *list,
                           size_t len) {
  int count = 0;
  if (api->nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return true; /* cannot tell: let the compile decide */
  int *archs = calloc((size_t)count, sizeof(int));
  if (!archs || api->nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS) {
    free(archs);
    return true;
  }
  bool found = false;
  list[0] = 0;
  for (int i = 0; i < count; i++) {
    found |= archs[i] == n;
    size_t used = strlen(list);
    snprintf(list + used, len - used, "%ssm_%d", i ? " " : "", archs[i]);
  }
  free(archs);
  return found;
}

static char *program_log(const ts_nvrtc_api *api, nvrtcProgram prog) {
  size_t size = 0;
  if (api->nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS)
    return NULL;
  char *log = calloc(size + 1, 1);
  if (log && api->nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
    log[0] = 0;
  return log;
}

/* NVRTC's options besides the architecture; part of the cache key. */
static const char *const options[] = {"--std=c++17", "--ptxas-options=-v",
                                      "-lineinfo"};
enum { NOPTIONS = sizeof(options) / sizeof(options[0]) };

/* The toolkit's headers (cuda_fp16.h, cuda_bf16.h) for a kernel that
 * includes them; "" when the loader found none (the compile then says
 * which header is missing). */
static void include_option(const ts_nvrtc_api *api, char *opt, size_t len) {
  if (api->include_dir[0])
    snprintf(opt, len, "--include-path=%s", api->include_dir);
  else
    opt[0] = 0;
}

/* Everything the cubin depends on: the kernel cache's key.  The compiler
 * is NVRTC's version and its library's file (whose name carries the patch
 * release), so that a toolkit upgrade compiles afresh; the headers are
 * the include directory's, found beside that library. */
static char *cache_key(const ts_nvrtc_api *api, const char *arch,
                       const char *src) {
  int major = 0, minor = 0;
  if (api->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    major = minor = -1;
  ts_buf b;
  ts_buf_init(&b);
  ts_buf_printf(&b, "tessel %s\nnvrtc %d.%d %s\n%s\n", TESSEL_VERSION, major,
                minor, api->lib_file, arch);
  for (int i = 0; i < NOPTIONS; i++)
    ts_buf_printf(&b, "%s\n", options[i]);
  char inc[600];
  include_option(api, inc, sizeof(inc));
  ts_buf_printf(&b, "%s\n", inc);
  ts_buf_puts(&b, src);
  return ts_buf_take(&b);
}

/* NVRTC's options for a compile for archopt ("--gpu-architecture=sm_90")
 * into opts (2 + NOPTIONS long), inc holding the include option; their
 * count. */
static int compile_options(const ts_nvrtc_api *api, const char *archopt,
                           char *inc, size_t inclen, const char **opts) {
  include_option(api, inc, inclen);
  int nopts = 0;
  opts[nopts++] = archopt;
  for (int i = 0; i < NOPTIONS; i++)
    opts[nopts++] = options[i];
  if (inc[0])
    opts[nopts++] = inc;
  return nopts;
}

static void run_nvrtc(ts_kernel *k, const ts_nvrtc_api *api, const char *src) {
  nvrtcProgram prog;
  nvrtcResult r = api->nvrtcCreateProgram(&prog, src, "tessel.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    kernel_fail(k, TS_ERR_NVRTC, "nvrtcCreateProgram: %s",
                api->nvrtcGetErrorString(r));
    return;
  }
  char archopt[48];
  snprintf(archopt, sizeof(archopt), "--gpu-architecture=%s", k->arch);
  char inc[600];
  const char *opts[2 + NOPTIONS];
  int nopts = compile_options(api, archopt, inc, sizeof(inc), opts);
  r = api->nvrtcCompileProgram(prog, nopts, opts);
  k->log = program_log(api, prog);
  if (r != NVRTC_SUCCESS) {
    kernel_fail(k, TS_ERR_NVRTC, "nvrtcCompileProgram for %s: %s\n%s",
                k->arch, api->nvrtcGetErrorString(r), k->log ? k->log : "");
  } else if (api->nvrtcGetCUBINSize(prog, &k->cubin_size) != NVRTC_SUCCESS ||
             !(k->cubin = malloc(k->cubin_size)) ||
             api->nvrtcGetCUBIN(prog, k->cubin) != NVRTC_SUCCESS) {
    kernel_fail(k, TS_ERR_NVRTC, "nvrtcGetCUBIN for %s failed", k->arch);
  } else {
    k->ptxas = ts_parse_ptxas(entry_report(k->log, k->name));
  }
  api->nvrtcDestroyProgram(&prog);
}

/* From the kernel cache, else NVRTC (and the result into the cache). */
static void compile_cached(ts_kernel *k, const ts_nvrtc_api *api,
                           const char *src) {
  char *key = cache_key(api, k->arch, src);
  if (key && kcache_load(k, key)) {
    k->from_cache = true;
    k->ptxas = ts_parse_ptxas(entry_report(k->log, k->name));
  } else {
    run_nvrtc(k, api, src);
    if (key && k->status == TS_OK)
      kcache_store(k, key);
  }
  free(key);
}

static ts_kernel *new_kernel(const char *arch) {
  ts_kernel *k = calloc(1, sizeof(*k));
  if (k)
    snprintf(k->arch, sizeof(k->arch), "%s", arch ? arch : "sm_90");
  return k;
}

/* The architecture checked against NVRTC's list, then the cache or NVRTC. */
static ts_kernel *compile_source(ts_kernel *k, const char *src) {
  if (arch_number(k->arch) < 0)
    return kernel_fail(k, TS_ERR_BAD_ARCH, "ts_compile: architecture \"%s\" "
                       "is not of the form sm_XX", k->arch);
  char err[512], list[512];
  const ts_nvrtc_api *api = ts_nvrtc(err, sizeof(err));
  if (!api)
    return kernel_fail(k, TS_ERR_NVRTC, "%s", err);
  if (!k->source && !(k->source = strdup(src)))
    return kernel_fail(k, TS_ERR_NO_MEMORY, "ts_compile: out of memory");
  k->source_hash = kcache_fnv1a(KCACHE_FNV_SEED, src, strlen(src));
  if (!arch_supported(api, arch_number(k->arch), list, sizeof(list)))
    return kernel_fail(k, TS_ERR_BAD_ARCH, "ts_compile: NVRTC does not know "
                       "architecture %s; it supports %s", k->arch, list);
  compile_cached(k, api, src);
  return k;
}

ts_kernel *kernel_from_source(const char *src, const char *entry,
                              const char *arch) {
  ts_kernel *k = new_kernel(arch);
  if (!k)
    return &kernel_nomem;
  k->entries = calloc(1, sizeof(*k->entries));
  if (!(k->name = strdup(entry)) || !k->entries ||
      !(k->entries[0].name = strdup(entry)))
    return kernel_fail(k, TS_ERR_NO_MEMORY, "ts_compile: out of memory");
  k->nentries = 1;
  return compile_source(k, src);
}

/* The program's entry points in launch order, each with its launch and
 * its parameter list (the IR's buffers left behind); which is the
 * schedule's. */
static bool copy_entries(ts_kernel *k, const ts_program *p) {
  int n = ts_program_kernel_count(p);
  if (!(k->entries = calloc((size_t)n, sizeof(*k->entries))))
    return false;
  k->nentries = n;
  k->workspace = ts_program_workspace(p);
  for (int i = 0; i < n; i++) {
    const ir_kernel *ik = p->order[i];
    kernel_entry *e = &k->entries[i];
    ts_program_kernel_launch(p, i, &e->launch);
    for (int d = 0; d < 3; d++)
      if (ik->grid_size[d] &&
          !ir_formula_of(ik->grid_size[d], &e->grid_size[d])) {
        kernel_fail(k, TS_ERR_BAD_ARG, "ts_compile: entry %s's grid along "
                    "%c follows the launch's extents by a formula the "
                    "launcher cannot keep (over %d steps, or reading a "
                    "loop's variable)", ik->entry, "xyz"[d], TS_FORMULA_LEN);
        return false;
      }
    if (ik == &p->k)
      k->main_entry = i;
    e->params = calloc((size_t)ik->nparams + 1, sizeof(*e->params));
    if (!(e->name = strdup(ik->entry)) || !e->params)
      return false;
    for (int j = 0; j < ik->nparams; j++)
      e->params[j] = ik->params[j].p;
    e->nparams = ik->nparams;
  }
  return true;
}

ts_kernel *ts_compile(const ts_program *p, const char *arch) {
  ts_kernel *k = new_kernel(arch);
  if (!k)
    return &kernel_nomem;
  if (!p)
    return kernel_fail(k, TS_ERR_NULL_ARG, "ts_compile: argument 1 'p' is NULL");
  const ts_gemm *def = ts_program_gemm(p);
  if (def)
    k->def = *def;
  if (!(k->label = strdup(ts_program_name(p))))
    return kernel_fail(k, TS_ERR_NO_MEMORY, "ts_compile: out of memory");
  if (ts_program_status(p) != TS_OK)
    return kernel_fail(k, ts_program_status(p), "%s", ts_program_errmsg(p));
  ts_program_launch(p, &k->launch);
  k->min_blocks = ts_program_min_blocks(p);
  int min_arch = ts_program_min_arch(p);
  if (ts_program_arch_specific(p) && arch_number(k->arch) > 0) {
    if (arch_number(k->arch) != min_arch)
      return kernel_fail(k, TS_ERR_BAD_ARCH, "ts_compile: \"%s\" uses "
                         "sm_%da's warpgroup instructions (wgmma), which "
                         "only sm_%d has; %s has not: use a schedule of "
                         "mma.sync (tc128) there", k->label, min_arch,
                         min_arch, k->arch);
    if (!strchr(k->arch, 'a'))
      strncat(k->arch, "a", sizeof(k->arch) - strlen(k->arch) - 1);
  }
  if (arch_number(k->arch) > 0 && arch_number(k->arch) < min_arch)
    return kernel_fail(k, TS_ERR_BAD_ARCH, "ts_compile: \"%s\" needs sm_%d "
                       "or newer (its asynchronous copies of ts_pipeline or "
                       "tensor-core instructions of ts_tensorize); %s is "
                       "older: compile for sm_%d or later", k->label,
                       min_arch, k->arch, min_arch);
  int64_t limit = ts_arch_shared_block(arch_number(k->arch));
  if (arch_number(k->arch) > 0 && k->launch.dynamic_shared > limit)
    return kernel_fail(k, TS_ERR_RESOURCES, "ts_compile: the shared caches "
                       "of \"%s\" take %lld bytes per block; %s allows at "
                       "most %lld (over by %lld)", k->label,
                       (long long)k->launch.dynamic_shared, k->arch,
                       (long long)limit,
                       (long long)(k->launch.dynamic_shared - limit));
  bool copied = copy_entries(k, p);
  if (!copied && k->status != TS_OK)
    return k; /* it said why */
  if (!copied || !(k->source = ts_program_cuda(p)) ||
      !(k->name = strdup(ts_program_entry(p))))
    return kernel_fail(k, TS_ERR_NO_MEMORY, "ts_compile: out of memory");
  return compile_source(k, k->source);
}

/* Image `from`'s cubin moved into k as one more architecture, unless k
 * holds that architecture already. */
static bool add_image(ts_kernel *k, ts_kernel *from) {
  bool known = strcmp(k->arch, from->arch) == 0;
  for (int i = 0; i < k->nimages; i++)
    known |= strcmp(k->images[i].arch, from->arch) == 0;
  if (known)
    return true;
  kernel_image *more = realloc(k->images,
                               (size_t)(k->nimages + 1) * sizeof(*more));
  if (!more)
    return false;
  k->images = more;
  kernel_image *im = &k->images[k->nimages++];
  snprintf(im->arch, sizeof(im->arch), "%s", from->arch);
  im->cubin = from->cubin;
  im->size = from->cubin_size;
  from->cubin = NULL;
  from->cubin_size = 0;
  return true;
}

ts_kernel *ts_compile_for(const ts_program *p, const char *archs) {
  char list[256], *save = NULL;
  snprintf(list, sizeof(list), "%s", archs && *archs ? archs : "sm_90");
  char *arch = strtok_r(list, ", ", &save);
  ts_kernel *k = ts_compile(p, arch);
  while (ts_kernel_status(k) == TS_OK &&
         (arch = strtok_r(NULL, ", ", &save))) {
    ts_kernel *more = ts_compile(p, arch);
    if (ts_kernel_status(more) != TS_OK)
      kernel_fail(k, ts_kernel_status(more), "ts_compile_for: %s: %s", arch,
                  ts_kernel_errmsg(more));
    else if (!add_image(k, more))
      kernel_fail(k, TS_ERR_NO_MEMORY, "ts_compile_for: out of memory");
    ts_kernel_free(more);
  }
  return k;
}

/* gemm(A, B, C, M, N, K, alpha, beta) of ts_cuda_kernel, fp32 matrices. */
static bool hand_written_params(kernel_entry *e) {
  static const ts_param list[] = {
      {.kind = TS_PARAM_BUFFER, .buffer = TS_PARAM_A, .dtype = TS_F32,
       .read_only = true},
      {.kind = TS_PARAM_BUFFER, .buffer = TS_PARAM_B, .dtype = TS_F32,
       .read_only = true},
      {.kind = TS_PARAM_BUFFER, .buffer = TS_PARAM_C, .dtype = TS_F32},
      {.kind = TS_PARAM_INT, .value = TS_VALUE_M},
      {.kind = TS_PARAM_INT, .value = TS_VALUE_N},
      {.kind = TS_PARAM_INT, .value = TS_VALUE_K},
      {.kind = TS_PARAM_FLOAT, .value = TS_VALUE_ALPHA},
      {.kind = TS_PARAM_FLOAT, .value = TS_VALUE_BETA},
  };
  enum { N = sizeof(list) / sizeof(list[0]) };
  if (!(e->params = malloc(sizeof(list))))
    return false;
  memcpy(e->params, list, sizeof(list));
  e->nparams = N;
  return true;
}

ts_kernel *ts_compile_cuda(const ts_cuda_kernel *src, const ts_gemm *def,
                           const char *arch) {
  if (!src || !src->name || !src->source || !def) {
    ts_kernel *k = new_kernel(arch);
    return k ? kernel_fail(k, TS_ERR_NULL_ARG, "ts_compile_cuda: the kernel, "
                           "its name, its source or the definition is NULL")
             : &kernel_nomem;
  }
  ts_kernel *k = kernel_from_source(src->source, "gemm", arch);
  if (k == &kernel_nomem)
    return k;
  k->def = *def;
  k->hand_written = true;
  if (k->status == TS_OK && !hand_written_params(&k->entries[0]))
    return kernel_fail(k, TS_ERR_NO_MEMORY, "ts_compile_cuda: out of memory");
  if (!(k->label = strdup(src->name)))
    return kernel_fail(k, TS_ERR_NO_MEMORY, "ts_compile_cuda: out of memory");
  if (k->status != TS_OK) {
    char why[sizeof(k->errmsg)];
    snprintf(why, sizeof(why), "%s", k->errmsg);
    kernel_fail(k, k->status, "kernel \"%s\": %.1900s", src->name, why);
  }
  for (int r = 0; r < TS_OPERAND_COUNT && k->status == TS_OK; r++) {
    ts_operand o = ts_gemm_operand(def, (ts_operand_role)r);
    if (o.ld != o.cols) /* gemm(A, B, C, M, N, K, ...) has no ld */
      kernel_fail(k, TS_ERR_BAD_ARG, "ts_compile_cuda: kernel \"%s\" "
                  "takes packed matrices (its gemm has no leading "
                  "dimensions); the definition's ld%c is %lld, past %s's "
                  "stored row of %lld", src->name, "abc"[r],
                  (long long)o.ld, ts_operand_name((ts_operand_role)r),
                  (long long)o.cols);
  }
  return k;
}

/* ---- Compiling many at once --------------------------------------------------- */

/* Workers take the next program from a shared counter.  NVRTC compiles
 * separate programs concurrently, the kernel cache's writes are atomic
 * renames, and each kernel is written by one worker only. */
typedef struct {
  ts_program *const *programs;
  ts_kernel **kernels;
  int n;
  const char *arch;
  int next;
  pthread_mutex_t lock;
} compile_queue;

static void *compile_worker(void *arg) {
  compile_queue *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    int i = q->next++;
    pthread_mutex_unlock(&q->lock);
    if (i >= q->n)
      return NULL;
    q->kernels[i] = ts_compile(q->programs[i], q->arch);
  }
}

enum { MAX_COMPILE_THREADS = 64 };

ts_status ts_compile_all(ts_program *const programs[], int n,
                         const char *arch, int threads, ts_kernel *kernels[]) {
  if (n < 0 || threads < 0)
    return TS_ERR_BAD_ARG;
  if (n > 0 && (!programs || !kernels))
    return TS_ERR_NULL_ARG;
  if (threads == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    threads = cpus > 0 ? (int)cpus : 1;
  }
  if (threads > n)
    threads = n;
  if (threads > MAX_COMPILE_THREADS)
    threads = MAX_COMPILE_THREADS;
  compile_queue q = {.programs = programs, .kernels = kernels, .n = n,
                     .arch = arch};
  pthread_mutex_init(&q.lock, NULL);
  pthread_t tid[MAX_COMPILE_THREADS];
  int started = 0;
  for (; started < threads - 1; started++)
    if (pthread_create(&tid[started], NULL, compile_worker, &q) != 0)
      break; /* the calling thread works too, so fewer threads still finish */
  compile_worker(&q);
  for (int t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
  pthread_mutex_destroy(&q.lock);
  return TS_OK;
}

int ts_nvrtc_version(void) {
  char err[512];
  int major = 0, minor = 0;
  const ts_nvrtc_api *api = ts_nvrtc(err, sizeof(err));
  if (!api || api->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return 0;
  return major * 1000 + minor * 10;
}

/* The PTX of NVRTC for the virtual architecture, into a malloc'd text. */
static char *ptx_of(const ts_nvrtc_api *api, const ts_kernel *k, char *msg,
                    size_t msglen) {
  nvrtcProgram prog;
  nvrtcResult r = api->nvrtcCreateProgram(&prog, k->source, "tessel.cu", 0,
                                          NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    snprintf(msg, msglen, "ts_kernel_ptx: nvrtcCreateProgram: %s",
             api->nvrtcGetErrorString(r));
    return NULL;
  }
  char archopt[48], inc[600];
  snprintf(archopt, sizeof(archopt), "--gpu-architecture=compute_%s",
           k->arch + 3);
  const char *opts[2 + NOPTIONS];
  int nopts = compile_options(api, archopt, inc, sizeof(inc), opts);
  size_t size = 0;
  char *ptx = NULL;
  r = api->nvrtcCompileProgram(prog, nopts, opts);
  if (r == NVRTC_SUCCESS)
    r = api->nvrtcGetPTXSize(prog, &size);
  if (r == NVRTC_SUCCESS && (ptx = malloc(size + 1)) &&
      (r = api->nvrtcGetPTX(prog, ptx)) == NVRTC_SUCCESS) {
    ptx[size] = 0;
  } else {
    snprintf(msg, msglen, "ts_kernel_ptx for %s: %s", k->arch,
             ptx ? api->nvrtcGetErrorString(r) : "out of memory");
    free(ptx);
    ptx = NULL;
  }
  api->nvrtcDestroyProgram(&prog);
  return ptx;
}

char *ts_kernel_ptx(const ts_kernel *k, char *msg, size_t msglen) {
  char scratch[1];
  if (!msg || !msglen)
    msg = scratch, msglen = 1;
  msg[0] = 0;
  if (!k || k->status != TS_OK || !k->source) {
    snprintf(msg, msglen, "ts_kernel_ptx: %s",
             !k ? "argument 1 'k' is NULL"
             : k->status != TS_OK ? k->errmsg : "the kernel has no source");
    return NULL;
  }
  const ts_nvrtc_api *api = ts_nvrtc(msg, msglen);
  return api ? ptx_of(api, k, msg, msglen) : NULL;
}
