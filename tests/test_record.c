/*
 * The record of a run (src/cli/record.c, record_read.c): a bench record
 * built from results made up here (no GPU), written, read back into rows
 * with every timing, and checked against the schema; records that miss a
 * field or carry the wrong type are refused with the field's path.
 */
#include <math.h>
#include "helpers.h"
#include "cli/record.h"

enum { REPEATS = 6 };

static char path[64];

static int setup(void **state) {
  (void)state;
  return make_temp_file(path, sizeof(path), "tessel-record");
}

static int teardown(void **state) {
  (void)state;
  return unlink(path);
}

static const double blas_times[REPEATS] = {1.0, 1.1, 0.9, 1.0, 1.2, 1.0};
static const double fast_times[REPEATS] = {0.5, 0.6, 0.5, 0.4, 0.5, 0.7};

static ts_bench_result timed(double median, double min, double max) {
  return (ts_bench_result){.status = TS_OK, .median_ms = median,
                           .min_ms = min, .max_ms = max, .tflops = 2.5,
                           .ratio_to_cublas = 2.0, .max_rel_err = 1e-6,
                           .ptxas = {.registers = 40, .valid = 1}};
}

/* A record of one shape: cuBLAS, a schedule timed, a hand-written kernel
 * that failed. */
static json_t *make_record(void) {
  record_machine m = {.gpu = "NVIDIA H200", .arch = "sm_90", .sm_count = 132,
                      .clock_khz = 1980000, .memory_clock_khz = 3201000,
                      .driver = 13000, .nvrtc = 13000,
                      .start = {.valid = true, .sm_mhz = 1980,
                                .memory_mhz = 3201, .temperature_c = 40,
                                .power_w = 96.5}};
  cli_opts o = {.warmup = 2, .repeats = REPEATS, .seed = 7};
  char *argv[] = {"bench", "fast", "--json", "r.json"};
  json_t *rec = record_new("bench", 4, argv, &m, &o);
  assert_non_null(rec);
  ts_gemm g = ts_gemm_make(256, 128, 64);
  g.layout = TS_NT;
  g.a_type = g.b_type = TS_F16;
  json_t *shape = record_add_shape(rec, &g);
  assert_non_null(shape);
  ts_bench_result blas = timed(1.0, 0.9, 1.2), fast = timed(0.5, 0.4, 0.7);
  assert_int_equal(json_object_set_new(shape, "cublas",
                                       record_timing(&blas, blas_times, REPEATS)),
                   0);
  assert_int_equal(json_object_set_new(shape, "rows", json_array()), 0);
  record_entry e = {.name = "fast", .trace = "ts_split(s, i, 32, &io, &ii);\n",
                    .cu_hash = 0x0123456789abcdefull, .result = &fast,
                    .times = fast_times, .repeats = REPEATS,
                    .tolerance = 1e-5};
  assert_true(record_add_row(shape, &e));
  ts_bench_result bad = {.status = TS_ERR_RESOURCES};
  snprintf(bad.message, sizeof(bad.message), "too many registers");
  e = (record_entry){.name = "hand", .hand_written = true, .result = &bad};
  assert_true(record_add_row(shape, &e));
  return rec;
}

static const json_t *at(const json_t *root, const char *key) {
  const json_t *v = json_object_get(root, key);
  assert_non_null(v);
  return v;
}

static void test_header(void **state) {
  (void)state;
  json_t *rec = make_record();
  char err[256];
  assert_true(record_check(rec, err, sizeof(err)));
  assert_int_equal(json_integer_value(at(rec, "schema")), RECORD_SCHEMA);
  assert_string_equal(json_string_value(at(rec, "kind")), "bench");
  assert_string_equal(json_string_value(at(at(rec, "tessel"), "version")),
                      TESSEL_VERSION);
  assert_true(strlen(json_string_value(at(at(rec, "tessel"), "git"))) > 0);
  assert_int_equal(json_integer_value(at(at(rec, "gpu"), "sm_count")), 132);
  assert_int_equal(json_integer_value(at(at(rec, "gpu"), "clock_khz")), 1980000);
  assert_string_equal(json_string_value(at(at(rec, "cuda"), "driver")), "13.0");
  assert_string_equal(json_string_value(json_array_get(at(rec, "command"), 0)),
                      "tessel");
  assert_string_equal(json_string_value(json_array_get(at(rec, "command"), 1)),
                      "bench");
  /* "2026-11-22T08:12:00Z" */
  assert_int_equal(strlen(json_string_value(at(rec, "date"))), 20);
  json_t *shape = json_array_get(at(rec, "shapes"), 0);
  assert_string_equal(json_string_value(at(shape, "shape")), "256x128x64");
  assert_string_equal(json_string_value(at(shape, "layout")), "NT");
  assert_string_equal(json_string_value(at(shape, "a_type")), "f16");
  assert_string_equal(json_string_value(at(shape, "c_type")), "f32");
  json_t *row = json_array_get(at(shape, "rows"), 0);
  assert_string_equal(json_string_value(at(row, "cu_hash")), "0123456789abcdef");
  assert_string_equal(json_string_value(at(row, "kind")), "schedule");
  row = json_array_get(at(shape, "rows"), 1);
  assert_string_equal(json_string_value(at(row, "kind")), "cuda");
  assert_true(json_is_null(at(row, "trace")));
  assert_string_equal(json_string_value(at(row, "status")), "failed");
  assert_null(json_object_get(row, "timing"));
  json_decref(rec);
}

