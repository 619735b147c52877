/*
 * The conveniences that chain stages for a caller holding a schedule:
 * each lowers it, hands the program to one later stage (printing, the
 * code generator, the launch geometry, the reference executor, the
 * compiler) and frees the program.  They are the one place where a
 * schedule meets a stage past lowering; the stages themselves take the
 * program (or the kernel compiled from it) and never the schedule.
 */
#include <stdlib.h>

#include "tessel/compile.h"
#include "tessel/exec.h"
#include "tessel/facade.h"
#include "tessel/program.h"

char *ts_print_ir(const ts_sched *s) {
  ts_program *p = ts_lower(s);
  char *text = ts_program_ir(p);
  ts_program_free(p);
  return text;
}

char *ts_cuda_source(const ts_sched *s) {
  ts_program *p = ts_lower(s);
  char *text = ts_program_cuda(p);
  ts_program_free(p);
  return text;
}

ts_status ts_launch_dims(const ts_sched *s, ts_launch_geometry *out) {
  if (!s || !out) {
    if (out)
      *out = (ts_launch_geometry){0};
    return TS_ERR_NULL_ARG;
  }
  ts_program *p = ts_lower(s);
  ts_status st = ts_program_launch(p, out);
  ts_program_free(p);
  return st;
}

ts_status ts_execute(const ts_sched *s, const float *A, const float *B,
                     float *C, char *msg, size_t msglen) {
  ts_program *p = ts_lower(s);
  ts_status st = ts_program_execute(p, A, B, C, msg, msglen);
  ts_program_free(p);
  return st;
}

ts_status ts_check(const ts_sched *s, uint64_t seed, char *msg,
                   size_t msglen) {
  ts_program *p = ts_lower(s);
  ts_status st = ts_program_check(p, seed, msg, msglen);
  ts_program_free(p);
  return st;
}

ts_kernel *ts_compile_sched(const ts_sched *s, const char *arch) {
  ts_program *p = ts_lower(s);
  ts_kernel *k = ts_compile(p, arch);
  ts_program_free(p);
  return k;
}
