/*
 * One fuzz case: a random definition and primitive sequence (or a space's
 * knobs, fuzz_knobs.c, or a Hopper warpgroup schedule, fuzz_hopper.c),
 * each call made on a schedule and written down as C, then the checks of
 * gen.h.
 */
#include "case.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "fuzz_knobs.h"
#include "base/random.h"
#include "tessel.h"

/* The most iterations a case's nest may reach, so that the executor checks
 * it in well under a second: a split past a loop's extent keeps its factor,
 * and splits of the one outer iteration it leaves would multiply the
 * iterations without end. */
#define MAX_WORK (4.0 * 1024 * 1024)

static fz_case *running;

const char *fz_current_program(void) {
  return running && running->prog.data ? running->prog.data : "";
}

/* ---- Choices --------------------------------------------------------------- */

static uint32_t pick(fz_source *src, uint32_t n) {
  if (n <= 1)
    return 0;
  uint32_t v;
  if (src->data) {
    if (src->pos >= src->size)
      return 0;
    v = src->data[src->pos++];
    if (n > 256 && src->pos < src->size)
      v = v << 8 | src->data[src->pos++];
  } else {
    v = (uint32_t)(ts_random_next(&src->rng) >> 32);
  }
  return v % n;
}

uint32_t fz_pick(fz_source *src, uint32_t n) { return pick(src, n); }

bool fz_chance(fz_case *c, uint32_t percent) {
  return pick(c->src, 100) < percent;
}

/* A plausible loop (live and serial) the case holds, recent ones more
 * often; -1 when there is none. */
static int plausible_loop(fz_case *c) {
  int live[MAX_LOOPS], n = 0;
  for (int i = 0; i < c->nloops; i++)
    if (c->loops[i] && !c->gone[i])
      live[n++] = i;
  if (n == 0)
    return -1;
  int span = n < 4 || fz_chance(c, 40) ? n : 4;
  return live[n - 1 - (int)pick(c->src, (uint32_t)span)];
}

/* A loop argument: a plausible one, or, in a hostile case, sometimes NULL,
 * a loop of another schedule or any loop the case ever held. */
static ts_loop *loop_arg_at(fz_case *c, char *text, size_t len, int *index) {
  uint32_t r = c->hostile ? pick(c->src, 100) : 100;
  int i = r < 30 && c->nloops ? (int)pick(c->src, (uint32_t)c->nloops)
                              : plausible_loop(c);
  if (i < 0 && !c->hostile) {
    fz_op_get_loop(c, (const char *[]){"i", "j", "k"}[pick(c->src, 3)]);
    i = c->nloops - 1;
  }
  *index = -1;
  if (r < 5 || i < 0) {
    snprintf(text, len, "NULL");
    return NULL;
  }
  if (r < 10) {
    snprintf(text, len, "F");
    return c->foreign;
  }
  snprintf(text, len, "L[%d]", i);
  *index = i;
  return c->loops[i];
}

static ts_loop *loop_arg(fz_case *c, char *text, size_t len) {
  int index;
  return loop_arg_at(c, text, len, &index);
}

static ts_stage *stage_arg(fz_case *c, char *text, size_t len) {
  if (c->nstages == 0 || (c->hostile && fz_chance(c, 5))) {
    snprintf(text, len, "NULL");
    return NULL;
  }
  int i = (int)pick(c->src, (uint32_t)c->nstages);
  snprintf(text, len, "S[%d]", i);
  return c->stages[i];
}

/* The slot a returned loop goes to, reusing the last one when full. */
int fz_new_loop_slot(fz_case *c) {
  return c->nloops < MAX_LOOPS ? c->nloops++ : MAX_LOOPS - 1;
}

int fz_new_stage_slot(fz_case *c) {
  return c->nstages < MAX_STAGES ? c->nstages++ : MAX_STAGES - 1;
}

static const int64_t factors[] = {2, 3, 4, 8, 16, 32, 1, 5, 7, 64, 0, -4,
                                  INT64_MAX};

static int64_t factor_arg(fz_case *c) {
  uint32_t r = c->hostile ? pick(c->src, 100) : pick(c->src, 95);
  int n = (int)(sizeof(factors) / sizeof(factors[0]));
  if (r < 70)
    return factors[pick(c->src, 6)];
  if (r < 95)
    return factors[6 + pick(c->src, 4)];
  return factors[10 + pick(c->src, (uint32_t)(n - 10))];
}

/* ---- Checking each call ---------------------------------------------------- */

void fz_vfail(char *why, size_t whylen, const char *fmt, va_list ap) {
  if (!why[0])
    vsnprintf(why, whylen, fmt, ap);
}

__attribute__((format(printf, 2, 3))) static void fail(fz_case *c,
                                                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fz_vfail(c->why, sizeof(c->why), fmt, ap);
  va_end(ap);
}

/* A refusal must be the schedule's status from then on, with a message
 * that names the call; once in error, every call must return that error. */
