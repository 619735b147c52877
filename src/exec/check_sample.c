/*
 * The sampled check: a sampled run of the reference executor
 * (src/exec/exec_sample.c) and a double-precision GEMM of the elements it
 * wrote.  The inputs are computed, not stored: element e of A, B and C's
 * starting data is a hash of (seed, matrix, e), uniform in [-1, 1) and
 * rounded to the matrix's type.  (The full check draws its data from one
 * random stream instead, which would have to be run through to reach an
 * element; the two checks see different data for one seed.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_impl.h"
#include "executor.h"
#include "exec_sample.h"
#include "../ir/program_ir.h"

/* Steps a second of the reference executor on one core (exec.h's unit),
 * measured in CPU time on the built-in schedules: 6e7 to 1.1e8 for full
 * blocks (naive, smem32 and wg128 the slowest), up to 2.5e8 for skinny
 * shapes whose blocks are mostly past C's edge (their threads cost only
 * the lockstep loops).  The low end, so that an estimate errs long and
 * the limits it enforces hold. */
double ts_check_rate(void) { return 6e7; }

double ts_check_steps(const ts_program *p) {
  double steps = 0;
  for (int i = 0; p && p->status == TS_OK && i < p->nkernels; i++)
    steps += ir_kernel_steps(p->order[i]);
  return steps;
}

double ts_check_seconds(const ts_program *p) {
  return ts_check_steps(p) / ts_check_rate();
}

/* The rows r0..r1 of op(A) and columns c0..c1 of op(B), each K long. */
static bool inputs(const ts_gemm *g, uint64_t seed, const ir_box *b,
                   float **rows, float **cols) {
  size_t nr = (size_t)(b->hi[0] - b->lo[0] + 1);
  size_t nc = (size_t)(b->hi[1] - b->lo[1] + 1), K = (size_t)g->k;
  *rows = malloc(nr * K * sizeof(float));
  *cols = malloc(nc * K * sizeof(float));
  if (!*rows || !*cols)
    return false;
  ts_operand A = ts_gemm_operand(g, TS_OPERAND_A);
  ts_operand B = ts_gemm_operand(g, TS_OPERAND_B);
  for (size_t r = 0; r < nr; r++)
    for (size_t k = 0; k < K; k++)
      (*rows)[r * K + k] = space_value(
          seed, 0, check_index(&A, b->lo[0] + (int64_t)r, (int64_t)k), A.type);
  for (size_t c = 0; c < nc; c++)
    for (size_t k = 0; k < K; k++)
      (*cols)[c * K + k] = space_value(
          seed, 1, check_index(&B, (int64_t)k, b->lo[1] + (int64_t)c), B.type);
  return true;
}

/* The exact dot product of a and b (K long) and the sum of its terms'
 * magnitudes, in double: four partial sums, each exact enough that their
 * order does not matter against the tolerance. */
static double dot(const float *a, const float *b, int64_t K, double *mag) {
  double s[4] = {0}, m[4] = {0};
  int64_t k = 0;
  for (; k + 4 <= K; k += 4)
    for (int l = 0; l < 4; l++) {
      double p = (double)a[k + l] * b[k + l];
      s[l] += p;
      m[l] += fabs(p);
    }
  for (; k < K; k++) {
    double p = (double)a[k] * b[k];
    s[0] += p;
    m[0] += fabs(p);
  }
  *mag = m[0] + m[1] + m[2] + m[3];
  return s[0] + s[1] + s[2] + s[3];
}

/* Compares the box of C the sample covers with the GEMM of its elements. */
static ts_status compare_box(const ts_program *p, uint64_t seed,
                             const ir_sample *s, const ir_box *b,
                             long long *count, char *msg, size_t msglen) {
  const ts_gemm *g = &p->def;
  int64_t ldc = ts_gemm_operand(g, TS_OPERAND_C).ld;
  float *rows, *cols;
  ts_status st = TS_OK;
  if (!inputs(g, seed, b, &rows, &cols)) {
    st = TS_ERR_NO_MEMORY;
    snprintf(msg, msglen, "ts_check: out of memory for the sampled rows "
             "and columns of A and B (K = %lld)", (long long)g->k);
  }
  for (int64_t i = b->lo[0]; st == TS_OK && i <= b->hi[0]; i++)
    for (int64_t j = b->lo[1]; st == TS_OK && j <= b->hi[1]; j++) {
      double mag, sum = dot(rows + (i - b->lo[0]) * g->k,
                            cols + (j - b->lo[1]) * g->k, g->k, &mag);
      double c0 = g->beta != 0.0f
                      ? space_value(seed, 2, i * ldc + j, g->c_type) : 0.0;
      double want = g->alpha * sum + g->beta * c0;
      double scale = fabs(g->alpha) * mag + fabs(g->beta * c0);
      double tol = check_element_tolerance(p, p->def.k, want, scale);
      double got = ir_sample_c(s, i, j);
      if (!(fabs(got - want) <= tol)) {
        snprintf(msg, msglen, "C[%lld, %lld] is %.9g, expected %.9g "
                 "(tolerance %.3g)", (long long)i, (long long)j, got, want,
                 tol);
        st = TS_ERR_MISMATCH;
      }
      ++*count;
    }
  free(rows);
  free(cols);
  return st;
}

