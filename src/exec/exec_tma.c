/*
 * The reference executor's TMA pipelines (S_PIPELINE, S_TMA, S_MBARRIER):
 * each stage's full and empty mbarriers as the hardware keeps them
 * (arrivals, a transaction count, the phases completed) and each thread's
 * view of them (the phases its waits have seen).
 *
 * A copy reads its box when issued (global memory does not change in a
 * kernel) through the kernel's tensor map of the operand, as given or
 * ts_pack's view of the workspace: zeros past the map's dimensions, rows
 * at its pitch.  Its elements are in flight until the full barrier's
 * phase completes: its one arrival
 * (arrive.expect_tx of the stage's bytes) has come and the copies have
 * delivered exactly those bytes.  Then they land, tagged with the phase,
 * and a thread may read one only after a wait of its own has seen that
 * phase.  A producer may write a stage again only after its wait has
 * seen the empty barrier complete once for each earlier fill, which the
 * consumer warps' arrivals do.  Faults name the buffer, the stage, the
 * phase and the thread: a read before the wait, a write over a stage not
 * released, bytes past or short of the expected count, a tensor map's box
 * that is not the cache's or that points elsewhere than the operand,
 * copies in flight at the pipeline's end.
 */
#include "exec_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"

static const char *const bar_names[2] = {"full", "empty"};

/* The thread as "(x, y, z)". */
static void thread_name(const exec *x, int t, char *out, size_t n) {
  int64_t bx = x->k->block[0], by = x->k->block[1];
  snprintf(out, n, "(%lld, %lld, %lld)", (long long)(t % bx),
           (long long)(t / bx % by), (long long)(t / (bx * by)));
}

bool exec_tma_begin(exec *x, const ir_stmt *s) {
  const ir_pipeline *p = s->pipe.pipe;
  tma_state *ts = calloc(1, sizeof(*ts));
  size_t stages = (size_t)p->stages;
  if (ts) {
    ts->p = p;
    ts->bars = calloc(2 * stages, sizeof(*ts->bars));
    ts->seen = calloc(2 * stages * (size_t)x->nthreads, sizeof(*ts->seen));
    ts->fills = calloc(stages, sizeof(*ts->fills));
  }
  if (!ts || !ts->bars || !ts->seen || !ts->fills) {
    exec_tma_end(x, ts, false);
    exec_fault(x, 0, "the executor ran out of memory");
    return false;
  }
  for (size_t i = 0; i < stages; i++) {
    ts->bars[i].count = 1;                        /* full: the producer */
    ts->bars[stages + i].count = p->consumers;    /* empty: each warp */
  }
  x->tma = ts;
  return true;
}

/* A barrier's phase completes when its arrivals are in and, for a full
 * barrier, its bytes: the copies waiting on it land. */
static void try_complete(mbar_state *b) {
  if (b->arrivals < b->count || b->tx != 0)
    return;
  b->arrivals = 0;
  b->phases++;
  for (size_t i = 0; i < b->nland; i++) {
    landing *l = &b->land[i];
    mem *m = l->m;
    m->data[l->at] = l->value;
    m->defined[l->at] = 1;
    m->pending[l->at] = NONE;
    m->writer[l->at] = m->reader[l->at] = NONE;
    m->landed[l->at] = (int32_t)b->phases;
  }
  b->nland = 0;
}

/* e's value, the same for the whole block (a stage, a box's corner);
 * -1 where it is not. */
static int64_t stage_of(exec *x, const ir_expr *e, int t) {
  size_t mark = x->top;
  int64_t *v = exec_push(x, sizeof(int64_t) * (size_t)x->nthreads);
  int64_t out = v && eval_int(x, e, x->all, v) ? v[0] : -1;
  x->top = mark;
  if (out < 0 && !x->fault)
    exec_fault(x, t, "a TMA pipeline's stage or box corner differs between "
               "threads");
  return out;
}

static mbar_state *barrier(tma_state *ts, ir_mbar_which w, int64_t s) {
  return &ts->bars[(size_t)w * (size_t)ts->p->stages + (size_t)s];
}