void fz_after_call(fz_case *c, ts_status got, const char *fn) {
  ts_status now = ts_sched_status(c->s);
  const char *msg = ts_sched_errmsg(c->s);
  if (c->status != TS_OK) {
    if (got != c->status || now != c->status)
      fail(c, "%s after an error returned %s (schedule: %s); expected the "
           "sticky %s", fn, ts_strerror(got), ts_strerror(now),
           ts_strerror(c->status));
    return;
  }
  if (got != now)
    fail(c, "%s returned %s but the schedule's status is %s", fn,
         ts_strerror(got), ts_strerror(now));
  else if (got != TS_OK &&
           (strncmp(msg, fn, strlen(fn)) != 0 || msg[strlen(fn)] != ':'))
    fail(c, "%s failed with %s, but its message does not name it: \"%.200s\"",
         fn, ts_strerror(got), msg);
  c->status = now;
}

/* ---- The primitives ------------------------------------------------------ */

void fz_op_get_loop(fz_case *c, const char *name) {
  int slot = fz_new_loop_slot(c);
  c->loops[slot] = ts_get_loop(c->s, name);
  ts_buf_printf(&c->prog, "  L[%d] = ts_get_loop(s, \"%s\");\n", slot, name);
  fz_after_call(c, ts_sched_status(c->s), "ts_get_loop");
}

static void op_get_loop_random(fz_case *c) {
  static const char *const base[] = {"i", "j", "k", "i.outer", "nope"};
  if (c->nloops && fz_chance(c, 70)) {
    const char *name = ts_loop_name(c->loops[pick(c->src, (uint32_t)c->nloops)]);
    if (name[0]) {
      char copy[128];
      snprintf(copy, sizeof(copy), "%s", name);
      fz_op_get_loop(c, copy);
      return;
    }
  }
  fz_op_get_loop(c, base[pick(c->src, 5)]);
}

/* How many times a split of `loop` by `factor` multiplies the iterations
 * (1 for a split that fails). */
static double split_growth(const ts_loop *loop, int64_t factor) {
  int64_t e = ts_loop_extent(loop);
  if (e < 1 || factor < 1 || factor > INT32_MAX)
    return 1.0;
  return (double)((e + factor - 1) / factor * factor) / (double)e;
}

void fz_op_split(fz_case *c, ts_loop *loop, const char *text, int index,
                     int64_t factor) {
  if (c->work * split_growth(loop, factor) > MAX_WORK)
    factor = 1;
  double growth = split_growth(loop, factor);
  bool no_outer = c->hostile && fz_chance(c, 3);
  int o = no_outer ? -1 : fz_new_loop_slot(c);
  int i = fz_new_loop_slot(c);
  ts_status st = ts_split(c->s, loop, factor, no_outer ? NULL : &c->loops[o],
                          &c->loops[i]);
  char out[16] = "NULL";
  if (!no_outer)
    snprintf(out, sizeof(out), "&L[%d]", o);
  ts_buf_printf(&c->prog, "  ts_split(s, %s, %lld, %s, &L[%d]);\n", text,
                (long long)factor, out, i);
  fz_after_call(c, st, "ts_split");
  if (st == TS_OK)
    c->work *= growth;
  if (st == TS_OK && index >= 0)
    c->gone[index] = true;
}

static void op_split_random(fz_case *c) {
  char text[32];
  int index;
  ts_loop *loop = loop_arg_at(c, text, sizeof(text), &index);
  fz_op_split(c, loop, text, index, factor_arg(c));
}

static void op_fuse(fz_case *c) {
  char a[32], b[32];
  int ia, ib;
  ts_loop *outer = loop_arg_at(c, a, sizeof(a), &ia);
  ts_loop *inner = loop_arg_at(c, b, sizeof(b), &ib);
  int f = fz_new_loop_slot(c);
  ts_status st = ts_fuse(c->s, outer, inner, &c->loops[f]);
  ts_buf_printf(&c->prog, "  ts_fuse(s, %s, %s, &L[%d]);\n", a, b, f);
  fz_after_call(c, st, "ts_fuse");
  if (st == TS_OK && ia >= 0 && ib >= 0)
    c->gone[ia] = c->gone[ib] = true;
}

void fz_op_reorder_of(fz_case *c, int n, ts_loop *const loops[],
                          char text[][32]) {
  ts_status st = ts_reorder(c->s, n, loops);
  if (!loops) {
    ts_buf_printf(&c->prog, "  ts_reorder(s, %d, NULL);\n", n);
  } else {
    ts_buf_printf(&c->prog, "  ts_reorder(s, %d, (ts_loop *[]){", n);
    for (int i = 0; i < n; i++)
      ts_buf_printf(&c->prog, "%s%s", i ? ", " : "", text[i]);
    ts_buf_puts(&c->prog, "});\n");
  }
  fz_after_call(c, st, "ts_reorder");
}

static void op_reorder(fz_case *c) {
  ts_loop *loops[6];
  char text[6][32];
  int n = 2 + (int)pick(c->src, 4);
  if (c->hostile && fz_chance(c, 3))
    n = (int)pick(c->src, 2) - 1; /* 0 or -1 */
  for (int i = 0; i < n; i++) {
    loops[i] = loop_arg(c, text[i], sizeof(text[i]));
    for (int j = 0; j < i && !c->hostile; j++)
      if (loops[j] == loops[i])
        n = i; /* plausible: distinct loops only */
  }
  fz_op_reorder_of(c, n, c->hostile && fz_chance(c, 3) ? NULL : loops, text);
}

