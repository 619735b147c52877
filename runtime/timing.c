/*
 * Timing schedules against cuBLAS in one run.  Every variant sees the same
 * random inputs; the inputs are copied into enough sets to span twice the
 * L2 cache, and launches rotate among the sets, so a small problem is not
 * timed out of the cache.  Each launch is timed with its own pair of CUDA
 * events after a warm-up, rounds interleave the variants so drift hits all
 * alike, and the median is reported.  Correctness is checked first, on a C
 * poisoned with NaN where beta is 0, against cuBLAS's result.  Where
 * cuBLAS has no GEMM of the kernels' element types it runs at the nearest
 * it has (ts_cublas_baseline: an fp32 C), on its own C, and its result is
 * rounded to the kernels' C type before the comparison.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/base/dtype.h"
#include "../src/base/relerr.h"
#include "gpu_impl.h"

enum { MAX_SETS = GPU_MAX_SETS }; /* tensor maps are kept for as many */

/* The input sets; cuBLAS's definition (ts_cublas_baseline), and where its
 * C differs in type from the kernels', its own C in each set. */
typedef struct {
  CUdeviceptr A[MAX_SETS], B[MAX_SETS], C[MAX_SETS], Cb[MAX_SETS];
  int nsets;
  size_t na, nb, nc, ncb; /* bytes; ncb 0: cuBLAS shares C */
  ts_gemm blas;
} inputs;

static bool same_gemm(const ts_gemm *x, const ts_gemm *y) {
  return x->m == y->m && x->n == y->n && x->k == y->k &&
         x->layout == y->layout && x->alpha == y->alpha &&
         x->beta == y->beta && x->a_type == y->a_type &&
         x->b_type == y->b_type && x->c_type == y->c_type &&
         x->acc_type == y->acc_type && x->math == y->math;
}

/* cuBLAS's own C of set i, where it has one: set 0 from the host (hC,
 * already of the kernels' C type's values), the others copies. */
static bool make_blas_c(ts_gpu *g, const float *hC, inputs *in, int i) {
  const ts_gemm *b = &in->blas;
  if (!in->ncb)
    return true;
  return GPU_CALL(g, cuMemAlloc(&in->Cb[i], in->ncb)) &&
         (i == 0 ? mat_upload(g, in->Cb[0], hC, (size_t)(b->m * b->n), b->c_type)
                 : GPU_CALL(g, cuMemcpyDtoD(in->Cb[i], in->Cb[0], in->ncb)));
}

/* The inputs in the definition's types: set 0 from the host, the others
 * copies of it on the device. */
static bool make_inputs(ts_gpu *g, const ts_gemm *d, const float *hA,
                        const float *hB, const float *hC, inputs *in) {
  in->na = mat_bytes(d->a_type, (size_t)(d->m * d->k));
  in->nb = mat_bytes(d->b_type, (size_t)(d->k * d->n));
  in->nc = mat_bytes(d->c_type, (size_t)(d->m * d->n));
  in->ncb = in->blas.c_type == d->c_type
                ? 0 : mat_bytes(in->blas.c_type, (size_t)(d->m * d->n));
  size_t set = in->na + in->nb + in->nc + in->ncb;
  in->nsets = (int)((2 * (size_t)g->l2_bytes + set - 1) / set);
  in->nsets = in->nsets < 1 ? 1 : in->nsets > MAX_SETS ? MAX_SETS : in->nsets;
  for (int i = 0; i < in->nsets; i++) {
    if (!GPU_CALL(g, cuMemAlloc(&in->A[i], in->na)) ||
        !GPU_CALL(g, cuMemAlloc(&in->B[i], in->nb)) ||
        !GPU_CALL(g, cuMemAlloc(&in->C[i], in->nc)))
      return false;
    bool ok = i == 0 ? mat_upload(g, in->A[0], hA, (size_t)(d->m * d->k), d->a_type) &&
                       mat_upload(g, in->B[0], hB, (size_t)(d->k * d->n), d->b_type) &&
                       mat_upload(g, in->C[0], hC, (size_t)(d->m * d->n), d->c_type)
                     : GPU_CALL(g, cuMemcpyDtoD(in->A[i], in->A[0], in->na)) &&
                       GPU_CALL(g, cuMemcpyDtoD(in->B[i], in->B[0], in->nb)) &&
                       GPU_CALL(g, cuMemcpyDtoD(in->C[i], in->C[0], in->nc));
    if (!ok || !make_blas_c(g, hC, in, i))
      return false;
  }
  return true;
}