static int *seen(exec *x, tma_state *ts, ir_mbar_which w, int64_t s, int t) {
  return &ts->seen[((size_t)w * (size_t)ts->p->stages + (size_t)s) *
                       (size_t)x->nthreads + (size_t)t];
}

/* A wait of each active thread: the phase of the parity it asks for must
 * have completed, or it would wait for ever. */
static void run_wait_bar(exec *x, tma_state *ts, const ir_stmt *s, int64_t st,
                         const bool *active) {
  mbar_state *b = barrier(ts, s->pipe.bar, st);
  size_t mark = x->top;
  int64_t *par = exec_push(x, sizeof(int64_t) * (size_t)x->nthreads);
  if (!par)
    return;
  bool uniform = eval_int(x, s->pipe.parity, active, par);
  x->top = mark;
  for (int t = 0; t < x->nthreads && !x->fault; t++) {
    if (!active[t])
      continue;
    int64_t want = uniform ? par[0] : par[t];
    if ((int64_t)(b->phases % 2) == want) {
      char who[64];
      thread_name(x, t, who, sizeof(who));
      exec_fault(x, t, "thread %s waits on %s[%lld] of pipeline %d for "
                 "phase %llu (parity %lld), which never completes: %s",
                 who, bar_names[s->pipe.bar], (long long)st, ts->p->id,
                 (unsigned long long)b->phases, (long long)want,
                 s->pipe.bar == MBAR_FULL && b->arrivals == b->count
                     ? "the copies delivered fewer bytes than its "
                       "arrive.expect_tx expects"
                     : "not every arrival it counts came");
      return;
    }
    *seen(x, ts, s->pipe.bar, st, t) = (int)b->phases;
  }
}

static void run_arrive(exec *x, tma_state *ts, const ir_stmt *s, int64_t st,
                       const bool *active) {
  mbar_state *b = barrier(ts, s->pipe.bar, st);
  for (int t = 0; t < x->nthreads && !x->fault; t++) {
    if (!active[t])
      continue;
    b->arrivals++;
    if (s->pipe.op == MBAR_EXPECT_TX) {
      b->tx += ts->p->bytes;
      ts->fills[st]++;
    }
    try_complete(b);
  }
}

void exec_run_mbarrier(exec *x, const ir_stmt *s, const bool *active) {
  tma_state *ts = x->tma;
  int64_t st = stage_of(x, s->pipe.stage, 0);
  if (x->fault)
    return;
  if (!ts || ts->p != s->pipe.pipe || st < 0 || st >= ts->p->stages) {
    exec_fault(x, 0, "mbarrier operation outside its pipeline, or on a "
               "stage it does not have (%lld)", (long long)st);
    return;
  }
  if (s->pipe.op == MBAR_WAIT)
    run_wait_bar(x, ts, s, st, active);
  else
    run_arrive(x, ts, s, st, active);
}

const ts_param *exec_tma_map_of(const exec *x, const ir_buffer *src) {
  for (int i = 0; i < x->k->nparams; i++)
    if (x->k->params[i].p.kind == TS_PARAM_TENSOR_MAP &&
        x->k->params[i].buf == src)
      return &x->k->params[i].p;
  return NULL;
}

/* Where the map points: the operand's own parameter, or for ts_pack's
 * view the workspace at the view's offset, as the runtime resolves
 * buffers[buffer] + offset. */
static bool map_points_at(const exec *x, const ts_param *map,
                          const ir_buffer *src) {
  if (src->workspace_view)
    return map->buffer == TS_PARAM_WORKSPACE &&
           map->offset == src->workspace_offset;
  for (int i = 0; i < x->k->nparams; i++)
    if (x->k->params[i].p.kind == TS_PARAM_BUFFER &&
        x->k->params[i].buf == src)
      return map->buffer == x->k->params[i].p.buffer && map->offset == 0;
  return false;
}

/* The copy's box against the tensor map and the cache: the map's box is
 * what the hardware moves, the cache's rows are what the stage holds. */
