/*
 * Fuzz cases that draw knobs (knobs.h).  The configuration is drawn from
 * the space's enumeration at the case's definition, through the public
 * API only, as the tuner sees a space: at each knob in the order the
 * space declares them, one of the values it takes where the earlier knobs
 * have the values drawn.  So a knob the space declares only at some
 * shapes (warptiled's splitk, at a deep K) is drawn exactly where it
 * exists, a knob whose values depend on earlier ones takes one of its
 * values there, and pruned configurations are drawn as often as the space
 * has them.  The schedule is made as the tuner makes it (the enumerated
 * configuration), then again from the configuration's text, as a user
 * reproduces a result.  In WRONG_PERCENT of the cases whose configuration
 * is accepted, its text is written wrong instead: a value the knob does
 * not take, a knob the space does not declare here, an item that is not
 * name=value, a knob given twice.
 */
#include "fuzz_knobs.h"
#include "tune/tune_impl.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger definitions, in one knob case of LARGE_EVERY: the executor runs
 * every tile whole whatever the shape, so a K of 1024 costs it 0.2 s at
 * warptiled's smallest tiles.  Measured over 545 such cases: 0.36 s on
 * average, 7.9 s the slowest; one in 50 adds 7 ms to a knob case's 15. */
enum { WRONG_PERCENT = 20, LARGE_EVERY = 50 };

typedef struct knob_case {
  fz_source *src;
  const ts_space *space;
  const ts_gemm *def;
  ts_buf *prog;
  char *why; /* the first broken expectation, or "" */
  size_t whylen;
} knob_case;

__attribute__((format(printf, 2, 3))) static void fail(knob_case *k,
                                                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fz_vfail(k->why, k->whylen, fmt, ap);
  va_end(ap);
}

