/*
 * A sampled run of the reference executor (exec_sample.c): the blocks
 * that write chosen elements of C, on a sparse global memory, with every
 * check of a full run inside them.
 */
#ifndef TS_EXEC_SAMPLE_H
#define TS_EXEC_SAMPLE_H

#include "exec_space.h"

typedef struct {
  uint64_t seed;      /* the inputs' values and the random targets */
  int random;         /* targets inside C beyond the corners and edges */
  double budget;      /* steps the blocks may take (exec.h); 0: no limit */
  bool plan_only;     /* choose the blocks and the region, run nothing */
} ir_sample_opts;

typedef struct {
  exec_space space;        /* C's values after the run; space.boxes is
                            * the region of C compared */
  int targets_run, targets_wanted;
  int64_t blocks_run;      /* blocks of every kernel run */
  int64_t blocks_total;    /* blocks of every kernel in a full run */
  double estimate;         /* steps of the blocks chosen, estimated
                            * (ir_block_steps), every kernel's */
  double steps;            /* steps the run took, counted (0: a plan) */
  bool over_budget;        /* the first target's blocks alone pass the
                            * budget: nothing is chosen to run */
} ir_sample;

/* Runs the blocks of ks (n kernels in launch order, ks[main] the
 * schedule's) that write the sample of C, for g's definition.  False with
 * the first fault in msg (or out of memory); s is filled either way and
 * must be freed with ir_sample_free.  Where even the first target's
 * blocks pass the budget, nothing runs: s->over_budget, and true. */
bool ir_execute_sampled(const ir_kernel *const *ks, int n, int main,
                        const ts_gemm *g, const ir_sample_opts *o,
                        ir_sample *s, char *msg, size_t msglen);
/* C[i, j] after the run (NaN where nothing wrote it). */
float ir_sample_c(const ir_sample *s, int64_t i, int64_t j);
void ir_sample_free(ir_sample *s);

#endif
