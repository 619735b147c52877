/*
 * Storage layout of a cache: transposition (so that reads along the
 * cache's first dimension are contiguous, as seed 000's matmul4 stores A
 * transposed to read it as float4) and padding of the stored rows (so that
 * a warp's column accesses fall in different shared-memory banks), or a
 * swizzle of their 16-byte chunks (the same without the padding).  Only
 * the buffer's strides or chunk order change; every access keeps its
 * logical indices.
 */
#include "sched.h"

enum { MAX_PAD = 32 };

static ts_status relayout(ts_sched *s, const char *fn, ts_stage *st,
                          bool transposed, int64_t pad, trace_rec *rec) {
  int order[2] = {transposed ? 1 : 0, transposed ? 0 : 1};
  ir_buffer old = *st->buf;
  ir_buffer_set_layout(st->buf, order, pad);
  if (st->buf->scope == SCOPE_SHARED &&
      sched_shared_bytes(s) > SCHED_SHARED_LIMIT) {
    int64_t bytes = sched_shared_bytes(s);
    *st->buf = old;
    return sched_fail(s, TS_ERR_SHARED_LIMIT, NULL,
                      "%s: \"%s\" would bring the shared caches to %lld "
                      "bytes, over the limit of %d", fn, st->name,
                      (long long)bytes, SCHED_SHARED_LIMIT);
  }
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, rec);
  if (status != TS_OK) {
    *st->buf = old;
    return status;
  }
  st->transposed = transposed;
  return TS_OK;
}

ts_status (ts_storage_transpose)(ts_sched *s, ts_stage *stage) {
  CHECK_SCHED(s);
  /* Check: a cache_read stage, not transposed yet. */
  if (!sched_check_read_stage(s, "ts_storage_transpose", stage))
    return s->status;
  if (stage->transposed || stage->buf->swizzle)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL,
                      "ts_storage_transpose: \"%s\" is already %s",
                      stage->name, stage->transposed
                                       ? "stored transposed"
                                       : "swizzled; transpose it first");
  /* Step 1. Store dimension 1 outermost. */
  trace_rec rec = {.op = TR_TRANSPOSE, .stage = stage->id};
  return relayout(s, "ts_storage_transpose", stage, true, stage->buf->pad,
                  &rec);
}

ts_status (ts_storage_swizzle)(ts_sched *s, ts_stage *stage) {
  CHECK_SCHED(s);
  const char *fn = "ts_storage_swizzle";
  /* Check: a shared cache_read stage, unpadded, not swizzled, of rows of
   * 2, 4 or 8k chunks and 8k rows. */
  if (!sched_check_read_stage(s, fn, stage))
    return s->status;
  ir_buffer *b = stage->buf;
  if (b->scope != SCOPE_SHARED)
    return sched_fail(s, TS_ERR_NOT_SHARED, NULL, "%s: \"%s\" is in "
                      "registers; only shared memory has banks", fn,
                      stage->name);
  if (b->swizzle || b->pad)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL, "%s: \"%s\" is already "
                      "%s; padding and swizzling are alternatives", fn,
                      stage->name, b->swizzle ? "swizzled" : "padded");
  int64_t row = b->shape[b->order[1]] * ts_dtype_size(b->dtype);
  int64_t rows = b->shape[b->order[0]], chunks = row / 16;
  if (row % 16 != 0 || !(chunks == 2 || chunks == 4 || chunks % 8 == 0) ||
      rows % 8 != 0)
    return sched_fail(s, TS_ERR_BAD_ARG, NULL, "%s: \"%s\" stores %lld rows "
                      "of %lld bytes; a swizzle needs rows of 32, 64 or a "
                      "multiple of 128 bytes and a multiple of 8 rows", fn,
                      stage->name, (long long)rows, (long long)row);
  /* Step 1. Permute the chunks. */
  trace_rec rec = {.op = TR_SWIZZLE_STORAGE, .stage = stage->id};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status == TS_OK)
    b->swizzle = chunks < 8 ? (int)chunks : 8;
  return status;
}

ts_status (ts_storage_pad)(ts_sched *s, ts_stage *stage, int64_t pad) {
  CHECK_SCHED(s);
  /* Check: a cache_read stage and a pad of 0..MAX_PAD elements. */
  if (!sched_check_read_stage(s, "ts_storage_pad", stage))
    return s->status;
  if (stage->buf->swizzle && pad)
    return sched_fail(s, TS_ERR_STAGE_USED, NULL, "ts_storage_pad: \"%s\" "
                      "is swizzled; padding and swizzling are alternatives",
                      stage->name);
  if (pad < 0 || pad > MAX_PAD)
    return sched_fail(s, TS_ERR_BAD_PAD, NULL,
                      "ts_storage_pad: argument 3 'pad' must be in 0..%d "
                      "elements (got %lld) for \"%s\"", MAX_PAD,
                      (long long)pad, stage->name);
  /* Step 1. Lengthen each stored row. */
  trace_rec rec = {.op = TR_PAD, .stage = stage->id, .factor = pad};
  return relayout(s, "ts_storage_pad", stage, stage->transposed, pad, &rec);
}