static const char *const kind_names[] = {
    "TS_SERIAL",   "TS_UNROLLED", "TS_BLOCK_X",  "TS_BLOCK_Y",   "TS_BLOCK_Z",
    "TS_THREAD_X", "TS_THREAD_Y", "TS_THREAD_Z", "TS_VECTORIZED"};

void fz_op_bind_to(fz_case *c, ts_loop *loop, const char *text, int index,
                       ts_loop_kind kind) {
  ts_status st = ts_bind(c->s, loop, kind);
  if (st == TS_OK && index >= 0 && kind != TS_SERIAL)
    c->gone[index] = true;
  if (st == TS_OK && index >= 0 && kind >= TS_BLOCK_X && kind <= TS_BLOCK_Z &&
      c->nblock < 3)
    c->block[c->nblock++] = index;
  if ((unsigned)kind <= TS_VECTORIZED)
    ts_buf_printf(&c->prog, "  ts_bind(s, %s, %s);\n", text, kind_names[kind]);
  else
    ts_buf_printf(&c->prog, "  ts_bind(s, %s, (ts_loop_kind)%d);\n", text,
                  (int)kind);
  fz_after_call(c, st, "ts_bind");
}

static void op_bind(fz_case *c) {
  char text[32];
  int index;
  ts_loop *loop = loop_arg_at(c, text, sizeof(text), &index);
  ts_loop_kind kind = !c->hostile ? (ts_loop_kind)(TS_BLOCK_X + pick(c->src, 6))
                      : fz_chance(c, 3) ? (ts_loop_kind)42
                                     : (ts_loop_kind)pick(c->src, 9);
  fz_op_bind_to(c, loop, text, index, kind);
}

/* unroll or vectorize */
static void op_mark(fz_case *c, bool vector) {
  char text[32];
  int index;
  ts_loop *loop = loop_arg_at(c, text, sizeof(text), &index);
  ts_status st = vector ? ts_vectorize(c->s, loop) : ts_unroll(c->s, loop);
  const char *fn = vector ? "ts_vectorize" : "ts_unroll";
  ts_buf_printf(&c->prog, "  %s(s, %s);\n", fn, text);
  fz_after_call(c, st, fn);
  if (st == TS_OK && index >= 0)
    c->gone[index] = true;
}

/* ts_partition; a loop it takes accepts no further primitive that changes
 * it, so it leaves the pool as an unrolled one does. */
static void op_partition(fz_case *c) {
  char text[32];
  int index;
  ts_loop *loop = loop_arg_at(c, text, sizeof(text), &index);
  ts_status st = ts_partition(c->s, loop);
  ts_buf_printf(&c->prog, "  ts_partition(s, %s);\n", text);
  fz_after_call(c, st, "ts_partition");
  if (st == TS_OK && index >= 0)
    c->gone[index] = true;
}

/* ts_pack of an input, or (hostile) of C or NULL. */
static void op_pack(fz_case *c) {
  static const char *const buffers[] = {"A", "B", "C", NULL};
  const char *buffer = buffers[pick(c->src, c->hostile ? 4 : 2)];
  ts_status st = ts_pack(c->s, buffer);
  if (buffer)
    ts_buf_printf(&c->prog, "  ts_pack(s, \"%s\");\n", buffer);
  else
    ts_buf_printf(&c->prog, "  ts_pack(s, NULL);\n");
  fz_after_call(c, st, "ts_pack");
}

static void op_rename(fz_case *c) {
  static const char *const names[] = {"x", "tile", "i", "i.outer", "",
                                      "9a", "a b", NULL, "long"};
  char text[32], longname[201];
  ts_loop *loop = loop_arg(c, text, sizeof(text));
  const char *name = names[pick(c->src, c->hostile ? 9 : 2)];
  if (name && strcmp(name, "long") == 0) {
    memset(longname, 'a', 200);
    longname[200] = 0;
    name = longname;
  }
  ts_status st = ts_rename(c->s, loop, name);
  if (name)
    ts_buf_printf(&c->prog, "  ts_rename(s, %s, \"%s\");\n", text, name);
  else
    ts_buf_printf(&c->prog, "  ts_rename(s, %s, NULL);\n", text);
  fz_after_call(c, st, "ts_rename");
}

static const char *scope_text(ts_scope scope) {
  return scope == TS_SHARED ? "TS_SHARED"
         : scope == TS_LOCAL ? "TS_LOCAL"
                             : "(ts_scope)3";
}