static bool same_text(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

static const char *or_none(const char *text) { return text ? text : "(none)"; }

/* ---- The definition ------------------------------------------------------ */

/* warptiled declares splitk where K is 1024 or more and the grid has
 * fewer than 256 blocks, which m and n of 48 or less always give.  Its
 * swizzle is not drawn: the knob needs 16 block rows and columns, 481 x
 * 481 at the smallest tiles (32, one draw in 16), and such a grid costs
 * the executor about a second whatever the tiles. */
void fz_knob_definition(fz_source *src, ts_gemm *def) {
  if (fz_pick(src, LARGE_EVERY) == 0)
    def->k = 1024 + fz_pick(src, 77);
}

/* ---- Drawing a configuration --------------------------------------------- */

static bool same_value(const ts_config *a, const ts_config *b, int p) {
  const char *x = ts_config_knob_value(a, p), *y = ts_config_knob_value(b, p);
  return x && y && strcmp(x, y) == 0;
}

/* [*lo, *hi) narrowed to the run of one value of knob p, each run as
 * likely. */
static void draw_run(fz_source *src, ts_config **cs, int *lo, int *hi,
                     int p) {
  int runs = 1;
  for (int i = *lo + 1; i < *hi; i++)
    runs += !same_value(cs[i - 1], cs[i], p);
  int want = (int)fz_pick(src, (uint32_t)runs);
  for (int i = *lo + 1; i < *hi; i++) {
    if (same_value(cs[i - 1], cs[i], p))
      continue;
    if (want-- == 0) {
      *hi = i;
      return;
    }
    *lo = i;
  }
}

/* One of cs[0..n), knob by knob.  Configurations that agree on the knobs
 * before p are neighbours in the enumeration's (odometer's) order and
 * declare the same knob p (the space runs alike up to it), so they form
 * one run per value of knob p. */
static int draw_config(fz_source *src, ts_config **cs, int n) {
  int lo = 0, hi = n;
  for (int p = 0; hi - lo > 1 && ts_config_knob_name(cs[lo], p); p++)
    draw_run(src, cs, &lo, &hi, p);
  return lo;
}

/* The spaces whose enumeration a case may run: a larger one (the warpgroup
 * space's 92160 configurations take a second to enumerate) is drawn knob
 * by knob by running it (walk_config), which the enumeration's draw above
 * equals, each value of a knob as likely as the others. */
enum { ENUMERATE_LIMIT = 256 };

/* One of the values in `list`, "32, 64, 128", each as likely, into out. */
static bool pick_value(fz_source *src, const char *list, char *out,
                       size_t len) {
  int n = 1;
  for (const char *at = list; (at = strstr(at, ", ")); at += 2)
    n++;
  const char *at = list;
  for (int want = (int)fz_pick(src, (uint32_t)n); want > 0; want--)
    at = strstr(at, ", ") + 2;
  size_t vlen = strcspn(at, ",");
  if (vlen == 0 || vlen >= len)
    return false;
  memcpy(out, at, vlen);
  out[vlen] = 0;
  return true;
}

/* A configuration drawn knob by knob: the space run with the knobs chosen
 * so far, then the next knob it declares given one of its values. */
static ts_config *walk_config(fz_source *src, const ts_space *space,
                              const ts_gemm *def) {
  ts_buf text;
  ts_buf_init(&text);
  ts_buf_puts(&text, "");
  char err[256], value[64];
  ts_config *c = ts_config_parse("", err, sizeof(err));
  for (int p = 0; c; p++) {
    ts_sched_free(ts_space_schedule(space, def, c));
    const char *values = config_knob_values(c, p);
    if (!values || !text.data)
      break;
    if (!pick_value(src, values, value, sizeof(value)))
      break;
    ts_buf_printf(&text, "%s%s=%s", p ? "," : "", ts_config_knob_name(c, p),
                  value);
    ts_config_free(c);
    c = text.data ? ts_config_parse(text.data, err, sizeof(err)) : NULL;
  }
  ts_buf_free(&text);
  return c;
}

/* ---- The program ----------------------------------------------------------- */

/* The calls that make the schedule from the configuration's text, as a
 * user reproduces a tuning result; `note` says what the case expects. */
static void write_program(knob_case *k, const char *text, const char *note) {
  int line = (int)strcspn(note, "\n");
  ts_buf_printf(k->prog,
                "  /* %.*s */\n"
                "  char err[256];\n"
                "  ts_config *cfg = ts_config_parse(\"%s\", err, sizeof(err));\n"
                "  if (!cfg) {\n    printf(\"%%s\\n\", err);\n    return 1;\n  }\n"
                "  ts_sched *s = ts_space_schedule(ts_space_find(\"%s\"), &def, "
                "cfg);\n"
                "  char *text = ts_config_text(cfg);\n"
                "  const char *pruned = ts_config_pruned(cfg);\n"
                "  printf(\"%%s: %%s\\n\", text, pruned ? pruned : \"not pruned\");\n"
                "  free(text);\n  ts_config_free(cfg);\n",
                line, note, text, k->space->name);
}

/* ---- Checks of a drawn configuration ------------------------------------- */

/* A constraint's reason comes as TS_ERR_PRUNED, "ts_space_schedule: SPACE:
 * why"; a primitive's refusal keeps the primitive's status and message,
 * which is the reason. */
static bool names_reason(knob_case *k, ts_sched *s, const char *why) {
  const char *msg = ts_sched_errmsg(s);
  if (ts_sched_status(s) != TS_ERR_PRUNED)
    return strcmp(msg, why) == 0;
  ts_buf want;
  ts_buf_init(&want);
  ts_buf_printf(&want, "ts_space_schedule: %s: %s", k->space->name, why);
  bool same = want.data && strcmp(msg, want.data) == 0;
  ts_buf_free(&want);
  return same;
}

/* The enumeration's verdict holds where the tuner makes the schedule:
 * pruned configurations refused with their reason, the rest accepted. */
static void check_verdict(knob_case *k, ts_sched *s, const ts_config *cfg,
                          const char *enumerated) {
  const char *pruned = ts_config_pruned(cfg);
  ts_status st = ts_sched_status(s);
  if (!same_text(enumerated, pruned))
    fail(k, "the enumeration pruned the configuration for %s, its schedule "
         "for %s", or_none(enumerated), or_none(pruned));
  else if (!pruned && st != TS_OK)
    fail(k, "a configuration the space keeps is refused: %s: %s",
         ts_strerror(st), ts_sched_errmsg(s));
  else if (pruned && st == TS_OK)
    fail(k, "a pruned configuration (%s) gives a schedule", pruned);
  else if (pruned && !names_reason(k, s, pruned))
    fail(k, "a pruned configuration is refused with %s, \"%.300s\", which "
         "does not give its reason \"%.300s\"", ts_strerror(st),
         ts_sched_errmsg(s), pruned);
}

/* The schedule a text gives, with the configuration's text after the run
 * (malloc'd) and whether it was pruned for the same reason as cfg. */
static ts_sched *schedule_of(knob_case *k, const char *text, char **again,
                             bool *same_reason, const ts_config *cfg) {
  char err[256];
  ts_config *c = ts_config_parse(text, err, sizeof(err));
  if (!c) {
    fail(k, "the configuration's text \"%s\" does not parse: %s", text, err);
    return NULL;
  }
  ts_sched *s = ts_space_schedule(k->space, k->def, c);
  *again = ts_config_text(c);
  *same_reason = same_text(ts_config_pruned(c), ts_config_pruned(cfg));
  ts_config_free(c);
  return s;
}

/* The configuration's text parses back to the same configuration: the
 * same text, the same verdict and the same schedule (its trace).  Returns
 * the schedule of the text, which the program reproduces. */
static ts_sched *parsed_back(knob_case *k, ts_sched *s, const char *text,
                             const ts_config *cfg) {
  char *again = NULL;
  bool same_reason = false;
  ts_sched *t = schedule_of(k, text, &again, &same_reason, cfg);
  if (!t)
    return NULL;
  char *want = ts_print_trace(s), *got = ts_print_trace(t);
  if (!same_text(text, again))
    fail(k, "the configuration \"%s\" parses back as \"%s\"", text,
         or_none(again));
  else if (!same_reason || ts_sched_status(s) != ts_sched_status(t) ||
           strcmp(ts_sched_errmsg(s), ts_sched_errmsg(t)) != 0)
    fail(k, "the configuration's text gives another verdict: %s \"%.300s\" "
         "for %s \"%.300s\"", ts_strerror(ts_sched_status(t)),
         ts_sched_errmsg(t), ts_strerror(ts_sched_status(s)),
         ts_sched_errmsg(s));
  else if (!same_text(want, got))
    fail(k, "the configuration's text gives another schedule:\n%s\nfor\n%s",
         or_none(got), or_none(want));
  free(again);
  free(want);
  free(got);
  return t;
}

/* The configuration drawn, made as the tuner makes it, then from its
 * text: the text's schedule is the case's. */
static ts_sched *drawn_case(knob_case *k, ts_config *cfg) {
  char *text = ts_config_text(cfg);
  const char *why = ts_config_pruned(cfg);
  char *enumerated = why ? strdup(why) : NULL;
  if (!text || (why && !enumerated)) {
    fail(k, "out of memory");
    free(text);
    return NULL;
  }
  char note[512];
  snprintf(note, sizeof(note), "drawn knob by knob; %s%s",
           why ? "pruned: " : "kept by the space", why ? why : "");
  write_program(k, text, note);
  ts_sched *s = ts_space_schedule(k->space, k->def, cfg);
  check_verdict(k, s, cfg, enumerated);
  ts_sched *t = parsed_back(k, s, text, cfg);
  ts_sched_free(s);
  free(enumerated);
  free(text);
  return t;
}

/* ---- Configurations written wrong ---------------------------------------- */

typedef struct wrong {
  ts_buf text;
  char want[512]; /* the parser's error, or the start of the refusal */
  bool parses;
  ts_status status; /* where it parses: the space's refusal */
} wrong;

/* The configuration's name=value pairs, knob p's value replaced by
 * `value` (p -1: none). */
static void write_pairs(ts_buf *b, const ts_config *cfg, int p,
                        const char *value) {
  for (int i = 0; i < ts_config_knob_count(cfg); i++)
    ts_buf_printf(b, "%s%s=%s", i ? "," : "", ts_config_knob_name(cfg, i),
                  i == p ? value : ts_config_knob_value(cfg, i));
}

/* Whether any configuration gives knob `name` the value `value`. */
/* Whether `value` is one the space gives knob `name`: anywhere in its
 * enumeration cs[0..n), or, where it was walked (cs NULL), in cfg's run. */
static bool is_value_of(ts_config **cs, int n, const ts_config *cfg,
                        const char *name, const char *value) {
  if (!cs) {
    for (int p = 0; p < ts_config_knob_count(cfg); p++)
      if (strcmp(ts_config_knob_name(cfg, p), name) == 0) {
        const char *list = config_knob_values(cfg, p);
        size_t len = strlen(value);
        for (const char *at = list; at;) {
          if (strncmp(at, value, len) == 0 && (at[len] == ',' || !at[len]))
            return true;
          if ((at = strstr(at, ", ")))
            at += 2;
        }
      }
    return false;
  }
  for (int i = 0; i < n; i++)
    for (int p = 0; p < ts_config_knob_count(cs[i]); p++)
      if (strcmp(ts_config_knob_name(cs[i], p), name) == 0 &&
          strcmp(ts_config_knob_value(cs[i], p), value) == 0)
        return true;
  return false;
}

/* A value that knob p takes nowhere in the space at this definition. */
static bool wrong_value(knob_case *k, ts_config **cs, int n,
                        const ts_config *cfg, wrong *w) {
  static const char *const values[] = {"48", "0", "-1", "x", "64x64",
                                       "k_innermost"};
  enum { NVALUES = sizeof(values) / sizeof(values[0]) };
  int count = ts_config_knob_count(cfg);
  if (count == 0)
    return false;
  int p = (int)fz_pick(k->src, (uint32_t)count);
  const char *name = ts_config_knob_name(cfg, p);
  for (int v = (int)fz_pick(k->src, NVALUES), tries = 0; tries < NVALUES;
       v = (v + 1) % NVALUES, tries++) {
    if (is_value_of(cs, n, cfg, name, values[v]))
      continue;
    write_pairs(&w->text, cfg, p, values[v]);
    snprintf(w->want, sizeof(w->want), "ts_space_schedule: %s: %s=%s is not "
             "one of its values (", k->space->name, name, values[v]);
    w->parses = true;
    w->status = TS_ERR_PRUNED;
    return true;
  }
  return false;
}

static bool declares(const ts_config *cfg, const char *name) {
  for (int i = 0; i < ts_config_knob_count(cfg); i++)
    if (strcmp(ts_config_knob_name(cfg, i), name) == 0)
      return true;
  return false;
}

/* A knob the space does not declare at this definition: another space's,
 * one of a larger shape, or none at all. */
static void absent_knob(knob_case *k, const ts_config *cfg, wrong *w) {
  static const char *const names[] = {"nope", "swizzle", "splitk", "bm",
                                      "block", "partition"};
  enum { NNAMES = sizeof(names) / sizeof(names[0]) };
  int v = (int)fz_pick(k->src, NNAMES);
  while (declares(cfg, names[v]))
    v = (v + 1) % NNAMES; /* "nope" ends it */
  write_pairs(&w->text, cfg, -1, NULL);
  ts_buf_printf(&w->text, "%s%s=8", ts_config_knob_count(cfg) ? "," : "",
                names[v]);
  snprintf(w->want, sizeof(w->want), "ts_space_schedule: %s: the space has "
           "no knob \"%s\"", k->space->name, names[v]);
  w->parses = true;
  w->status = TS_ERR_UNKNOWN_KNOB;
}

/* Text that ts_config_parse refuses: an item without a value, or a knob
 * given twice. */
static void unparsable(knob_case *k, const ts_config *cfg, wrong *w) {
  write_pairs(&w->text, cfg, -1, NULL);
  const char *sep = ts_config_knob_count(cfg) ? "," : "";
  if (ts_config_knob_count(cfg) && fz_pick(k->src, 2)) {
    const char *name = ts_config_knob_name(cfg, 0);
    ts_buf_printf(&w->text, ",%s=%s", name, ts_config_knob_value(cfg, 0));
    snprintf(w->want, sizeof(w->want), "ts_config_parse: knob \"%s\" given "
             "twice", name);
  } else {
    ts_buf_printf(&w->text, "%sbm", sep);
    snprintf(w->want, sizeof(w->want), "ts_config_parse: \"bm\" is not "
             "name=value");
  }
  w->parses = false;
}

/* Refused as it should be: by the parser with its error, or by the space
 * with TS_ERR_PRUNED (a value it does not take) or TS_ERR_UNKNOWN_KNOB (a
 * knob it does not declare) and a message naming the knob. */
static ts_sched *check_wrong(knob_case *k, const char *text, const wrong *w) {
  char err[256];
  ts_config *c = ts_config_parse(text, err, sizeof(err));
  if (!w->parses) {
    if (c || strcmp(err, w->want) != 0)
      fail(k, "ts_config_parse(\"%s\") gave %s \"%s\"; expected NULL and "
           "\"%s\"", text, c ? "a configuration" : "NULL", err, w->want);
    ts_config_free(c);
    return NULL;
  }
  if (!c) {
    fail(k, "ts_config_parse(\"%s\") refused it: %s", text, err);
    return NULL;
  }
  ts_sched *s = ts_space_schedule(k->space, k->def, c);
  const char *msg = ts_sched_errmsg(s);
  if (ts_sched_status(s) != w->status ||
      strncmp(msg, w->want, strlen(w->want)) != 0)
    fail(k, "\"%s\" gave %s \"%.300s\"; expected %s \"%s...\"", text,
         ts_strerror(ts_sched_status(s)), msg, ts_strerror(w->status),
         w->want);
  ts_config_free(c);
  return s;
}

/* An accepted configuration written wrong in one of four ways. */
static ts_sched *wrong_case(knob_case *k, ts_config **cs, int n,
                            const ts_config *cfg) {
  wrong w = {.parses = true};
  ts_buf_init(&w.text);
  uint32_t way = fz_pick(k->src, 3);
  if (way == 2)
    unparsable(k, cfg, &w);
  else if (way == 1 || !wrong_value(k, cs, n, cfg, &w))
    absent_knob(k, cfg, &w);
  char *text = ts_buf_take(&w.text);
  if (!text) {
    fail(k, "out of memory");
    return NULL;
  }
  char note[600];
  snprintf(note, sizeof(note), "written wrong on purpose; expected: %s%s%s%s",
           !w.parses ? "NULL"
           : w.status == TS_ERR_UNKNOWN_KNOB ? "TS_ERR_UNKNOWN_KNOB"
                                             : "TS_ERR_PRUNED",
           ", \"", w.want,
           w.parses ? "...\"" : "\"");
  write_program(k, text, note);
  ts_sched *s = check_wrong(k, text, &w);
  free(text);
  return s;
}

/* ---- The case ------------------------------------------------------------ */

ts_sched *fz_knob_schedule(fz_source *src, const ts_gemm *def, ts_buf *prog,
                           char *why, size_t whylen) {
  knob_case k = {.src = src, .def = def, .prog = prog, .why = why,
                 .whylen = whylen};
  k.space = ts_space_at((int)fz_pick(src, (uint32_t)ts_space_count()));
  ts_config **cs = NULL, *walked = NULL;
  int n = ts_space_enumerate(k.space, def, ENUMERATE_LIMIT, &cs);
  if (n < 0)
    walked = walk_config(src, k.space, def);
  if (n == 0 || (n < 0 && !walked)) {
    fail(&k, "ts_space_enumerate(%s) gave %d%s", k.space->name, n,
         n < 0 ? ", and its walk no configuration" : "");
    return NULL;
  }
  ts_config *cfg = walked ? walked : cs[draw_config(src, cs, n)];
  ts_sched *s = !ts_config_pruned(cfg) && fz_pick(src, 100) < WRONG_PERCENT
                    ? wrong_case(&k, cs, n, cfg)
                    : drawn_case(&k, cfg);
  if (walked)
    ts_config_free(walked);
  else
    ts_space_free_configs(cs, n);
  return s;
}
