/*
 * Reading the record of a run (record.h): the document parsed by
 * jansson, checked against the schema (each field's presence and type,
 * from the tables below, which docs/records.md follows), then flattened
 * into rows: per shape cuBLAS's row and each schedule's, or each
 * configuration of a tune record.
 */
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The schema ----------------------------------------------------------- */

enum {
  T_STR = 1,   /* a string */
  T_INT = 2,   /* an integer */
  T_NUM = 4,   /* a number, integer or real */
  T_OBJ = 8,   /* an object */
  T_ARR = 16,  /* an array */
  T_NULL = 32, /* null */
  T_BOOL = 64, /* true or false */
  OPTIONAL = 128,
};

typedef struct {
  const char *key;
  int types; /* T_* that are allowed, and OPTIONAL */
} field;

static const field top_fields[] = {
    {"schema", T_INT}, {"kind", T_STR}, {"tessel", T_OBJ},
    {"date", T_STR},   {"command", T_ARR}, {"gpu", T_OBJ},
    {"cuda", T_OBJ},   {"warmup", T_INT},  {"repeats", T_INT},
    {"seed", T_INT},   {"shapes", T_ARR},  {NULL, 0}};
static const field tessel_fields[] = {
    {"version", T_STR}, {"git", T_STR}, {NULL, 0}};
static const field gpu_fields[] = {
    {"name", T_STR}, {"arch", T_STR}, {"sm_count", T_INT},
    {"clock_khz", T_INT}, {"memory_clock_khz", T_INT},
    {"sensors", T_OBJ | OPTIONAL}, {NULL, 0}};
static const field sensors_fields[] = {
    {"start", T_OBJ | T_NULL}, {"end", T_OBJ | T_NULL},
    {"unavailable", T_STR | OPTIONAL}, {NULL, 0}};
static const field reading_fields[] = {
    {"sm_mhz", T_INT}, {"memory_mhz", T_INT}, {"temperature_c", T_INT},
    {"power_w", T_NUM}, {NULL, 0}};
/* gpu.sensors' two readings, as record_clocks indexes them. */
static const char *const reading_keys[2] = {"start", "end"};
static const field cuda_fields[] = {
    {"driver", T_STR | T_NULL}, {"toolkit", T_STR | T_NULL},
    {"nvrtc", T_STR | T_NULL}, {NULL, 0}};
static const field shape_fields[] = {
    {"shape", T_STR},  {"m", T_INT},      {"n", T_INT},
    {"k", T_INT},      {"layout", T_STR}, {"a_type", T_STR},
    {"b_type", T_STR}, {"c_type", T_STR}, {"alpha", T_NUM},
    {"beta", T_NUM},   {"cublas", T_OBJ | T_NULL},
    {"math", T_STR | OPTIONAL}, {"error", T_STR | OPTIONAL},
    {"cublas_c_type", T_STR | OPTIONAL}, {NULL, 0}};
static const field timing_fields[] = {
    {"median_ms", T_NUM}, {"min_ms", T_NUM | T_NULL},
    {"max_ms", T_NUM | T_NULL}, {"tflops", T_NUM},
    {"ratio_to_cublas", T_NUM | T_NULL}, {"times_ms", T_ARR | OPTIONAL},
    {NULL, 0}};
static const field row_fields[] = {
    {"name", T_STR}, {"kind", T_STR}, {"trace", T_STR | T_NULL},
    {"cu_hash", T_STR | T_NULL}, {"status", T_STR},
    {"error", T_STR | OPTIONAL}, {"timing", T_OBJ | OPTIONAL},
    {"max_rel_err", T_NUM | T_STR | T_NULL | OPTIONAL},
    {"tolerance", T_NUM | OPTIONAL},
    {"ptxas", T_OBJ | T_NULL | OPTIONAL}, {NULL, 0}};
static const field config_fields[] = {
    {"config", T_STR}, {"state", T_STR}, {"why", T_STR | OPTIONAL},
    {"first_pass", T_OBJ | OPTIONAL}, {"full", T_OBJ | OPTIONAL},
    {"resumed", T_BOOL | OPTIONAL},
    {"max_rel_err", T_NUM | T_STR | OPTIONAL}, {NULL, 0}};

static int type_of(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_STRING: return T_STR;
  case JSON_INTEGER: return T_INT | T_NUM;
  case JSON_REAL: return T_NUM;
  case JSON_OBJECT: return T_OBJ;
  case JSON_ARRAY: return T_ARR;
  case JSON_NULL: return T_NULL;
  default: return T_BOOL;
  }
}