static void test_written_and_read(void **state) {
  (void)state;
  json_t *rec = make_record();
  assert_true(record_write(rec, path));
  json_decref(rec);
  char err[512];
  record_data *d = record_read(path, err, sizeof(err));
  assert_non_null(d);
  assert_string_equal(d->kind, "bench");
  assert_string_equal(d->gpu, "NVIDIA H200");
  assert_null(d->space);
  assert_int_equal(d->nrows, 3);
  /* The sensors' reading at the start; none yet at the end. */
  assert_true(d->clocks.read[0]);
  assert_false(d->clocks.read[1]);
  assert_int_equal(d->clocks.sm_mhz[0], 1980);
  assert_int_equal(d->clocks.memory_mhz[0], 3201);
  assert_null(d->clocks.unavailable);
  const record_row *blas = &d->rows[0], *fast = &d->rows[1], *hand = &d->rows[2];
  assert_true(blas->cublas);
  assert_string_equal(blas->name, "cuBLAS");
  assert_string_equal(fast->name, "fast");
  assert_string_equal(fast->shape, "256x128x64");
  assert_string_equal(fast->layout, "NT");
  assert_string_equal(fast->types, "f16,f16->f32");
  assert_true(fast->timed);
  assert_string_equal(fast->state, "ok");
  assert_true(fabs(fast->median_ms - 0.5) < 1e-9);
  assert_true(fabs(fast->min_ms - 0.4) < 1e-9);
  assert_true(fabs(fast->max_ms - 0.7) < 1e-9);
  assert_int_equal(fast->ntimes, REPEATS);
  for (int i = 0; i < REPEATS; i++) {
    assert_true(fabs(fast->times[i] - fast_times[i]) < 1e-9);
    assert_true(fabs(blas->times[i] - blas_times[i]) < 1e-9);
  }
  assert_false(hand->timed);
  assert_string_equal(hand->state, "failed");
  assert_string_equal(hand->error, "too many registers");
  record_data_free(d);
}

/* A row timed whose result is over its tolerance (here not finite, as a
 * kernel that writes nothing over a C poisoned with NaN gives) is recorded
 * as the run reported it: "differs", the error as the string "inf", the
 * reason; read back it is timed but not valid.  So is an ok row whose
 * max_rel_err is null, as records written before "differs" held it. */
static void test_differs(void **state) {
  (void)state;
  json_t *rec = make_record();
  json_t *shape = json_array_get(json_object_get(rec, "shapes"), 0);
  ts_bench_result wrong = timed(0.2, 0.2, 0.2);
  wrong.max_rel_err = INFINITY;
  record_entry e = {.name = "wrong", .result = &wrong, .times = fast_times,
                    .repeats = REPEATS, .tolerance = 9.66e-6};
  assert_true(record_add_row(shape, &e));
  json_t *row = json_array_get(json_object_get(shape, "rows"), 2);
  assert_string_equal(json_string_value(at(row, "status")), "differs");
  assert_string_equal(json_string_value(at(row, "max_rel_err")), "inf");
  assert_string_equal(json_string_value(at(row, "error")),
                      "differs from cuBLAS (max relative error inf, over "
                      "9.66e-06)");
  assert_non_null(json_object_get(row, "timing"));
  /* The older form: ok, null. */
  json_t *old = json_deep_copy(json_array_get(json_object_get(shape, "rows"), 0));
  json_object_set_new(old, "name", json_string("old"));
  json_object_set_new(old, "max_rel_err", json_null());
  json_array_append_new(json_object_get(shape, "rows"), old);
  assert_true(record_write(rec, path));
  json_decref(rec);
  char err[512];
  record_data *d = record_read(path, err, sizeof(err));
  assert_non_null(d);
  assert_int_equal(d->nrows, 5);
  const record_row *fast = &d->rows[1], *w = &d->rows[3], *o = &d->rows[4];
  assert_true(fast->valid);
  assert_string_equal(w->name, "wrong");
  assert_string_equal(w->state, "differs");
  assert_true(w->timed);
  assert_false(w->valid);
  assert_non_null(strstr(w->error, "max relative error inf"));
  assert_string_equal(o->name, "old");
  assert_string_equal(o->state, "differs");
  assert_true(o->timed);
  assert_false(o->valid);
  assert_non_null(strstr(o->error, "not finite"));
  record_data_free(d);
}

