/*
 * What a name on the command line stands for, and the schedule it gives.
 * A name is one of
 *
 *   NAME                  a built-in schedule, or a built-in space at its
 *                         first configuration (with --tuned, its record)
 *   SPACE:knob=v,...      a built-in space's configuration
 *   FILE.c                each schedule and space the file defines
 *   FILE.c:NAME           one of them
 *   FILE.c:SPACE:knob=v,...  a configuration of the file's space
 *
 * The file part is the name up to the first ".c" that ends it or is
 * followed by ':'.  Files are compiled and loaded once each (tessel.h,
 * "Schedule files") when the names are checked, and stay loaded until the
 * command exits.  A file's space is tuned and recorded under its name and
 * the hash of the file's text ("tiles@0123456789abcdef"), so that editing
 * the file starts its records afresh.  Each error is one line on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/nearest.h"
#include "options.h"

enum { MAX_FILES = 16, MAX_NAMES = 256, NAME_LEN = 128 };

/* The files named on the command line, each opened (compiled, loaded)
 * once; and the names list with each FILE.c expanded. */
static struct {
  char *path;
  ts_schedule_file *file;
  /* Per space: why it declares a knob wrongly (malloc'd), or NULL; such a
   * space fails alone, its file's other schedules and spaces run. */
  char **bad;
} files[MAX_FILES];
static int nfiles;
static char *expanded[MAX_NAMES];
static int nexpanded;

/* What a name stands for: a schedule, a space, or (a built-in such as
 * warptiled) both; a space's configuration text. */
typedef struct {
  const ts_builtin *sched;
  const ts_space *space;
  const ts_schedule_file *file; /* where they come from; NULL: built-in */
  const char *config;           /* after the second ':', or NULL */
  const char *bad; /* why the file's space declares a knob wrongly, or NULL */
} target;

/* The per-space messages of a file of n spaces. */
static void free_bad(char **bad, int n) {
  for (int i = 0; bad && i < n; i++)
    free(bad[i]);
  free(bad);
}

static ts_sched *space_schedule(const target *t, const ts_gemm *g,
                                ts_config *c);

static void close_files(void) {
  for (int i = 0; i < nfiles; i++) {
    free_bad(files[i].bad, ts_schedule_file_space_count(files[i].file));
    ts_schedule_file_close(files[i].file);
    free(files[i].path);
  }
  for (int i = 0; i < nexpanded; i++)
    free(expanded[i]);
  nfiles = nexpanded = 0;
}

/* The length of the path in "PATH.c", "PATH.c:..."; 0 for other names. */
static size_t file_part(const char *name) {
  for (const char *p = strstr(name, ".c"); p; p = strstr(p + 1, ".c"))
    if (p > name && (p[2] == 0 || p[2] == ':'))
      return (size_t)(p + 2 - name);
  return 0;
}

/* ---- Files --------------------------------------------------------------------- */

/* Another file already open that defines a space of one of f's spaces'
 * names: two spaces of one name would read the same in a report (the same
 * text under another path is the same space). */
static bool space_names_clash(const ts_schedule_file *f, const char *path) {
  for (int s = 0; s < ts_schedule_file_space_count(f); s++) {
    const char *name = ts_schedule_file_space_at(f, s)->name;
    for (int i = 0; i < nfiles; i++)
      if (ts_schedule_file_space_find(files[i].file, name) &&
          strcmp(ts_schedule_file_hash(files[i].file),
                 ts_schedule_file_hash(f)) != 0) {
        fprintf(stderr, "tessel: %s and %s both define a space '%s'; rename "
                "one\n", files[i].path, path, name);
        return true;
      }
  }
  return false;
}

/* A knob the space declares wrongly shows in its first configuration, at
 * the first shape given (else 1024^3): found once, when the file loads,
 * and kept in bad[] (a space a message or NULL) for each command to say
 * where it uses the space, so the file's other schedules and spaces still
 * run.  The space runs in a child (isolate.c); one that crashes there is
 * said to when its schedule is built, not here.  NULL when out of
 * memory. */