static void free_inputs(ts_gpu *g, inputs *in) {
  for (int i = 0; i < MAX_SETS; i++) {
    if (in->A[i]) g->cu.cuMemFree(in->A[i]);
    if (in->B[i]) g->cu.cuMemFree(in->B[i]);
    if (in->C[i]) g->cu.cuMemFree(in->C[i]);
    if (in->Cb[i]) g->cu.cuMemFree(in->Cb[i]);
  }
}

/* One launch of variant v (-1: cuBLAS) on input set i. */
static bool launch(ts_gpu *g, const gpu_module *mods, int v, const inputs *in,
                   int i) {
  if (v < 0)
    return gpu_cublas_launch(g, &in->blas, in->A[i], in->B[i],
                             in->ncb ? in->Cb[i] : in->C[i]);
  return gpu_launch(g, &mods[v], in->A[i], in->B[i], in->C[i]);
}

/* Runs variant v once on set 0 from C = hC and reads the result back.
 * cuBLAS's result, where its C is wider than the kernels', is rounded to
 * theirs as a kernel's store rounds, so the comparison holds the kernels
 * to the tolerance of their own C. */
static bool run_checked(ts_gpu *g, const ts_gemm *d, const gpu_module *mods,
                        int v, const inputs *in, const float *hC, float *out) {
  size_t nc = (size_t)(d->m * d->n);
  bool own = v < 0 && in->ncb;
  CUdeviceptr C = own ? in->Cb[0] : in->C[0];
  ts_dtype t = own ? in->blas.c_type : d->c_type;
  bool ok = mat_upload(g, C, hC, nc, t) && launch(g, mods, v, in, 0) &&
            GPU_CALL(g, cuCtxSynchronize(g->ctx)) &&
            mat_download(g, out, C, nc, t);
  for (size_t i = 0; ok && own && i < nc; i++)
    out[i] = ts_round_to(d->c_type, out[i]);
  return ok;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Every variant's warm-up, then the timed rounds.  Each variant's
 * warm-up ends in a synchronize, so that a launch that fails the device
 * is known by the variant in flight, *culprit (-1: cuBLAS). */
static bool time_all(ts_gpu *g, const gpu_module *mods, int n,
                     const inputs *in, const ts_bench_opts *o,
                     double *times /* [(n+1) * repeats] */, int *culprit) {
  CUevent start, stop;
  *culprit = -1; /* no kernel of ours has run since the last synchronize */
  if (!GPU_CALL(g, cuEventCreate(&start, CU_EVENT_DEFAULT)))
    return false;
  if (!GPU_CALL(g, cuEventCreate(&stop, CU_EVENT_DEFAULT))) {
    g->cu.cuEventDestroy(start);
    return false;
  }
  bool ok = true;
  int set = 0;
  for (int v = -1; v < n && ok; v++) {
    *culprit = v;
    for (int w = 0; w < o->warmup && ok; w++)
      ok = launch(g, mods, v, in, (set++) % in->nsets);
    ok = ok && GPU_CALL(g, cuCtxSynchronize(g->ctx));
  }
  for (int r = 0; r < o->repeats && ok; r++) {
    for (int v = -1; v < n && ok; v++) {
      float ms = 0;
      int i = (set++) % in->nsets;
      *culprit = v;
      ok = GPU_CALL(g, cuEventRecord(start, NULL)) &&
           launch(g, mods, v, in, i) &&
           GPU_CALL(g, cuEventRecord(stop, NULL)) &&
           GPU_CALL(g, cuEventSynchronize(stop)) &&
           GPU_CALL(g, cuEventElapsedTime(&ms, start, stop));
      times[(size_t)(v + 1) * (size_t)o->repeats + (size_t)r] = ms;
    }
  }
  g->cu.cuEventDestroy(start);
  g->cu.cuEventDestroy(stop);
  return ok;
}

static double median(double *x, int n) {
  qsort(x, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* times are sorted in place. */
static void fill_result(ts_bench_result *r, double *times, int repeats,
                        const ts_gemm *d) {
  r->median_ms = median(times, repeats);
  r->min_ms = times[0];
  r->max_ms = times[repeats - 1];
  r->tflops = 2.0 * (double)d->m * (double)d->n * (double)d->k /
              (r->median_ms * 1e-3) / 1e12;
}

/* Times the n loaded variants and cuBLAS into res and blas; raw, when not
 * NULL, receives the (n + 1) * repeats times in the order they ran.  When
 * a launch fails, *culprit is the variant it was of (-1: cuBLAS, or
 * none). */
static ts_status bench_loaded(ts_gpu *g, const ts_gemm *d, gpu_module *mods,
                              int n, const ts_bench_opts *o,
                              ts_bench_result *res, ts_bench_result *blas,
                              double *raw, int *culprit) {
  size_t nc = (size_t)(d->m * d->n);
  float *out = malloc(nc * 4);
  double *times = malloc(sizeof(double) * (size_t)(n + 1) * (size_t)o->repeats);
  inputs in = {0};
  gpu_bench_inputs *h = NULL;
  bool ok = out && times;
  if (!ok) {
    snprintf(g->errmsg, sizeof(g->errmsg), "ts_bench: out of host memory");
    g->status = TS_ERR_NO_MEMORY;
    goto done;
  }
  if (ts_cublas_baseline(d, &in.blas) != TS_OK) {
    ok = gpu_fail(g, TS_ERR_CUBLAS, "ts_bench: cuBLAS has no GEMM of A %s "
                  "and B %s (cublasGemmEx takes A and B of one type), so "
                  "nothing to time or check against",
                  ts_dtype_name(d->a_type), ts_dtype_name(d->b_type));
    goto done;
  }
  h = gpu_bench_inputs_for(g, d, in.blas.c_type, o->seed);
  ok = h && make_inputs(g, d, h->A, h->B, h->C, &in);
  if (ok && !h->has_ref)
    ok = h->has_ref = run_checked(g, d, mods, -1, &in, h->C, h->ref);
  for (int v = 0; v < n && ok; v++) {
    *culprit = v;
    ok = run_checked(g, d, mods, v, &in, h->C, out);
    res[v].max_rel_err = ts_max_rel_err(out, h->ref, nc);
    res[v].ptxas = mods[v].ptxas;
  }
  blas->max_rel_err = 0;
  ok = ok && time_all(g, mods, n, &in, o, times, culprit);
  if (ok && raw)
    memcpy(raw, times, sizeof(double) * (size_t)(n + 1) * (size_t)o->repeats);
  if (ok) {
    fill_result(blas, times, o->repeats, d);
    blas->ratio_to_cublas = 1.0;
    for (int v = 0; v < n; v++) {
      fill_result(&res[v], times + (size_t)(v + 1) * (size_t)o->repeats,
                  o->repeats, d);
      res[v].ratio_to_cublas = blas->median_ms / res[v].median_ms;
    }
  }
  free_inputs(g, &in);
done:
  free(out); free(times);
  if (ok)
    *culprit = -1;
  return ok ? TS_OK : g->status;
}

/* Records why kernel v is not timed in its row. */
__attribute__((format(printf, 3, 4))) static void row_fail(
    ts_bench_result *r, ts_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof(r->message), fmt, ap);
  va_end(ap);
  r->status = code;
}

/* Whether each operand's rows lie end to end, as ts_bench's inputs do. */
static bool packed(const ts_gemm *d) {
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand o = ts_gemm_operand(d, (ts_operand_role)r);
    if (o.ld != o.cols)
      return false;
  }
  return true;
}

/* Kernel v compiled, of the definition, loaded and fitting the device; or
 * its row says why not.  A failed load leaves the device usable (nothing
 * was launched), so its error goes to the row and not to the GPU. */
static bool load_variant(ts_gpu *g, const ts_gemm *d, const ts_kernel *k,
                         gpu_module *m, ts_bench_result *r) {
  if (!k) {
    row_fail(r, TS_ERR_NULL_ARG, "the kernel is NULL");
    return false;
  }
  if (k->status != TS_OK) {
    row_fail(r, k->status, "%s", k->errmsg);
    return false;
  }
  if (!packed(&k->def)) {
    row_fail(r, TS_ERR_BAD_ARG, "\"%s\" is compiled for leading dimensions "
             "past the rows (lda %lld, ldb %lld, ldc %lld); ts_bench times "
             "packed matrices: compile it with 0 (packed), or time it "
             "through ts_launch on memory of your own", ts_kernel_name(k),
             (long long)k->def.lda, (long long)k->def.ldb,
             (long long)k->def.ldc);
    return false;
  }
  if (!same_gemm(d, &k->def)) {
    row_fail(r, TS_ERR_BAD_ARG, "\"%s\" is of another definition than the "
             "first kernel's; all must share one shape, layout, alpha and "
             "beta", ts_kernel_name(k));
    return false;
  }
  if (!gpu_load(g, k, m, r->message, sizeof(r->message))) {
    row_fail(r, g->status, "%s", g->errmsg);
    g->status = TS_OK;
    g->errmsg[0] = 0;
    return false;
  }
  if (r->message[0]) {
    r->skipped = 1;
    r->status = TS_ERR_BAD_SHAPE;
    return false;
  }
  return true;
}

/* Active variant a's row after a failed run: the device's error, in the
 * row of the variant whose launch failed it (`culprit`) marked as the
 * fault; the others say which kernel stopped them. */
static void fail_row(const ts_gpu *g, ts_kernel *const kernels[],
                     const int *where, int a, int culprit,
                     ts_bench_result *r) {
  if (culprit < 0 || a == culprit) {
    row_fail(r, g->status, "%s", g->errmsg);
    r->faulted = culprit >= 0;
    return;
  }
  row_fail(r, g->status, "not timed: kernel \"%s\" failed the device "
           "before it (%.900s)", ts_kernel_name(kernels[where[culprit]]),
           g->errmsg);
}

/* The packed run's times (cuBLAS's, then active variant a's) into the
 * caller's rows (cuBLAS's, then kernel where[a]'s). */
static void scatter_times(const double *raw, const int *where, int active,
                          int repeats, double *out) {
  size_t r = (size_t)repeats;
  memcpy(out, raw, sizeof(double) * r);
  for (int a = 0; a < active; a++)
    memcpy(out + (size_t)(where[a] + 1) * r, raw + (size_t)(a + 1) * r,
           sizeof(double) * r);
}

static bool has_shape(const ts_gemm *d) {
  return d->m > 0 && d->n > 0 && d->k > 0;
}

/* The definition the rows share: the first compiled kernel's, else the
 * first that has one (a kernel whose schedule failed may have none: a
 * zero shape would leave nothing to time and divide by zero). */
static const ts_gemm *first_definition(ts_kernel *const kernels[], int n) {
  for (int v = 0; v < n; v++)
    if (kernels[v] && kernels[v]->status == TS_OK)
      return &kernels[v]->def;
  for (int v = 0; v < n; v++)
    if (kernels[v] && has_shape(&kernels[v]->def))
      return &kernels[v]->def;
  return NULL;
}

ts_status ts_bench(ts_gpu *g, ts_kernel *const kernels[], int n,
                   const ts_bench_opts *opts, ts_bench_result results[],
                   ts_bench_result *cublas) {
  if (!g || (n && !kernels) || (n && !results) || !cublas)
    return TS_ERR_NULL_ARG;
  if (g->status != TS_OK) { /* every row says so: none is timed */
    if (n > 0)
      memset(results, 0, sizeof(*results) * (size_t)n);
    memset(cublas, 0, sizeof(*cublas));
    for (int v = 0; v < n; v++)
      row_fail(&results[v], g->status, "%s", g->errmsg);
    row_fail(cublas, g->status, "%s", g->errmsg);
    return g->status;
  }
  if (n < 0) {
    gpu_fail(g, TS_ERR_BAD_ARG, "ts_bench: %d kernels", n);
    return g->status;
  }
  ts_bench_opts o = {.warmup = 5, .repeats = 50, .seed = 1};
  if (opts) {
    o = *opts;
    if (o.warmup < 0) o.warmup = 0;
    if (o.repeats < 1) o.repeats = 1;
  }
  memset(cublas, 0, sizeof(*cublas));
  for (size_t i = 0; o.times && i < (size_t)(n + 1) * (size_t)o.repeats; i++)
    o.times[i] = NAN; /* until timed */
  if (n == 0)
    return TS_OK;
  memset(results, 0, sizeof(*results) * (size_t)n);
  const ts_gemm *d = first_definition(kernels, n);
  if (!d) { /* each row says why its kernel has no shape to time */
    for (int v = 0; v < n; v++)
      if (!kernels[v])
        row_fail(&results[v], TS_ERR_NULL_ARG, "the kernel is NULL");
      else
        row_fail(&results[v], kernels[v]->status, "%s", kernels[v]->errmsg);
    cublas->status = results[0].status;
    snprintf(cublas->message, sizeof(cublas->message), "ts_bench: no kernel "
             "to time cuBLAS beside: %.900s", results[0].message);
    return cublas->status;
  }
  /* The variants that load, packed; where[a] is active variant a's row. */
  gpu_module *mods = calloc((size_t)n, sizeof(*mods));
  ts_bench_result *packed = calloc((size_t)n, sizeof(*packed));
  int *where = calloc((size_t)n, sizeof(*where));
  if (!mods || !packed || !where) {
    free(mods); free(packed); free(where);
    gpu_fail(g, TS_ERR_NO_MEMORY, "ts_bench: out of host memory");
    return g->status;
  }
  int active = 0;
  for (int v = 0; v < n; v++)
    if (load_variant(g, d, kernels[v], &mods[active], &results[v]))
      where[active++] = v;
  double *raw = o.times ? malloc(sizeof(double) * (size_t)(active + 1) *
                                 (size_t)o.repeats)
                        : NULL;
  ts_status st;
  int culprit = -1; /* the active variant whose launch failed */
  if (o.times && !raw) {
    gpu_fail(g, TS_ERR_NO_MEMORY, "ts_bench: out of host memory");
    st = g->status;
  } else {
    st = bench_loaded(g, d, mods, active, &o, packed, cublas, raw, &culprit);
  }
  if (raw && st == TS_OK)
    scatter_times(raw, where, active, o.repeats, o.times);
  free(raw);
  for (int a = 0; a < active; a++) {
    gpu_unload(g, &mods[a]);
    if (st == TS_OK)
      results[where[a]] = packed[a];
    else
      fail_row(g, kernels, where, a, culprit, &results[where[a]]);
  }
  cublas->status = st;
  if (st != TS_OK)
    snprintf(cublas->message, sizeof(cublas->message), "%s", g->errmsg);
  free(mods); free(packed); free(where);
  for (int v = 0; v < n && st == TS_OK; v++)
    st = results[v].status;
  return st;
}
