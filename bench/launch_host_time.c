/*
 * The host's time per call of ts_launch against cublasGemmEx's, on the
 * same small GEMM in the same process: what a program that launches many
 * small GEMMs pays on the CPU for each.
 *
 * Method: both run on the default stream of the primary context, after
 * a warm-up of 100 calls (the module loaded, the tensor maps encoded,
 * cuBLAS's heuristics cached).  A round times BATCH calls on the host
 * (CLOCK_MONOTONIC around the loop of calls only), then waits for the GPU
 * outside the timing, so the launch queue never fills and blocks a call;
 * the figure is the median over ROUNDS rounds of the round's time over
 * BATCH.  Kernels and cuBLAS alternate round by round.
 *
 *   launch_host_time [M N K [SCHEDULE [f32|f16|bf16]]]   (64 64 64 wgws f16)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessel.h>

#include "../runtime/gpu_impl.h"

enum { BATCH = 200, ROUNDS = 41 };

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *x, int n) {
  qsort(x, (size_t)n, sizeof(*x), by_value);
  return x[n / 2];
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "launch_host_time: %s: %s\n", what, why);
  exit(1);
}

int main(int argc, char **argv) {
  ts_gemm d = ts_gemm_make(argc > 3 ? atoll(argv[1]) : 64,
                           argc > 3 ? atoll(argv[2]) : 64,
                           argc > 3 ? atoll(argv[3]) : 64);
  const char *schedule = argc > 4 ? argv[4] : "wgws";
  int type = ts_dtype_parse(argc > 5 ? argv[5] : "f16");
  if (type < 0)
    die("type", "f32, f16 or bf16");
  d.a_type = d.b_type = d.c_type = (ts_dtype)type;
  ts_gpu *g = ts_gpu_open();
  if (ts_gpu_status(g) != TS_OK)
    die("the GPU", ts_gpu_errmsg(g));
  ts_sched *s = ts_builtin_schedule(schedule, &d);
  ts_kernel *k = ts_compile_sched(s, ts_gpu_arch(g));
  ts_sched_free(s);
  if (ts_kernel_status(k) != TS_OK)
    die(schedule, ts_kernel_errmsg(k));
  CUdeviceptr buf[3];
  ts_launch_args a = ts_launch_args_of(k);
  for (int r = 0; r < 3; r++) {
    ts_operand o = ts_gemm_operand(&d, (ts_operand_role)r);
    size_t bytes = mat_bytes(o.type, (size_t)ts_operand_elements(&o));
    if (!GPU_CALL(g, cuMemAlloc(&buf[r], bytes)) ||
        !GPU_CALL(g, cuMemsetD32(buf[r], 0, bytes / 4)))
      die("cuMemAlloc", ts_gpu_errmsg(g));
    a.operand[r].ptr = buf[r];
  }
  double ours[ROUNDS], blas[ROUNDS];
  for (int round = -1; round < ROUNDS; round++) {
    int n = round < 0 ? 100 : BATCH;
    double t0 = now_us();
    for (int i = 0; i < n; i++)
      if (ts_launch(k, &a, NULL) != TS_OK)
        die("ts_launch", ts_launch_errmsg());
    double t1 = now_us();
    if (!GPU_CALL(g, cuCtxSynchronize(g->ctx)))
      die("cuCtxSynchronize", ts_gpu_errmsg(g));
    double t2 = now_us();
    for (int i = 0; i < n; i++)
      if (!gpu_cublas_launch(g, &d, buf[0], buf[1], buf[2]))
        die("cublasGemmEx", ts_gpu_errmsg(g));
    double t3 = now_us();
    if (!GPU_CALL(g, cuCtxSynchronize(g->ctx)))
      die("cuCtxSynchronize", ts_gpu_errmsg(g));
    if (round >= 0) {
      ours[round] = (t1 - t0) / n;
      blas[round] = (t3 - t2) / n;
    }
  }
  double mo = median(ours, ROUNDS), mb = median(blas, ROUNDS);
  printf("%s, %lldx%lldx%lld %s, %d entry point%s: host time per call, "
         "median of %d rounds of %d calls\n", ts_gpu_name(g),
         (long long)d.m, (long long)d.n, (long long)d.k,
         ts_dtype_name(d.a_type), ts_kernel_count(k),
         ts_kernel_count(k) == 1 ? "" : "s", ROUNDS, BATCH);
  printf("  ts_launch (%s)  %.2f us\n  cublasGemmEx     %.2f us\n"
         "  difference       %+.2f us\n", schedule, mo, mb, mo - mb);
  for (int r = 0; r < 3; r++)
    g->cu.cuMemFree(buf[r]);
  ts_kernel_free(k);
  ts_gpu_close(g);
  return 0;
}