static char **find_bad_knobs(const ts_schedule_file *f, const char *path,
                             const cli_opts *o) {
  ts_gemm g = o->nshapes ? o->shapes[0] : ts_gemm_make(1024, 1024, 1024);
  int n = ts_schedule_file_space_count(f);
  char **bad = calloc((size_t)n + 1, sizeof(*bad)); /* NULL: no memory */
  for (int s = 0; bad && s < n; s++) {
    char err[64];
    ts_config *c = ts_config_parse("", err, sizeof(err));
    ts_sched *sc = cli_isolated_schedule(path, NULL,
                                         ts_schedule_file_space_at(f, s), &g,
                                         c);
    if (ts_sched_status(sc) == TS_ERR_BAD_KNOB &&
        !(bad[s] = strdup(ts_sched_errmsg(sc)))) {
      free_bad(bad, n);
      bad = NULL;
    }
    ts_sched_free(sc);
    ts_config_free(c);
  }
  return bad;
}

/* Why the space of an open file declares a knob wrongly, or NULL. */
static const char *bad_knob_of(const ts_schedule_file *f,
                               const ts_space *sp) {
  for (int i = 0; f && sp && i < nfiles; i++)
    for (int s = 0; files[i].file == f && files[i].bad &&
                    s < ts_schedule_file_space_count(f);
         s++)
      if (ts_schedule_file_space_at(f, s) == sp)
        return files[i].bad[s];
  return NULL;
}

/* The file of that path, opened the first time it is asked for; NULL with
 * the reason (the compiler's diagnostics) on stderr. */
static ts_schedule_file *file_at(const char *name, size_t len,
                                 const cli_opts *o) {
  for (int i = 0; i < nfiles; i++)
    if (strlen(files[i].path) == len && strncmp(files[i].path, name, len) == 0)
      return ts_schedule_file_status(files[i].file) == TS_OK ? files[i].file
                                                             : NULL;
  if (nfiles == MAX_FILES) {
    fprintf(stderr, "tessel: more than %d schedule files\n", MAX_FILES);
    return NULL;
  }
  if (nfiles == 0)
    atexit(close_files);
  char *path = strndup(name, len);
  ts_schedule_file *f = path ? ts_schedule_file_open(path) : NULL;
  if (!f) {
    free(path);
    fprintf(stderr, "tessel: out of memory\n");
    return NULL;
  }
  files[nfiles].path = path;
  files[nfiles++].file = f;
  if (ts_schedule_file_status(f) != TS_OK) {
    fprintf(stderr, "tessel: %s\n", ts_schedule_file_errmsg(f));
    return NULL;
  }
  if (space_names_clash(f, path)) {
    files[nfiles - 1].file = NULL; /* asked again, it fails again */
    ts_schedule_file_close(f);
    return NULL;
  }
  if (!(files[nfiles - 1].bad = find_bad_knobs(f, path, o))) {
    fprintf(stderr, "tessel: out of memory\n");
    files[nfiles - 1].file = NULL; /* not left open with no record of it */
    ts_schedule_file_close(f);
    return NULL;
  }
  return f;
}

/* The path of an open file. */
static const char *path_of(const ts_schedule_file *f) {
  for (int i = 0; i < nfiles; i++)
    if (files[i].file == f)
      return files[i].path;
  return "?";
}

/* The file a name's path names, already open. */
static const ts_schedule_file *open_file(const char *name, size_t len) {
  for (int i = 0; i < nfiles; i++)
    if (strlen(files[i].path) == len && strncmp(files[i].path, name, len) == 0)
      return files[i].file;
  return NULL;
}

/* ---- Names --------------------------------------------------------------------- */

/* The item and configuration of a name past its file part: "NAME" or
 * "NAME:CONFIG"; false when the item does not fit. */
static bool split_item(const char *rest, char *item, const char **config) {
  const char *colon = strchr(rest, ':');
  size_t n = colon ? (size_t)(colon - rest) : strlen(rest);
  if (n >= NAME_LEN)
    return false;
  memcpy(item, rest, n);
  item[n] = 0;
  *config = colon ? colon + 1 : NULL;
  return true;
}

/* What a name stands for (its file open already); false when nothing. */
static bool resolve(const char *name, target *t) {
  char item[NAME_LEN];
  size_t len = file_part(name);
  *t = (target){0};
  if (!split_item(len ? name + len + (name[len] == ':') : name, item,
                  &t->config))
    return false;
  if (len) {
    t->file = open_file(name, len);
    t->sched = ts_schedule_file_find(t->file, item);
    t->space = ts_schedule_file_space_find(t->file, item);
    t->bad = bad_knob_of(t->file, t->space);
  } else {
    t->sched = ts_builtin_find(item);
    t->space = ts_space_find(item);
  }
  return t->sched || t->space;
}

