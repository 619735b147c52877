/*
 * The reference executor's warpgroup instruction, wgmma, which runs
 * asynchronously: the hardware may read its tiles at any time between its
 * issue and the wait that retires it.  So an S_WGMMA is issued (every lane
 * of each warpgroup that reaches it must be there and name the same
 * tiles) by reading its tiles as a read does: a tile element not landed,
 * never written or raced on is a fault there.  A commit (S_WGMMA_SYNC with
 * pending >= 0) closes the warpgroup's batch; its wait retires every batch
 * but the `pending` newest, oldest first: the tiles are read again, and an
 * element written since the issue (a store, or a copy that landed) or
 * with a copy in flight into it is a fault, as is a race; then the
 * products are added to the accumulators.  A batch still in flight when
 * its accumulators' or tiles' scope ends is a fault (and, for IR built by
 * hand, at the end of the block).
 *
 * The a and b tiles are read at the logical elements their first elements
 * (src) and the instruction's shape name, k along the dimension kdim says,
 * through the caches' layouts; whether the descriptors codegen prints
 * address the same bytes is mma_desc_address's, and its test's, concern.
 * An a in registers (a local buffer) is read from each lane's registers at
 * the issue, as mma_wgmma_a_coord places them, and again at the
 * retirement: a register written in between is a fault, since the
 * instruction may read it at any time until then.
 */
#include "exec_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/mma.h"

struct wg_flight {
  const ir_stmt *s;
  int w0;          /* the warpgroup's first thread */
  uint64_t batch;  /* its warpgroup's batch: committed batches at issue */
  uint64_t epoch;  /* its block's barrier epoch at its issue */
  uint64_t async_writes; /* x->async_writes at its issue */
  float *tile_values; /* a (m x k) then b (k x n) as read at issue (malloc) */
  mem *tile[2];    /* the a and b caches, or a's registers */
  int64_t corner[2][IR_MAX_DIMS]; /* the tiles' first elements */
  int64_t a_off[WGMMA_LANES]; /* a in registers: each lane's first */
  mem *acc;
  int64_t acc_off[WGMMA_LANES]; /* each lane's first accumulator */
};

/* ---- Tiles ------------------------------------------------------------------ */

/* The element (mn, k) of the tile at `corner` in m, k along dimension
 * ndim - 2 + kdim, or -1 after a fault. */
static int64_t tile_element(exec *x, const mem *m, const int64_t *corner,
                            int kdim, int w0, int mn, int k) {
  const ir_buffer *b = m->buf;
  int64_t off = 0;
  int kd = b->ndim - 2 + kdim, mnd = b->ndim - 1 - kdim;
  for (int d = 0; d < b->ndim; d++) {
    int64_t i = corner[d] + (d == kd ? k : 0) + (d == mnd ? mn : 0);
    if (i < 0 || i >= b->shape[d]) {
      exec_fault(x, w0, "wgmma reads element %lld of dimension %d of %s, "
                 "outside its %lld", (long long)i, d, b->name,
                 (long long)b->shape[d]);
      return -1;
    }
    off += i * b->strides[d];
  }
  return ir_swizzle_offset(b, off);
}

static int64_t tile_size(const mma_instr *in) {
  return in->m * in->k + in->k * in->n;
}

/* Reads a from the lanes' registers into out (m x k), as
 * read_tiles reads. */
static bool read_registers(exec *x, const wg_flight *f, float *out,
                           bool again) {
  const mma_instr *in = f->s->wgmma.in;
  mem *m = f->tile[0];
  const ir_buffer *b = m->buf;
  int64_t step = b->strides[b->ndim - 1];
  for (int l = 0; l < WGMMA_LANES; l++)
    for (int r = 0; r < in->frag[MMA_A].regs; r++) {
      int row, col;
      mma_wgmma_a_coord(in, l, r, &row, &col);
      int64_t off = f->a_off[l] + r * step;
      float v = read_at(x, m, off, f->w0 + l);
      if (x->fault)
        return false;
      float *at = &out[row * in->k + col];
      if (!again) {
        *at = v;
      } else if (v != *at || m->wepoch[mem_slot(m, off, f->w0 + l)] >
                                 f->async_writes) {
        exec_fault(x, f->w0 + l, "register %d of lane %d's %s (row %d, "
                   "column %d of the a tile) was written after the wgmma "
                   "that reads it was issued, while it ran", r, l, b->name,
                   row, col);
        return false;
      }
    }
  return true;
}

