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
 * done), so that an interrupted run resumes where it stopped.  Every
 * runner of a run journals on its own device; the lead reads the others'
 * journals of the same key but for the device (tune_journal_peers).
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
#include "tune_impl.h"

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

/* The cache directory's tune/ folder; false without one. */
static bool tune_dir(char *dir, size_t len) {
  char base[3072];
  if (!kcache_dir(base, sizeof(base)))
    return false;
  int n = snprintf(dir, len, "%s/tune", base);
  return n > 0 && (size_t)n < len;
}

/* The record's directory (made when `make`) and its file for key, with
 * the extension ext ("txt", "journal"). */
static bool record_path(const char *key, const char *ext, bool make,
                        char *dir, size_t dirlen, char *path, size_t len) {
  if (!tune_dir(dir, dirlen) || (make && !kcache_make_dirs(dir)))
    return false;
  int n = snprintf(path, len, "%s/%016llx.%s", dir,
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

/* fn(path, text, ctx) for each file in dir whose name ends in ext, its
 * text read (max bytes at most), until fn returns false. */
static void each_file(const char *dir, const char *ext, size_t max,
                      bool (*fn)(const char *path, const char *text,
                                 void *ctx),
                      void *ctx) {
  DIR *d = opendir(dir);
  size_t elen = strlen(ext);
  bool more = true;
  for (struct dirent *e; more && d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len <= elen || strcmp(e->d_name + len - elen, ext) != 0)
      continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    char *text = read_small_file(path, max);
    more = !text || fn(path, text, ctx);
    free(text);
  }
  if (d)
    closedir(d);
}

/* What records_like gathers. */
typedef struct {
  const char *key;
  const ts_gemm *def;
  near_record *out;
  int n, cap;
} like_scan;

/* A record whose key is s->key's but for the shape, added; false when out
 * of memory (s->n -1). */
static bool add_like(const char *path, const char *text, void *ctx) {
  (void)path;
  like_scan *s = ctx;
  near_record r = {0};
  if (!same_but_shape(s->key, text, r.d) ||
      !(r.config = line_value(text, "config")))
    return true;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    near_record *grown = realloc(s->out, sizeof(*s->out) * (size_t)s->cap);
    if (!grown) {
      free(r.config);
      s->n = -1;
      return false;
    }
    s->out = grown;
  }
  r.distance = shape_distance(s->def, r.d);
  s->out[s->n++] = r;
  return true;
}

/* Every record in dir whose key is key's but for the shape, into *out
 * (malloc'd); how many, -1 when out of memory. */
static int records_like(const char *dir, const char *key, const ts_gemm *def,
                        near_record **out) {
  like_scan s = {.key = key, .def = def};
  each_file(dir, ".txt", MAX_RECORD, add_like, &s);
  *out = s.out;
  return s.n;
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

/* The journal's text, its key first, and its key in *key (both
 * malloc'd; NULL when there is none). */
static char *read_journal(const ts_gpu *g, const char *space,
                          const ts_gemm *def, char **key) {
  char path[4096];
  return journal_path(g, space, def, false, key, path, sizeof(path))
             ? read_small_file(path, MAX_JOURNAL)
             : NULL;
}

/* The journal's key without the device: the key of every device's of g's
 * model (its first lines); the device's own in *own.  Both malloc'd;
 * false when out of memory. */
static bool journal_keys(const ts_gpu *g, const char *space,
                         const ts_gemm *def, char **model, char **own) {
  char path[4096];
  *model = g && space && def ? record_key(g, space, def) : NULL;
  *own = NULL;
  if (*model)
    journal_path(g, space, def, false, own, path, sizeof(path));
  return *model && *own;
}

/* The lines of a journal's text when it is another device's of the model
 * at this key: its key is `model` and a device line that is not `own`'s;
 * NULL otherwise. */
static const char *peer_lines(const char *text, const char *model,
                              const char *own) {
  size_t n = strlen(model), mine = strlen(own);
  if (strncmp(text, model, n) != 0 || strncmp(text + n, "device ", 7) != 0 ||
      (mine > n && strncmp(text, own, mine) == 0))
    return NULL;
  const char *nl = strchr(text + n, '\n');
  return nl ? nl + 1 : NULL;
}

/* A peer's whole lines (a torn last one left out) added to b. */
static void add_peer(ts_buf *b, const char *text, const char *model,
                     const char *own) {
  const char *lines = peer_lines(text, model, own);
  const char *end = lines ? strrchr(lines, '\n') : NULL;
  if (end)
    ts_buf_printf(b, "%.*s", (int)(end + 1 - lines), lines);
}

/* What scan_peers looks for and does. */
typedef struct {
  const char *model, *own;
  ts_buf *b; /* NULL: remove them */
} peer_scan;

static bool take_peer(const char *path, const char *text, void *ctx) {
  const peer_scan *s = ctx;
  if (!s->b && peer_lines(text, s->model, s->own))
    unlink(path);
  else if (s->b)
    add_peer(s->b, text, s->model, s->own);
  return true;
}

/* Each journal file in dir that is a peer's: its lines added to b, or
 * the file removed where b is NULL. */
static void scan_peers(const char *dir, const char *model, const char *own,
                       ts_buf *b) {
  peer_scan s = {.model = model, .own = own, .b = b};
  each_file(dir, ".journal", MAX_JOURNAL, take_peer, &s);
}

char *tune_journal_peers(const ts_gpu *g, const char *space,
                         const ts_gemm *def, const char *sent, size_t nsent) {
  char *model, *own, dir[3200];
  ts_buf b;
  ts_buf_init(&b);
  if (journal_keys(g, space, def, &model, &own)) {
    if (tune_dir(dir, sizeof(dir)))
      scan_peers(dir, model, own, &b);
    for (size_t at = 0; sent && at < nsent; at += strlen(sent + at) + 1)
      add_peer(&b, sent + at, model, own);
  }
  free(model);
  free(own);
  return ts_buf_take(&b);
}

void tune_journal_remove_all(const ts_gpu *g, const char *space,
                             const ts_gemm *def) {
  char *model, *own, dir[3200];
  if (journal_keys(g, space, def, &model, &own) && tune_dir(dir, sizeof(dir)))
    scan_peers(dir, model, own, NULL);
  free(model);
  free(own);
  ts_tune_journal_remove(g, space, def);
}

char *tune_journal_text(const ts_gpu *g, const char *space,
                        const ts_gemm *def) {
  char *key;
  char *text = read_journal(g, space, def, &key);
  free(key);
  return text;
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
  char *key;
  char *text = read_journal(g, space, def, &key);
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