static bool box_fits(exec *x, const ir_stmt *s, int t, int64_t st) {
  const ir_buffer *d = s->pipe.dst->load.buf, *src = s->pipe.src;
  const ts_param *map = exec_tma_map_of(x, src);
  int64_t rows = d->shape[d->order[d->ndim - 2]];
  int64_t row = 128 / ts_dtype_size(d->dtype);
  int inner = src->strides[1] == 1 ? 1 : 0;
  if (map && (!map_points_at(x, map, src) || src->strides[inner] != 1)) {
    exec_fault(x, t, "TMA copy into shared %s (stage %lld): the tensor map "
               "of %s points at %s + %lld bytes, not at %s%s", d->name,
               (long long)st, src->name, ts_param_buffer_name(map->buffer),
               (long long)map->offset, src->name,
               src->workspace_view ? " in the workspace" : "");
    return false;
  }
  if (!map || map->box[0] != s->pipe.box[0] || map->box[1] != s->pipe.box[1] ||
      s->pipe.box[0] != row || s->pipe.box[1] != rows) {
    exec_fault(x, t, "TMA copy into shared %s (stage %lld): the tensor map "
               "of %s moves a box of %lldx%lld elements, the copy %lldx%lld, "
               "and the cache's stage holds rows of %lld by %lld", d->name,
               (long long)st, src->name, (long long)(map ? map->box[0] : 0),
               (long long)(map ? map->box[1] : 0),
               (long long)s->pipe.box[0], (long long)s->pipe.box[1],
               (long long)row, (long long)rows);
    return false;
  }
  return true;
}

/* A producer writes a stage only after seeing it released once for each
 * fill before this one. */
static bool released(exec *x, tma_state *ts, const ir_stmt *s, int64_t st,
                     int t) {
  int fills = ts->fills[st], saw = *seen(x, ts, MBAR_EMPTY, st, t);
  if (fills - 1 <= saw)
    return true;
  char who[64];
  thread_name(x, t, who, sizeof(who));
  exec_fault(x, t, "thread %s writes shared %s, stage %lld, for its fill %d "
             "before its consumers released it: its waits have seen %d "
             "phase%s of empty[%lld]; wait for parity %d first", who,
             s->pipe.dst->load.buf->name, (long long)st, fills, saw,
             saw == 1 ? "" : "s", (long long)st, (fills - 2) % 2);
  return false;
}

/* One element of the box as the hardware reads it through the map: zero
 * outside the map's dimensions, else the element at the map's row pitch
 * (so a map wider than the operand reads a packed row's padding, which
 * nothing wrote, and faults). */
static float box_value(exec *x, const ts_param *map, const ir_buffer *src,
                       int64_t c0, int64_t c1, int t) {
  if (c0 < 0 || c1 < 0 || c0 >= map->dims[0] || c1 >= map->dims[1])
    return 0.0f;
  mem *m = find_mem(x, src);
  return read_at(x, m, c0 + c1 * (map->row_bytes / ts_dtype_size(src->dtype)),
                 t);
}

static bool push_landing(exec *x, mbar_state *b, landing l) {
  if (b->nland == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    landing *n = realloc(b->land, cap * sizeof(*n));
    if (!n) {
      exec_fault(x, 0, "the executor ran out of memory");
      return false;
    }
    b->land = n;
    b->cap = cap;
  }
  b->land[b->nland++] = l;
  return true;
}