/* Reads the instruction's a tile (m x k) then its b tile (k x n), as
 * `read_at` reads (landed, written, no race): into out at its issue;
 * at its retirement, checked against out, the values read at the issue,
 * and against writes since (an element's write epoch after the issue's).
 * False after a fault. */
static bool read_tiles(exec *x, const wg_flight *f, float *out, bool again) {
  const mma_instr *in = f->s->wgmma.in;
  bool regs = ir_wgmma_a_regs(f->s);
  if (regs && !read_registers(x, f, out, again))
    return false;
  for (int w = regs, i = regs ? in->m * in->k : 0; w < 2; w++) {
    int rows = w ? in->k : in->m, cols = w ? in->n : in->k;
    mem *m = f->tile[w];
    int kdim = f->s->wgmma.kdim[w];
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < cols; c++, i++) {
        int64_t off = tile_element(x, m, f->corner[w], kdim, f->w0,
                                   w ? c : r, w ? r : c);
        if (off < 0)
          return false;
        float v = read_at(x, m, off, f->w0);
        if (x->fault)
          return false;
        if (!again) {
          out[i] = v;
        } else if (v != out[i] || m->wepoch[mem_slot(m, off, f->w0)] >
                                      f->epoch) {
          exec_fault(x, f->w0, "%s's element %lld (row %d, column %d of "
                     "the %s tile) was written after the wgmma that reads "
                     "it was issued, while it ran", m->buf->name,
                     (long long)off, r, c, w ? "b" : "a");
          return false;
        }
      }
  }
  return true;
}

/* ---- Issue ------------------------------------------------------------------ */

typedef struct {
  const ir_buffer *buf;
  mem *m;
  int64_t *at[IR_MAX_DIMS]; /* each thread's index, by dimension */
  bool uniform[IR_MAX_DIMS];
} wg_operand;

static int64_t index_of(const wg_operand *o, int d, int t) {
  return o->at[d][o->uniform[d] ? 0 : t];
}

/* Whether every lane of the warpgroup names the same tile. */
static bool same_tile(exec *x, const wg_operand *o, int w0) {
  for (int d = 0; d < o->buf->ndim; d++)
    for (int l = 1; l < WGMMA_LANES && !o->uniform[d]; l++)
      if (o->at[d][w0 + l] != o->at[d][w0]) {
        exec_fault(x, w0 + l, "wgmma: lane %d of warpgroup %d names a tile "
                   "of %s at index %lld of dimension %d, lane 0 at %lld; the "
                   "instruction reads one tile for the warpgroup", l,
                   exec_in_block(x, w0) / WGMMA_LANES, o->buf->name,
                   (long long)o->at[d][w0 + l],
                   d, (long long)o->at[d][w0]);
        return false;
      }
  return true;
}

/* Whether the run's warpgroup at w0 is one the executor counts batches
 * for (a cluster of 2 blocks of up to 1024 threads has 16). */
static bool warpgroup_counted(exec *x, int w0) {
  if (w0 / WGMMA_LANES < MAX_WARPGROUPS)
    return true;
  exec_fault(x, w0, "wgmma in warpgroup %d of a block; the executor counts "
             "the batches of %d, a cluster of 2 blocks of 1024 threads",
             exec_in_block(x, w0) / WGMMA_LANES, MAX_WARPGROUPS);
  return false;
}

static wg_flight *next_flight(exec *x) {
  if (x->nflight == x->capflight) {
    size_t cap = x->capflight ? 2 * x->capflight : 16;
    wg_flight *f = realloc(x->flight, cap * sizeof(*f));
    if (!f)
      return NULL;
    x->flight = f;
    x->capflight = cap;
  }
  return &x->flight[x->nflight];
}

/* Warpgroup w0's instruction recorded in its open batch; a_off: with a
 * in registers, each thread's first register of it. */
