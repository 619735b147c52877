/*
 * Parsing and validating option values: shapes, layouts, numbers,
 * schedule names and the files of hand-written kernels.  Each error is one line on stderr naming the option and
 * what it got; the caller exits with status 2.
 */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool parse_dim(const char **p, int64_t *out) {
  if (**p < '0' || **p > '9')
    return false;
  errno = 0;
  char *end;
  long long v = strtoll(*p, &end, 10);
  if (errno || v < 1 || v > 0x7fffffff)
    return false;
  *out = v;
  *p = end;
  return true;
}

bool cli_parse_shape(const char *text, ts_gemm *out) {
  const char *p = text;
  int64_t d[3];
  for (int i = 0; i < 3; i++) {
    if (!parse_dim(&p, &d[i]) || (i < 2 && *p++ != 'x')) {
      fprintf(stderr, "tessel: --shape must be MxNxK with each of M, N, K in "
              "1..2147483647 (got '%s')\n", text);
      return false;
    }
  }
  if (*p) {
    fprintf(stderr, "tessel: --shape must be MxNxK with each of M, N, K in "
            "1..2147483647 (got '%s')\n", text);
    return false;
  }
  *out = ts_gemm_make(d[0], d[1], d[2]);
  return true;
}

void cli_finish_shapes(cli_opts *o, int64_t m, int64_t n, int64_t k) {
  if (o->nshapes == 0)
    o->shapes[o->nshapes++] = ts_gemm_make(m, n, k);
  for (int i = 0; i < o->nshapes; i++) {
    o->shapes[i].layout = o->layout;
    o->shapes[i].alpha = o->alpha;
    o->shapes[i].beta = o->beta;
    o->shapes[i].a_type = o->shapes[i].b_type = o->ab_type;
    o->shapes[i].c_type = o->c_type;
  }
}

bool cli_parse_float(const char *opt, const char *text, float *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !isfinite(v)) {
    fprintf(stderr, "tessel: %s must be a finite number (got '%s')\n", opt,
            text);
    return false;
  }
  *out = (float)v;
  return true;
}

bool cli_parse_int(const char *opt, const char *text, int lo, int hi,
                   int *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    fprintf(stderr, "tessel: %s must be an integer in %d..%d (got '%s')\n",
            opt, lo, hi, text);
    return false;
  }
  *out = (int)v;
  return true;
}

bool cli_read_cu(const char *path, char **source, char **label) {
  *source = *label = NULL;
  errno = 0;
  FILE *f = fopen(path, "rb");
  long size = -1;
  if (f && fseek(f, 0, SEEK_END) == 0)
    size = ftell(f);
  bool ok = size >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
            (*source = malloc((size_t)size + 1)) &&
            fread(*source, 1, (size_t)size, f) == (size_t)size;
  int err = errno;
  if (f)
    fclose(f);
  if (!ok) {
    fprintf(stderr, "tessel: cannot read --cu %s: %s\n", path,
            err ? strerror(err) : "short read");
    free(*source);
    *source = NULL;
    return false;
  }
  (*source)[size] = 0;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t len = strlen(base);
  if (len > 3 && strcmp(base + len - 3, ".cu") == 0)
    len -= 3;
  if (!(*label = strndup(base, len))) {
    fprintf(stderr, "tessel: out of memory\n");
    free(*source);
    *source = NULL;
    return false;
  }
  return true;
}

/* The space a command-line name ("SPACE" or "SPACE:CONFIG") names, with
 * its configuration text (NULL without one); NULL for anything else. */
static const ts_space *space_named(const char *name, char *base, size_t len,
                                   const char **config) {
  const char *colon = strchr(name, ':');
  size_t n = colon ? (size_t)(colon - name) : strlen(name);
  if (n >= len)
    return NULL;
  memcpy(base, name, n);
  base[n] = 0;
  *config = colon ? colon + 1 : NULL;
  return ts_space_find(base);
}

/* A schedule's name: a built-in, or a space with a configuration that
 * parses; false with a message on stderr. */
static bool check_schedule_name(const char *name) {
  char base[128], err[256];
  const char *config;
  if (ts_builtin_find(name))
    return true;
  if (!space_named(name, base, sizeof(base), &config)) {
    fprintf(stderr, "tessel: unknown schedule '%s' (tessel list shows the "
            "schedules, tessel tune --list the spaces)\n", name);
    return false;
  }
  ts_config *c = config ? ts_config_parse(config, err, sizeof(err)) : NULL;
  if (config && !c) {
    fprintf(stderr, "tessel: %s: %s\n", name, err);
    return false;
  }
  ts_config_free(c);
  return true;
}

/* ---- Schedule files ---------------------------------------------------------- */

enum { MAX_FILES = 16, MAX_NAMES = 256 };

/* The files named on the command line, each opened (compiled, loaded)
 * once; and the names list with each FILE.c expanded to its schedules. */
static struct {
  char *path;
  ts_schedule_file *file;
} files[MAX_FILES];
static int nfiles;
static char *expanded[MAX_NAMES];
static int nexpanded;

static void close_files(void) {
  for (int i = 0; i < nfiles; i++) {
    ts_schedule_file_close(files[i].file);
    free(files[i].path);
  }
  for (int i = 0; i < nexpanded; i++)
    free(expanded[i]);
  nfiles = nexpanded = 0;
}

