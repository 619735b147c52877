/*
 * ts_pack: an operand copied, before the schedule's kernel runs, into the
 * workspace in the form its readers want, as BLIS packs its panels.  The
 * copy is op(A) or op(B) k-major (k contiguous: op(A) as M rows of K,
 * op(B) as N rows of K), each row padded to 16 bytes so that every row
 * starts aligned for 16-byte copies, and rounded as the definition's math
 * rounds (to tf32 under TS_MATH_TF32).  wgmma reads tf32 operands k-major
 * only, and reads fp32 as tf32 by dropping the low bits: a packed operand
 * is k-major, and read exactly as the math rounds it; an operand already
 * k-major may be read as it lies, truncated.
 *
 * The packed buffer is the same logical buffer, (M, K) or (K, N), with
 * other strides, so the computation's indices do not change: the
 * schedule's A or B becomes the packed view, and the original stays the
 * kernel's parameter for the packing kernel to read (lowering builds that
 * kernel, src/lower/lower_pack.c).  Caches made afterwards copy from the view,
 * walking its contiguous dimension, k.
 */
#include <string.h>

#include "../base/nearest.h"
#include "sched.h"

/* A row of k padded to 16 bytes. */
static int64_t padded_row(const ts_gemm *g, ts_dtype t) {
  int64_t per = 16 / ts_dtype_size(t);
  return (g->k + per - 1) / per * per;
}

/* The stage that copies operand w from global memory, or NULL. */
static const ts_stage *stage_of_input(const ts_sched *s, int w) {
  for (int i = 0; i < s->nstages; i++) {
    const ts_stage *st = s->stages[i];
    if (!st->write && st->operand == w && st->src &&
        st->src->scope == SCOPE_GLOBAL)
      return st;
  }
  return NULL;
}

ts_status (ts_pack)(ts_sched *s, const char *buffer) {
  CHECK_SCHED(s);
  const char *fn = "ts_pack";
  if (!buffer)
    return sched_fail(s, TS_ERR_NULL_ARG, NULL,
                      "%s: argument 2 'buffer' is NULL", fn);
  /* Check: an input, not packed yet, and not cached yet (a cache made
   * before would copy the original). */
  static const char *const inputs[2] = {"A", "B"};
  int w = strcmp(buffer, "A") == 0 ? 0 : strcmp(buffer, "B") == 0 ? 1 : -1;
  if (w < 0) {
    const char *near = ts_nearest_name(buffer, inputs, 2);
    return sched_fail(s, sched_buffer_exists(s, buffer) ? TS_ERR_BAD_ARG
                                                        : TS_ERR_UNKNOWN_BUFFER,
                      NULL, "%s: argument 2 'buffer' must be \"A\" or \"B\", "
                      "an input of the GEMM (got \"%s\"%s%s%s)", fn, buffer,
                      near ? "; did you mean \"" : "", near ? near : "",
                      near ? "\"?" : "");
  }
  ir_buffer **operand = w == 0 ? &s->A : &s->B;
  if ((*operand)->workspace_view)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL, "%s: %s is packed already",
                      fn, buffer);
  const ts_stage *st = stage_of_input(s, w);
  if (st)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL,
                      "%s: %s is cached already (\"%s\"), and that cache "
                      "copies the original; call ts_pack before "
                      "ts_cache_read", fn, buffer, st->name);
  /* Step 1. The view: k contiguous, rows padded to 16 bytes. */
  const ir_buffer *in = *operand;
  int64_t row = padded_row(&s->def, in->dtype);
  int64_t strides[2] = {w == 0 ? row : 1, w == 0 ? 1 : row};
  ir_buffer *view =
      ir_new_buffer(&s->arena, w == 0 ? "A.packed" : "B.packed",
                    SCOPE_GLOBAL, in->dtype, 2, in->shape, strides);
  if (!view)
    return sched_oom(s, fn);
  view->workspace_view = true;
  /* Step 2. The computation and every cache made from now read it. */
  trace_rec rec = {.op = TR_PACK, .name = ts_arena_strdup(&s->arena, buffer)};
  if (!rec.name)
    return sched_oom(s, fn);
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK) {
    view->made_by = rec.label;
    *operand = view;
  }
  return status;
}
