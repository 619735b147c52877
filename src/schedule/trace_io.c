/*
 * A schedule's trace as text and back: what a process that built a
 * schedule hands to another (tessel runs a schedule file's functions in a
 * child process, src/cli/isolate.c).  The text is the definition, one line
 * per record of the trace, the status and message, and "end":
 *
 *   ts-trace 2 M N K LAYOUT A B C MATH
 *   r OP NLOOPS LOOP... NRESULTS RESULT... FACTOR TAG SCOPE STAGE SPLITK NAME
 *     FILE LINE
 *   status CODE FILE LINE MESSAGE
 *   end
 *
 * (a record on one line), FILE and LINE where the call was made (the
 * primitive's, the error's), a NULL file when unknown.
 *
 * Numbers are decimal; a string is LENGTH:BYTES ("-1:" for none), so any
 * byte may be in it.  Saving allocates nothing and calls no stdio, so a
 * signal handler may save the trace of a schedule whose builder crashed;
 * text cut short (a process that died while writing) loads as the whole
 * records it has.  Loading replays each record onto a fresh schedule and
 * checks that it made the loops it made when saved.
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

enum { TRACE_IO_VERSION = 2 }; /* 2: with the calls' locations */

/* ---- Saving (async-signal-safe) ------------------------------------------------ */

/* Text written into a caller's buffer, snprintf's way: len counts what
 * would have been written. */
typedef struct {
  char *buf;
  size_t cap, len;
} out_text;

static void put_bytes(out_text *o, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++, o->len++)
    if (o->len + 1 < o->cap)
      o->buf[o->len] = p[i];
}

static void put_str(out_text *o, const char *s) { put_bytes(o, s, strlen(s)); }

static void put_int(out_text *o, int64_t v) {
  char digits[24];
  int n = 0;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    digits[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    put_bytes(o, "-", 1);
  while (n)
    put_bytes(o, &digits[--n], 1);
}

/* " 12" */
static void put_field(out_text *o, int64_t v) {
  put_bytes(o, " ", 1);
  put_int(o, v);
}

/* " 5:bytes", " -1:" for NULL */
static void put_string(out_text *o, const char *s) {
  put_field(o, s ? (int64_t)strlen(s) : -1);
  put_bytes(o, ":", 1);
  if (s)
    put_str(o, s);
}

static void put_record(out_text *o, const trace_rec *r) {
  put_str(o, "r");
  put_field(o, r->op);
  put_field(o, r->nloops);
  for (int i = 0; i < r->nloops && i < TRACE_MAX_LOOPS; i++)
    put_field(o, r->loops[i]);
  put_field(o, r->nresults);
  for (int i = 0; i < r->nresults && i < 2; i++)
    put_field(o, r->results[i]);
  put_field(o, r->factor);
  put_field(o, r->tag);
  put_field(o, r->scope);
  put_field(o, r->stage);
  put_field(o, r->split_k);
  put_string(o, r->name);
  put_string(o, r->at.file);
  put_field(o, r->at.line);
  put_str(o, "\n");
}

size_t ts_trace_save(const ts_sched *s, char *buf, size_t cap) {
  out_text o = {.buf = buf, .cap = buf ? cap : 0};
  if (s) {
    const ts_gemm *g = &s->def;
    put_str(&o, "ts-trace");
    const int64_t head[] = {TRACE_IO_VERSION, g->m, g->n, g->k, g->layout,
                            g->a_type, g->b_type, g->c_type, g->math};
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
      put_field(&o, head[i]);
    put_str(&o, "\n");
    for (int i = 0; i < s->ntrace; i++)
      put_record(&o, &s->trace[i]);
    put_str(&o, "status");
    put_field(&o, s->status);
    ts_location at = ts_sched_error_location(s);
    put_string(&o, at.file);
    put_field(&o, at.line);
    put_string(&o, s->status == TS_OK ? "" : ts_sched_errmsg(s));
    put_str(&o, "\nend\n");
  }
  if (o.cap)
    o.buf[o.len < o.cap ? o.len : o.cap - 1] = 0;
  return o.len;
}

/* ---- Loading ------------------------------------------------------------------- */

/* The text being read: p moves, end is past the last byte. */
typedef struct {
  const char *p, *end;
} in_text;

static bool read_word(in_text *in, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(in->end - in->p) < n || memcmp(in->p, word, n) != 0)
    return false;
  in->p += n;
  return true;
}

/* " 12": a space and a decimal number. */
static bool read_int(in_text *in, int64_t *v) {
  if (!read_word(in, " "))
    return false;
  bool neg = read_word(in, "-");
  uint64_t u = 0;
  const char *start = in->p;
  for (; in->p < in->end && *in->p >= '0' && *in->p <= '9'; in->p++) {
    if (u > (uint64_t)INT64_MAX / 10)
      return false;
    u = u * 10 + (uint64_t)(*in->p - '0');
  }
  if (in->p == start || u > (uint64_t)INT64_MAX)
    return false;
  *v = neg ? -(int64_t)u : (int64_t)u;
  return true;
}

/* An int field in lo..hi. */
static bool read_range(in_text *in, int64_t lo, int64_t hi, int *v) {
  int64_t x;
  if (!read_int(in, &x) || x < lo || x > hi)
    return false;
  *v = (int)x;
  return true;
}

/* " 5:bytes" into the schedule's arena (*s NULL for -1). */
static bool read_string(in_text *in, ts_arena *a, const char **s) {
  int64_t n;
  if (!read_int(in, &n) || n < -1 || !read_word(in, ":") ||
      n > in->end - in->p)
    return false;
  *s = NULL;
  if (n < 0)
    return true;
  char *copy = ts_arena_alloc(a, (size_t)n + 1);
  if (!copy)
    return false;
  memcpy(copy, in->p, (size_t)n);
  copy[n] = 0;
  in->p += n;
  *s = copy;
  return true;
}