static bool add_name(const char *text, size_t len, const char *suffix) {
  if (nexpanded == MAX_NAMES) {
    fprintf(stderr, "tessel: more than %d schedules\n", MAX_NAMES);
    return false;
  }
  size_t n = len + (suffix ? strlen(suffix) + 1 : 0) + 1;
  char *s = malloc(n);
  if (!s) {
    fprintf(stderr, "tessel: out of memory\n");
    return false;
  }
  snprintf(s, n, "%.*s%s%s", (int)len, text, suffix ? ":" : "",
           suffix ? suffix : "");
  expanded[nexpanded++] = s;
  return true;
}

/* The name nearest `item` among a file's schedules (unless spaces_only)
 * and spaces, or among the built-ins (f NULL); NULL when none is near. */
static const char *nearest_item(const ts_schedule_file *f, const char *item,
                                bool spaces_only) {
  const char *names[2 * MAX_NAMES];
  int n = 0;
  int ns = f ? ts_schedule_file_count(f) : ts_builtin_count();
  int nsp = f ? ts_schedule_file_space_count(f) : ts_space_count();
  for (int i = 0; !spaces_only && i < ns && n < 2 * MAX_NAMES; i++)
    names[n++] = f ? ts_schedule_file_at(f, i)->name : ts_builtin_at(i)->name;
  for (int i = 0; i < nsp && n < 2 * MAX_NAMES; i++)
    names[n++] = f ? ts_schedule_file_space_at(f, i)->name
                   : ts_space_at(i)->name;
  return ts_nearest_name(item, names, n);
}

/* "; it defines rows, serial and the spaces tiles" after a name the file
 * lacks ("; did you mean 'rows'? It defines ..." where one is near), and
 * the newline. */
static void list_file_names(const ts_schedule_file *f, const char *item,
                            bool spaces_only) {
  int ns = spaces_only ? 0 : ts_schedule_file_count(f);
  int nsp = ts_schedule_file_space_count(f);
  const char *near = nearest_item(f, item, spaces_only);
  if (near)
    fprintf(stderr, "; did you mean '%s'? It defines", near);
  else
    fputs(ns + nsp ? "; it defines" : "", stderr);
  for (int i = 0; i < ns; i++)
    fprintf(stderr, "%s %s", i ? "," : "", ts_schedule_file_at(f, i)->name);
  for (int i = 0; i < nsp; i++)
    fprintf(stderr, "%s %s%s", i ? "," : ns ? ";" : "",
            i ? "" : nsp > 1 ? "the spaces " : "the space ",
            ts_schedule_file_space_at(f, i)->name);
  fputc('\n', stderr);
}

/* FILE.c as each of its schedules (not for tune) and spaces; false with a
 * message when that is none.  tune leaves out, said, a space that declares
 * a knob wrongly (the other commands give it a failed row), and fails
 * when that leaves none. */
static bool expand_file(const ts_schedule_file *f, const char *name,
                        size_t len, bool spaces, cli_opts *o) {
  if (spaces && ts_schedule_file_space_count(f) == 0) {
    fprintf(stderr, "tessel: %.*s defines no space to tune; write "
            "TS_SPACE(name, \"...\") { ... } (see docs/tuning.md)\n",
            (int)len, name);
    return false;
  }
  for (int i = 0; !spaces && i < ts_schedule_file_count(f); i++)
    if (!add_name(name, len, ts_schedule_file_at(f, i)->name))
      return false;
  int added = 0;
  for (int i = 0; i < ts_schedule_file_space_count(f); i++) {
    const ts_space *sp = ts_schedule_file_space_at(f, i);
    const char *bad = spaces ? bad_knob_of(f, sp) : NULL;
    if (bad) {
      fprintf(stderr, "tessel: %.*s:%s: %s; not tuned\n", (int)len, name,
              sp->name, bad);
      o->names_failed = true;
    } else if (!add_name(name, len, sp->name)) {
      return false;
    } else {
      added++;
    }
  }
  return !spaces || added > 0;
}

/* Why the target cannot run as the options ask, or NULL: a tensor-core
 * schedule or space needs A and B narrower than exact f32. */
static const char *why_not_runnable(const target *t, bool spaces,
                                    const cli_opts *o) {
  bool tensor = (t->sched && t->sched->tensor_cores) ||
                (t->space && t->space->tensor_cores && (spaces || !t->sched));
  if (tensor && o->ab_type == TS_F32 && o->math != TS_MATH_TF32)
    return "needs --dtype f16, bf16 or tf32: it runs on tensor cores, "
           "which do not take exact f32";
  return NULL;
}

