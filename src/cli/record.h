/*
 * The record of a run: `tessel bench --json` and `tessel tune --json`
 * write one self-describing JSON document (docs/records.md gives every
 * field), and `tessel compare` and `tessel plot` read it back.  Written
 * and read with jansson; record.c builds and writes, record_read.c
 * checks a record against the schema and reads it into rows.
 */
#ifndef TS_CLI_RECORD_H
#define TS_CLI_RECORD_H

#include <jansson.h>
#include <stdbool.h>

#include "options.h"

/* The version of the format; a reader refuses other versions. */
enum { RECORD_SCHEMA = 1 };

/* What the record says of the machine: from the GPU (record_machine_of),
 * or made up by a test. */
typedef struct record_machine {
  const char *gpu;  /* "NVIDIA H200" */
  const char *arch; /* "sm_90" */
  int sm_count;
  int clock_khz, memory_clock_khz; /* rated; 0: unknown */
  int driver;  /* cuDriverGetVersion's: 13000 */
  int nvrtc;   /* ts_nvrtc_version's; 0: not loaded */
  ts_gpu_sensors start; /* what the sensors read as the run began */
} record_machine;

/* The machine, its sensors read now (the run's start). */
record_machine record_machine_of(ts_gpu *gpu);
/* Adds what the sensors read at the run's end to the record's gpu. */
bool record_end_sensors(json_t *rec, ts_gpu *gpu);

/* Sets obj's key to value, whose reference it takes (and drops on
 * failure); false when obj or value is NULL (out of memory). */
bool record_set(json_t *obj, const char *key, json_t *value);

/* A new record of `kind` ("bench" or "tune"): the header (schema, tessel's
 * version and git description, the date, the command line, the machine,
 * the timing options); NULL when out of memory.  json_decref frees it. */
json_t *record_new(const char *kind, int argc, char **argv,
                   const record_machine *m, const cli_opts *o);

/* Appends a shape (definition, types) to the record's "shapes" and
 * returns it (owned by the record); NULL when out of memory. */
json_t *record_add_shape(json_t *rec, const ts_gemm *g);

/* A timing: median, min, max, TFLOP/s, ratio to cuBLAS and, when times is
 * not NULL, the `repeats` times in ms in the order they ran.  NULL when
 * out of memory. */
json_t *record_timing(const ts_bench_result *r, const double *times,
                      int repeats);

/* A bench row: a schedule or a hand-written kernel, and what it did. */
typedef struct record_entry {
  const char *name;  /* as the command line names it */
  bool hand_written; /* a --cu kernel, not a schedule */
  const char *trace; /* a schedule's primitive calls as C; NULL: unknown */
  uint64_t cu_hash;  /* ts_kernel_source_hash; 0: none */
  const ts_bench_result *result;
  const double *times; /* as record_timing's, or NULL */
  int repeats;
  double tolerance; /* the largest max_rel_err a correct result has
                       (ts_gemm_tolerance); a row over it "differs" */
} record_entry;

/* A relative error as a record holds it: a number where finite, else
 * the string "inf" or "nan" (JSON has no such numbers); NULL when out of
 * memory. */
json_t *record_error_json(double err);

/* Appends the row to the shape's "rows": "ok", or "differs" (timed, but
 * its result over the tolerance: the run failed it), "failed" or
 * "skipped"; false when out of memory. */
bool record_add_row(json_t *shape, const record_entry *e);

/* Writes the record to path, indented; false with errno set. */
bool record_write(const json_t *rec, const char *path);

/* ---- Reading (record_read.c) ---------------------------------------------- */

/* One timed or failed row of a record: a bench row, cuBLAS's row of a
 * shape, or a configuration of a tune record (named SPACE:CONFIG, timed
 * by its full count, else its first pass). */
typedef struct record_row {
  const char *name;   /* as the command line names it; "cuBLAS" */
  const char *shape;  /* "1024x1024x1024" */
  const char *layout; /* "NN" */
  char types[32];     /* "f32" or "f16,f16->f32" */
  bool cublas;
  const char *state;  /* a bench row's status ("ok", "differs", "failed",
                         "skipped"), a configuration's state ("timed",
                         "differs", "pruned", ...) */
  bool timed;         /* it has a timing (a row that differs has one) */
  bool valid;         /* timed and its result correct: a speed to use */
  const char *error;  /* why not valid; may be "" */
  double median_ms, min_ms, max_ms, tflops;
  double *times;       /* the repeats, in ms (malloc'd), or NULL */
  int ntimes;
  const char *config;  /* a tune configuration's text, else NULL */
  char *name_buf;      /* name, when made here (malloc'd) */
} record_row;

/* What a record says of the clocks the GPU ran at (gpu.sensors): a
 * reading at the run's start and one at its end, where there is one. */
typedef struct record_clocks {
  bool read[2];       /* [0] the start, [1] the end */
  int sm_mhz[2], memory_mhz[2];
  const char *unavailable; /* why there is no reading; NULL: none said */
} record_clocks;

typedef struct record_data {
  json_t *root;      /* the strings above point into it */
  const char *kind;  /* "bench" or "tune" */
  const char *gpu;   /* the GPU's name */
  const char *date;  /* "2026-11-22T08:12:00Z" */
  const char *space; /* a tune record's space, else NULL */
  record_clocks clocks;
  record_row *rows;
  int nrows;
} record_data;

/* Checks a parsed record against the schema: false with the first field
 * that is missing or of the wrong type in err ("shapes[0].rows[2].timing:
 * expected an object"). */
bool record_check(const json_t *root, char *err, size_t len);

/* Reads and checks the record at path; NULL with the reason in err (the
 * file, the JSON error with its line, or record_check's). */
record_data *record_read(const char *path, char *err, size_t len);
void record_data_free(record_data *d);

#endif
