/*
 * The built-in schedules and users' schedule files beside them (src/builtins/).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_BUILTINS_H
#define TESSEL_BUILTINS_H

#include "space.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Built-in schedules ------------------------------------------------ */

typedef struct ts_builtin {
  const char *name;
  const char *summary;
  ts_status (*apply)(ts_sched *s); /* applies the schedule's primitives */
  /* It tensorizes: it needs f16 or bf16 A and B, or f32 with
   * TS_MATH_TF32, and refuses exact fp32. */
  bool tensor_cores;
  /* Its instruction (wgmma) is sm_90a's: it compiles for sm_90 alone. */
  bool sm90_only;
} ts_builtin;

int ts_builtin_count(void);
const ts_builtin *ts_builtin_at(int index);
const ts_builtin *ts_builtin_find(const char *name);
/* ts_matmul_named(def, name) with the built-in applied; never NULL. */
ts_sched *ts_builtin_schedule(const char *name, const ts_gemm *def);

/* ---- Schedule files ------------------------------------------------------
 *
 * A C file of schedules and spaces that the command line takes as
 * FILE.c[:NAME]:
 *
 *   #include <tessel.h>
 *   TS_SCHEDULE(my64, "64x64 tiles, 4x4 per thread") {
 *     ts_loop *io, *ii;
 *     ts_split(s, ts_get_loop(s, "i"), 64, &io, &ii);
 *     ...
 *     return ts_sched_status(s);
 *   }
 *   TS_SPACE(mytiles, "my64's tiles as knobs") {
 *     int64_t bm = ts_knob(c, "bm", 3, (int64_t[]){32, 64, 128});
 *     ts_knob_require(c, bm <= ts_sched_gemm(s)->m, "bm over M");
 *     ...
 *     return ts_sched_status(s);
 *   }
 *
 * A schedule or space written for the tensor cores' element types (f16,
 * bf16, or f32 rounded to tf32; it tensorizes) says so as the built-ins
 * do, with TS_TENSOR_SCHEDULE(NAME, SUMMARY) or TS_TENSOR_SPACE(NAME,
 * SUMMARY) in place of TS_SCHEDULE and TS_SPACE: the command line then
 * asks for --dtype f16, bf16 or tf32 where it is run without one, rather
 * than the error of the primitive that meets exact f32.
 *
 * The registration points at a static function of the file, so a name
 * that some library also defines (pipe, sync) still means the schedule.
 * Each TS_SCHEDULE defines a function ts_status NAME(ts_sched *s) that
 * applies the schedule's primitives to s (a fresh ts_matmul named NAME),
 * each TS_SPACE a function ts_status NAME(ts_sched *s, ts_config *c) as a
 * built-in space's apply is written, and registers it when tessel loads
 * the file.  Linked into a program of your own, the function is an
 * ordinary one to call (a space's with ts_space_schedule). */
void ts_schedule_file_add(const ts_builtin *def);     /* TS_SCHEDULE's */
void ts_schedule_file_add_space(const ts_space *def); /* TS_SPACE's */
#define TS_SCHEDULE(NAME, SUMMARY) TS_SCHEDULE_DEFINE_(NAME, SUMMARY, false)
#define TS_SPACE(NAME, SUMMARY) TS_SPACE_DEFINE_(NAME, SUMMARY, false)
#define TS_TENSOR_SCHEDULE(NAME, SUMMARY)                                    \
  TS_SCHEDULE_DEFINE_(NAME, SUMMARY, true)
#define TS_TENSOR_SPACE(NAME, SUMMARY) TS_SPACE_DEFINE_(NAME, SUMMARY, true)
/* What the four expand to: TENSOR is the record's tensor_cores. */
#define TS_SCHEDULE_DEFINE_(NAME, SUMMARY, TENSOR)                           \
  static ts_status ts_schedule_body_##NAME(ts_sched *s);                     \
  ts_status NAME(ts_sched *s);                                               \
  ts_status NAME(ts_sched *s) { return ts_schedule_body_##NAME(s); }         \
  static const ts_builtin ts_schedule_def_##NAME = {                         \
      .name = #NAME, .summary = SUMMARY, .apply = ts_schedule_body_##NAME,   \
      .tensor_cores = TENSOR};                                               \
  __attribute__((constructor)) static void ts_schedule_add_##NAME(void) {    \
    ts_schedule_file_add(&ts_schedule_def_##NAME);                           \
  }                                                                          \
  static ts_status ts_schedule_body_##NAME(ts_sched *s)
#define TS_SPACE_DEFINE_(NAME, SUMMARY, TENSOR)                              \
  static ts_status ts_space_body_##NAME(ts_sched *s, ts_config *c);          \
  ts_status NAME(ts_sched *s, ts_config *c);                                 \
  ts_status NAME(ts_sched *s, ts_config *c) {                                \
    return ts_space_body_##NAME(s, c);                                       \
  }                                                                          \
  static const ts_space ts_space_def_##NAME = {                             \
      .name = #NAME, .summary = SUMMARY, .apply = ts_space_body_##NAME,      \
      .tensor_cores = TENSOR};                                               \
  __attribute__((constructor)) static void ts_space_add_##NAME(void) {       \
    ts_schedule_file_add_space(&ts_space_def_##NAME);                        \
  }                                                                          \
  static ts_status ts_space_body_##NAME(ts_sched *s, ts_config *c)

/* Compiles the file with the system C compiler ($CC, else cc) against this
 * header into a shared object, cached by the file's content in the cache
 * directory, and loads it.  Never NULL but when out of memory; check the
 * status: a file that does not compile gives the compiler's diagnostics in
 * the message; one that defines neither schedule nor space, or a space
 * named as a built-in schedule or space is, says so. */
typedef struct ts_schedule_file ts_schedule_file;
ts_schedule_file *ts_schedule_file_open(const char *path);
ts_status ts_schedule_file_status(const ts_schedule_file *f);
const char *ts_schedule_file_errmsg(const ts_schedule_file *f);
int ts_schedule_file_count(const ts_schedule_file *f);
const ts_builtin *ts_schedule_file_at(const ts_schedule_file *f, int index);
const ts_builtin *ts_schedule_file_find(const ts_schedule_file *f,
                                        const char *name);
/* The file's spaces, in the order it defines them. */
int ts_schedule_file_space_count(const ts_schedule_file *f);
const ts_space *ts_schedule_file_space_at(const ts_schedule_file *f,
                                          int index);
const ts_space *ts_schedule_file_space_find(const ts_schedule_file *f,
                                            const char *name);
/* A hash of the file's text as it was read, 16 hex digits ("" when the
 * file could not be read): what tuning records of its spaces are keyed by
 * beside the space's name, so that an edited file does not reuse them. */
const char *ts_schedule_file_hash(const ts_schedule_file *f);
/* Unloads it: its schedules' and spaces' functions go with it. */
void ts_schedule_file_close(ts_schedule_file *f);

/* The schedule's error as a compiler prints one, where its call's place is
 * known (ts_sched_error_location): "FILE:LINE:COL: error: ts_NAME: ...",
 * the call's line with the call underlined, then the rest of the message.
 * The column and the underline come from the file as it is now: the call
 * expression with libclang ($TESSEL_LIBCLANG names the library, "off" for
 * none), else the primitive's name on the line.  Where the place is not
 * known or the call not found, the message as it is.  NULL when s is not
 * in error, or when memory runs out; free() it. */
char *ts_sched_diagnostic(const ts_sched *s);

#ifdef __cplusplus
}
#endif
#endif