static const char *type_name(int types) {
  types &= ~OPTIONAL;
  return types == T_STR                ? "a string"
         : types == T_INT              ? "an integer"
         : types == T_NUM              ? "a number"
         : types == T_OBJ              ? "an object"
         : types == T_ARR              ? "an array"
         : types == T_BOOL             ? "true or false"
         : types == (T_STR | T_NULL)   ? "a string or null"
         : types == (T_OBJ | T_NULL)   ? "an object or null"
         : types == (T_NUM | T_STR)    ? "a number, \"inf\" or \"nan\""
         : types & T_STR               ? "a number, \"inf\", \"nan\" or null"
                                       : "a number or null";
}

/* Each field of the table in obj (at path): present unless optional, and
 * of an allowed type. */
static bool check_fields(const json_t *obj, const field *f, const char *path,
                         char *err, size_t len) {
  if (!json_is_object(obj)) {
    snprintf(err, len, "%s: expected an object", *path ? path : "the top level");
    return false;
  }
  for (; f->key; f++) {
    const json_t *v = json_object_get(obj, f->key);
    if (!v && !(f->types & OPTIONAL)) {
      snprintf(err, len, "%s%s%s: missing", path, *path ? "." : "", f->key);
      return false;
    }
    if (v && !(type_of(v) & f->types)) {
      snprintf(err, len, "%s%s%s: expected %s", path, *path ? "." : "",
               f->key, type_name(f->types));
      return false;
    }
  }
  return true;
}

/* gpu.sensors, where present: two readings, each an object or null, and
 * where there is no reading at the start, why. */
static bool check_sensors(const json_t *gpu, char *err, size_t len) {
  const json_t *s = json_object_get(gpu, "sensors");
  if (!s)
    return true;
  if (!check_fields(s, sensors_fields, "gpu.sensors", err, len))
    return false;
  for (int i = 0; i < 2; i++) {
    const json_t *r = json_object_get(s, reading_keys[i]);
    char at[32];
    snprintf(at, sizeof(at), "gpu.sensors.%s", reading_keys[i]);
    if (json_is_object(r) && !check_fields(r, reading_fields, at, err, len))
      return false;
  }
  if (json_is_null(json_object_get(s, "start")) &&
      !json_object_get(s, "unavailable")) {
    snprintf(err, len, "gpu.sensors.unavailable: missing (the start has "
             "no reading, and a record says why)");
    return false;
  }
  return true;
}

/* A timing, where present under key; required when `required`. */
static bool check_timing(const json_t *obj, const char *key, bool required,
                         const char *path, char *err, size_t len) {
  const json_t *t = json_object_get(obj, key);
  char at[128];
  snprintf(at, sizeof(at), "%s.%s", path, key);
  if (!t && required) {
    snprintf(err, len, "%s: missing", at);
    return false;
  }
  if (!t || json_is_null(t))
    return true;
  if (!check_fields(t, timing_fields, at, err, len))
    return false;
  size_t i;
  const json_t *x;
  json_array_foreach(json_object_get(t, "times_ms"), i, x) {
    if (!json_is_number(x)) {
      snprintf(err, len, "%s.times_ms[%zu]: expected a number", at, i);
      return false;
    }
  }
  return true;
}

/* A row's max_rel_err, where a string: "inf" or "nan" (record.c). */
static bool check_error_text(const json_t *row, const char *path, char *err,
                             size_t len) {
  const char *text = json_string_value(json_object_get(row, "max_rel_err"));
  if (!text || strcmp(text, "inf") == 0 || strcmp(text, "nan") == 0)
    return true;
  snprintf(err, len, "%s.max_rel_err: expected a number, \"inf\", \"nan\" "
           "or null (got \"%s\")", path, text);
  return false;
}

/* A row that ran ("ok", or "differs": over the tolerance) has a timing. */
static bool check_row(const json_t *row, const char *path, char *err,
                      size_t len) {
  if (!check_fields(row, row_fields, path, err, len))
    return false;
  const char *status = json_string_value(json_object_get(row, "status"));
  bool ran = strcmp(status, "ok") == 0 || strcmp(status, "differs") == 0;
  return check_error_text(row, path, err, len) &&
         check_timing(row, "timing", ran, path, err, len);
}

static bool check_config(const json_t *c, const char *path, char *err,
                         size_t len) {
  return check_fields(c, config_fields, path, err, len) &&
         check_error_text(c, path, err, len) &&
         check_timing(c, "first_pass", false, path, err, len) &&
         check_timing(c, "full", false, path, err, len);
}

