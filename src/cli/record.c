/*
 * Writing the record of a run (record.h): the header that says where and
 * how the run was made, a shape per definition, and per shape the rows
 * with every timing.  The document is built with jansson and written
 * indented; docs/records.md gives each field.
 */
#include "record.h"

#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "git_version.h"

record_machine record_machine_of(ts_gpu *gpu) {
  return (record_machine){
      .gpu = ts_gpu_name(gpu), .arch = ts_gpu_arch(gpu),
      .sm_count = ts_gpu_sm_count(gpu), .clock_khz = ts_gpu_clock_khz(gpu),
      .memory_clock_khz = ts_gpu_memory_clock_khz(gpu),
      .driver = ts_gpu_driver_version(gpu), .nvrtc = ts_nvrtc_version(),
      .start = ts_gpu_read_sensors(gpu)};
}

bool record_set(json_t *obj, const char *key, json_t *value) {
  if (!obj || !value) {
    json_decref(value);
    return false;
  }
  return json_object_set_new(obj, key, value) == 0;
}

/* A version number in cuDriverGetVersion's form as "13.0"; null when 0. */
static json_t *version_text(int v) {
  return v ? json_sprintf("%d.%d", v / 1000, v % 1000 / 10) : json_null();
}

/* One reading: the clocks in MHz, the temperature, the power; null when
 * there is none. */
static json_t *sensors_json(const ts_gpu_sensors *s) {
  if (!s->valid)
    return json_null();
  json_t *x = json_object();
  bool ok = record_set(x, "sm_mhz", json_integer(s->sm_mhz)) &&
            record_set(x, "memory_mhz", json_integer(s->memory_mhz)) &&
            record_set(x, "temperature_c", json_integer(s->temperature_c)) &&
            record_set(x, "power_w", json_real(s->power_w));
  if (!ok) {
    json_decref(x);
    return NULL;
  }
  return x;
}

/* {"start": reading, "end": null} and, without a reading, why. */
static json_t *sensors_start_json(const ts_gpu_sensors *start) {
  json_t *x = json_object();
  bool ok = record_set(x, "start", sensors_json(start)) &&
            record_set(x, "end", json_null()) &&
            (start->valid ||
             record_set(x, "unavailable", json_string(start->why)));
  if (!ok) {
    json_decref(x);
    return NULL;
  }
  return x;
}

bool record_end_sensors(json_t *rec, ts_gpu *gpu) {
  ts_gpu_sensors end = ts_gpu_read_sensors(gpu);
  json_t *sensors = json_object_get(json_object_get(rec, "gpu"), "sensors");
  return record_set(sensors, "end", sensors_json(&end));
}

static json_t *machine_json(const record_machine *m) {
  json_t *gpu = json_object();
  bool ok = record_set(gpu, "name", json_string(m->gpu ? m->gpu : "")) &&
            record_set(gpu, "arch", json_string(m->arch ? m->arch : "")) &&
            record_set(gpu, "sm_count", json_integer(m->sm_count)) &&
            record_set(gpu, "clock_khz", json_integer(m->clock_khz)) &&
            record_set(gpu, "memory_clock_khz", json_integer(m->memory_clock_khz)) &&
            record_set(gpu, "sensors", sensors_start_json(&m->start));
  if (!ok) {
    json_decref(gpu);
    return NULL;
  }
  return gpu;
}

static json_t *cuda_json(const record_machine *m) {
  json_t *cuda = json_object();
  bool ok = record_set(cuda, "driver", version_text(m->driver)) &&
            record_set(cuda, "toolkit", version_text(CUDA_VERSION)) &&
            record_set(cuda, "nvrtc", version_text(m->nvrtc));
  if (!ok) {
    json_decref(cuda);
    return NULL;
  }
  return cuda;
}

static json_t *command_json(int argc, char **argv) {
  json_t *cmd = json_array();
  bool ok = cmd && json_array_append_new(cmd, json_string("tessel")) == 0;
  for (int i = 0; ok && i < argc; i++)
    ok = json_array_append_new(cmd, json_string(argv[i])) == 0;
  if (!ok) {
    json_decref(cmd);
    return NULL;
  }
  return cmd;
}

static json_t *date_json(void) {
  char text[32];
  time_t now = time(NULL);
  struct tm tm;
  if (!gmtime_r(&now, &tm) ||
      !strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm))
    return json_string("");
  return json_string(text);
}

json_t *record_new(const char *kind, int argc, char **argv,
                   const record_machine *m, const cli_opts *o) {
  json_t *rec = json_object();
  json_t *tessel = json_object();
  if (!record_set(tessel, "version", json_string(TESSEL_VERSION)) ||
      !record_set(tessel, "git", json_string(TESSEL_GIT))) {
    json_decref(tessel);
    tessel = NULL;
  }
  bool ok = record_set(rec, "schema", json_integer(RECORD_SCHEMA)) &&
            record_set(rec, "kind", json_string(kind));
  /* Called either way, so that it takes tessel's reference. */
  ok = record_set(ok ? rec : NULL, "tessel", tessel) &&
       record_set(rec, "date", date_json()) &&
       record_set(rec, "command", command_json(argc, argv)) &&
       record_set(rec, "gpu", machine_json(m)) &&
       record_set(rec, "cuda", cuda_json(m)) &&
       record_set(rec, "warmup", json_integer(o->warmup)) &&
       record_set(rec, "repeats", json_integer(o->repeats)) &&
       record_set(rec, "seed", json_integer((json_int_t)o->seed)) &&
       record_set(rec, "shapes", json_array());
  if (!ok) {
    json_decref(rec);
    return NULL;
  }
  return rec;
}

