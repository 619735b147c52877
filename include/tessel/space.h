/*
 * Tuning spaces: schedules with knobs, and their configurations (src/tune/space.c).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_SPACE_H
#define TESSEL_SPACE_H

#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tuning spaces -------------------------------------------------------
 *
 * A space is a schedule with knobs: where it would write a number (a tile, a
 * k step, a thread tile) or pick one of several ways (a loop order), it asks
 * its configuration, as AutoTVM's define_knob does:
 *
 *   ts_status my_space(ts_sched *s, ts_config *c) {
 *     int64_t bm = ts_knob(c, "bm", 3, (int64_t[]){32, 64, 128});
 *     int64_t tm = ts_knob(c, "tm", 2, (int64_t[]){4, 8});
 *     ts_knob_require(c, bm / tm <= 32, "%lld rows of threads", bm / tm);
 *     ... the primitives, with bm and tm ...
 *   }
 *
 * A configuration is one value per knob, written "bm=64,tm=8" and read back
 * by ts_config_parse; the schedule it gives prints as C (ts_print_trace), so
 * a result is reproduced without the tuner.  Enumerating a space runs it
 * once per configuration: knobs may depend on earlier ones (a knob declared
 * only for some values of another, or with values that depend on them); a
 * configuration is pruned, with the reason, where a constraint fails or a
 * primitive refuses it. */

typedef struct ts_config ts_config;

typedef struct ts_space {
  const char *name;
  const char *summary;
  ts_status (*apply)(ts_sched *s, ts_config *c);
  bool tensor_cores; /* as a ts_builtin's */
  bool sm90_only;    /* as a ts_builtin's */
} ts_space;

/* The configuration's value of the knob `name`, one of values[0..n).  When
 * c is NULL, or names no value for it, the first value.  A knob declared
 * wrongly (no name, or one that is not letters, digits and '_' starting
 * with no digit; no values, or a value twice; a name declared twice in one
 * configuration; more than 32 knobs; fewer values than the enumeration saw
 * before) is the space's own error: TS_ERR_BAD_KNOB. */
int64_t ts_knob(ts_config *c, const char *name, int n, const int64_t values[]);
/* The same for a choice among names; returns its index. */
int ts_knob_choice(ts_config *c, const char *name, int n,
                   const char *const names[]);
/* Prunes the configuration unless ok, with the reason (printf format);
 * returns ok.  The schedule may go on: its result is not used. */
int ts_knob_require(ts_config *c, int ok, const char *why, ...)
    __attribute__((format(printf, 3, 4)));

/* "bm=64,tm=8,order=k_innermost": the values to use by name.  NULL with
 * the reason in err when the text is not of that form. */
ts_config *ts_config_parse(const char *text, char *err, size_t errlen);
void ts_config_free(ts_config *c);
/* The knobs a run of the space declared, as ts_config_parse reads them
 * ("" before any); malloc'd, NULL when out of memory. */
char *ts_config_text(const ts_config *c);
/* Why the configuration was pruned, or NULL. */
const char *ts_config_pruned(const ts_config *c);
int ts_config_knob_count(const ts_config *c);
const char *ts_config_knob_name(const ts_config *c, int i);
/* Knob i's value as text ("64", "k_innermost"), NULL past the end. */
const char *ts_config_knob_value(const ts_config *c, int i);

/* The space's schedule for def in configuration c (NULL: every knob's
 * first value); never NULL.  A pruned configuration gives a schedule in
 * error (TS_ERR_PRUNED) naming the reason; a knob the space declares
 * wrongly, TS_ERR_BAD_KNOB; a name c gives that the run declares no knob
 * of, TS_ERR_UNKNOWN_KNOB with the nearest knob (the configuration is
 * pruned too). */
ts_sched *ts_space_schedule(const ts_space *space, const ts_gemm *def,
                            ts_config *c);
/* Every configuration of the space for def, in order, pruned ones
 * included (ts_config_pruned says which and why).  *out is a malloc'd array
 * of n configurations that ts_space_free_configs frees; returns n, or -1
 * when out of memory or the space declares more than `limit` (0: 100000). */
int ts_space_enumerate(const ts_space *space, const ts_gemm *def, int limit,
                       ts_config ***out);
void ts_space_free_configs(ts_config **configs, int n);

/* The built-in spaces (`tessel tune --list`). */
int ts_space_count(void);
const ts_space *ts_space_at(int index);
const ts_space *ts_space_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