/* A shape and its rows (bench) or configurations (tune). */
static bool check_shape(const json_t *shape, bool tune, const char *path,
                        char *err, size_t len) {
  if (!check_fields(shape, shape_fields, path, err, len) ||
      !check_timing(shape, "cublas", true, path, err, len))
    return false;
  const char *key = tune ? "configurations" : "rows";
  const json_t *list = json_object_get(shape, key);
  if (!json_is_array(list)) {
    snprintf(err, len, "%s.%s: %s", path, key,
             list ? "expected an array" : "missing");
    return false;
  }
  size_t i;
  const json_t *x;
  json_array_foreach(list, i, x) {
    char at[128];
    snprintf(at, sizeof(at), "%s.%s[%zu]", path, key, i);
    if (!(tune ? check_config(x, at, err, len) : check_row(x, at, err, len)))
      return false;
  }
  return true;
}

bool record_check(const json_t *root, char *err, size_t len) {
  if (!check_fields(root, top_fields, "", err, len))
    return false;
  json_int_t schema = json_integer_value(json_object_get(root, "schema"));
  if (schema != RECORD_SCHEMA) {
    snprintf(err, len, "schema: version %lld; this tessel reads version %d",
             (long long)schema, RECORD_SCHEMA);
    return false;
  }
  const char *kind = json_string_value(json_object_get(root, "kind"));
  bool tune = strcmp(kind, "tune") == 0;
  if (!tune && strcmp(kind, "bench") != 0) {
    snprintf(err, len, "kind: expected \"bench\" or \"tune\" (got \"%s\")",
             kind);
    return false;
  }
  if (tune && !json_is_string(json_object_get(root, "space"))) {
    snprintf(err, len, "space: %s", json_object_get(root, "space")
                                        ? "expected a string" : "missing");
    return false;
  }
  if (!check_fields(json_object_get(root, "tessel"), tessel_fields, "tessel",
                    err, len) ||
      !check_fields(json_object_get(root, "gpu"), gpu_fields, "gpu", err, len) ||
      !check_sensors(json_object_get(root, "gpu"), err, len) ||
      !check_fields(json_object_get(root, "cuda"), cuda_fields, "cuda", err,
                    len))
    return false;
  size_t i;
  const json_t *x;
  json_array_foreach(json_object_get(root, "shapes"), i, x) {
    char at[64];
    snprintf(at, sizeof(at), "shapes[%zu]", i);
    if (!check_shape(x, tune, at, err, len))
      return false;
  }
  return true;
}

/* ---- Rows ------------------------------------------------------------------ */

static double num(const json_t *obj, const char *key) {
  return json_number_value(json_object_get(obj, key));
}

static const char *str(const json_t *obj, const char *key) {
  const char *s = json_string_value(json_object_get(obj, key));
  return s ? s : "";
}

/* The row's timing from t (an object or null); false when out of memory. */
static bool read_timing(record_row *row, const json_t *t) {
  row->timed = json_is_object(t);
  if (!row->timed)
    return true;
  row->median_ms = num(t, "median_ms");
  row->min_ms = num(t, "min_ms");
  row->max_ms = num(t, "max_ms");
  row->tflops = num(t, "tflops");
  const json_t *list = json_object_get(t, "times_ms");
  size_t n = json_array_size(list);
  if (n == 0)
    return true;
  if (!(row->times = malloc(sizeof(double) * n)))
    return false;
  for (size_t i = 0; i < n; i++)
    row->times[i] = json_number_value(json_array_get(list, i));
  row->ntimes = (int)n;
  return true;
}

/* A row of shape s named name (borrowed; NULL: set later). */
static record_row shape_row(const json_t *s, const char *name) {
  record_row row = {.name = name, .shape = str(s, "shape"),
                    .layout = str(s, "layout"), .error = ""};
  const char *a = str(s, "a_type"), *b = str(s, "b_type"), *c = str(s, "c_type");
  const json_t *math = json_object_get(s, "math");
  if (math && strcmp(json_string_value(math), "tf32") == 0)
    a = b = "tf32"; /* f32 multiplied in tf32 */
  if (strcmp(a, b) == 0 && strcmp(b, c) == 0)
    snprintf(row.types, sizeof(row.types), "%s", a);
  else
    snprintf(row.types, sizeof(row.types), "%s,%s->%s", a, b, c);
  return row;
}

/* A new row of shape s at the end of d's; NULL when out of memory. */
static record_row *new_row(record_data *d, const json_t *s, const char *name) {
  record_row *rows = realloc(d->rows, sizeof(*rows) * (size_t)(d->nrows + 1));
  if (!rows)
    return NULL;
  d->rows = rows;
  rows[d->nrows] = shape_row(s, name);
  return &rows[d->nrows++];
}

