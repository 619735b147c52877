/*
 * The reference executor's TMA stores (S_TMA_STORE, S_TMA_STORE_WAIT) and
 * the shared buffer they read, C's stage, which lies over the pipeline's
 * stages (ir_buffer.overlay).
 *
 * A store reads its box of the stage when issued, as the issuing thread:
 * an element another thread wrote with no barrier between is a race (a
 * barrier in a kernel with a TMA store carries the proxy fence that
 * makes the writes visible to the TMA), and lands in C at once, clipped
 * to the tensor map's dimensions as the hardware clips it.  Until a wait
 * of the issuing thread (cp.async.bulk.wait_group.read) the TMA may still
 * be reading the stage: a write into it, or the end of its scope (the
 * block leaving, or reusing its memory), is a fault naming the store;
 * after the wait, a write by another thread before a barrier is one too
 * (it cannot know the wait is done).
 * The stage's scope may begin only when nothing of the buffers it lies
 * over is in use: no copy in flight into them, no wgmma in flight, and no
 * access since the last barrier.
 * In a cluster's run each block has its own copy of the stage and its own
 * stores (mem.store, by rank): its issuing thread stores its copy, its
 * wait releases them, and its barriers tell its other threads.
 */
#include "exec_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"

/* The thread of the run with global id g, as exec_thread_name names it. */
static void thread_name(const exec *x, int32_t g, char *out, size_t n) {
  exec_thread_name(x, g % x->nthreads, out, n);
}

/* The overlay o begins: the buffers it lies over must be out of use, with
 * their scopes ended (lowering refuses one that encloses it: it would be
 * read after the overlay's writes) and none of their elements used since
 * the last barrier (their shadows kept in the block), no wgmma in flight. */
void exec_overlay_begins(exec *x, const mem *o) {
  if (x->nflight) {
    exec_fault(x, 0, "shared %s lies over the block's other shared buffers "
               "while a wgmma still reads them: wait for its batch "
               "(wgmma.wait_group 0) and a barrier first", o->buf->name);
    return;
  }
  for (int i = 0; i < x->nlive; i++) {
    const mem *m = &x->live[i];
    if (m != o && m->buf && m->buf->scope == SCOPE_SHARED) {
      exec_fault(x, 0, "shared %s lies over shared %s, whose scope encloses "
                 "it: %s would be read after %s's writes", o->buf->name,
                 m->buf->name, m->buf->name, o->buf->name);
      return;
    }
  }
  shared_use u;
  if (!mem_kept_use(x, o->buf, &u))
    return;
  char name[128] = "several threads";
  if (u.who >= 0)
    thread_name(x, u.who, name, sizeof(name));
  exec_fault(x, 0, "shared %s lies over shared %s, whose element %lld "
             "thread %s used since the last barrier: a barrier must come "
             "between its last use and %s's scope", o->buf->name,
             u.buf->name, (long long)u.elem, name, o->buf->name);
}

/* The store's box against the map and the stage: the map's box is what
 * the hardware moves, a panel of the stage what the store names. */
static bool store_fits(exec *x, const ir_stmt *s, const ts_param *map,
                       int t) {
  const ir_buffer *d = s->pipe.dst->load.buf;
  int64_t panel = ir_swizzle_panel(d);
  int64_t row = panel ? panel : d->shape[d->order[d->ndim - 1]];
  int64_t rows = d->shape[d->order[d->ndim - 2]];
  if (!map || map->box[0] != s->pipe.box[0] || map->box[1] != s->pipe.box[1] ||
      s->pipe.box[0] != row || s->pipe.box[1] != rows) {
    exec_fault(x, t, "TMA store from shared %s into %s: the tensor map moves "
               "a box of %lldx%lld elements, the store %lldx%lld, and a "
               "panel of the stage holds rows of %lld by %lld", d->name,
               s->pipe.src->name, (long long)(map ? map->box[0] : 0),
               (long long)(map ? map->box[1] : 0), (long long)s->pipe.box[0],
               (long long)s->pipe.box[1], (long long)row, (long long)rows);
    return false;
  }
  return true;
}

/* What a fault says of store number n (1-based) in flight of block
 * `rank`'s copy of m. */