static void report(const ir_sample *r, ts_sample *s) {
  s->points_run = r->targets_run;
  s->points_wanted = r->targets_wanted;
  s->blocks_run = r->blocks_run;
  s->blocks_total = r->blocks_total;
  s->bytes = (double)space_bytes(&r->space);
  s->seconds = r->estimate / ts_check_rate();
  s->steps = r->steps > 0 ? r->steps : r->estimate;
}

/* The most memory the run of the region holds at once, estimated: the
 * pages of C (and of each of split-K's workspace planes) that its boxes
 * touch, a box's rows n wide meeting at most n / SPACE_PAGE + 2 pages,
 * with their hash table's share; and the largest box's rows of op(A) and
 * columns of op(B), K long, made for the comparison (one box at a time),
 * those in *inputs.  A packed operand adds the pages of its rows (op(A))
 * or columns (op(B)) that the packing blocks run write: the box's, and a
 * packing tile's (32) either side. */
static double region_bytes(const ts_program *p, const exec_space *sp,
                           double *inputs_out) {
  double pages = 0, inputs = 0, packed = 0;
  for (int i = 0; i < sp->nboxes; i++) {
    const ir_box *b = &sp->boxes[i];
    double rows = (double)(b->hi[0] - b->lo[0] + 1);
    double cols = (double)(b->hi[1] - b->lo[1] + 1);
    pages += rows * (double)((int64_t)cols / SPACE_PAGE + 2);
    double in = (rows + cols) * (double)p->def.k * sizeof(float);
    inputs = in > inputs ? in : inputs;
    for (int w = 0; w < 2; w++)
      if (p->k.packed[w])
        packed += ((w ? cols : rows) + 64) * (double)p->def.k / SPACE_PAGE;
  }
  double planes = 1 + (p->k.W ? (double)p->k.grid[2] : 0);
  double page = sizeof(space_page) + 4 * (sizeof(uint64_t) + sizeof(void *));
  *inputs_out = inputs;
  return (pages * planes + packed) * page + inputs;
}

/* The checks both entry points make first; TS_OK to go on. */
static ts_status sample_args(const ts_program *p, const ts_sample *s,
                             const char *call, char *msg, size_t msglen) {
  msg[0] = 0;
  if (!p || !s)
    return TS_ERR_NULL_ARG;
  if (p->status != TS_OK) {
    snprintf(msg, msglen, "%s", p->errmsg);
    return p->status;
  }
  if (s->random < 0) {
    snprintf(msg, msglen, "%s: random must be >= 0 (got %d)", call,
             s->random);
    return TS_ERR_BAD_ARG;
  }
  return TS_OK;
}

/* The sample's blocks chosen into r (run too unless plan_only); false
 * with a fault in msg. */
static bool execute(const ts_program *p, uint64_t seed, const ts_sample *s,
                    bool plan_only, ir_sample *r, char *msg, size_t msglen) {
  int main = 0;
  while (p->order[main] != &p->k)
    main++;
  ir_sample_opts o = {.seed = seed, .random = s->random,
                      .budget = s->budget_s * ts_check_rate(),
                      .plan_only = plan_only};
  return ir_execute_sampled(p->order, p->nkernels, main, &p->def, &o, r,
                            msg, msglen);
}

/* The refusal of a sample whose first point's blocks alone pass the
 * budget: a block's threads walk the whole of their K, so only a smaller
 * K (or a schedule that splits it) makes them shorter; a persistent
 * grid's blocks each loop over a share of C's tiles too, so a smaller C
 * does. */
