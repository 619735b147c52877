/*
 * Fault injection for the tuner's tests.  TESSEL_TUNE_FAULT=CONFIG, a testing aid (docs/reliability.md): that
 * configuration's kernel is replaced by one of the same definition that
 * writes through an invalid C pointer, so its first launch faults with an
 * illegal address as a miscompiled kernel would, and the context is lost.
 * TESSEL_TUNE_FAULT=signal:CONFIG instead kills the worker with SIGSEGV
 * while the configuration is in flight, as a crash in the driver would.
 * The kernel is replaced here in the tuner, with a hand-written kernel,
 * so that the runtime needs no hook for it.  What it does is said on
 * stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune_impl.h"

static const char *faulting_kernel =
    "extern \"C\" __device__ int tessel_block[3] = {32, 1, 1};\n"
    "extern \"C\" __device__ int tessel_tile[2] = {1, 32};\n"
    "extern \"C\" __global__ void gemm(const float *A, const float *B, "
    "float *C, int M, int N, int K, float alpha, float beta) {\n"
    "  C[(long long)(threadIdx.x + 1) << 40] = alpha;\n"
    "}\n";

/* Whether TESSEL_TUNE_FAULT names candidate c, for a kernel that faults
 * or (`signal`) for a worker that dies. */
static bool fault_injected(const ts_tune_candidate *c, bool signal) {
  const char *v = getenv("TESSEL_TUNE_FAULT");
  if (!v)
    return false;
  bool by_signal = strncmp(v, "signal:", 7) == 0;
  return by_signal == signal && strcmp(by_signal ? v + 7 : v, c->text) == 0;
}

/* Which of which[0..n) TESSEL_TUNE_FAULT names gets the faulting kernel. */
void tune_inject_faulting_kernel(const char *arch, ts_tune_shape *r,
                                   const int *which, int n) {
  for (int v = 0; v < n; v++) {
    ts_tune_candidate *c = &r->c[which[v]];
    if (!fault_injected(c, false))
      continue;
    ts_cuda_kernel src = {.name = c->text, .source = faulting_kernel};
    ts_kernel_free(c->kernel);
    c->kernel = ts_compile_cuda(&src, &r->def, arch);
    fprintf(stderr, "# TESSEL_TUNE_FAULT: %s gets a kernel that writes through an "
           "invalid C pointer\n", c->text);
  }
}

void tune_inject_crash(const ts_tune_shape *r, const int *which, int n) {
  for (int i = 0; i < n; i++)
    if (fault_injected(&r->c[which[i]], true)) {
      fprintf(stderr, "# TESSEL_TUNE_FAULT: the GPU process dies of SIGSEGV while "
             "%s is timed\n", r->c[which[i]].text);
      fflush(stdout);
      fflush(stderr);
      raise(SIGSEGV);
    }
}