/* A bench row is valid where ok with a finite error: a record written
 * before "differs" (schema 1 still) wrote a result that was not finite as
 * an ok row whose max_rel_err is null. */
static bool add_bench_row(record_data *d, const json_t *s, const json_t *r) {
  record_row *row = new_row(d, s, str(r, "name"));
  if (!row)
    return false;
  row->state = str(r, "status");
  row->error = str(r, "error");
  if (!read_timing(row, json_object_get(r, "timing")))
    return false;
  bool finite = json_is_number(json_object_get(r, "max_rel_err"));
  row->valid = row->timed && strcmp(row->state, "ok") == 0 && finite;
  if (row->timed && strcmp(row->state, "ok") == 0 && !finite) {
    row->state = "differs";
    row->error = "max_rel_err is null: the result was not finite (a record "
                 "older than the status \"differs\")";
  }
  return true;
}

/* A configuration, named SPACE:CONFIG and timed by its full count, else
 * its first pass. */
static bool add_config_row(record_data *d, const json_t *s, const json_t *c) {
  record_row *row = new_row(d, s, NULL);
  if (!row)
    return false;
  row->config = str(c, "config");
  row->state = str(c, "state");
  row->error = str(c, "why");
  size_t n = strlen(d->space) + strlen(row->config) + 2;
  if (!(row->name_buf = malloc(n)))
    return false;
  snprintf(row->name_buf, n, "%s:%s", d->space, row->config);
  row->name = row->name_buf;
  const json_t *t = json_object_get(c, "full");
  if (!read_timing(row, t ? t : json_object_get(c, "first_pass")))
    return false;
  row->valid = row->timed && strcmp(row->state, "timed") == 0;
  return true;
}

static bool add_shape_rows(record_data *d, const json_t *s) {
  record_row *blas = new_row(d, s, "cuBLAS");
  if (!blas)
    return false;
  blas->cublas = true;
  blas->error = str(s, "error");
  if (!read_timing(blas, json_object_get(s, "cublas")))
    return false;
  blas->valid = blas->timed;
  blas->state = blas->timed ? "ok" : "failed";
  size_t i;
  const json_t *x;
  json_array_foreach(json_object_get(s, d->space ? "configurations" : "rows"),
                     i, x) {
    if (!(d->space ? add_config_row(d, s, x) : add_bench_row(d, s, x)))
      return false;
  }
  return true;
}

/* The readings of gpu.sensors, checked by check_sensors. */
static record_clocks read_clocks(const json_t *gpu) {
  const json_t *s = json_object_get(gpu, "sensors");
  record_clocks c = {.unavailable = json_string_value(
                         json_object_get(s, "unavailable"))};
  for (int i = 0; i < 2; i++) {
    const json_t *r = json_object_get(s, reading_keys[i]);
    c.read[i] = json_is_object(r);
    c.sm_mhz[i] = (int)json_integer_value(json_object_get(r, "sm_mhz"));
    c.memory_mhz[i] = (int)json_integer_value(json_object_get(r, "memory_mhz"));
  }
  return c;
}

void record_data_free(record_data *d) {
  if (!d)
    return;
  for (int i = 0; i < d->nrows; i++) {
    free(d->rows[i].times);
    free(d->rows[i].name_buf);
  }
  free(d->rows);
  json_decref(d->root);
  free(d);
}

record_data *record_read(const char *path, char *err, size_t len) {
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (!root) {
    if (jerr.line > 0) /* a parse error; else the file did not open */
      snprintf(err, len, "%s:%d: %s", path, jerr.line, jerr.text);
    else
      snprintf(err, len, "%s", jerr.text);
    return NULL;
  }
  char why[256];
  if (!record_check(root, why, sizeof(why))) {
    snprintf(err, len, "%s is not a tessel record: %s", path, why);
    json_decref(root);
    return NULL;
  }
  record_data *d = calloc(1, sizeof(*d));
  if (!d) {
    json_decref(root);
    snprintf(err, len, "%s: out of memory", path);
    return NULL;
  }
  d->root = root;
  d->kind = str(root, "kind");
  d->gpu = str(json_object_get(root, "gpu"), "name");
  d->date = str(root, "date");
  d->space = json_string_value(json_object_get(root, "space"));
  d->clocks = read_clocks(json_object_get(root, "gpu"));
  size_t i;
  const json_t *x;
  json_array_foreach(json_object_get(root, "shapes"), i, x) {
    if (!add_shape_rows(d, x)) {
      record_data_free(d);
      snprintf(err, len, "%s: out of memory", path);
      return NULL;
    }
  }
  return d;
}
