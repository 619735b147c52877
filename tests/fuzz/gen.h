/*
 * The schedule fuzzer's case: a random definition (small odd shape, often
 * with dimensions of 1 to 4; any layout, alpha and beta), then a random sequence of every primitive with
 * random arguments (live loops, replaced loops, NULL, a loop of another
 * schedule, bad factors, names, tags, scopes, widths).  The case passes when
 * every failing call gives a status and a message naming the call and the
 * schedule stays in that error, and, when every call succeeds, the reference
 * executor finds the kernel correct and free of faults, the CUDA source is
 * generated and the trace replays to the same loop nest.  Some cases draw
 * a tuning space's knobs instead of primitives (knobs.h), and some make a
 * warpgroup schedule with the Hopper primitives (fuzz_hopper.c).
 *
 * The choices come from a source: a seeded generator (the cmocka test) or
 * the bytes libFuzzer gives (the coverage-guided harness).
 */
#ifndef TS_FUZZ_GEN_H
#define TS_FUZZ_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fz_source {
  uint64_t rng;        /* used when data is NULL */
  const uint8_t *data; /* libFuzzer's input; once used up, every choice is 0 */
  size_t size, pos;
} fz_source;

typedef enum {
  FZ_PASS_ERROR,   /* a primitive refused the schedule, clearly */
  FZ_PASS_REFUSED, /* accepted, then refused clearly at lowering */
  FZ_PASS_CHECKED, /* accepted, and the executor found it correct */
  FZ_FAIL,
  FZ_OUTCOMES
} fz_outcome;

typedef struct fz_result {
  fz_outcome outcome;
  int status;   /* the schedule's final ts_status (-1: no schedule) */
  bool knobs;   /* the case drew a space's configuration (knobs.c) */
  bool hopper;  /* a Hopper case's warpgroup schedule (fuzz_hopper.c) */
  bool tensorized; /* its schedule calls ts_tensorize (mma.sync, wgmma) */
  bool tma;        /* ... ts_tma */
  bool warpspec;   /* ... ts_warp_specialize */
  bool in_flight;  /* ... ts_wgmma_in_flight */
  bool persistent; /* ... ts_persistent */
  bool tma_store;  /* ... ts_cache_write(C, TS_SHARED), stored by the TMA */
  bool cluster;    /* ... ts_cluster */
  bool pingpong;   /* ... ts_pingpong */
  bool runtime;    /* its definition takes the extents at launch, and the
                    * check ran it at another shape too */
  bool store_refused; /* lowering refused it naming C's shared stage */
  bool transposed; /* a Hopper case tensorized on C's transpose */
  int layout;      /* the definition's ts_layout */
  int a_type;      /* and A's ts_dtype */
  int c_type;      /* and C's */
  char *report; /* on FZ_FAIL: why, and the case as a C program (malloc'd) */
} fz_result;

/* Whether the case `src` would draw is a knob case (fuzz_knobs.c), from
 * its first draws, on a copy of the source: the test's shards split the
 * knob cases, which take most of a run's time. */
bool fz_draws_knobs(fz_source src);

/* Runs one case.  `seed` only names the case in the report. */
fz_result fz_run_case(fz_source *src, uint64_t seed);

/* The C program of the case running now, for a crash handler: a pointer
 * into a buffer that the running case keeps current, or "". */
const char *fz_current_program(void);

#endif
