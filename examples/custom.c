/*
 * A stand-alone program that uses only tessel.h: it writes its own schedule
 * (16x16 thread blocks, threadIdx.x on columns, the k loop unrolled by 4),
 * prints the generated CUDA C, checks it on the CPU reference executor at a
 * small odd shape, and, where there is a GPU, benchmarks it against the
 * built-in `naive` schedule and cuBLAS.
 *
 *   cc custom.c $(pkg-config --cflags --libs tessel) -o custom
 *   ./custom [M N K]
 *
 * The schedule is written with TS_SCHEDULE, so the command line takes the
 * file too: `tessel bench examples/custom.c:custom16 naive --shape
 * 2048x2048x2048`.  First it shows what a refused primitive tells a
 * program: the call's file and line (ts_sched_error_location) and the
 * error as a compiler prints one (ts_sched_diagnostic).
 */
#include <stdio.h>
#include <stdlib.h>
#include <tessel.h>

TS_SCHEDULE(custom16, "16x16 thread blocks, k unrolled by 4") {
  ts_loop *io, *ii, *jo, *ji, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 16, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 16, &jo, &ji);
  ts_split(s, ts_get_loop(s, "k"), 4, &ko, &ki);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  ts_unroll(s, ki);
  return ts_sched_status(s);
}

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "custom: %s: %s\n", what, msg);
  return 1;
}

/* A split by 0, refused: the schedule keeps the error and the place of
 * the call that made it. */
static void show_a_refusal(void) {
  ts_gemm g = ts_gemm_make(64, 64, 64);
  ts_sched *s = ts_matmul_named(&g, "refused");
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 0, &io, &ii);
  ts_location at = ts_sched_error_location(s);
  char *text = ts_sched_diagnostic(s);
  printf("a refused call at %s:%d:\n%s\n", at.file ? at.file : "?", at.line,
         text ? text : ts_sched_errmsg(s));
  free(text);
  ts_sched_free(s);
}

int main(int argc, char **argv) {
  int64_t m = 2048, n = 2048, k = 2048;
  if (argc == 4) {
    m = atoll(argv[1]);
    n = atoll(argv[2]);
    k = atoll(argv[3]);
  }

  show_a_refusal();

  /* Check the schedule on the CPU at a small odd shape first. */
  ts_gemm small = ts_gemm_make(37, 53, 29);
  ts_sched *s = ts_matmul_named(&small, "custom");
  if (custom16(s) != TS_OK)
    return fail("schedule", ts_sched_errmsg(s));
  char msg[512];
  if (ts_check(s, 42, msg, sizeof(msg)) != TS_OK)
    return fail("check 37x53x29", msg);
  printf("reference executor at 37x53x29: correct\n");
  ts_sched_free(s);

  ts_gemm def = ts_gemm_make(m, n, k);
  s = ts_matmul_named(&def, "custom");
  ts_sched *naive = ts_builtin_schedule("naive", &def);
  if (custom16(s) != TS_OK)
    return fail("schedule", ts_sched_errmsg(s));
  /* Lowering gives the program: the one artifact the code generator, the
   * compiler and the GPU take.  The schedules can go once it is made. */
  ts_program *progs[2] = {ts_lower(s), ts_lower(naive)};
  ts_sched_free(naive);
  ts_sched_free(s);
  if (ts_program_status(progs[0]) != TS_OK)
    return fail("lowering", ts_program_errmsg(progs[0]));
  char *cu = ts_program_cuda(progs[0]);
  printf("%s\n", cu ? cu : "(out of memory)");
  free(cu);

  ts_gpu *gpu = ts_gpu_open();
  int rc = 0;
  if (ts_gpu_status(gpu) != TS_OK) {
    printf("no timing: %s\n", ts_gpu_errmsg(gpu));
  } else {
    /* Compile both (in parallel), then time them beside cuBLAS. */
    ts_kernel *k[2];
    ts_compile_all(progs, 2, ts_gpu_arch(gpu), 0, k);
    ts_bench_result r[2], blas;
    ts_status st = ts_bench(gpu, k, 2, NULL, r, &blas);
    if (blas.status != TS_OK) {
      rc = fail("bench", ts_gpu_errmsg(gpu));
    } else {
      printf("%s, %lldx%lldx%lld\n", ts_gpu_name(gpu), (long long)m,
             (long long)n, (long long)k);
      printf("%-8s %9.3f ms %7.2f TFLOP/s\n", "cuBLAS", blas.median_ms,
             blas.tflops);
      for (int i = 0; i < 2; i++)
        if (r[i].status == TS_OK)
          printf("%-8s %9.3f ms %7.2f TFLOP/s  %.3f of cuBLAS  err %.1e\n",
                 ts_kernel_name(k[i]), r[i].median_ms, r[i].tflops,
                 r[i].ratio_to_cublas, r[i].max_rel_err);
        else
          printf("%-8s not timed: %s\n", ts_kernel_name(k[i]), r[i].message);
      rc = st == TS_OK ? 0 : 1;
    }
    ts_kernel_free(k[0]);
    ts_kernel_free(k[1]);
  }
  ts_gpu_close(gpu);
  ts_program_free(progs[0]);
  ts_program_free(progs[1]);
  return rc;
}