json_t *record_add_shape(json_t *rec, const ts_gemm *g) {
  json_t *shape = json_object();
  bool ok = record_set(shape, "shape", json_sprintf("%lldx%lldx%lld",
                                             (long long)g->m, (long long)g->n,
                                             (long long)g->k)) &&
            record_set(shape, "m", json_integer(g->m)) &&
            record_set(shape, "n", json_integer(g->n)) &&
            record_set(shape, "k", json_integer(g->k)) &&
            record_set(shape, "layout", json_string(ts_layout_name(g->layout))) &&
            record_set(shape, "a_type", json_string(ts_dtype_name(g->a_type))) &&
            record_set(shape, "b_type", json_string(ts_dtype_name(g->b_type))) &&
            record_set(shape, "c_type", json_string(ts_dtype_name(g->c_type))) &&
            record_set(shape, "math", json_string(g->math == TS_MATH_TF32
                                                      ? "tf32" : "f32")) &&
            record_set(shape, "alpha", json_real(g->alpha)) &&
            record_set(shape, "beta", json_real(g->beta));
  /* Where cuBLAS was timed at other types than the schedules' (it has no
   * GEMM of theirs): its C's. */
  ts_gemm b;
  if (ok && ts_cublas_baseline(g, &b) == TS_OK && b.c_type != g->c_type)
    ok = record_set(shape, "cublas_c_type",
                    json_string(ts_dtype_name(b.c_type)));
  if (!ok || json_array_append_new(json_object_get(rec, "shapes"), shape)) {
    json_decref(ok ? NULL : shape);
    return NULL;
  }
  return shape;
}

/* A number JSON can hold: NaN and infinities (a failed comparison) are
 * null. */
static json_t *number(double x) { return isfinite(x) ? json_real(x) : json_null(); }

json_t *record_timing(const ts_bench_result *r, const double *times,
                      int repeats) {
  json_t *t = json_object();
  bool ok = record_set(t, "median_ms", number(r->median_ms)) &&
            record_set(t, "min_ms", number(r->min_ms)) &&
            record_set(t, "max_ms", number(r->max_ms)) &&
            record_set(t, "tflops", number(r->tflops)) &&
            record_set(t, "ratio_to_cublas", number(r->ratio_to_cublas));
  json_t *list = times ? json_array() : NULL;
  for (int i = 0; list && ok && i < repeats; i++)
    ok = json_array_append_new(list, number(times[i])) == 0;
  if (ok && times)
    ok = record_set(t, "times_ms", list);
  else
    json_decref(list);
  if (!ok) {
    json_decref(t);
    return NULL;
  }
  return t;
}

json_t *record_error_json(double err) {
  return isfinite(err) ? json_real(err)
                       : json_string(isnan(err) ? "nan" : "inf");
}

/* Whether a timed row's result is over its tolerance (NaN is). */
static bool differs(const record_entry *e) {
  return !(e->result->max_rel_err < e->tolerance);
}

/* What became of a row: "ok", "differs", "skipped" or "failed". */
static const char *row_status(const record_entry *e) {
  const ts_bench_result *r = e->result;
  return r->skipped              ? "skipped"
         : r->status != TS_OK    ? "failed"
         : differs(e)            ? "differs"
                                 : "ok";
}

/* Why a row is not ok: the run's error, or bench's words for a result
 * that differs. */
static json_t *row_error(const record_entry *e) {
  const ts_bench_result *r = e->result;
  if (r->status != TS_OK)
    return json_string(r->message);
  return json_sprintf("differs from cuBLAS (max relative error %.2e, over "
                      "%.2e)", r->max_rel_err, e->tolerance);
}

static json_t *ptxas_json(const ts_ptxas_info *p) {
  if (!p->valid)
    return json_null();
  json_t *j = json_object();
  bool ok = record_set(j, "registers", json_integer(p->registers)) &&
            record_set(j, "shared_bytes", json_integer(p->shared_bytes)) &&
            record_set(j, "spill_bytes",
                p->spill_store_bytes < 0
                    ? json_null()
                    : json_integer(p->spill_store_bytes + p->spill_load_bytes));
  if (!ok) {
    json_decref(j);
    return NULL;
  }
  return j;
}

bool record_add_row(json_t *shape, const record_entry *e) {
  const ts_bench_result *r = e->result;
  json_t *rows = json_object_get(shape, "rows");
  if (!json_is_array(rows) && !record_set(shape, "rows", rows = json_array()))
    return false;
  json_t *row = json_object();
  unsigned long long hash = e->cu_hash;
  bool ok =
      record_set(row, "name", json_string(e->name)) &&
      record_set(row, "kind",
                 json_string(e->hand_written ? "cuda" : "schedule")) &&
      record_set(row, "trace",
                 e->trace ? json_string(e->trace) : json_null()) &&
      record_set(row, "cu_hash",
                 hash ? json_sprintf("%016llx", hash) : json_null()) &&
      record_set(row, "status", json_string(row_status(e)));
  if (ok && (r->status != TS_OK || differs(e)))
    ok = record_set(row, "error", row_error(e));
  if (ok && r->status == TS_OK)
    ok = record_set(row, "timing", record_timing(r, e->times, e->repeats)) &&
         record_set(row, "max_rel_err", record_error_json(r->max_rel_err)) &&
         record_set(row, "tolerance", number(e->tolerance)) &&
         record_set(row, "ptxas", ptxas_json(&r->ptxas));
  if (!ok || json_array_append_new(rows, row)) {
    json_decref(ok ? NULL : row);
    return false;
  }
  return true;
}

/* Seven significant digits: CUDA's events time in floats. */
bool record_write(const json_t *rec, const char *path) {
  return json_dump_file(rec, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                       JSON_REAL_PRECISION(7)) == 0;
}
