/*
 * The reference executor's warpgroup instruction, wgmma, which runs
 * asynchronously.  An S_WGMMA is issued: every lane of each warpgroup
 * that reaches it must be there and name the same tiles, and what it will
 * read is recorded, not read.  A commit (S_WGMMA_SYNC with pending >= 0)
 * closes the warpgroup's batch; its wait retires every batch but the
 * `pending` newest, oldest first: only then are the tiles read from their
 * shared caches and the products added to the accumulators.
 *
 * So a tile overwritten while a batch that reads it is in flight is read
 * as the hardware may read it: after the overwrite.  A copy still in
 * flight into it is a fault naming the copy (exec_mem.c), another
 * thread's store since the last barrier a race, and a store that landed
 * gives wrong products the comparison with the reference catches.  A
 * batch still in flight when its accumulators' or tiles' scope ends, or
 * at the end of the block, is a fault.
 *
 * The a and b tiles are read at the logical elements their first elements
 * (src) and the instruction's shape name, through the caches' layouts;
 * whether the descriptors codegen prints address the same bytes is
 * mma_desc_address's, and its test's, concern.
 */
#include "exec_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mma.h"

struct wg_flight {
  const ir_stmt *s;
  int w0;          /* the warpgroup's first thread */
  uint64_t batch;  /* its warpgroup's batch: committed batches at issue */
  mem *tile[2];    /* the a and b caches */
  int64_t corner[2][IR_MAX_DIMS]; /* the tiles' first elements */
  mem *acc;
  int64_t acc_off[WGMMA_LANES]; /* each lane's first accumulator */
};

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
                   w0 / WGMMA_LANES, o->buf->name, (long long)o->at[d][w0 + l],
                   d, (long long)o->at[d][w0]);
        return false;
      }
  return true;
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

/* Warpgroup w0's instruction recorded in its open batch. */
static bool issue(exec *x, const ir_stmt *s, int w0, const wg_operand *op,
                  mem *acc, const int64_t *acc_off) {
  if (!same_tile(x, &op[0], w0) || !same_tile(x, &op[1], w0))
    return false;
  wg_flight *f = next_flight(x);
  if (!f) {
    exec_fault(x, w0, "the executor ran out of memory for wgmma in flight");
    return false;
  }
  *f = (wg_flight){.s = s, .w0 = w0, .acc = acc,
                   .batch = x->wg_batches[w0 / WGMMA_LANES]};
  for (int w = 0; w < 2; w++) {
    f->tile[w] = op[w].m;
    for (int d = 0; d < op[w].buf->ndim; d++)
      f->corner[w][d] = index_of(&op[w], d, w0);
  }
  memcpy(f->acc_off, acc_off + w0, sizeof(f->acc_off));
  x->nflight++;
  return true;
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

void exec_run_wgmma(exec *x, const ir_stmt *s, const bool *active) {
  size_t n = (size_t)x->nthreads, mark = x->top;
  wg_operand op[2];
  int64_t *acc_off = NULL;
  mem *acc = NULL;
  bool uniform;
  if (eval_operands(x, s, active, op)) {
    if (!(acc = find_mem(x, s->wgmma.acc)))
      exec_fault(x, 0, "wgmma: its accumulators %s are not allocated here",
                 s->wgmma.acc->name);
    else
      acc_off = exec_push(x, sizeof(int64_t) * n);
  }
  if (acc_off && eval_offsets(x, s->wgmma.acc, s->wgmma.idx, active,
                              "wgmma accumulators", acc_off, &uniform)) {
    for (size_t t = 1; uniform && t < n; t++)
      acc_off[t] = acc_off[0];
    char what[32];
    snprintf(what, sizeof(what), "wgmma.%s", s->wgmma.in->name);
    for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += WGMMA_LANES)
      if (exec_whole_group(x, w0, WGMMA_LANES, active, what) &&
          !issue(x, s, w0, op, acc, acc_off))
        break;
  }
  x->top = mark; /* exec_push's faults (out of scratch) are x's already */
}

/* ---- Retire ----------------------------------------------------------------- */

/* The element (row, col) of the tile at `corner` in m, or -1 after a
 * fault. */
static int64_t tile_element(exec *x, const mem *m, const int64_t *corner,
                            int w0, int row, int col) {
  const ir_buffer *b = m->buf;
  int64_t off = 0;
  for (int d = 0; d < b->ndim; d++) {
    int64_t i = corner[d] + (d == b->ndim - 2 ? row : 0) +
                (d == b->ndim - 1 ? col : 0);
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

/* The instruction's tile w (0: a, m x k; 1: b, k x n) into out. */
static bool read_tile(exec *x, const wg_flight *f, int w, float *out) {
  const mma_instr *in = f->s->wgmma.in;
  int rows = w ? in->k : in->m, cols = w ? in->n : in->k;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      int64_t off = tile_element(x, f->tile[w], f->corner[w], f->w0, r, c);
      if (off < 0)
        return false;
      out[r * cols + c] = read_at(x, f->tile[w], off, f->w0);
    }
  return !x->fault;
}

/* The instruction run: its tiles read now, the products added to its
 * lanes' accumulators. */
static bool run_flight(exec *x, const wg_flight *f, float *d) {
  const mma_instr *in = f->s->wgmma.in;
  float *a = d + in->m * in->n, *b = a + in->m * in->k;
  if (!read_tile(x, f, 0, a) || !read_tile(x, f, 1, b))
    return false;
  for (int r = 0; r < in->m; r++)
    for (int c = 0; c < in->n; c++) {
      float sum = 0;
      for (int k = 0; k < in->k; k++)
        sum += a[r * in->k + k] * b[k * in->n + c];
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
           f->w0 / WGMMA_LANES, (unsigned long long)f->batch, pending, what);
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
    float *d = exec_push(x, sizeof(float) * (size_t)(in->m * in->n +
                                                     in->m * in->k +
                                                     in->k * in->n));
    if (d && !run_flight(x, f, d))
      name_retirement(x, f, (int)keep);
    x->top = mark;
  }
  x->nflight = kept;
}

void exec_run_wgmma_sync(exec *x, const ir_stmt *s, const bool *active) {
  if (s->wait.pending < 0)
    return; /* wgmma.fence: ordering the executor has by running in order */
  const char *what = "wgmma.commit_group and wait_group";
  for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += WGMMA_LANES)
    if (exec_whole_group(x, w0, WGMMA_LANES, active, what)) {
      x->wg_batches[w0 / WGMMA_LANES]++;
      retire(x, w0 / WGMMA_LANES, (uint64_t)s->wait.pending);
    }
}

/* ---- Scopes ----------------------------------------------------------------- */

static void in_flight_at_end(exec *x, const wg_flight *f, const char *where) {
  exec_fault(x, f->w0, "wgmma.%s of warpgroup %d (batch %llu) is still in "
             "flight at %s: a wgmma.wait_group with fewer batches pending "
             "must come before", f->s->wgmma.in->name, f->w0 / WGMMA_LANES,
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

void exec_wgmma_block_ends(exec *x) {
  if (x->nflight > 0)
    in_flight_at_end(x, &x->flight[0], "the end of the block");
  x->nflight = 0;
  memset(x->wg_batches, 0, sizeof(x->wg_batches));
}
