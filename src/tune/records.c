/*
 * Tuning records: a text file per GPU, space and definition under the cache
 * directory's tune/ folder, named by a hash of its key and holding the key
 * itself (so a hash collision reads as no record), then the configuration
 * and its speed:
 *
 *   tessel tuning record
 *   gpu NVIDIA H200, driver 13000
 *   tessel 0.1.0
 *   space seed003
 *   def 1024x1024x1024 NN alpha 1 beta 0 f32 f32 f32 f32
 *   config block=32x32x32,thread=8x4,order=k_innermost
 *   tflops 12.79
 *
 * Written to a temporary file and renamed, as kernel cache entries are.
 *
 * Beside it, while `tessel tune` works on the definition, a journal (the
 * same key and the device's UUID: a record serves any GPU of the model, a
 * journal is one device's; then one line per configuration timed, appended as each is
 * done), so that an interrupted run resumes where it stopped.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/strbuf.h"
#include "../../runtime/gpu_impl.h"
#include "../compile/kernel_cache.h"

enum { MAX_RECORD = 1 << 16, MAX_JOURNAL = 1 << 24 };

/* Everything a record is for, as its first lines; NULL when out of memory. */
static char *record_key(const ts_gpu *g, const char *space,
                        const ts_gemm *d) {
  ts_buf b;
  ts_buf_init(&b);
  ts_buf_printf(&b, "tessel tuning record\ngpu %s, driver %d\ntessel %s\n"
                "space %s\ndef %lldx%lldx%lld %s alpha %.9g beta %.9g %s %s "
                "%s %s%s\n", g->name, g->driver_version, TESSEL_VERSION, space,
                (long long)d->m, (long long)d->n, (long long)d->k,
                ts_layout_name(d->layout), (double)d->alpha, (double)d->beta,
                ts_dtype_name(d->a_type), ts_dtype_name(d->b_type),
                ts_dtype_name(d->c_type), ts_dtype_name(d->acc_type),
                d->math == TS_MATH_TF32 ? " tf32" : "");
  return ts_buf_take(&b);
}

/* The record's directory (made when `make`) and its file for key, with
 * the extension ext ("txt", "journal"). */
static bool record_path(const char *key, const char *ext, bool make,
                        char *dir, size_t dirlen, char *path, size_t len) {
  char base[3072];
  if (!kcache_dir(base, sizeof(base)))
    return false;
  int n = snprintf(dir, dirlen, "%s/tune", base);
  if (n <= 0 || (size_t)n >= dirlen || (make && !kcache_make_dirs(dir)))
    return false;
  n = snprintf(path, len, "%s/%016llx.%s", dir,
               (unsigned long long)kcache_fnv1a(KCACHE_FNV_SEED, key,
                                                strlen(key)), ext);
  return n > 0 && (size_t)n < len;
}

ts_status ts_tune_record_save(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *config,
                              double tflops) {
  if (!g || !space || !def || !config || strchr(config, '\n'))
    return TS_ERR_NULL_ARG;
  char *key = record_key(g, space, def);
  char dir[3200], path[4096], tmp[4200];
  ts_status st = TS_ERR_BAD_ARG;
  if (key &&
      record_path(key, "txt", true, dir, sizeof(dir), path, sizeof(path)) &&
      snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) < (int)sizeof(tmp)) {
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f) {
      bool ok = fprintf(f, "%sconfig %s\ntflops %.4f\n", key, config,
                        tflops) > 0;
      ok = fclose(f) == 0 && ok;
      if (ok && rename(tmp, path) == 0)
        st = TS_OK;
      else
        unlink(tmp);
    } else if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
  }
  free(key);
  return st;
}

static char *read_small_file(const char *path, size_t max) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  char *text = malloc(max + 1);
  size_t n = text ? fread(text, 1, max, f) : 0;
  fclose(f);
  if (text)
    text[n] = 0;
  return text;
}

/* The value of the line "name value" in text, malloc'd, or NULL. */
static char *line_value(const char *text, const char *name) {
  size_t len = strlen(name);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (strncmp(p, name, len) == 0 && p[len] == ' ')
      return strndup(p + len + 1, strcspn(p + len + 1, "\n"));
  return NULL;
}

char *ts_tune_record_load(const ts_gpu *g, const char *space,
                          const ts_gemm *def, double *tflops) {
  if (tflops)
    *tflops = 0;
  if (!g || !space || !def)
    return NULL;
  char *key = record_key(g, space, def);
  char dir[3200], path[4096];
  char *text = key && record_path(key, "txt", false, dir, sizeof(dir), path,
                                  sizeof(path))
                   ? read_small_file(path, MAX_RECORD)
                   : NULL;
  char *config = NULL;
  if (text && strncmp(text, key, strlen(key)) == 0) {
    const char *rest = text + strlen(key);
    config = line_value(rest, "config");
    char *speed = line_value(rest, "tflops");
    if (speed && tflops)
      *tflops = atof(speed);
    free(speed);
  }
  free(text);
  free(key);
  return config;
}

/* ---- The nearest record ---------------------------------------------------- */

/* A record of another shape: how far, its shape and its configuration. */
typedef struct {
  double distance;
  int64_t d[3];
  char *config;
} near_record;

/* Whether text (a record) has key's lines but for the shape on the def
 * line; that shape in d. */
static bool same_but_shape(const char *key, const char *text, int64_t d[3]) {
  const char *def = strstr(key, "\ndef ");
  if (!def || strncmp(text, key, (size_t)(def - key) + 5) != 0)
    return false;
  const char *p = text + (def - key) + 5;
  long long m, n, k;
  int used = 0;
  if (sscanf(p, "%lldx%lldx%lld%n", &m, &n, &k, &used) != 3)
    return false;
  const char *rest = def + 5 + strcspn(def + 5, " ");
  size_t len = strcspn(rest, "\n");
  d[0] = m, d[1] = n, d[2] = k;
  return strncmp(p + used, rest, len) == 0 && p[used + len] == '\n';
}