static ts_status too_slow_message(const ts_program *p, const ts_sample *s,
                                  char *msg, size_t msglen) {
  const ts_gemm *g = &p->def;
  bool one = s->blocks_run == 1;
  int64_t grid[3];
  ir_kernel_grid(&p->k, TS_EXEC_MULTIPROCESSORS, grid);
  char walk[128] = "";
  if (p->k.persistent && grid[0] > 0)
    snprintf(walk, sizeof(walk), "loops over up to %lld of C's %lld tiles "
             "and for each ", (long long)((p->k.grid[0] + grid[0] - 1) /
                                          grid[0]), (long long)p->k.grid[0]);
  snprintf(msg, msglen, "ts_check: a sample of a %lldx%lldx%lld check "
           "cannot stay within %.0f s: the %lld block%s writing C[0, 0] "
           "alone take%s about %.0f s on the reference executor (%.3g "
           "steps: each of %s threads %swalks K = %lld); check a smaller "
           "%s, or a schedule that splits K over blocks (split-K)",
           (long long)g->m, (long long)g->n, (long long)g->k, s->budget_s,
           s->blocks_run, one ? "" : "s", one ? "s" : "", s->seconds,
           s->steps, one ? "its" : "their", walk, (long long)g->k,
           walk[0] ? "shape, a schedule with no persistent grid" : "K");
  return TS_ERR_TOO_SLOW;
}

/* ts_program_sample_plan for `call`, msg at least 1 long. */
static ts_status plan(const ts_program *p, uint64_t seed, ts_sample *s,
                      const char *call, char *msg, size_t msglen) {
  ts_status st = sample_args(p, s, call, msg, msglen);
  if (st != TS_OK)
    return st;
  ir_sample r;
  if (!execute(p, seed, s, true, &r, msg, msglen))
    st = TS_ERR_NO_MEMORY; /* choosing blocks runs nothing: no fault */
  report(&r, s);
  s->elements = 0;
  for (int i = 0; i < r.space.nboxes; i++)
    s->elements += (r.space.boxes[i].hi[0] - r.space.boxes[i].lo[0] + 1) *
                   (r.space.boxes[i].hi[1] - r.space.boxes[i].lo[1] + 1);
  double inputs;
  s->bytes = region_bytes(p, &r.space, &inputs);
  bool too_slow = r.over_budget;
  ir_sample_free(&r);
  double have = ts_memory_available();
  if (st == TS_OK && have > 0 && s->bytes > 0.8 * have) {
    const ts_gemm *g = &p->def;
    bool rows = inputs > s->bytes / 2; /* what the most of it is */
    snprintf(msg, msglen, "ts_check: a sample of a %lldx%lldx%lld check "
             "(%lld of %lld blocks) needs about %.1f GiB (%s), and this "
             "machine has %.1f GiB available; %s", (long long)g->m,
             (long long)g->n, (long long)g->k, s->blocks_run,
             s->blocks_total, s->bytes / 1073741824.0,
             rows ? "mostly the rows of A and columns of B that a block "
                    "reads, K long"
                  : "mostly the pages of C its blocks write",
             have / 1073741824.0,
             p->k.persistent ? "its blocks loop over C's tiles, so check a "
                               "smaller shape or a schedule without a "
                               "persistent grid"
             : rows ? "check a smaller K"
                    : "sample fewer points (tessel check --blocks 1)");
    st = TS_ERR_NO_MEMORY;
  }
  if (st == TS_OK && too_slow)
    st = too_slow_message(p, s, msg, msglen);
  return st;
}

ts_status ts_program_sample_plan(const ts_program *p, uint64_t seed,
                                 ts_sample *s, char *msg, size_t msglen) {
  char scratch[1];
  return plan(p, seed, s, "ts_program_sample_plan", msglen ? msg : scratch,
              msglen ? msglen : 1);
}

ts_status ts_program_check_sampled(const ts_program *p, uint64_t seed,
                                   ts_sample *s, char *msg, size_t msglen) {
  char scratch[1];
  if (!msglen)
    msg = scratch, msglen = 1;
  /* Refused first where it cannot fit; the run overwrites the estimates. */
  ts_status st = plan(p, seed, s, "ts_program_check_sampled", msg, msglen);
  if (st != TS_OK)
    return st;
  ir_sample r;
  s->elements = 0;
  if (!execute(p, seed, s, false, &r, msg, msglen))
    st = TS_ERR_EXEC_FAULT;
  report(&r, s);
  for (int i = 0; st == TS_OK && i < r.space.nboxes; i++)
    st = compare_box(p, seed, &r, &r.space.boxes[i], &s->elements, msg,
                     msglen);
  if (st == TS_OK && s->elements == 0) {
    /* A sample that compares nothing has checked nothing. */
    snprintf(msg, msglen, "ts_program_check_sampled: no block of the "
             "kernel was found to write the %d chosen elements of C, so "
             "nothing was compared; the sampler's interval analysis does "
             "not see how this kernel writes C: check a shape small enough "
             "for a full run", s->points_wanted);
    st = TS_ERR_MISMATCH;
  }
  s->bytes = (double)space_bytes(&r.space);
  ir_sample_free(&r);
  return st;
}