static bool issue(exec *x, const ir_stmt *s, int w0, const wg_operand *op,
                  const int64_t *a_off, mem *acc, const int64_t *acc_off) {
  if ((!a_off && !same_tile(x, &op[0], w0)) || !same_tile(x, &op[1], w0))
    return false;
  wg_flight *f = next_flight(x);
  if (!f) {
    exec_fault(x, w0, "the executor ran out of memory for wgmma in flight");
    return false;
  }
  *f = (wg_flight){.s = s, .w0 = w0, .acc = acc,
                   .epoch = exec_epoch(x, w0),
                   .async_writes = x->async_writes,
                   .batch = x->wg_batches[w0 / WGMMA_LANES]};
  for (int w = 0; w < 2; w++) {
    f->tile[w] = op[w].m;
    for (int d = 0; d < op[w].buf->ndim; d++)
      f->corner[w][d] = index_of(&op[w], d, w0);
  }
  memcpy(f->acc_off, acc_off + w0, sizeof(f->acc_off));
  if (a_off)
    memcpy(f->a_off, a_off + w0, sizeof(f->a_off));
  f->tile_values = malloc(sizeof(float) * (size_t)tile_size(s->wgmma.in));
  if (!f->tile_values) {
    exec_fault(x, w0, "the executor ran out of memory for wgmma in flight");
    return false;
  }
  x->nflight++; /* counted before the read, so a fault frees its values */
  return read_tiles(x, f, f->tile_values, false);
}

/* Each operand's tile corner for every active thread. */
static bool eval_operands(exec *x, const ir_stmt *s, const bool *active,
                          wg_operand *op) {
  size_t n = (size_t)x->nthreads;
  for (int w = 0; w < 2; w++) {
    const ir_expr *src = s->wgmma.src[w];
    op[w].buf = src->load.buf;
    if (!(op[w].m = find_mem(x, src->load.buf))) {
      exec_fault(x, 0, "wgmma: its %s tile's cache %s is not allocated here",
                 w ? "b" : "a", src->load.buf->name);
      return false;
    }
    for (int d = 0; d < op[w].buf->ndim; d++) {
      if (!(op[w].at[d] = exec_push(x, sizeof(int64_t) * n)))
        return false;
      op[w].uniform[d] = eval_int(x, src->load.idx[d], active, op[w].at[d]);
    }
  }
  return !x->fault;
}

/* Each thread's offset of its first register of a buffer (accumulators,
 * or a in registers) into off; false after a fault. */
static bool register_offsets(exec *x, const ir_buffer *b, ir_expr *const *idx,
                             const bool *active, const char *what,
                             int64_t *off) {
  bool uniform;
  if (!off || !eval_offsets(x, b, idx, active, what, off, &uniform))
    return false;
  for (int t = 1; uniform && t < x->nthreads; t++)
    off[t] = off[0];
  return true;
}

void exec_run_wgmma(exec *x, const ir_stmt *s, const bool *active) {
  size_t n = (size_t)x->nthreads, mark = x->top;
  wg_operand op[2];
  int64_t *acc_off = NULL, *a_off = NULL;
  mem *acc = NULL;
  bool regs = ir_wgmma_a_regs(s);
  if (eval_operands(x, s, active, op)) {
    if (!(acc = find_mem(x, s->wgmma.acc)))
      exec_fault(x, 0, "wgmma: its accumulators %s are not allocated here",
                 s->wgmma.acc->name);
    else
      acc_off = exec_push(x, sizeof(int64_t) * n);
  }
  if (acc_off && regs) {
    const ir_expr *src = s->wgmma.src[0];
    a_off = exec_push(x, sizeof(int64_t) * n);
    if (!register_offsets(x, src->load.buf, src->load.idx, active,
                          "wgmma's a in registers", a_off))
      acc_off = NULL;
  }
  if (register_offsets(x, s->wgmma.acc, s->wgmma.idx, active,
                       "wgmma accumulators", acc_off)) {
    char what[32];
    snprintf(what, sizeof(what), "wgmma.%s", s->wgmma.in->name);
    for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += WGMMA_LANES)
      if (exec_whole_group(x, w0, WGMMA_LANES, active, what)) {
        if (!warpgroup_counted(x, w0) ||
            !issue(x, s, w0, op, a_off, acc, acc_off))
          break;
        x->steps += ir_issue_steps(s); /* its retirement's work too */
      }
  }
  x->top = mark; /* exec_push's faults (out of scratch) are x's already */
}

/* ---- Retire ----------------------------------------------------------------- */

/* An operand as the instruction reads it: fp32 as tf32 by dropping its
 * low 13 bits, as the tensor cores do: exact on the values ts_pack
 * rounded to nearest, a truncation of an operand copied as it lies
 * (lower_tensorize.c, tf32_operand). */
static float operand(const mma_instr *in, float v) {
  return in->tf32 ? mma_truncate_tf32(v) : v;
}

/* The instruction run: its tiles checked unchanged since its issue, the
 * products added to its lanes' accumulators. */
