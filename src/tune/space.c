/*
 * Knobs, configurations and the enumeration of a space (tessel.h, "Tuning
 * spaces").  A configuration says which value each knob takes, either by
 * position (the enumeration's odometer: the i-th knob declared takes its
 * prefix[i]-th value, later knobs their first) or by name (parsed text).
 * Each run of the space records the knobs it declared, with their values
 * and counts, which is all the odometer needs to step to the next
 * configuration: the last knob that has another value advances and every
 * knob after it starts again from its first.  So knobs may be declared
 * conditionally, or with values that depend on earlier knobs.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/strbuf.h"
#include "../schedule/sched.h"
#include "tune_impl.h"

enum { MAX_KNOBS = 32, DEFAULT_LIMIT = 100000 };

typedef struct {
  char *name;
  char *value;  /* as text */
  char *values; /* "32, 64, 128": all n, for a second declaration's error */
  int index;    /* among the n values declared */
  int n;
} knob;

struct ts_config {
  int prefix[MAX_KNOBS]; /* by position: the first nprefix knobs' indices */
  int nprefix;
  knob given[MAX_KNOBS]; /* by name: the values parsed (index unused) */
  int ngiven;
  knob knobs[MAX_KNOBS]; /* what the last run declared */
  int nknobs;
  char *pruned; /* why, or NULL */
  bool bad_knob; /* pruned because the space declared a knob wrongly */
  bool unknown_knob; /* pruned because a name given is no knob of it */
};

static void clear_knobs(knob *k, int n) {
  for (int i = 0; i < n; i++) {
    free(k[i].name);
    free(k[i].value);
    free(k[i].values);
  }
}

static void reset_run(ts_config *c) {
  clear_knobs(c->knobs, c->nknobs);
  c->nknobs = 0;
  free(c->pruned);
  c->pruned = NULL;
  c->bad_knob = c->unknown_knob = false;
}

void ts_config_free(ts_config *c) {
  if (!c)
    return;
  reset_run(c);
  clear_knobs(c->given, c->ngiven);
  free(c);
}

static void vprune(ts_config *c, const char *fmt, va_list ap) {
  if (c->pruned)
    return; /* the first reason is the one to fix */
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, ap); /* whole: a reason is never cut */
  if (n >= 0 && (c->pruned = malloc((size_t)n + 1)))
    vsnprintf(c->pruned, (size_t)n + 1, fmt, again);
  va_end(again);
}

__attribute__((format(printf, 2, 3))) static void prune(ts_config *c,
                                                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprune(c, fmt, ap);
  va_end(ap);
}

/* A knob the space declares wrongly: the space's own error, not a
 * constraint (ts_space_schedule says TS_ERR_BAD_KNOB), when it is the
 * first reason. */
__attribute__((format(printf, 2, 3))) static void knob_error(ts_config *c,
                                                             const char *fmt,
                                                             ...) {
  if (c->pruned)
    return;
  va_list ap;
  va_start(ap, fmt);
  vprune(c, fmt, ap);
  va_end(ap);
  c->bad_knob = true;
}

int ts_knob_require(ts_config *c, int ok, const char *why, ...) {
  if (ok || !c)
    return ok;
  va_list ap;
  va_start(ap, why);
  vprune(c, why, ap);
  va_end(ap);
  return false;
}

static const knob *declared(const ts_config *c, const char *name) {
  for (int i = 0; i < c->nknobs; i++)
    if (strcmp(c->knobs[i].name, name) == 0)
      return &c->knobs[i];
  return NULL;
}

static const knob *given(const ts_config *c, const char *name) {
  for (int i = 0; i < c->ngiven; i++)
    if (strcmp(c->given[i].name, name) == 0)
      return &c->given[i];
  return NULL;
}

/* "32, 64, 128", malloc'd; NULL when out of memory. */
static char *value_list(const char *const texts[], int n) {
  ts_buf list;
  ts_buf_init(&list);
  ts_buf_puts(&list, "");
  for (int i = 0; i < n; i++)
    ts_buf_printf(&list, "%s%s", i ? ", " : "", texts[i]);
  return ts_buf_take(&list);
}