/* The length of the path in "PATH.c" or "PATH.c:NAME"; 0 for other names. */
static size_t file_part(const char *name) {
  const char *colon = strrchr(name, ':');
  size_t n = colon ? (size_t)(colon - name) : strlen(name);
  return n > 2 && name[n - 2] == '.' && name[n - 1] == 'c' ? n : 0;
}

/* The file of that path, opened the first time it is asked for; NULL with
 * the reason (the compiler's diagnostics) on stderr. */
static ts_schedule_file *file_at(const char *name, size_t len) {
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
  if (ts_schedule_file_status(f) == TS_OK)
    return f;
  fprintf(stderr, "tessel: %s\n", ts_schedule_file_errmsg(f));
  return NULL;
}

static bool add_name(const char *text, size_t len, const char *suffix) {
  if (nexpanded == MAX_NAMES) {
    fprintf(stderr, "tessel: more than %d schedules\n", MAX_NAMES);
    return false;
  }
  size_t n = len + (suffix ? strlen(suffix) + 1 : 0) + 1;
  char *s = malloc(n);
  if (!s)
    return false;
  snprintf(s, n, "%.*s%s%s", (int)len, text, suffix ? ":" : "",
           suffix ? suffix : "");
  expanded[nexpanded++] = s;
  return true;
}

/* FILE.c:NAME as itself, FILE.c as each of its schedules; an exit status,
 * or -1 when the name is good. */
static int expand_file_name(const char *name, size_t len) {
  ts_schedule_file *f = file_at(name, len);
  if (!f)
    return EXIT_FAIL;
  if (name[len] == ':') {
    if (ts_schedule_file_find(f, name + len + 1))
      return add_name(name, strlen(name), NULL) ? -1 : EXIT_FAIL;
    fprintf(stderr, "tessel: %.*s defines no schedule '%s'; it defines",
            (int)len, name, name + len + 1);
    for (int i = 0; i < ts_schedule_file_count(f); i++)
      fprintf(stderr, "%s %s", i ? "," : "", ts_schedule_file_at(f, i)->name);
    fputc('\n', stderr);
    return EXIT_USAGE;
  }
  for (int i = 0; i < ts_schedule_file_count(f); i++)
    if (!add_name(name, len, ts_schedule_file_at(f, i)->name))
      return EXIT_FAIL;
  return -1;
}

int cli_check_names(cli_opts *o, bool spaces) {
  for (int i = 0; i < o->nnames; i++) {
    const char *name = o->names[i];
    size_t len = spaces ? 0 : file_part(name);
    int rc = len ? expand_file_name(name, len)
             : add_name(name, strlen(name), NULL) ? -1 : EXIT_FAIL;
    if (rc >= 0)
      return rc;
    if (!len && !spaces && !check_schedule_name(name))
      return EXIT_USAGE;
    if (spaces && !ts_space_find(name)) {
      fprintf(stderr, "tessel: unknown space '%s' (tessel tune --list shows "
              "them)\n", name);
      return EXIT_USAGE;
    }
  }
  o->names = expanded;
  o->nnames = nexpanded;
  return -1;
}

/* The schedule of "FILE.c:NAME" (expanded by cli_check_names). */
static ts_sched *file_schedule(const char *name, size_t len,
                               const ts_gemm *g) {
  ts_schedule_file *f = file_at(name, len);
  const ts_builtin *def = f ? ts_schedule_file_find(f, name + len + 1) : NULL;
  ts_sched *s = ts_matmul_named(g, def ? def->name : name);
  if (def && ts_sched_status(s) == TS_OK)
    def->apply(s);
  return s;
}

/* The configuration --tuned asks for: the record of this GPU, space and
 * definition, else NULL (the space's first values) with a message. */
static ts_config *tuned_config(const ts_space *sp, const ts_gemm *g,
                               const ts_gpu *gpu) {
  char *text = gpu ? ts_tune_record_load(gpu, sp->name, g, NULL) : NULL;
  char err[256];
  ts_config *c = text ? ts_config_parse(text, err, sizeof(err)) : NULL;
  if (!c)
    fprintf(stderr, "tessel: no tuning record of %s at %lldx%lldx%lld %s%s%s; "
            "using its first configuration (tessel tune %s makes one)\n",
            sp->name, (long long)g->m, (long long)g->n, (long long)g->k,
            ts_layout_name(g->layout), gpu ? " on " : " (no GPU to ask)",
            gpu ? ts_gpu_name(gpu) : "", sp->name);
  free(text);
  return c;
}

ts_sched *cli_schedule(const cli_opts *o, const char *name, const ts_gemm *g,
                       const ts_gpu *gpu) {
  char base[128], err[256];
  const char *config;
  size_t file = file_part(name);
  if (file)
    return file_schedule(name, file, g);
  const ts_space *sp = space_named(name, base, sizeof(base), &config);
  /* A built-in that is also a space (warptiled) is the space's first
   * configuration unless a configuration or --tuned asks for another. */
  if (!sp || (ts_builtin_find(name) && !config && !o->tuned))
    return ts_builtin_schedule(name, g);
  ts_config *c = config ? ts_config_parse(config, err, sizeof(err))
                 : o->tuned ? tuned_config(sp, g, gpu)
                            : NULL;
  ts_sched *s = ts_space_schedule(sp, g, c);
  ts_config_free(c);
  return s;
}