static void still_reading(exec *x, const mem *m, int rank, int n, int t,
                          const char *what) {
  const tma_store_block *sb = &m->store[rank];
  char name[128];
  thread_name(x, sb->by - 1, name, sizeof(name));
  exec_fault(x, t, "%s shared %s while the TMA store that thread %s issued "
             "from it (into %s at (%lld, %lld)) may still read it: that "
             "thread must wait for it first (cp.async.bulk.wait_group.read)",
             what, m->buf->name, name, x->k->C ? x->k->C->name : "C",
             (long long)sb->at[n - 1][0], (long long)sb->at[n - 1][1]);
}

/* The statement's index expressions for every thread: the panel's first
 * element (vals[0 .. ndim)) and the box's corner (vals[ndim], [ndim + 1]),
 * each nthreads values; NULL after a fault. */
static int64_t *store_indices(exec *x, const ir_stmt *s) {
  const ir_expr *load = s->pipe.dst;
  int n = load->load.buf->ndim + 2;
  size_t nt = (size_t)x->nthreads;
  int64_t *vals = exec_push(x, sizeof(int64_t) * nt * (size_t)n);
  for (int k = 0; vals && k < n && !x->fault; k++) {
    const ir_expr *e = k < n - 2 ? load->load.idx[k] : s->pipe.coord[k - n + 2];
    if (eval_int(x, e, x->all, vals + (size_t)k * nt))
      for (size_t t = 1; t < nt; t++)
        vals[(size_t)k * nt + t] = vals[(size_t)k * nt];
  }
  return x->fault ? NULL : vals;
}

/* The records of block `rank`'s stores from m, allocated at its first;
 * false after a fault (out of memory). */
static bool store_records(exec *x, mem *m, int rank, int t) {
  if (!m->store_reading)
    m->store_reading = calloc(m->size * m->copies, 1);
  if (!m->store[rank].at)
    m->store[rank].at = calloc(255, sizeof(*m->store[rank].at));
  if (m->store_reading && m->store[rank].at)
    return true;
  exec_fault(x, t, "the executor ran out of memory");
  return false;
}

/* Thread t's store of the box: its block's copy of the stage's elements
 * read as t (a race with a write no barrier separates), C's in-bounds
 * part written. */
static void store_box(exec *x, const ir_stmt *s, const ts_param *map,
                      const int64_t *vals, int t) {
  const ir_buffer *d = s->pipe.dst->load.buf;
  mem *m = find_mem(x, d), *c = find_mem(x, s->pipe.src);
  size_t nt = (size_t)x->nthreads;
  int rank = exec_rank(x, t);
  int64_t at[2] = {vals[(size_t)d->ndim * nt + (size_t)t],
                   vals[(size_t)(d->ndim + 1) * nt + (size_t)t]};
  if (!m || !c) {
    exec_fault(x, t, "TMA store from %s into %s, one of which is not live",
               d->name, s->pipe.src->name);
    return;
  }
  tma_store_block *sb = &m->store[rank];
  if (sb->by && sb->by != exec_gid(x, t) + 1) {
    still_reading(x, m, rank, sb->stores, t,
                  "a store by another thread from");
    return;
  }
  if (!store_records(x, m, rank, t))
    return;
  /* Stores past the 254th share the last record: one epilogue makes a
   * store a panel, far fewer. */
  int n = sb->stores < 255 ? ++sb->stores : 255;
  sb->at[n - 1][0] = at[0];
  sb->at[n - 1][1] = at[1];
  int in = d->order[d->ndim - 1], out = d->order[d->ndim - 2];
  int64_t pitch = map->row_bytes / ts_dtype_size(s->pipe.src->dtype);
  for (int64_t r = 0; r < s->pipe.box[1] && !x->fault; r++)
    for (int64_t e = 0; e < s->pipe.box[0] && !x->fault; e++) {
      int64_t off = 0;
      for (int k = 0; k < d->ndim; k++)
        off += (vals[(size_t)k * nt + (size_t)t] +
                (k == in ? e : k == out ? r : 0)) * d->strides[k];
      int64_t slot = ir_swizzle_offset(d, off);
      if (slot < 0 || slot >= (int64_t)m->size) {
        exec_fault(x, t, "TMA store from shared %s: its box passes the "
                   "buffer's end at element %lld", d->name, (long long)off);
        return;
      }
      /* The TMA reads the whole box, clipped or not, until the wait. */
      m->store_reading[mem_slot(m, slot, t)] = (uint8_t)n;
      int64_t g0 = at[0] + e, g1 = at[1] + r;
      if (g0 < 0 || g1 < 0 || g0 >= map->dims[0] || g1 >= map->dims[1])
        continue; /* clipped: the TMA writes nothing there */
      float v = read_at(x, m, slot, t);
      if (!x->fault)
        write_at(x, c, g0 + g1 * pitch, t, v, false);
    }
  if (!x->fault)
    sb->by = exec_gid(x, t) + 1;
}

