/*
 * A fuzz case as the generator holds it while it draws (gen.c and the
 * gen_*.c files around it, which share gen_impl.h), for the kinds of case
 * kept in files of their own (fuzz_hopper.c): the schedule, the loops and
 * stages the calls returned, and the calls so far as C.
 * Each helper makes one call on the schedule, writes it down and checks
 * its refusal (gen.h says what a clean refusal is).
 */
#ifndef TS_FUZZ_CASE_H
#define TS_FUZZ_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "gen.h"
#include "base/strbuf.h"
#include "tessel.h"

enum { MAX_LOOPS = 64, MAX_STAGES = 16, MAX_OPS = 14 };

/* The share of the cases drawing no knobs, in percent, that are Hopper
 * cases (fuzz_hopper.c) instead of random primitives. */
enum { FZ_HOPPER_PERCENT = 8 };

typedef struct fz_case {
  fz_source *src;
  uint64_t seed;
  ts_gemm def;
  ts_sched *s, *other;
  ts_loop *foreign; /* a loop of `other` */
  ts_loop *loops[MAX_LOOPS];
  bool gone[MAX_LOOPS];  /* replaced, or bound, unrolled or vectorized */
  int nloops;
  int block[3]; /* the indices of the loops bound to blockIdx, in order */
  int nblock;
  bool hostile; /* wrong arguments on purpose; otherwise only plausible ones */
  bool knobs;   /* a space's configuration instead of primitives (fuzz_knobs.c) */
  bool hopper;  /* a warpgroup schedule of the Hopper primitives (fuzz_hopper.c) */
  bool transposed; /* a Hopper case tensorized on C's transpose */
  double work;  /* iterations of the nest, m * n * k grown by the splits */
  ts_stage *stages[MAX_STAGES];
  int nstages;
  ts_buf prog;      /* the calls so far, as C */
  ts_status status; /* the schedule's status after the last call */
  char why[4096];   /* set on failure */
  bool store_refused; /* lowering refused it naming C's shared stage */
} fz_case;

/* True in `percent` of the draws. */
bool fz_chance(fz_case *c, uint32_t percent);
/* The slot of the next loop or stage a call returns. */
int fz_new_loop_slot(fz_case *c);
int fz_new_stage_slot(fz_case *c);
/* Checks the call `fn` that returned `got` (the sticky status, the
 * message naming the call). */
void fz_after_call(fz_case *c, ts_status got, const char *fn);

/* ts_get_loop into the next slot. */
void fz_op_get_loop(fz_case *c, const char *name);
/* ts_split of `loop` (written `text`; slot `index`, or -1) into the next
 * two slots, outer first; a factor that would pass the case's work
 * becomes 1. */
void fz_op_split(fz_case *c, ts_loop *loop, const char *text, int index,
                 int64_t factor);
void fz_op_reorder_of(fz_case *c, int n, ts_loop *const loops[],
                      char text[][32]);
void fz_op_bind_to(fz_case *c, ts_loop *loop, const char *text, int index,
                   ts_loop_kind kind);

/* fuzz_hopper.c: the definition of a Hopper case (types and shape), then
 * its warpgroup schedule made with the Hopper primitives on c->s. */
void fz_hopper_definition(fz_case *c);
void fz_hopper_case(fz_case *c);

#endif
