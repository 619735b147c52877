/*
 * The fuzzer's cases that draw knobs: a tuning space of the registry and a
 * configuration of it, chosen knob by knob among the configurations the
 * space enumerates at the case's definition (as the tuner enumerates
 * them), pruned ones included, or in some cases written wrong on purpose.
 * gen.c draws FZ_KNOB_PERCENT of its cases here and checks an accepted
 * schedule as it checks any other.
 */
#ifndef TS_FUZZ_KNOBS_H
#define TS_FUZZ_KNOBS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "gen.h"
#include "base/strbuf.h"
#include "tessel.h"

/* The share of cases, in percent, that draw knobs instead of primitives. */
enum { FZ_KNOB_PERCENT = 17 };

/* 0..n-1, the next choice of the case's source (gen_args.c). */
uint32_t fz_pick(fz_source *src, uint32_t n);
/* The case's failure, unless it has one already (gen_check.c). */
void fz_vfail(char *why, size_t whylen, const char *fmt, va_list ap);

/* In a few cases, `def` made larger where spaces declare more knobs
 * (split-K's at a deep K, the swizzle's at a large grid). */
void fz_knob_definition(fz_source *src, ts_gemm *def);

/* A space and a configuration drawn for `def`; the calls that make its
 * schedule are appended to `prog` as C.  Returns the schedule the
 * configuration's text gives (in error where it is pruned), or NULL where
 * the text was written not to parse.  `why` receives the first broken
 * expectation: a pruned configuration accepted, or refused without its
 * reason; an accepted one refused; a text that does not parse back to
 * the same configuration and schedule; a wrong one not refused as it
 * should be. */
ts_sched *fz_knob_schedule(fz_source *src, const ts_gemm *def, ts_buf *prog,
                           char *why, size_t whylen);

#endif
