/*
 * Parsing and validating option values: shapes, layouts, numbers and the
 * files of hand-written kernels (names.c checks the schedules' names).  Each error is one line on stderr naming the option and
 * what it got; the caller exits with status 2.
 */
#include "options.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    ts_gemm *g = &o->shapes[i];
    int layout = o->shape_layout[i], dtype = o->shape_dtype[i];
    g->layout = layout >= 0 ? (ts_layout)layout : o->layout;
    g->alpha = o->alpha;
    g->beta = o->beta;
    g->a_type = g->b_type = dtype == TS_DTYPE_TF32_LINE ? TS_F32
                            : dtype >= 0                 ? (ts_dtype)dtype
                                                         : o->ab_type;
    g->math = dtype == TS_DTYPE_TF32_LINE ? TS_MATH_TF32
              : dtype >= 0                ? TS_MATH_F32
                                          : o->math;
    g->c_type = o->c_type;
    g->runtime = o->runtime;
    g->runtime_multiple = o->runtime_multiple;
    g->runtime_ld_multiple = o->runtime_ld_multiple;
  }
}

/* One word after a line's shape: a layout or a type, into *layout or
 * *dtype; false when it is neither or says one twice. */
static bool shape_word(const char *w, int *layout, int *dtype) {
  int v;
  if ((v = ts_layout_parse(w)) >= 0 && *layout < 0)
    *layout = v;
  else if (strcmp(w, "tf32") == 0 && *dtype < 0)
    *dtype = TS_DTYPE_TF32_LINE;
  else if ((v = ts_dtype_parse(w)) >= 0 && *dtype < 0)
    *dtype = v;
  else
    return false;
  return true;
}

/* A line of --shapes-from (its newline gone) into shape i of o; false
 * with a message. */
static bool shape_line(const char *path, int line, char *text, cli_opts *o) {
  char *save, *w = strtok_r(text, " \t", &save);
  int i = o->nshapes;
  bool ok = w && cli_parse_shape(w, &o->shapes[i]);
  if (!ok)
    fprintf(stderr, "tessel: %s:%d: a line is MxNxK [layout] [dtype]\n",
            path, line);
  while (ok && (w = strtok_r(NULL, " \t", &save)))
    if (!shape_word(w, &o->shape_layout[i], &o->shape_dtype[i])) {
      fprintf(stderr, "tessel: %s:%d: '%s' is neither a layout (NN, NT, TN, "
              "TT) nor a type (f32, f16, bf16, tf32), or says one twice\n",
              path, line, w);
      ok = false;
    }
  o->nshapes += ok;
  return ok;
}

bool cli_read_shapes(const char *path, cli_opts *o) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "tessel: --shapes-from %s: %s\n", path, strerror(errno));
    return false;
  }
  char text[512];
  bool ok = true;
  for (int line = 1; ok && fgets(text, sizeof(text), f); line++) {
    text[strcspn(text, "#\r\n")] = 0;
    if (strspn(text, " \t") == strlen(text))
      continue;
    if (o->nshapes == MAX_SHAPES) {
      fprintf(stderr, "tessel: %s:%d: at most %d shapes a run\n", path, line,
              MAX_SHAPES);
      ok = false;
    } else {
      ok = shape_line(path, line, text, o);
    }
  }
  fclose(f);
  if (ok && o->nshapes == 0)
    fprintf(stderr, "tessel: --shapes-from %s holds no shape\n", path);
  return ok && o->nshapes > 0;
}

bool cli_parse_float(const char *opt, const char *text, float *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(fabs(v) <= FLT_MAX)) {
    fprintf(stderr, "tessel: %s must be a finite number within fp32's "
            "range (got '%s')\n", opt, text);
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

bool cli_check_output(const char *opt, const char *path) {
  struct stat st;
  const char *why = NULL;
  if (!*path) {
    why = "the name is empty";
  } else if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      why = "it is a directory";
    else if (access(path, W_OK) != 0)
      why = strerror(errno);
  } else {
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
      slash[slash == dir] = 0; /* "/x" is in "/" */
    if (!dir)
      why = "out of memory";
    else if (access(slash ? dir : ".", W_OK | X_OK) != 0)
      why = strerror(errno);
    free(dir);
  }
  if (why)
    fprintf(stderr, "tessel: %s must name a file tessel can write (got "
            "'%s': %s)\n", opt, path, why);
  return why == NULL;
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

/* The GPU whose tuning records --tuned reads, or NULL (without --tuned, or
 * without a GPU: the spaces' first configurations are used, with a
 * message). */
ts_gpu *cli_gpu_for_records(const cli_opts *o) {
  if (!o->tuned)
    return NULL;
  ts_gpu *g = ts_gpu_open();
  if (ts_gpu_status(g) == TS_OK)
    return g;
  ts_gpu_close(g);
  return NULL;
}