const char *cli_cannot_run(const cli_opts *o, const char *name) {
  target t;
  return resolve(name, &t) ? why_not_runnable(&t, false, o) : NULL;
}

/* Whether the names in a configuration given for t's space are its knobs,
 * as a run of it with that configuration declares them at some shape
 * given (else 1024^3; a knob may exist at some shapes only): a name that
 * is not, a typo, is said with the nearest knob. */
static bool knobs_known(const char *name, const target *t,
                        const cli_opts *o) {
  char err[256];
  ts_config *c = ts_config_parse(t->config, err, sizeof(err));
  ts_sched *first = NULL;
  bool known = !c || t->bad != NULL; /* said elsewhere */
  for (int i = 0; !known && i < (o->nshapes ? o->nshapes : 1); i++) {
    ts_gemm g = o->nshapes ? o->shapes[i] : ts_gemm_make(1024, 1024, 1024);
    ts_sched *s = space_schedule(t, &g, c);
    known = ts_sched_status(s) != TS_ERR_UNKNOWN_KNOB;
    if (first)
      ts_sched_free(s);
    else
      first = s;
  }
  if (!known)
    fprintf(stderr, "tessel: %s: %s\n", name, ts_sched_errmsg(first));
  ts_sched_free(first);
  ts_config_free(c);
  return known;
}

/* What a name that stands for nothing gets: the names near it. */
static void say_unknown(const char *name, size_t len,
                        const ts_schedule_file *f, bool spaces) {
  char item[NAME_LEN] = "";
  const char *config;
  split_item(f ? name + len + 1 : name, item, &config);
  if (f) {
    fprintf(stderr, "tessel: %.*s defines no %s '%s'", (int)len, name,
            spaces ? "space" : "schedule or space", name + len + 1);
    list_file_names(f, item, spaces);
    return;
  }
  const char *near = nearest_item(NULL, item, spaces);
  fprintf(stderr, "tessel: unknown %s '%s'%s%s%s (%s)\n",
          spaces ? "space" : "schedule", name, near ? "; did you mean '" : "",
          near ? near : "", near ? "'?" : "",
          spaces ? "tessel tune --list shows them"
                 : "tessel list shows the schedules, tessel tune --list the "
                   "spaces");
}

/* Whether the command refuses t as the options ask it (said): check and
 * bench give a tensor-core schedule without --dtype a row of its own that
 * says so (cli_cannot_run), the others refuse it. */
static bool refused_here(const target *t, const char *name, bool spaces,
                         const cli_opts *o) {
  bool rows = o->command & (CLI_CHECK | CLI_BENCH);
  if (rows || !why_not_runnable(t, spaces, o))
    return false;
  fprintf(stderr, "tessel: %s runs on tensor cores, which take --dtype f16, "
          "bf16 or tf32 (fp32 rounded to tf32), not exact f32\n", name);
  return true;
}

/* A configuration given: it parses, and names the space's knobs. */
static bool config_good(const char *name, const target *t,
                        const cli_opts *o) {
  char err[256];
  ts_config *c = ts_config_parse(t->config, err, sizeof(err));
  if (!c) {
    fprintf(stderr, "tessel: %s: %s\n", name, err);
    return false;
  }
  ts_config_free(c);
  return knobs_known(name, t, o);
}

/* What resolved to t: -1 when the command takes it, else an exit status
 * with a message. */
static int check_target(const target *t, const char *name, bool spaces,
                        const cli_opts *o) {
  if (refused_here(t, name, spaces, o))
    return EXIT_USAGE;
  if (spaces && (!t->space || t->config)) {
    fprintf(stderr, "tessel: tune takes a space, not %s ('%s'); give "
            "SPACE, FILE.c or FILE.c:SPACE\n",
            t->config ? "a configuration" : "a schedule", name);
    return EXIT_USAGE;
  }
  if (t->config && !t->space) {
    fprintf(stderr, "tessel: %.*s is a schedule, not a space: it takes no "
            "knob=value,... (got '%s')\n", (int)(t->config - 1 - name),
            name, name);
    return EXIT_USAGE;
  }
  if (t->config && !config_good(name, t, o))
    return EXIT_USAGE;
  if (spaces && t->bad) {
    fprintf(stderr, "tessel: %s: %s\n", name, t->bad);
    return EXIT_FAIL;
  }
  if (t->sched && !t->space && o->tuned)
    fprintf(stderr, "tessel: %s is a schedule with no knobs, not a space: "
            "--tuned, which reads a space's tuning record, leaves it as it "
            "is written\n", name);
  return -1;
}