/* How far shape d is from def's: the sum over M, N and K of how many times
 * larger one is than the other, as logarithms. */
static double shape_distance(const ts_gemm *def, const int64_t d[3]) {
  const int64_t a[3] = {def->m, def->n, def->k};
  double s = 0;
  for (int i = 0; i < 3; i++)
    s += fabs(log((double)d[i] / (double)a[i]));
  return s;
}

static int by_distance(const void *a, const void *b) {
  const near_record *x = a, *y = b;
  if (x->distance != y->distance)
    return x->distance < y->distance ? -1 : 1;
  for (int i = 0; i < 3; i++)
    if (x->d[i] != y->d[i])
      return x->d[i] < y->d[i] ? -1 : 1;
  return 0;
}

/* Every record in dir whose key is key's but for the shape, into *out
 * (malloc'd); how many, -1 when out of memory. */
static int records_like(const char *dir, const char *key, const ts_gemm *def,
                        near_record **out) {
  DIR *d = opendir(dir);
  int n = 0, cap = 0;
  *out = NULL;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".txt") != 0)
      continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    char *text = read_small_file(path, MAX_RECORD);
    near_record r = {0};
    if (text && same_but_shape(key, text, r.d) &&
        (r.config = line_value(text, "config"))) {
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        near_record *grown = realloc(*out, sizeof(**out) * (size_t)cap);
        if (!grown) {
          free(r.config);
          free(text);
          n = -1;
          break;
        }
        *out = grown;
      }
      r.distance = shape_distance(def, r.d);
      (*out)[n++] = r;
    }
    free(text);
  }
  if (d)
    closedir(d);
  return n;
}

char *ts_tune_record_nearest(const ts_gpu *g, const char *space,
                             const ts_gemm *def, int rank, ts_gemm *tuned_at) {
  if (!g || !space || !def || rank < 0)
    return NULL;
  char *key = record_key(g, space, def);
  char dir[3200], path[4096];
  near_record *all = NULL;
  int n = key && record_path(key, "txt", false, dir, sizeof(dir), path,
                             sizeof(path))
              ? records_like(dir, key, def, &all)
              : 0;
  char *config = NULL;
  if (n > 0)
    qsort(all, (size_t)n, sizeof(*all), by_distance);
  if (rank < n) {
    config = all[rank].config;
    all[rank].config = NULL;
    if (tuned_at) {
      *tuned_at = *def;
      tuned_at->m = all[rank].d[0];
      tuned_at->n = all[rank].d[1];
      tuned_at->k = all[rank].d[2];
    }
  }
  for (int i = 0; i < n; i++)
    free(all[i].config);
  free(all);
  free(key);
  return config;
}

/* ---- The journal of a run ---------------------------------------------------- */

/* The journal's path for this GPU, space and definition, and its key;
 * false when out of memory or without a cache directory. */
static bool journal_path(const ts_gpu *g, const char *space,
                         const ts_gemm *def, bool make, char **key,
                         char *path, size_t len) {
  char dir[3200];
  *key = g && space && def ? record_key(g, space, def) : NULL;
  /* A journal is the device's (two H100s time apart), a record the
   * model's: the journal's key names the device's UUID too. */
  if (*key && g->uuid[0]) {
    ts_buf b;
    ts_buf_init(&b);
    ts_buf_printf(&b, "%sdevice %s\n", *key, g->uuid);
    free(*key);
    *key = ts_buf_take(&b);
  }
  return *key &&
         record_path(*key, "journal", make, dir, sizeof(dir), path, len);
}

/* Writes all of text to fd; false on an error. */
static bool write_all(int fd, const char *text, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, text, n);
    if (w <= 0)
      return false;
    text += w;
    n -= (size_t)w;
  }
  return true;
}

ts_status ts_tune_journal_add(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *line) {
  char *key, path[4096];
  if (!line || strchr(line, '\n'))
    return TS_ERR_BAD_ARG;
  if (!journal_path(g, space, def, true, &key, path, sizeof(path))) {
    free(key);
    return TS_ERR_IO;
  }
  /* The first writer puts the key at the top; each line is one append, so
   * an interrupted run leaves whole lines (and at worst a torn last one,
   * which the reader's parser rejects). */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644);
  bool ok = fd < 0 || write_all(fd, key, strlen(key));
  if (fd < 0)
    fd = open(path, O_WRONLY | O_APPEND);
  ts_buf b;
  ts_buf_init(&b);
  ts_buf_printf(&b, "%s\n", line);
  char *text = ts_buf_take(&b);
  ok = ok && fd >= 0 && text && write_all(fd, text, strlen(text));
  if (fd >= 0)
    close(fd);
  free(text);
  free(key);
  return ok ? TS_OK : TS_ERR_IO;
}

char *ts_tune_journal_load(const ts_gpu *g, const char *space,
                           const ts_gemm *def) {
  char *key, path[4096];
  char *text = journal_path(g, space, def, false, &key, path, sizeof(path))
                   ? read_small_file(path, MAX_JOURNAL)
                   : NULL;
  char *lines = NULL;
  if (text && strncmp(text, key, strlen(key)) == 0)
    lines = strdup(text + strlen(key));
  free(text);
  free(key);
  return lines;
}

void ts_tune_journal_remove(const ts_gpu *g, const char *space,
                            const ts_gemm *def) {
  char *key, path[4096];
  if (journal_path(g, space, def, false, &key, path, sizeof(path)))
    unlink(path);
  free(key);
}