static void op_cache(fz_case *c, bool write) {
  static const char *const reads[] = {"A", "B", "A.shared", "B.shared",
                                      "A.local", "C", "Q", NULL};
  static const char *const writes[] = {"C", "C", "A", "C.local", NULL};
  const char *buffer = write ? writes[pick(c->src, c->hostile ? 5 : 2)]
                             : reads[pick(c->src, c->hostile ? 8 : 2)];
  if (!write && !c->hostile && c->nstages && c->stages[c->nstages - 1] &&
      fz_chance(c, 30))
    buffer = ts_stage_name(c->stages[c->nstages - 1]); /* a cache of a cache */
  uint32_t r = c->hostile ? pick(c->src, 100) : 3 + pick(c->src, 97);
  ts_scope scope = r < 3 ? (ts_scope)3 : (write ? r < 80 : r < 55)
                                            ? (write ? TS_LOCAL : TS_SHARED)
                                            : (write ? TS_SHARED : TS_LOCAL);
  char text[32], name[16] = "NULL", out[16] = "NULL";
  ts_loop *at = loop_arg(c, text, sizeof(text));
  bool no_out = c->hostile && fz_chance(c, 3);
  int slot = no_out ? -1 : fz_new_stage_slot(c);
  ts_stage **stage = no_out ? NULL : &c->stages[slot];
  const char *fn = write ? "ts_cache_write" : "ts_cache_read";
  ts_status st = write ? ts_cache_write(c->s, buffer, scope, at, stage)
                       : ts_cache_read(c->s, buffer, scope, at, stage);
  if (buffer)
    snprintf(name, sizeof(name), "\"%s\"", buffer);
  if (!no_out)
    snprintf(out, sizeof(out), "&S[%d]", slot);
  ts_buf_printf(&c->prog, "  %s(s, %s, %s, %s, %s);\n", fn, name,
                scope_text(scope), text, out);
  fz_after_call(c, st, fn);
}

static void op_stage_axis(fz_case *c) {
  char text[32];
  ts_stage *stage = stage_arg(c, text, sizeof(text));
  int d = c->hostile && fz_chance(c, 5) ? (fz_chance(c, 50) ? -1 : 2)
                                     : (int)pick(c->src, 2);
  if (fz_chance(c, 50))
    d = ts_stage_contiguous(stage) >= 0 ? ts_stage_contiguous(stage) : d;
  int slot = fz_new_loop_slot(c);
  c->loops[slot] = ts_stage_axis(stage, d);
  ts_buf_printf(&c->prog, "  L[%d] = ts_stage_axis(%s, %d);\n", slot, text, d);
}

/* A copy loop split to a part the size of a block's side and bound to a
 * thread index, as a user lays out a shared copy by hand. */
static void op_bind_copy(fz_case *c) {
  static const int64_t sides[] = {1, 2, 4, 8, 16, 32};
  char text[32];
  op_stage_axis(c);
  int slot = c->nloops - 1;
  if (fz_chance(c, 60)) {
    snprintf(text, sizeof(text), "L[%d]", slot);
    fz_op_split(c, c->loops[slot], text, slot, sides[pick(c->src, 6)]);
    slot = c->nloops - 1 - (int)pick(c->src, 2);
  }
  snprintf(text, sizeof(text), "L[%d]", slot);
  fz_op_bind_to(c, c->loops[slot], text, slot,
             (ts_loop_kind)(TS_THREAD_X + pick(c->src, 3)));
}

/* A primitive taking a stage and a count (ts_pipeline,
 * ts_double_buffer_tiles) on one stage, or (as a user would, since the
 * shared stages of one loop pipeline together) on every shared stage with
 * one count.  ts_tma, which takes no count, comes as tma_call (n < 0). */
static void on_stages(fz_case *c, ts_stage *stage, const char *text,
                      const char *fn,
                      ts_status (*call)(ts_sched *, ts_stage *, int), int n) {
  bool all = stage && fz_chance(c, c->hostile ? 50 : 90);
  char count[16] = "";
  if (n >= 0)
    snprintf(count, sizeof(count), ", %d", n);
  for (int i = 0; i < (all ? c->nstages : 1); i++) {
    const char *name = all ? ts_stage_name(c->stages[i]) : "";
    if (all && !strstr(name, ".shared"))
      continue;
    ts_status st = call(c->s, all ? c->stages[i] : stage, n);
    if (all)
      ts_buf_printf(&c->prog, "  %s(s, S[%d]%s);\n", fn, i, count);
    else
      ts_buf_printf(&c->prog, "  %s(s, %s%s);\n", fn, text, count);
    fz_after_call(c, st, fn);
  }
}

static ts_status tma_call(ts_sched *s, ts_stage *stage, int unused) {
  (void)unused;
  return ts_tma(s, stage);
}

static void op_pipeline(fz_case *c, ts_stage *stage, const char *text) {
  static const int counts[] = {2, 3, 4, 8, 1, 9};
  int n = counts[c->hostile && fz_chance(c, 10) ? 4 + pick(c->src, 2)
                                             : pick(c->src, 4)];
  on_stages(c, stage, text, "ts_pipeline", ts_pipeline, n);
}

/* k tiles a copy: 1 is plain double buffering; 0 and 9 are refused. */
static void op_double_buffer_tiles(fz_case *c, ts_stage *stage,
                                   const char *text) {
  static const int counts[] = {2, 3, 4, 1, 8, 0, 9};
  int n = counts[c->hostile && fz_chance(c, 10) ? 5 + pick(c->src, 2)
                                             : pick(c->src, 5)];
  on_stages(c, stage, text, "ts_double_buffer_tiles", ts_double_buffer_tiles,
            n);
}