/* NaN (a comparison that failed) is written as null and reads back. */
static void test_nan_is_null(void **state) {
  (void)state;
  ts_bench_result r = timed(1.0, 1.0, 1.0);
  r.ratio_to_cublas = NAN;
  json_t *t = record_timing(&r, NULL, 0);
  assert_non_null(t);
  assert_true(json_is_null(json_object_get(t, "ratio_to_cublas")));
  assert_null(json_object_get(t, "times_ms"));
  json_decref(t);
}

/* The record with one field removed (value NULL) or replaced, checked:
 * refused, with err naming the field. */
static void expect_refused(const char *object_path, const char *key,
                           json_t *value, const char *message) {
  json_t *rec = make_record();
  json_t *obj = rec;
  /* object_path: keys and array indices separated by '/' */
  char buf[128];
  snprintf(buf, sizeof(buf), "%s", object_path);
  for (char *p = strtok(buf, "/"); p; p = strtok(NULL, "/"))
    obj = *p >= '0' && *p <= '9' ? json_array_get(obj, (size_t)atoi(p))
                                 : json_object_get(obj, p);
  assert_non_null(obj);
  if (value)
    json_object_set_new(obj, key, value);
  else
    json_object_del(obj, key);
  char err[256] = "";
  assert_false(record_check(rec, err, sizeof(err)));
  assert_string_equal(err, message);
  json_decref(rec);
}

static void test_schema_refuses(void **state) {
  (void)state;
  expect_refused("", "gpu", NULL, "gpu: missing");
  expect_refused("", "schema", json_integer(2),
                 "schema: version 2; this tessel reads version 1");
  expect_refused("", "kind", json_string("sweep"),
                 "kind: expected \"bench\" or \"tune\" (got \"sweep\")");
  expect_refused("", "repeats", json_string("50"),
                 "repeats: expected an integer");
  expect_refused("gpu", "sm_count", NULL, "gpu.sm_count: missing");
  expect_refused("tessel", "git", json_integer(1), "tessel.git: expected a string");
  expect_refused("shapes/0", "m", json_real(1.5), "shapes[0].m: expected an integer");
  expect_refused("shapes/0", "rows", NULL, "shapes[0].rows: missing");
  expect_refused("shapes/0/rows/0", "timing", NULL,
                 "shapes[0].rows[0].timing: missing");
  expect_refused("shapes/0/rows/0/timing", "median_ms", json_string("fast"),
                 "shapes[0].rows[0].timing.median_ms: expected a number");
  expect_refused("shapes/0/rows/0/timing", "times_ms",
                 json_pack("[f, s]", 1.0, "x"),
                 "shapes[0].rows[0].timing.times_ms[1]: expected a number");
  expect_refused("gpu/sensors/start", "sm_mhz", json_string("1980"),
                 "gpu.sensors.start.sm_mhz: expected an integer");
  expect_refused("gpu/sensors", "end", json_integer(0),
                 "gpu.sensors.end: expected an object or null");
  expect_refused("gpu/sensors", "start", json_null(),
                 "gpu.sensors.unavailable: missing (the start has no "
                 "reading, and a record says why)");
  expect_refused("shapes/0/rows/0", "max_rel_err", json_string("big"),
                 "shapes[0].rows[0].max_rel_err: expected a number, \"inf\", "
                 "\"nan\" or null (got \"big\")");
  /* A row that differs ran: it has a timing. */
  expect_refused("shapes/0/rows/1", "status", json_string("differs"),
                 "shapes[0].rows[1].timing: missing");
  expect_refused("shapes/0/cublas", "tflops", NULL,
                 "shapes[0].cublas.tflops: missing");
  /* A tune record names its space and lists configurations. */
  expect_refused("", "kind", json_string("tune"), "space: missing");
}

static void test_unreadable(void **state) {
  (void)state;
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"schema\": 1,\n \"kind\": }\n", f);
  fclose(f);
  char err[512];
  assert_null(record_read(path, err, sizeof(err)));
  char want[128];
  snprintf(want, sizeof(want), "%s:2:", path);
  assert_non_null(strstr(err, want));
  assert_null(record_read("/nonexistent/r.json", err, sizeof(err)));
  assert_non_null(strstr(err, "/nonexistent/r.json"));
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("[1, 2]\n", f);
  fclose(f);
  assert_null(record_read(path, err, sizeof(err)));
  assert_non_null(strstr(err, "is not a tessel record: the top level: expected an object"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header),
      cmocka_unit_test_setup_teardown(test_written_and_read, setup, teardown),
      cmocka_unit_test_setup_teardown(test_differs, setup, teardown),
      cmocka_unit_test(test_nan_is_null),
      cmocka_unit_test(test_schema_refuses),
      cmocka_unit_test_setup_teardown(test_unreadable, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