/* The index the configuration gives the next knob, `name` with values
 * texts[0..n): by position, by name, or the first; -1 after pruning. */
static int choose(ts_config *c, const char *name, int n,
                  const char *const texts[]) {
  int at = c->nknobs;
  if (at < c->nprefix) {
    if (c->prefix[at] < n)
      return c->prefix[at];
    knob_error(c, "knob \"%s\" has %d values now, fewer than before", name, n);
    return -1;
  }
  const knob *g = given(c, name);
  if (!g)
    return 0;
  for (int i = 0; i < n; i++)
    if (strcmp(texts[i], g->value) == 0)
      return i;
  char *l = value_list(texts, n);
  prune(c, "%s=%s is not one of its values (%s)", name, g->value,
        l ? l : "?");
  free(l);
  return -1;
}

/* Whether the command line can name the knob (name=value,...): a C
 * identifier, so no ',', '=' or ':' in it. */
static bool a_knob_name(const char *name) {
  if (!isalpha((unsigned char)name[0]) && name[0] != '_')
    return false;
  for (const char *p = name + 1; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_')
      return false;
  return true;
}

/* The first value of texts[0..n) that an earlier one repeats, or -1. */
static int repeated_value(const char *const texts[], int n) {
  for (int i = 1; i < n; i++)
    for (int j = 0; j < i; j++)
      if (strcmp(texts[i], texts[j]) == 0)
        return i;
  return -1;
}

/* Whether knob `name` with values texts[0..n) is declared well: else the
 * space's own error (TS_ERR_BAD_KNOB), naming the declaration at fault. */
static bool declared_well(ts_config *c, const char *name, int n,
                          const char *const texts[]) {
  const knob *first = name ? declared(c, name) : NULL;
  int rep = n > 0 ? repeated_value(texts, n) : -1;
  char *l = n > 0 ? value_list(texts, n) : NULL;
  bool well = false;
  if (!name || n <= 0)
    knob_error(c, "a knob needs a name and at least one value (got \"%s\", "
               "%d)", name ? name : "(null)", n);
  else if (!a_knob_name(name))
    knob_error(c, "knob \"%s\" is not a name the command line can give "
               "(name=value,...): use letters, digits and '_', not "
               "starting with a digit", name);
  else if (rep >= 0)
    knob_error(c, "knob \"%s\" has the value %s twice (%s); give each "
               "value once", name, texts[rep], l ? l : "?");
  else if (first)
    knob_error(c, "knob \"%s\" is declared twice in one configuration: as "
               "knob %d (%s) and again as knob %d (%s); give each knob a "
               "name of its own, or keep the first's value in a variable",
               name, (int)(first - c->knobs) + 1, first->values,
               c->nknobs + 1, l ? l : "?");
  else if (c->nknobs == MAX_KNOBS)
    knob_error(c, "more than %d knobs (at \"%s\")", MAX_KNOBS, name);
  else
    well = true;
  free(l);
  return well;
}

/* Declares knob `name` and returns the index of its value (0 when the
 * configuration cannot say). */
static int declare(ts_config *c, const char *name, int n,
                   const char *const texts[]) {
  if (!c || !declared_well(c, name, n, texts))
    return 0;
  int i = choose(c, name, n, texts);
  knob *k = &c->knobs[c->nknobs];
  *k = (knob){.name = strdup(name), .value = strdup(texts[i < 0 ? 0 : i]),
              .values = value_list(texts, n), .index = i < 0 ? 0 : i,
              .n = n};
  if (!k->name || !k->value || !k->values) {
    free(k->name);
    free(k->value);
    free(k->values);
    prune(c, "out of memory");
    return 0;
  }
  c->nknobs++;
  return k->index;
}

int64_t ts_knob(ts_config *c, const char *name, int n,
                const int64_t values[]) {
  if (n <= 0 || !values) {
    declare(c, name, 0, NULL);
    return 0;
  }
  char (*text)[24] = malloc(sizeof(*text) * (size_t)n);
  const char **texts = malloc(sizeof(*texts) * (size_t)n);
  int i = 0;
  if (text && texts) {
    for (int v = 0; v < n; v++) {
      snprintf(text[v], sizeof(text[v]), "%lld", (long long)values[v]);
      texts[v] = text[v];
    }
    i = declare(c, name, n, texts);
  } else if (c) {
    prune(c, "out of memory");
  }
  free(text);
  free(texts);
  return values[i];
}

int ts_knob_choice(ts_config *c, const char *name, int n,
                   const char *const names[]) {
  if (n <= 0 || !names) {
    declare(c, name, 0, NULL);
    return 0;
  }
  return declare(c, name, n, names);
}

/* ---- Text ------------------------------------------------------------------ */

char *ts_config_text(const ts_config *c) {
  ts_buf b;
  ts_buf_init(&b);
  ts_buf_puts(&b, "");
  for (int i = 0; c && i < c->nknobs; i++)
    ts_buf_printf(&b, "%s%s=%s", i ? "," : "", c->knobs[i].name,
                  c->knobs[i].value);
  return ts_buf_take(&b);
}

static bool parse_pair(ts_config *c, const char *item, size_t len, char *err,
                       size_t errlen) {
  const char *eq = memchr(item, '=', len);
  if (!eq || eq == item || eq + 1 == item + len) {
    snprintf(err, errlen, "ts_config_parse: \"%.*s\" is not name=value",
             (int)len, item);
    return false;
  }
  if (c->ngiven == MAX_KNOBS) {
    snprintf(err, errlen, "ts_config_parse: more than %d knobs", MAX_KNOBS);
    return false;
  }
  knob *k = &c->given[c->ngiven];
  k->name = strndup(item, (size_t)(eq - item));
  k->value = strndup(eq + 1, len - (size_t)(eq + 1 - item));
  c->ngiven++;
  if (!k->name || !k->value) {
    snprintf(err, errlen, "ts_config_parse: out of memory");
    return false;
  }
  if (given(c, k->name) != k) {
    snprintf(err, errlen, "ts_config_parse: knob \"%s\" given twice", k->name);
    return false;
  }
  return true;
}

ts_config *ts_config_parse(const char *text, char *err, size_t errlen) {
  if (errlen)
    err[0] = 0;
  ts_config *c = calloc(1, sizeof(*c));
  if (!c || !text) {
    snprintf(err, errlen, "ts_config_parse: %s",
             c ? "the text is NULL" : "out of memory");
    ts_config_free(c);
    return NULL;
  }
  for (const char *p = text; *p;) {
    size_t len = strcspn(p, ",");
    if (!parse_pair(c, p, len, err, errlen)) {
      ts_config_free(c);
      return NULL;
    }
    p += len + (p[len] == ',');
  }
  return c;
}

const char *ts_config_pruned(const ts_config *c) { return c ? c->pruned : NULL; }

int ts_config_knob_count(const ts_config *c) { return c ? c->nknobs : 0; }

const char *ts_config_knob_name(const ts_config *c, int i) {
  return c && i >= 0 && i < c->nknobs ? c->knobs[i].name : NULL;
}

const char *ts_config_knob_value(const ts_config *c, int i) {
  return c && i >= 0 && i < c->nknobs ? c->knobs[i].value : NULL;
}

const char *config_knob_values(const ts_config *c, int i) {
  return c && i >= 0 && i < c->nknobs ? c->knobs[i].values : NULL;
}

/* ---- Running a space ------------------------------------------------------- */

/* A value given by name for a knob the space never declared is a typo:
 * the nearest knob it declared is suggested, and the others listed. */
static void check_given_used(ts_config *c) {
  const char *names[MAX_KNOBS];
  for (int i = 0; i < c->nknobs; i++)
    names[i] = c->knobs[i].name;
  for (int i = 0; i < c->ngiven && !c->bad_knob && !c->unknown_knob; i++) {
    const char *name = c->given[i].name;
    if (declared(c, name))
      continue;
    ts_buf b;
    ts_buf_init(&b);
    ts_buf_printf(&b, "the space has no knob \"%s\"", name);
    sched_list_names(&b, name, names, c->nknobs, "its knobs");
    /* The typo is the reason, before whatever the values it left at their
     * first broke. */
    free(c->pruned);
    c->pruned = ts_buf_take(&b);
    c->unknown_knob = true;
  }
}

ts_sched *ts_space_schedule(const ts_space *space, const ts_gemm *def,
                            ts_config *c) {
  ts_sched *s = ts_matmul_named(def, space ? space->name : "space");
  if (!space || !space->apply) {
    if (ts_sched_status(s) == TS_OK)
      sched_fail(s, TS_ERR_NULL_ARG, NULL, "ts_space_schedule: the space or "
                 "its apply function is NULL");
    return s;
  }
  if (ts_sched_status(s) != TS_OK)
    return s; /* the definition's own error */
  if (c)
    reset_run(c);
  space->apply(s, c);
  if (!c)
    return s;
  check_given_used(c);
  if (c->bad_knob || c->unknown_knob) { /* whatever the primitives made */
    ts_sched_free(s);
    s = ts_matmul_named(def, space->name);
    sched_fail(s, c->bad_knob ? TS_ERR_BAD_KNOB : TS_ERR_UNKNOWN_KNOB, NULL,
               "ts_space_schedule: %s: %s", space->name,
               c->pruned ? c->pruned : "out of memory");
    return s;
  }
  /* A primitive's refusal is the reason, whole: its message shows the
   * nest, which can be longer than a constraint's line. */
  if (!c->pruned && ts_sched_status(s) != TS_OK &&
      !(c->pruned = strdup(ts_sched_errmsg(s))))
    sched_oom(s, "ts_space_schedule");
  if (c->pruned && ts_sched_status(s) == TS_OK)
    sched_fail(s, TS_ERR_PRUNED, NULL, "ts_space_schedule: %s: %s",
               space->name, c->pruned);
  return s;
}

/* The configuration after c in the odometer's order, or NULL at the end
 * (*done set) or when out of memory. */
static ts_config *next_config(const ts_config *c, bool *done) {
  int i = c->nknobs - 1;
  while (i >= 0 && c->knobs[i].index + 1 >= c->knobs[i].n)
    i--;
  *done = i < 0;
  if (*done)
    return NULL;
  ts_config *n = calloc(1, sizeof(*n));
  if (!n)
    return NULL;
  for (int k = 0; k < i; k++)
    n->prefix[k] = c->knobs[k].index;
  n->prefix[i] = c->knobs[i].index + 1;
  n->nprefix = i + 1;
  return n;
}

int ts_space_enumerate(const ts_space *space, const ts_gemm *def, int limit,
                       ts_config ***out) {
  *out = NULL;
  if (limit <= 0)
    limit = DEFAULT_LIMIT;
  ts_config **all = NULL;
  int n = 0, cap = 0;
  ts_config *c = calloc(1, sizeof(*c));
  bool done = false;
  while (c && n < limit) {
    ts_sched_free(ts_space_schedule(space, def, c));
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      ts_config **grown = realloc(all, sizeof(*all) * (size_t)cap);
      if (!grown)
        break;
      all = grown;
    }
    all[n++] = c;
    c = next_config(c, &done);
    if (done)
      break;
  }
  if (!done) { /* out of memory, or past the limit */
    ts_config_free(c);
    ts_space_free_configs(all, n);
    return -1;
  }
  *out = all;
  return n;
}

void ts_space_free_configs(ts_config **configs, int n) {
  for (int i = 0; configs && i < n; i++)
    ts_config_free(configs[i]);
  free(configs);
}