/* ts_tma, and in half the calls ts_warp_specialize after it (of 2 or 8
 * warps in some hostile ones), on one stage or every shared one; on a
 * random schedule mostly refused, by the primitive or at lowering. */
static void op_tma(fz_case *c, ts_stage *stage, const char *text) {
  static const int warps[] = {4, 4, 2, 8};
  int n = warps[pick(c->src, c->hostile ? 4 : 2)];
  on_stages(c, stage, text, "ts_tma", tma_call, -1);
  if (fz_chance(c, 50))
    on_stages(c, stage, text, "ts_warp_specialize", ts_warp_specialize, n);
}

static void op_layout(fz_case *c) {
  static const int64_t pads[] = {1, 4, 0, 2, 8, 32, -1, 33};
  char text[32];
  ts_stage *stage = stage_arg(c, text, sizeof(text));
  ts_status st;
  const char *fn;
  switch (pick(c->src, 6)) {
  case 3: case 4: /* twice the weight: pipelines need more to lower */
    op_pipeline(c, stage, text);
    return;
  case 5:
    op_tma(c, stage, text);
    return;
  case 0:
    fn = "ts_storage_transpose";
    st = ts_storage_transpose(c->s, stage);
    ts_buf_printf(&c->prog, "  %s(s, %s);\n", fn, text);
    break;
  case 1: {
    int64_t pad = pads[c->hostile && fz_chance(c, 10) ? 6 + pick(c->src, 2)
                                                   : pick(c->src, 6)];
    fn = "ts_storage_pad";
    st = ts_storage_pad(c->s, stage, pad);
    ts_buf_printf(&c->prog, "  %s(s, %s, %lld);\n", fn, text, (long long)pad);
    break;
  }
  default:
    if (fz_chance(c, 50)) {
      op_double_buffer_tiles(c, stage, text);
      return;
    }
    fn = "ts_double_buffer";
    st = ts_double_buffer(c->s, stage);
    ts_buf_printf(&c->prog, "  %s(s, %s);\n", fn, text);
    break;
  }
  fz_after_call(c, st, fn);
}

static void op_min_blocks(fz_case *c) {
  static const int counts[] = {1, 2, 3, 4, 8, 32, 0, 33};
  int n = counts[c->hostile && fz_chance(c, 20) ? 6 + pick(c->src, 2)
                                             : pick(c->src, 6)];
  ts_status st = ts_min_blocks_per_sm(c->s, n);
  ts_buf_printf(&c->prog, "  ts_min_blocks_per_sm(s, %d);\n", n);
  fz_after_call(c, st, "ts_min_blocks_per_sm");
}

/* Two of the loops bound to blockIdx in either order, or in a hostile
 * case any loops and groups below 1. */
static void op_swizzle(fz_case *c) {
  static const int64_t groups[] = {1, 2, 3, 4, 8, 64, 0, -3};
  char rows[32], cols[32];
  ts_loop *r, *k;
  if (c->nblock >= 2 && !(c->hostile && fz_chance(c, 30))) {
    int a = (int)pick(c->src, (uint32_t)c->nblock), b = (int)pick(c->src, 2);
    int ra = c->block[a], rb = c->block[(a + 1 + b) % c->nblock];
    r = c->loops[ra];
    k = c->loops[rb];
    snprintf(rows, sizeof(rows), "L[%d]", ra);
    snprintf(cols, sizeof(cols), "L[%d]", rb);
  } else {
    r = loop_arg(c, rows, sizeof(rows));
    k = loop_arg(c, cols, sizeof(cols));
  }
  int64_t g = groups[c->hostile && fz_chance(c, 20) ? 6 + pick(c->src, 2)
                                                 : pick(c->src, 6)];
  ts_status st = ts_swizzle(c->s, r, k, g);
  ts_buf_printf(&c->prog, "  ts_swizzle(s, %s, %s, %lld);\n", rows, cols,
                (long long)g);
  fz_after_call(c, st, "ts_swizzle");
}

/* The outermost reduction loop as most schedules name it, or -1. */
static int k_loop_index(const fz_case *c) {
  for (int i = 0; i < c->nloops; i++) {
    const char *name = ts_loop_name(c->loops[i]);
    if (!c->gone[i] && (!strcmp(name, "k") || !strcmp(name, "k.outer")))
      return i;
  }
  return -1;
}

/* The k loop, or in a hostile case (or where there is none) a loop
 * argument. */
static ts_loop *k_loop_arg(fz_case *c, char *text, size_t len, int *index) {
  *index = c->hostile ? -1 : k_loop_index(c);
  if (*index < 0)
    return loop_arg_at(c, text, len, index);
  snprintf(text, len, "L[%d]", *index);
  return c->loops[*index];
}