static void issue_box(exec *x, tma_state *ts, const ir_stmt *s, int64_t st,
                      int t) {
  const ir_buffer *d = s->pipe.dst->load.buf;
  const ts_param *map = exec_tma_map_of(x, s->pipe.src); /* box_fits found it */
  mem *m = find_mem(x, d);
  int64_t idx[IR_MAX_DIMS], c[2];
  for (int k = 0; k < d->ndim; k++)
    idx[k] = stage_of(x, s->pipe.dst->load.idx[k], t);
  for (int k = 0; k < 2; k++)
    c[k] = stage_of(x, s->pipe.coord[k], t);
  if (!m->landed && !(m->landed = calloc(m->size, sizeof(int32_t)))) {
    exec_fault(x, t, "the executor ran out of memory");
    return;
  }
  int in = d->order[d->ndim - 1], out = d->order[d->ndim - 2];
  mbar_state *b = barrier(ts, MBAR_FULL, st);
  for (int64_t r = 0; r < s->pipe.box[1] && !x->fault; r++)
    for (int64_t e = 0; e < s->pipe.box[0] && !x->fault; e++) {
      int64_t off = 0;
      for (int k = 0; k < d->ndim; k++)
        off += (idx[k] + (k == in ? e : k == out ? r : 0)) * d->strides[k];
      size_t at = (size_t)ir_swizzle_offset(d, off);
      if (m->pending[at] != NONE) {
        exec_fault(x, t, "TMA copy into shared %s at element %lld (stage "
                   "%lld) over a copy still in flight", d->name,
                   (long long)off, (long long)st);
        return;
      }
      float v = box_value(x, map, s->pipe.src, c[0] + e, c[1] + r, t);
      m->pending[at] = x->block_linear * x->nthreads + t;
      push_landing(x, b, (landing){m, at, v});
    }
  int64_t bytes = s->pipe.box[0] * s->pipe.box[1] * ts_dtype_size(d->dtype);
  b->tx -= bytes;
  if (b->tx < 0 || b->arrivals < b->count) {
    exec_fault(x, t, "TMA copy into shared %s (stage %lld, phase %llu): its "
               "%lld bytes pass what full[%lld] expects (%s)", d->name,
               (long long)st, (unsigned long long)b->phases, (long long)bytes,
               (long long)st, b->arrivals < b->count
                   ? "no arrive.expect_tx came before it"
                   : "the arrive.expect_tx counts fewer bytes");
    return;
  }
  try_complete(b);
}

void exec_run_tma(exec *x, const ir_stmt *s, const bool *active) {
  tma_state *ts = x->tma;
  int64_t st = stage_of(x, s->pipe.stage, 0);
  if (x->fault)
    return;
  if (!ts || ts->p != s->pipe.pipe || st < 0 || st >= ts->p->stages) {
    exec_fault(x, 0, "TMA copy outside its pipeline, or into a stage it "
               "does not have (%lld)", (long long)st);
    return;
  }
  for (int t = 0; t < x->nthreads && !x->fault; t++)
    if (active[t] && box_fits(x, s, t, st) && released(x, ts, s, st, t)) {
      issue_box(x, ts, s, st, t);
      x->steps += ir_issue_steps(s);
    }
}

bool exec_tma_read_ok(exec *x, const mem *m, size_t at, int64_t off, int t) {
  tma_state *ts = x->tma;
  if (!m->landed || !m->landed[at] || !ts)
    return true;
  int64_t st = off / m->buf->strides[0];
  int saw = *seen(x, ts, MBAR_FULL, st, t);
  if (saw >= m->landed[at])
    return true;
  char who[64];
  thread_name(x, t, who, sizeof(who));
  exec_fault(x, t, "thread %s reads shared %s at element %lld (stage %lld) "
             "before its wait: the TMA copy landed in phase %d of full[%lld] "
             "and its waits have seen %d", who, m->buf->name, (long long)off,
             (long long)st, m->landed[at] - 1, (long long)st, saw);
  return false;
}

void exec_tma_end(exec *x, tma_state *ts, bool check) {
  if (!ts)
    return;
  for (int i = 0; check && i < 2 * ts->p->stages && !x->fault; i++)
    if (ts->bars[i].nland)
      exec_fault(x, 0, "TMA copies into stage %d of pipeline %d still in "
                 "flight at its end: full[%d] never completed its phase",
                 i, ts->p->id, i);
  for (int i = 0; ts->bars && i < 2 * ts->p->stages; i++)
    free(ts->bars[i].land);
  free(ts->bars);
  free(ts->seen);
  free(ts->fills);
  free(ts);
  if (x->tma == ts)
    x->tma = NULL;
}