static bool read_line_end(in_text *in) { return read_word(in, "\n"); }

/* "r ..." after the "r". */
static bool read_record(in_text *in, ts_arena *a, trace_rec *r) {
  int op, tag, scope, split_k;
  *r = (trace_rec){0};
  if (!read_range(in, 0, TR_PINGPONG, &op) ||
      !read_range(in, 0, TRACE_MAX_LOOPS, &r->nloops))
    return false;
  for (int i = 0; i < r->nloops; i++)
    if (!read_range(in, 0, INT32_MAX, &r->loops[i]))
      return false;
  if (!read_range(in, 0, 2, &r->nresults))
    return false;
  for (int i = 0; i < r->nresults; i++)
    if (!read_range(in, 0, INT32_MAX, &r->results[i]))
      return false;
  if (!read_int(in, &r->factor) || !read_range(in, 0, INT32_MAX, &tag) ||
      !read_range(in, 0, INT32_MAX, &scope) ||
      !read_range(in, 0, INT32_MAX, &r->stage) ||
      !read_range(in, 0, INT32_MAX, &split_k) ||
      !read_string(in, a, &r->name) || !read_string(in, a, &r->at.file) ||
      !read_range(in, 0, INT32_MAX, &r->at.line) || !read_line_end(in))
    return false;
  r->op = (trace_op)op;
  r->tag = (ts_loop_kind)tag;
  r->scope = (ts_scope)scope;
  r->split_k = (ts_split_k_mode)split_k;
  return true;
}

/* The definition line: the one onto's is, or an error on onto. */
static ts_status read_head(in_text *in, ts_sched *onto) {
  const ts_gemm *g = &onto->def;
  const int64_t want[] = {TRACE_IO_VERSION, g->m, g->n, g->k, g->layout,
                          g->a_type, g->b_type, g->c_type, g->math};
  bool ok = read_word(in, "ts-trace");
  for (size_t i = 0; ok && i < sizeof(want) / sizeof(want[0]); i++) {
    int64_t v;
    ok = read_int(in, &v) && v == want[i];
  }
  if (ok && read_line_end(in))
    return TS_OK;
  return sched_fail(onto, TS_ERR_BAD_ARG, NULL, "ts_trace_load: the text is "
                    "not a trace that ts_trace_save wrote of a schedule of "
                    "onto's definition (%lldx%lldx%lld %s)", (long long)g->m,
                    (long long)g->n, (long long)g->k,
                    ts_layout_name(g->layout));
}

/* The record replayed, and the loops it made the ones it made before. */
static ts_status replay_saved(ts_sched *onto, const trace_rec *r) {
  ts_status st = sched_replay_record(onto, r);
  if (st != TS_OK)
    return st;
  const trace_rec *made = &onto->trace[onto->ntrace - 1];
  bool same = made->op == r->op && made->nresults == r->nresults;
  for (int i = 0; same && i < r->nresults; i++)
    same = made->results[i] == r->results[i];
  if (same)
    return TS_OK;
  return sched_fail(onto, TS_ERR_BAD_ARG, NULL, "ts_trace_load: record %d "
                    "(%s) made other loops than it made when saved",
                    onto->ntrace, made->label);
}

/* "status CODE FILE LINE MESSAGE\nend\n" after the "status": onto takes
 * them. */
static ts_status read_status(in_text *in, ts_sched *onto, bool *complete) {
  int code;
  const char *msg;
  ts_location at;
  if (!read_range(in, 0, TS_STATUS_COUNT - 1, &code) ||
      !read_string(in, &onto->arena, &at.file) ||
      !read_range(in, 0, INT32_MAX, &at.line) ||
      !read_string(in, &onto->arena, &msg) || !read_line_end(in))
    return TS_OK; /* cut short in the status line */
  *complete = read_word(in, "end\n");
  if (code != TS_OK && onto->status == TS_OK) {
    /* whole: sched_fail would cut a long nest short */
    ts_sched_fail(onto, (ts_status)code, msg);
    onto->err_at = at;
  }
  return onto->status;
}

ts_status ts_trace_load(ts_sched *onto, const char *text, size_t len,
                        bool *complete) {
  bool done = false;
  if (complete)
    *complete = false;
  if (!onto || !text)
    return TS_ERR_NULL_ARG;
  if (onto->status != TS_OK)
    return onto->status;
  if (onto->ntrace != 0 || onto->nloops != 3)
    return sched_fail(onto, TS_ERR_BAD_ARG, NULL, "ts_trace_load: argument "
                      "1 'onto' must be a fresh ts_matmul schedule");
  in_text in = {text, text + len};
  if (!memchr(text, '\n', len))
    return TS_OK; /* cut short in the definition's line: nothing to replay */
  ts_status st = read_head(&in, onto);
  while (st == TS_OK && in.p < in.end) {
    if (read_word(&in, "status")) {
      st = read_status(&in, onto, &done);
      break;
    }
    trace_rec r;
    const char *line = in.p;
    if (!read_word(&in, "r") || !read_record(&in, &onto->arena, &r)) {
      if (memchr(line, '\n', (size_t)(in.end - line)))
        st = sched_fail(onto, TS_ERR_BAD_ARG, NULL, "ts_trace_load: line "
                        "%d is not a record that ts_trace_save wrote",
                        onto->ntrace + 2);
      break; /* else the text was cut short in this record */
    }
    st = replay_saved(onto, &r);
  }
  if (complete)
    *complete = done;
  return st;
}
