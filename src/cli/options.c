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
    o->shapes[i].layout = o->layout;
    o->shapes[i].alpha = o->alpha;
    o->shapes[i].beta = o->beta;
    o->shapes[i].a_type = o->shapes[i].b_type = o->ab_type;
    o->shapes[i].math = o->math;
    o->shapes[i].c_type = o->c_type;
  }
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