static void op_split_k(fz_case *c) {
  static const int64_t parts_list[] = {2, 4, 3, 8, 1, 0, 70000};
  int64_t parts = parts_list[c->hostile && fz_chance(c, 20) ? 5 + pick(c->src, 2)
                                                         : pick(c->src, 5)];
  bool atomic = fz_chance(c, 30);
  char text[32];
  int index;
  ts_loop *loop = k_loop_arg(c, text, sizeof(text), &index);
  double growth = 1.0;
  int64_t e = ts_loop_extent(loop);
  if (parts >= 1 && parts <= 65535 && e >= 1)
    growth = (double)(parts * ((e + parts - 1) / parts)) / (double)e + 1.0;
  if (c->work * growth > MAX_WORK)
    parts = 1;
  int o = fz_new_loop_slot(c), i = fz_new_loop_slot(c);
  ts_status st = ts_split_k(c->s, loop, parts,
                            atomic ? TS_SPLIT_K_ATOMIC : TS_SPLIT_K_WORKSPACE,
                            &c->loops[o], &c->loops[i]);
  ts_buf_printf(&c->prog, "  ts_split_k(s, %s, %lld, %s, &L[%d], &L[%d]);\n",
                text, (long long)parts,
                atomic ? "TS_SPLIT_K_ATOMIC" : "TS_SPLIT_K_WORKSPACE", o, i);
  fz_after_call(c, st, "ts_split_k");
  if (st == TS_OK && parts > 1) {
    c->work *= growth;
    c->gone[o] = true; /* bound */
    if (index >= 0)
      c->gone[index] = true;
  }
}

/* ts_wgmma_in_flight on the k loop, or in a hostile case any loop and
 * counts out of range; lowering refuses it wherever the loop has no wgmma
 * (the Hopper cases draw it where it has). */
static void op_in_flight(fz_case *c) {
  static const int counts[] = {1, 2, 0, 3, -1, 7};
  int n = counts[c->hostile && fz_chance(c, 20) ? 4 + pick(c->src, 2)
                                                : pick(c->src, 4)];
  char text[32];
  int index;
  ts_loop *loop = k_loop_arg(c, text, sizeof(text), &index);
  ts_status st = ts_wgmma_in_flight(c->s, loop, n);
  ts_buf_printf(&c->prog, "  ts_wgmma_in_flight(s, %s, %d);\n", text, n);
  fz_after_call(c, st, "ts_wgmma_in_flight");
}

static void random_op(fz_case *c) {
  uint32_t r = pick(c->src, 100);
  if (r < 20) op_split_random(c);
  else if (r < 27) op_fuse(c);
  else if (r < 37) op_reorder(c);
  else if (r < 49) op_bind(c);
  else if (r < 55) op_mark(c, false);
  else if (r < 58) op_rename(c);
  else if (r < 72) op_cache(c, false);
  else if (r < 78) op_cache(c, true);
  else if (r < 90 && c->nstages == 0 && !c->hostile) op_cache(c, false);
  else if (r < 82) op_stage_axis(c);
  else if (r < 84) op_bind_copy(c);
  else if (r < 90) op_layout(c);
  else if (r < 94) op_mark(c, true);
  else if (r < 95 && fz_chance(c, 50)) op_min_blocks(c);
  else if (r < 95) op_in_flight(c);
  else if (r < 96) op_swizzle(c);
  else if (r < 98) op_split_k(c);
  else if (r < 99) op_partition(c);
  else if (fz_chance(c, 50)) op_pack(c);
  else op_get_loop_random(c);
}

/* A start as most GPU schedules begin: i and j tiled over blocks and
 * threads, k split, with random tile sizes. */
static void gpu_skeleton(fz_case *c) {
  static const int64_t threads[] = {1, 2, 4, 8, 16, 32};
  fz_op_get_loop(c, "i");
  fz_op_get_loop(c, "j");
  fz_op_get_loop(c, "k");
  fz_op_split(c, c->loops[0], "L[0]", 0, threads[pick(c->src, 6)]); /* L3, L4 */
  fz_op_split(c, c->loops[1], "L[1]", 1, threads[pick(c->src, 6)]); /* L5, L6 */
  if (c->nloops != 7)
    return;
  char text[4][32] = {"L[3]", "L[5]", "L[4]", "L[6]"};
  ts_loop *order[4] = {c->loops[3], c->loops[5], c->loops[4], c->loops[6]};
  fz_op_reorder_of(c, 4, order, text);
  const ts_loop_kind kinds[4] = {TS_BLOCK_Y, TS_BLOCK_X, TS_THREAD_Y,
                                 TS_THREAD_X};
  for (int i = 0; i < 4; i++)
    if (fz_chance(c, 90))
      fz_op_bind_to(c, order[i], text[i], (int[]){3, 5, 4, 6}[i], kinds[i]);
  fz_op_split(c, c->loops[2], "L[2]", 2, factors[pick(c->src, 6)]);
  if (fz_chance(c, 15))
    op_split_k(c);
}

/* ---- The case ------------------------------------------------------------- */

static const char *type_constant(ts_dtype t) {
  return t == TS_F16 ? "TS_F16" : t == TS_BF16 ? "TS_BF16" : "TS_F32";
}

