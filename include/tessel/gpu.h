/*
 * The GPU: running and timing compiled kernels beside cuBLAS (runtime/).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_GPU_H
#define TESSEL_GPU_H

#include "compile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The GPU: running and timing --------------------------------------- */

typedef struct ts_gpu ts_gpu;

/* Loads the driver and cuBLAS at run time and opens device 0 (or the
 * device of that ordinal, as the driver counts them).  Never NULL;
 * TS_ERR_NO_GPU where there is no driver or no such device. */
ts_gpu *ts_gpu_open(void);
ts_gpu *ts_gpu_open_device(int ordinal);
/* How many devices the driver sees; 0 without a driver.  It initializes
 * CUDA in the calling process. */
int ts_gpu_count(void);
/* The device's UUID ("GPU-8c2f...", as nvidia-smi -L prints it) and
 * ordinal: a tuning journal is the device's, a record the model's. */
const char *ts_gpu_uuid(const ts_gpu *g);
int ts_gpu_ordinal(const ts_gpu *g);
void ts_gpu_close(ts_gpu *g);
ts_status ts_gpu_status(const ts_gpu *g);
const char *ts_gpu_errmsg(const ts_gpu *g);
const char *ts_gpu_name(const ts_gpu *g);
/* The driver's CUDA version, as cuDriverGetVersion gives it (13000). */
int ts_gpu_driver_version(const ts_gpu *g);
const char *ts_gpu_arch(const ts_gpu *g); /* "sm_90" */
int ts_gpu_sm_count(const ts_gpu *g); /* multiprocessors */
/* The device's rated SM and memory clocks in kHz, as the driver reports
 * them (CU_DEVICE_ATTRIBUTE_CLOCK_RATE and MEMORY_CLOCK_RATE); 0 when
 * unknown. */
int ts_gpu_clock_khz(const ts_gpu *g);
/* What the GPU's sensors read now, through NVML: the SM and memory clocks
 * it runs at (not the rated ones), its temperature and power draw.  valid
 * is false, with the reason in why, where NVML is not there. */
typedef struct ts_gpu_sensors {
  bool valid;
  int sm_mhz, memory_mhz, temperature_c;
  double power_w;
  char why[200];
} ts_gpu_sensors;
ts_gpu_sensors ts_gpu_read_sensors(ts_gpu *g);
int ts_gpu_memory_clock_khz(const ts_gpu *g);
/* NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0), the form
 * of cuDriverGetVersion; 0 when NVRTC cannot be loaded.  Needs no GPU. */
int ts_nvrtc_version(void);

/* Runs the compiled kernel once on host data (C updated in place). */
ts_status ts_gpu_run(ts_gpu *g, const ts_kernel *k, const float *A,
                     const float *B, float *C);
/* cuBLAS on the same data, for reference; TS_ERR_CUBLAS, saying so, for
 * element types it has no GEMM of (see ts_cublas_baseline). */
ts_status ts_gpu_cublas(ts_gpu *g, const ts_gemm *def, const float *A,
                        const float *B, float *C);
/* ts_gpu_run and ts_gpu_cublas on matrices of the definition's own element
 * types (see ts_matrix): A and B are read, C updated in place in its type;
 * a type other than the definition's is TS_ERR_BAD_ARG, saying which. */
ts_status ts_gpu_run_matrices(ts_gpu *g, const ts_kernel *k, ts_matrix A,
                              ts_matrix B, ts_matrix C);
ts_status ts_gpu_cublas_matrices(ts_gpu *g, const ts_gemm *def, ts_matrix A,
                                 ts_matrix B, ts_matrix C);
/* The definition ts_bench times cuBLAS at, and checks results against, for
 * def: def itself where cublasGemmEx takes its element types, else the
 * nearest it takes, an fp32 C (fp32 A and B with an fp16 or bf16 C; fp16
 * A and B with a bf16 C, bf16 with fp16).  TS_ERR_BAD_ARG when there is
 * none (A and B of two types). */
ts_status ts_cublas_baseline(const ts_gemm *def, ts_gemm *baseline);

typedef struct ts_bench_opts {
  int warmup;  /* default 5 */
  int repeats; /* default 50 */
  uint64_t seed;
  /* Optional: (n + 1) * repeats doubles that receive every timed launch in
   * ms, in the order they ran: cuBLAS's at [0, repeats), kernel i's at
   * [(i + 1) * repeats, (i + 2) * repeats).  A kernel that was not timed
   * (and everything, when the run failed) gets NaN. */
  double *times;
} ts_bench_opts;

typedef struct ts_bench_result {
  /* TS_OK when timed; otherwise why not, in message: the kernel's own error
   * (lowering, NVRTC), the device's refusal (resources, a module that does
   * not load), or a hand-written kernel that cannot take the shape
   * (skipped). */
  ts_status status;
  int skipped;
  /* 1: this kernel's launch failed the device (an illegal address, say),
   * which leaves the process's CUDA context unusable: the other rows of
   * the call were not timed (their messages name this kernel), and
   * nothing more can run on the device in this process. */
  int faulted;
  char message[1024];
  double median_ms;
  double min_ms, max_ms; /* the fastest and slowest of the repeats */
  double tflops;
  double ratio_to_cublas; /* cuBLAS time / this time: 1.0 is cuBLAS's speed */
  double max_rel_err;     /* against cuBLAS, over all elements */
  ts_ptxas_info ptxas;
} ts_bench_result;

/* Times each compiled kernel and cuBLAS in one run on the same random
 * inputs: results[i] for kernels[i], *cublas for cuBLAS.  Every kernel must
 * be of one definition (kernels[0]'s).  Each kernel has its own result: one
 * that failed to compile, is of another definition, cannot be loaded or
 * does not fit the device is reported in its row, and the rest are timed.
 * A kernel whose launch fails the device has `faulted` set and the device's
 * error in its row; the GPU is then unusable (its status says so) and the
 * other rows say which kernel stopped them.  Returns TS_OK when every
 * kernel was timed, the first row's error otherwise, or the GPU's error
 * when nothing could be timed. */
ts_status ts_bench(ts_gpu *g, ts_kernel *const kernels[], int n,
                   const ts_bench_opts *opts, ts_bench_result results[],
                   ts_bench_result *cublas);

#ifdef __cplusplus
}
#endif
#endif