/* FILE.c: each of its schedules and spaces checked as a name of its own
 * would be; -1 when good. */
static int check_file(const ts_schedule_file *f, const char *name,
                      size_t len, bool spaces, cli_opts *o) {
  int from = nexpanded;
  if (!expand_file(f, name, len, spaces, o))
    return o->names_failed ? EXIT_FAIL : EXIT_USAGE;
  for (int i = from; i < nexpanded; i++) {
    target t;
    int rc = resolve(expanded[i], &t)
                 ? check_target(&t, expanded[i], spaces, o)
                 : EXIT_FAIL;
    if (rc >= 0)
      return rc;
  }
  return -1;
}

/* A name checked: -1 when it is good (added to the expanded list), else an
 * exit status with a message. */
static int check_name(const char *name, bool spaces, cli_opts *o) {
  size_t len = file_part(name);
  const ts_schedule_file *f = len ? file_at(name, len, o) : NULL;
  if (len && !f)
    return EXIT_FAIL;
  if (len && !name[len])
    return check_file(f, name, len, spaces, o);
  target t;
  if (!resolve(name, &t)) {
    say_unknown(name, len, f, spaces);
    return EXIT_USAGE;
  }
  int rc = check_target(&t, name, spaces, o);
  if (rc >= 0)
    return rc;
  return add_name(name, strlen(name), NULL) ? -1 : EXIT_FAIL;
}

int cli_check_names(cli_opts *o, bool spaces) {
  for (int i = 0; i < o->nnames; i++) {
    int rc = check_name(o->names[i], spaces, o);
    if (rc >= 0)
      return rc;
  }
  o->names = expanded;
  o->nnames = nexpanded;
  return -1;
}

/* ---- Spaces and their records -------------------------------------------------- */

const ts_space *cli_space(const char *name) {
  target t;
  return resolve(name, &t) ? t.space : NULL;
}

/* The open file that defines sp, or -1 (a built-in). */
static int file_of(const ts_space *sp) {
  for (int i = 0; sp && i < nfiles; i++)
    if (ts_schedule_file_space_find(files[i].file, sp->name) == sp)
      return i;
  return -1;
}

const char *cli_space_key(const ts_space *sp) {
  static char key[NAME_LEN + 24];
  int i = file_of(sp);
  if (i < 0)
    return sp ? sp->name : NULL;
  snprintf(key, sizeof(key), "%s@%s", sp->name,
           ts_schedule_file_hash(files[i].file));
  return key;
}

const char *cli_space_name(const ts_space *sp) {
  static char name[4096];
  int i = file_of(sp);
  if (i < 0)
    return sp ? sp->name : NULL;
  snprintf(name, sizeof(name), "%s:%s", files[i].path, sp->name);
  return name;
}

/* The schedule of t's space at configuration c for g; failed with the
 * reason when the space declares a knob wrongly (without a configuration
 * its knobs would just take their first values). */
static ts_sched *space_schedule(const target *t, const ts_gemm *g,
                                ts_config *c) {
  if (t->bad) {
    ts_sched *s = ts_matmul_named(g, t->space->name);
    ts_sched_fail(s, TS_ERR_BAD_KNOB, t->bad);
    return s;
  }
  return t->file ? cli_isolated_schedule(path_of(t->file), NULL, t->space, g, c)
                 : ts_space_schedule(t->space, g, c);
}

/* How near shape b is to a: the largest factor between their sizes. */
static double nearness(const ts_gemm *a, const ts_gemm *b) {
  const double x[3] = {(double)a->m, (double)a->n, (double)a->k};
  const double y[3] = {(double)b->m, (double)b->n, (double)b->k};
  double most = 1;
  for (int i = 0; i < 3; i++) {
    double f = x[i] > y[i] ? x[i] / y[i] : y[i] / x[i];
    most = f > most ? f : most;
  }
  return most;
}

/* Where g was not tuned: the record of the nearest tuned shape of the
 * same space, types and layout whose configuration the space takes at g
 * (a knob may exist only at some shapes), said on stderr; else NULL. */