static bool run_flight(exec *x, const wg_flight *f, float *d) {
  const mma_instr *in = f->s->wgmma.in;
  const float *a = f->tile_values, *b = a + in->m * in->k;
  if (!read_tiles(x, f, f->tile_values, true))
    return false; /* f->tile_values is only read again: checked equal */
  for (int r = 0; r < in->m; r++)
    for (int c = 0; c < in->n; c++) {
      float sum = 0;
      for (int k = 0; k < in->k; k++)
        sum += operand(in, a[r * in->k + k]) * operand(in, b[k * in->n + c]);
      d[r * in->n + c] = sum;
    }
  const ir_buffer *ab = f->s->wgmma.acc;
  int64_t step = ab->strides[ab->ndim - 1];
  for (int l = 0; l < WGMMA_LANES; l++)
    for (int r = 0; r < in->frag[MMA_ACC].regs; r++) {
      int row, col;
      mma_acc_coord(in, l, r, &row, &col);
      int64_t off = f->acc_off[l] + r * step;
      float v = read_at(x, f->acc, off, f->w0 + l) + d[row * in->n + col];
      if (x->fault || !write_at(x, f->acc, off, f->w0 + l, v, false))
        return false;
    }
  return true;
}

/* Says which wait ran the instruction that faulted, before the fault. */
static void name_retirement(exec *x, const wg_flight *f, int pending) {
  char what[1024];
  snprintf(what, sizeof(what), "%s", x->msg);
  snprintf(x->msg, x->msglen, "wgmma.%s of warpgroup %d's batch %llu, "
           "retired by wgmma.wait_group %d: %s", f->s->wgmma.in->name,
           exec_in_block(x, f->w0) / WGMMA_LANES,
           (unsigned long long)f->batch, pending, what);
}

/* Warpgroup g's batches but its `keep` newest run, oldest first. */
static void retire(exec *x, int g, uint64_t keep) {
  uint64_t done = x->wg_batches[g] > keep ? x->wg_batches[g] - keep : 0;
  size_t kept = 0, mark = x->top;
  for (size_t i = 0; i < x->nflight; i++) {
    wg_flight *f = &x->flight[i];
    if (x->fault || f->w0 / WGMMA_LANES != g || f->batch >= done) {
      x->flight[kept++] = *f;
      continue;
    }
    const mma_instr *in = f->s->wgmma.in;
    float *d = exec_push(x, sizeof(float) * (size_t)(in->m * in->n));
    if (d && !run_flight(x, f, d))
      name_retirement(x, f, (int)keep);
    free(f->tile_values);
    x->top = mark;
  }
  x->nflight = kept;
}

void exec_run_wgmma_sync(exec *x, const ir_stmt *s, const bool *active) {
  if (s->wait.pending < 0)
    return; /* wgmma.fence: ordering the executor has by running in order */
  const char *what = "wgmma.commit_group and wait_group";
  for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += WGMMA_LANES)
    if (exec_whole_group(x, w0, WGMMA_LANES, active, what) &&
        warpgroup_counted(x, w0)) {
      x->wg_batches[w0 / WGMMA_LANES]++;
      retire(x, w0 / WGMMA_LANES, (uint64_t)s->wait.pending);
    }
}

/* ---- Scopes ----------------------------------------------------------------- */

static void in_flight_at_end(exec *x, const wg_flight *f, const char *where) {
  exec_fault(x, f->w0, "wgmma.%s of warpgroup %d (batch %llu) is still in "
             "flight at %s: a wgmma.wait_group with fewer batches pending "
             "must come before", f->s->wgmma.in->name,
             exec_in_block(x, f->w0) / WGMMA_LANES,
             (unsigned long long)f->batch, where);
}

void exec_wgmma_scope_ends(exec *x, const mem *m) {
  for (size_t i = 0; i < x->nflight && !x->fault; i++) {
    const wg_flight *f = &x->flight[i];
    if (f->acc == m || f->tile[0] == m || f->tile[1] == m) {
      char where[128];
      snprintf(where, sizeof(where), "the end of %s's scope", m->buf->name);
      in_flight_at_end(x, f, where);
    }
  }
}

/* A backstop for IR built by hand: lowering allocates the tiles and the
 * accumulators inside the block's body, so their scope ends first. */
void exec_wgmma_block_ends(exec *x) {
  if (x->nflight > 0)
    in_flight_at_end(x, &x->flight[0], "the end of the block");
  exec_wgmma_forget(x);
}

void exec_wgmma_forget(exec *x) {
  for (size_t i = 0; i < x->nflight; i++)
    free(x->flight[i].tile_values);
  x->nflight = 0;
  memset(x->wg_batches, 0, sizeof(x->wg_batches));
}