/* The program up to the definition, which every case starts with. */
static void program_head(fz_case *c) {
  ts_buf_printf(&c->prog,
                "/* tessel schedule fuzzer case, seed 0x%016llx */\n"
                "#include <stdio.h>\n#include <stdlib.h>\n"
                "#include <tessel.h>\n\n"
                "int main(void) {\n"
                "  ts_gemm def = ts_gemm_make(%lld, %lld, %lld);\n"
                "  def.layout = TS_%s;\n  def.alpha = %#.6gf;\n  def.beta = %#.6gf;\n"
                "  def.a_type = %s;\n  def.b_type = %s;\n  def.c_type = %s;\n",
                (unsigned long long)c->seed, (long long)c->def.m,
                (long long)c->def.n, (long long)c->def.k,
                ts_layout_name(c->def.layout), (double)c->def.alpha,
                (double)c->def.beta, type_constant(c->def.a_type),
                type_constant(c->def.b_type), type_constant(c->def.c_type));
  if (c->def.math == TS_MATH_TF32)
    ts_buf_puts(&c->prog, "  def.math = TS_MATH_TF32;\n");
}

static void begin_program(fz_case *c) {
  program_head(c);
  ts_buf_printf(&c->prog,
                "  ts_sched *s = ts_matmul(&def), *other = ts_matmul(&def);\n"
                "  ts_loop *F = ts_get_loop(other, \"i\");\n"
                "  ts_loop *L[%d] = {0};\n  ts_stage *S[%d] = {0};\n",
                MAX_LOOPS, MAX_STAGES);
}

static void end_program(fz_case *c) {
  ts_buf_printf(&c->prog,
                "  char msg[4096];\n"
                "  ts_status st = ts_check(s, 0x%016llxull, msg, sizeof(msg));\n"
                "  printf(\"%%s\\n%%s\\n\", ts_strerror(st), msg);\n",
                (unsigned long long)c->seed);
  if (!c->knobs)
    ts_buf_puts(&c->prog, "  (void)L; (void)S; (void)F;\n"
                          "  ts_sched_free(other);\n");
  ts_buf_puts(&c->prog, "  ts_sched_free(s);\n  return st != TS_OK;\n}\n");
}

/* Element types: fp32 in half the cases (a third of them multiplied in
 * tf32, which tensor cores need), else fp16 or bf16 A and B (in one case
 * of ten of two different types) with a C of theirs or fp32. */
static void random_types(fz_case *c) {
  static const ts_dtype narrow[] = {TS_F16, TS_BF16};
  if (fz_chance(c, 50)) {
    if (fz_chance(c, 33))
      c->def.math = TS_MATH_TF32;
    return;
  }
  c->def.a_type = c->def.b_type = narrow[pick(c->src, 2)];
  if (fz_chance(c, 10))
    c->def.b_type = narrow[pick(c->src, 2)];
  c->def.c_type = fz_chance(c, 50) ? c->def.a_type : TS_F32;
}

/* A definition at a small odd shape; in a third of the cases every
 * dimension, and in a fifth one of them, is tiny (1..4), far below any
 * tile the schedule's splits make. */
static void random_definition(fz_case *c) {
  static const float alphas[] = {1.0f, -0.5f, 2.0f};
  static const float betas[] = {0.0f, 0.5f, 1.0f};
  int64_t small = 1 + pick(c->src, 40);
  c->def = ts_gemm_make(1 + pick(c->src, 48), 1 + pick(c->src, 48),
                        fz_chance(c, 30) ? small / 4 + 1 : 1 + pick(c->src, 40));
  uint32_t tiny = pick(c->src, 100);
  int64_t *dims[3] = {&c->def.m, &c->def.n, &c->def.k};
  int one = (int)pick(c->src, 3);
  for (int d = 0; d < 3; d++)
    if (tiny < 33 || (tiny < 53 && d == one))
      *dims[d] = 1 + pick(c->src, 4);
  c->work = (double)(c->def.m * c->def.n * c->def.k);
  c->def.layout = (ts_layout)pick(c->src, 4);
  c->def.alpha = alphas[pick(c->src, 3)];
  c->def.beta = betas[pick(c->src, 3)];
  random_types(c);
}

/* Replayed onto a fresh definition of the same name: a space's schedule
 * is named after the space, which the IR's first line prints. */
static bool same_ir_after_replay(fz_case *c) {
  ts_sched *again = ts_matmul_named(&c->def, ts_sched_name(c->s));
  ts_status st = ts_replay(c->s, again);
  char *want = ts_print_ir(c->s), *got = ts_print_ir(again);
  bool same = st == TS_OK && want && got && strcmp(want, got) == 0;
  if (!same)
    fail(c, "the trace does not replay to the same loop nest (%s): %s",
         ts_strerror(st), ts_sched_errmsg(again));
  free(want);
  free(got);
  ts_sched_free(again);
  return same;
}

/* An accepted schedule's CUDA does what its Hopper calls asked: the TMA's
 * bulk copies for ts_tma, the producer's setmaxnreg for
 * ts_warp_specialize (lowering refuses where it cannot). */
static void check_hopper_source(fz_case *c, const char *cu,
                                const char *trace) {
  if (strstr(trace, "ts_tma(") && !strstr(cu, "cp.async.bulk.tensor"))
    fail(c, "ts_tma accepted, but the CUDA has no cp.async.bulk.tensor");
  if (strstr(trace, "ts_warp_specialize(") && !strstr(cu, "setmaxnreg.dec"))
    fail(c, "ts_warp_specialize accepted, but the CUDA has no setmaxnreg");
}