void exec_run_tma_store(exec *x, const ir_stmt *s, const bool *active) {
  const ts_param *map = exec_tma_map_of(x, s->pipe.src);
  size_t mark = x->top;
  const int64_t *vals = store_indices(x, s);
  for (int t = 0; vals && t < x->nthreads && !x->fault; t++)
    if (active[t] && store_fits(x, s, map, t)) {
      store_box(x, s, map, vals, t);
      x->steps += ir_issue_steps(s);
    }
  x->top = mark;
}

/* The issuing thread's wait: its stores have read its block's copy of
 * the stage.  The other threads learn it only at the next barrier, so
 * until then the elements stay theirs to keep off (store_released). */
static void store_waited(exec *x, mem *m, int rank) {
  tma_store_block *sb = &m->store[rank];
  int who = (sb->by - 1) % x->nthreads; /* a thread of this run */
  if (!m->store_released &&
      !(m->store_released = calloc(m->size * m->copies, 1))) {
    exec_fault(x, who, "the executor ran out of memory");
    return;
  }
  size_t first = mem_slot(m, 0, who);
  for (size_t e = first; e < first + m->size; e++)
    m->store_released[e] = m->store_reading[e] != 0;
  sb->released_by = sb->by;
  sb->released_epoch = exec_epoch(x, who);
  sb->by = sb->stores = 0;
  memset(m->store_reading + first, 0, m->size);
}

void exec_run_tma_store_wait(exec *x, const bool *active) {
  for (int i = 0; i < x->nlive && !x->fault; i++)
    for (int r = 0; r < x->ranks && !x->fault; r++) {
      mem *m = &x->live[i];
      int32_t by = m->store[r].by;
      if (by && active[(by - 1) % x->nthreads])
        store_waited(x, m, r);
    }
}

/* A write into an element a store read until a wait in this barrier
 * interval of the writer's block, by another thread than the one that
 * waited. */
static bool written_before_told(exec *x, const mem *m, size_t at, int t) {
  const tma_store_block *sb = &m->store[exec_rank(x, t)];
  if (!sb->released_by || sb->released_epoch != exec_epoch(x, t) ||
      !m->store_released[at] || sb->released_by == exec_gid(x, t) + 1)
    return false;
  char me[128], waiter[128];
  thread_name(x, exec_gid(x, t), me, sizeof(me));
  thread_name(x, sb->released_by - 1, waiter, sizeof(waiter));
  exec_fault(x, t, "thread %s writes shared %s at element %zu, which a TMA "
             "store read until thread %s's wait "
             "(cp.async.bulk.wait_group.read), with no barrier between "
             "that wait and this write: the writer cannot know the store "
             "is done; put the barrier after the wait", me, m->buf->name,
             at, waiter);
  return true;
}

/* t writes its block's copy of m (slot `at`): its block's stores. */
bool exec_tma_store_write_ok(exec *x, const mem *m, size_t at, int t) {
  if (written_before_told(x, m, at, t))
    return false;
  int rank = exec_rank(x, t);
  if (!m->store[rank].by || !m->store_reading[at])
    return true;
  still_reading(x, m, rank, m->store_reading[at], t, "write into");
  return false;
}

void exec_tma_store_scope_ends(exec *x, const mem *m) {
  for (int r = 0; r < x->ranks && !x->fault; r++)
    if (m->store[r].by)
      still_reading(x, m, r, m->store[r].stores,
                    (m->store[r].by - 1) % x->nthreads,
                    "the block leaves the scope of");
}