static ts_config *nearest_config(const char *name, const target *t,
                                 const ts_gemm *g, const ts_gpu *gpu) {
  ts_gemm at;
  char *text;
  for (int rank = 0;
       (text = ts_tune_record_nearest(gpu, cli_space_key(t->space), g, rank,
                                      &at));
       rank++) {
    char err[256];
    ts_config *c = ts_config_parse(text, err, sizeof(err));
    ts_sched *s = c ? space_schedule(t, g, c) : NULL;
    bool takes = s && ts_sched_status(s) == TS_OK;
    ts_sched_free(s);
    free(text);
    if (takes) {
      fprintf(stderr, "tessel: no tuning record of %s at %lldx%lldx%lld %s "
              "on %s; using the record of the nearest tuned shape, "
              "%lldx%lldx%lld (each size within a factor of %.3g)\n", name,
              (long long)g->m, (long long)g->n, (long long)g->k,
              ts_layout_name(g->layout), ts_gpu_name(gpu), (long long)at.m,
              (long long)at.n, (long long)at.k, nearness(g, &at));
      return c;
    }
    ts_config_free(c);
  }
  return NULL;
}

/* The configuration --tuned asks for: the record of this GPU, space and
 * definition, else the nearest tuned shape's, else NULL (the space's
 * first values) with a message. */
static ts_config *tuned_config(const char *name, const target *t,
                               const ts_gemm *g, const ts_gpu *gpu) {
  const ts_space *sp = t->space;
  char *text = gpu ? ts_tune_record_load(gpu, cli_space_key(sp), g, NULL)
                   : NULL;
  char err[256];
  ts_config *c = text ? ts_config_parse(text, err, sizeof(err)) : NULL;
  if (!c && gpu && !text)
    c = nearest_config(name, t, g, gpu);
  if (!c)
    fprintf(stderr, "tessel: no tuning record of %s at %lldx%lldx%lld %s%s%s; "
            "using its first configuration (tessel tune %s makes one)\n",
            name, (long long)g->m, (long long)g->n, (long long)g->k,
            ts_layout_name(g->layout), gpu ? " on " : " (no GPU to ask)",
            gpu ? ts_gpu_name(gpu) : "", name);
  free(text);
  return c;
}

ts_sched *cli_schedule(const cli_opts *o, const char *name, const ts_gemm *g,
                       const ts_gpu *gpu) {
  target t;
  if (!resolve(name, &t)) /* cli_check_names let it through: not here */
    return ts_builtin_schedule(name, g);
  /* A name that is both (warptiled) is the schedule unless a configuration
   * or --tuned asks for the space. */
  if (t.sched && !t.config && (!t.space || !o->tuned)) {
    if (!t.file)
      return ts_builtin_schedule(name, g);
    return cli_isolated_schedule(path_of(t.file), t.sched, NULL, g, NULL);
  }
  char err[256];
  ts_config *c = t.config ? ts_config_parse(t.config, err, sizeof(err))
                 : o->tuned ? tuned_config(name, &t, g, gpu)
                            : NULL;
  ts_sched *s = space_schedule(&t, g, c);
  ts_config_free(c);
  return s;
}

/* ---- tessel list FILE.c ------------------------------------------------------------ */

int cli_list_file(const char *path) {
  cli_opts none = {0};
  size_t len = file_part(path);
  if (len != strlen(path)) {
    fprintf(stderr, "tessel: list takes FILE.c (a C file of schedules and "
            "spaces) or nothing (got '%s')\n", path);
    return EXIT_USAGE;
  }
  const ts_schedule_file *f = file_at(path, len, &none);
  if (!f)
    return EXIT_FAIL;
  for (int i = 0; i < ts_schedule_file_count(f); i++)
    printf("%s:%-16s schedule  %s\n", path, ts_schedule_file_at(f, i)->name,
           ts_schedule_file_at(f, i)->summary);
  int rc = 0;
  for (int i = 0; i < ts_schedule_file_space_count(f); i++) {
    const ts_space *sp = ts_schedule_file_space_at(f, i);
    printf("%s:%-16s space     %s\n", path, sp->name, sp->summary);
    ts_gemm g = ts_gemm_make(1024, 1024, 1024);
    const char *bad = bad_knob_of(f, sp);
    if (bad)
      fprintf(stderr, "tessel: %s:%s: %s\n", path, sp->name, bad);
    if (bad || !cli_isolated_knobs(path, sp, &g, "    "))
      rc = EXIT_FAIL; /* said; the next space is listed still */
  }
  return rc;
}
