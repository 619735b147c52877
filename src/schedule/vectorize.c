/*
 * vectorize: an innermost loop of 2 or 4 iterations (or 8, for 16-byte
 * accesses to fp16 or bf16 elements) becomes one access of that width.  The primitive only marks the loop; lowering decides access
 * by access which are contiguous and aligned (src/lower/vectors.c), and
 * the others stay scalar lanes.
 */
#include "../ir/visit.h"
#include "sched.h"

static bool stop_at_loop(ir_visitor *v, const ir_stmt *s) {
  v->stop = s->kind == S_FOR;
  return true;
}

static bool has_loop(const ir_stmt *s) {
  ir_visitor v = {.stmt = stop_at_loop};
  ir_visit_stmt(&v, s);
  return v.stop;
}

/* The split that made `loop`, or NULL; *is_outer says which of its two
 * loops it is. */
static const trace_rec *split_making(const ts_sched *s, const ts_loop *loop,
                                     bool *is_outer) {
  for (int t = 0; t < s->ntrace; t++) {
    const trace_rec *r = &s->trace[t];
    if (r->op == TR_SPLIT && r->nresults == 2 &&
        (r->results[0] == loop->id || r->results[1] == loop->id)) {
      *is_outer = r->results[0] == loop->id;
      return r;
    }
  }
  return NULL;
}

/* 8 lanes of 2-byte elements are a 16-byte access, as 4 floats are. */
static bool has_narrow_type(const ts_sched *s) {
  return ts_dtype_size(s->def.a_type) == 2 ||
         ts_dtype_size(s->def.b_type) == 2 || ts_dtype_size(s->def.c_type) == 2;
}

static bool is_width(const ts_sched *s, int64_t n) {
  return n == 1 || n == 2 || n == 4 || (n == 8 && has_narrow_type(s));
}

/* TS_ERR_BAD_VECTOR, saying where the lanes are: in the inner loop, when
 * `loop` is the outer loop of a split by a width, or else in the inner
 * loop of a split by 4 or 2 the user is still to make. */
static ts_status bad_width(ts_sched *s, const ts_loop *loop) {
  bool is_outer = false;
  const trace_rec *r = split_making(s, loop, &is_outer);
  if (r && is_outer && is_width(s, r->factor))
    return sched_fail(s, TS_ERR_BAD_VECTOR, loop,
                      "ts_vectorize: loop \"%s\" has %lld iterations; it is "
                      "the outer loop of a split by %lld, whose inner loop "
                      "\"%s\" holds the lanes: vectorize that one",
                      loop->name, (long long)loop->extent,
                      (long long)r->factor, s->loops[r->results[1]]->name);
  return sched_fail(s, TS_ERR_BAD_VECTOR, loop,
                    "ts_vectorize: loop \"%s\" has %lld iterations; a vector "
                    "is 1, 2 or 4 wide%s: split the loop by %s and "
                    "vectorize the inner loop", loop->name,
                    (long long)loop->extent,
                    has_narrow_type(s) ? " (8 for fp16 and bf16)" : "",
                    has_narrow_type(s) ? "8 (or 4, 2)" : "4 (or 2)");
}

ts_status (ts_vectorize)(ts_sched *s, ts_loop *loop) {
  CHECK_SCHED(s);
  const char *fn = "ts_vectorize";
  /* Check: a live serial spatial loop of a vector width, innermost. */
  if (!sched_check_loop(s, fn, 2, "loop", loop) ||
      !sched_require_serial(s, fn, loop) ||
      !sched_require_static(s, fn, loop))
    return s->status;
  if (!is_width(s, loop->extent))
    return bad_width(s, loop);
  if (loop->reduce)
    return sched_fail(s, TS_ERR_BAD_ARG, loop,
                      "%s: loop \"%s\" iterates the reduction axis k; its "
                      "iterations add into one accumulator and cannot be "
                      "lanes of a vector", fn, loop->name);
  nest_path path;
  if (!nest_find(s->root, loop, &path))
    return sched_fail(s, TS_ERR_UNKNOWN_LOOP, NULL, "%s: loop \"%s\" is not "
                      "in the nest", fn, loop->name);
  if (has_loop(path.node[path.depth - 1]->for_.body))
    return sched_fail(s, TS_ERR_NOT_INNERMOST, loop,
                      "%s: loop \"%s\" has loops inside; only an innermost "
                      "loop is vectorized", fn, loop->name);
  /* Step 1. Mark it. */
  trace_rec rec = {.op = TR_VECTORIZE, .loops = {loop->id}, .nloops = 1};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    loop->kind = TS_VECTORIZED;
  return status;
}