/* The checks of an accepted schedule: the executor's verdict, then the
 * source, the printed trace and its replay. */
static fz_outcome check_accepted(fz_case *c) {
  char msg[2048];
  ts_status st = ts_check(c->s, c->seed, msg, sizeof(msg));
  if (st == TS_ERR_EXEC_FAULT || st == TS_ERR_MISMATCH) {
    fail(c, "accepted schedule is wrong: %s: %s", ts_strerror(st), msg);
    return FZ_FAIL;
  }
  if (st != TS_OK) {
    if (!msg[0])
      fail(c, "ts_check refused the schedule with %s and no message",
           ts_strerror(st));
    /* The verifier's findings are lowering bugs, not the user's errors. */
    if (strstr(msg, "malformed kernel"))
      fail(c, "lowering built a malformed kernel: %s", msg);
    return msg[0] && !c->why[0] ? FZ_PASS_REFUSED : FZ_FAIL;
  }
  char *cu = ts_cuda_source(c->s), *trace = ts_print_trace(c->s);
  if (!cu || !trace)
    fail(c, "accepted and correct, but ts_cuda_source or ts_print_trace "
         "gave NULL: %s", ts_sched_errmsg(c->s));
  else
    check_hopper_source(c, cu, trace);
  free(cu);
  free(trace);
  if (c->why[0] || !same_ir_after_replay(c))
    return FZ_FAIL;
  return FZ_PASS_CHECKED;
}

static char *make_report(fz_case *c) {
  ts_buf r;
  ts_buf_init(&r);
  ts_buf_printf(&r, "fuzz case 0x%016llx failed: %s\nschedule status: %s\n%s\n"
                "The case as C:\n%s", (unsigned long long)c->seed, c->why,
                c->s ? ts_strerror(ts_sched_status(c->s)) : "no schedule",
                c->s ? ts_sched_errmsg(c->s) : "",
                c->prog.data ? c->prog.data : "(out of memory)\n");
  return ts_buf_take(&r);
}

/* The case's schedule and the other one its hostile calls pass loops of. */
static void begin_schedule(fz_case *c) {
  begin_program(c);
  c->s = ts_matmul(&c->def);
  c->other = ts_matmul(&c->def);
  c->foreign = ts_get_loop(c->other, "i");
}

/* A random sequence of primitives, plausible or hostile. */
static void primitive_case(fz_case *c) {
  begin_schedule(c);
  c->hostile = fz_chance(c, 40);
  if (fz_chance(c, 60))
    gpu_skeleton(c);
  int nops = 1 + (int)pick(c->src, c->hostile ? MAX_OPS : MAX_OPS / 2);
  for (int i = 0; i < nops && !c->why[0]; i++)
    random_op(c);
}

/* A space's schedule in a drawn configuration (fuzz_knobs.c), perhaps at a
 * larger definition; no schedule when its text does not parse. */
static void knob_case(fz_case *c) {
  c->knobs = true;
  fz_knob_definition(c->src, &c->def);
  program_head(c);
  c->s = fz_knob_schedule(c->src, &c->def, &c->prog, c->why, sizeof(c->why));
  /* Without a schedule the parser refused the text: a refusal too. */
  c->status = c->s ? ts_sched_status(c->s) : TS_ERR_BAD_ARG;
}

/* A warpgroup schedule with the Hopper primitives (fuzz_hopper.c). */
static void hopper_case(fz_case *c) {
  c->hopper = true;
  fz_hopper_definition(c);
  begin_schedule(c);
  fz_hopper_case(c);
}

/* What the case's schedule calls, from its trace. */
static void note_calls(const fz_case *c, fz_result *res) {
  char *trace = c->s ? ts_print_trace(c->s) : NULL;
  res->tensorized = trace && strstr(trace, "ts_tensorize(");
  res->tma = trace && strstr(trace, "ts_tma(");
  res->warpspec = trace && strstr(trace, "ts_warp_specialize(");
  res->in_flight = trace && strstr(trace, "ts_wgmma_in_flight(");
  res->persistent = trace && strstr(trace, "ts_persistent(");
  free(trace);
  res->layout = c->def.layout;
  res->a_type = c->def.a_type;
}

fz_result fz_run_case(fz_source *src, uint64_t seed) {
  fz_case c = {.src = src, .seed = seed};
  ts_buf_init(&c.prog);
  running = &c;
  random_definition(&c);
  if (fz_chance(&c, FZ_KNOB_PERCENT))
    knob_case(&c);
  else if (fz_chance(&c, FZ_HOPPER_PERCENT))
    hopper_case(&c);
  else
    primitive_case(&c);
  fz_result res = {.outcome = c.why[0]          ? FZ_FAIL
                               : c.status != TS_OK ? FZ_PASS_ERROR
                                                   : check_accepted(&c),
                   .knobs = c.knobs, .hopper = c.hopper};
  res.status = c.s ? (int)ts_sched_status(c.s) : -1;
  note_calls(&c, &res);
  end_program(&c);
  if (res.outcome == FZ_FAIL)
    res.report = make_report(&c);
  running = NULL;
  ts_buf_free(&c.prog);
  ts_sched_free(c.other);
  ts_sched_free(c.s);
  return res;
}
