/*
 * The reference executor's tensor-core instructions, run once for each
 * warp that reaches them.  S_MMA: the 32 lanes' registers are gathered
 * into the instruction's tiles, multiplied (mma.c) and the accumulators
 * scattered back.  S_LDMATRIX: the lanes' row addresses are gathered, and
 * each lane receives its elements of the 8 x 8 matrices they point at.
 * Every lane of the warp must be there: a lane a condition left out is a
 * fault naming it, as the hardware's result would be undefined.  Registers
 * and shared memory are read and written through the executor's memory,
 * so an element nothing wrote, or a race, is the usual fault.
 */
#include "exec_impl.h"

#include <stdio.h>

#include "mma.h"

/* Operand w's element offsets for every active thread, into off[t]. */
static bool operand_offsets(exec *x, const ir_stmt *s, int w,
                            const bool *active, int64_t *off) {
  bool uniform;
  if (!eval_offsets(x, s->mma.buf[w], s->mma.idx[w], active,
                    "mma operand access", off, &uniform))
    return false;
  for (int t = 1; uniform && t < x->nthreads; t++)
    off[t] = off[0];
  return true;
}

/* Which lane of the `lanes` from w0 is missing (-1: none), and how many
 * are there. */
static int missing_lane(const exec *x, int w0, int lanes, const bool *active,
                        int *here) {
  int missing = -1;
  *here = 0;
  for (int l = 0; l < lanes; l++) {
    bool on = w0 + l < x->nthreads && active[w0 + l];
    *here += on;
    if (!on && missing < 0)
      missing = l;
  }
  return missing;
}

static bool run_warp(exec *x, const mma_instr *in, const ir_stmt *s, int w0,
                     mem *const *m, int64_t *const *off) {
  float regs[3][MMA_LANES][MMA_MAX_REGS];
  for (int w = 0; w < 3; w++) {
    const ir_buffer *b = s->mma.buf[w];
    int64_t step = b->strides[b->ndim - 1];
    for (int l = 0; l < MMA_LANES; l++)
      for (int r = 0; r < in->frag[w].regs && !x->fault; r++)
        regs[w][l][r] = read_at(x, m[w], off[w][w0 + l] + r * step, w0 + l);
  }
  if (x->fault)
    return false;
  mma_warp(in, regs[MMA_ACC], (const float(*)[MMA_MAX_REGS])regs[MMA_A],
           (const float(*)[MMA_MAX_REGS])regs[MMA_B]);
  const ir_buffer *acc = s->mma.buf[MMA_ACC];
  int64_t step = acc->strides[acc->ndim - 1];
  for (int l = 0; l < MMA_LANES; l++)
    for (int r = 0; r < in->frag[MMA_ACC].regs; r++)
      if (!write_at(x, m[MMA_ACC], off[MMA_ACC][w0 + l] + r * step, w0 + l,
                    regs[MMA_ACC][l][r], false))
        return false;
  return true;
}

/* Faults unless every lane of the warp at w0 is there; false when none is
 * (nothing to run). */
static bool whole_group(exec *x, int w0, int lanes, const bool *active,
                        const char *what) {
  const char *group = lanes == MMA_LANES ? "warp" : "warpgroup";
  int here, missing = missing_lane(x, w0, lanes, active, &here);
  if (here > 0 && missing >= 0)
    exec_fault(x, w0, "%s reached by %d of the %d lanes of %s %d (lane %d "
               "is not there); the instruction needs the whole %s", what,
               here, lanes, group, w0 / lanes, missing, group);
  return here > 0 && missing < 0;
}

static bool whole_warp(exec *x, int w0, const bool *active, const char *what) {
  return whole_group(x, w0, MMA_LANES, active, what);
}

void exec_run_mma(exec *x, const ir_stmt *s, const bool *active) {
  const mma_instr *in = mma_instr_for(s->mma.buf[MMA_A]->dtype);
  size_t n = (size_t)x->nthreads, mark = x->top;
  mem *m[3];
  int64_t *off[3];
  for (int w = 0; w < 3; w++) {
    m[w] = find_mem(x, s->mma.buf[w]);
    off[w] = exec_push(x, sizeof(int64_t) * n);
    if (!m[w] || !off[w]) {
      if (!x->fault)
        exec_fault(x, 0, "mma operand %s is not allocated here",
                   s->mma.buf[w]->name);
      x->top = mark;
      return;
    }
  }
  for (int w = 0; w < 3; w++)
    if (!operand_offsets(x, s, w, active, off[w])) {
      x->top = mark;
      return;
    }
  char what[32];
  snprintf(what, sizeof(what), "mma.%s", in->name);
  for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += MMA_LANES)
    if (whole_warp(x, w0, active, what) && !run_warp(x, in, s, w0, m, off))
      break;
  x->top = mark;
}

/* ---- ldmatrix -------------------------------------------------------------- */

/* One warp's ldmatrix: lane l < 8 x matrices addresses row l % 8 of matrix
 * l / 8 (16 bytes, aligned); lane L receives, of matrix m, registers 2m
 * and 2m + 1 (see S_LDMATRIX). */
static bool ldmatrix_warp(exec *x, const ir_stmt *s, int w0, mem *src,
                          mem *frag, const int64_t *src_off,
                          const int64_t *frag_off) {
  const ir_buffer *fb = s->ldsm.frag;
  int64_t fstep = fb->strides[fb->ndim - 1];
  int rows = 8 * s->ldsm.matrices;
  for (int l = 0; l < rows; l++)
    if (src_off[w0 + l] % 8 != 0) {
      exec_fault(x, w0 + l, "ldmatrix: lane %d addresses element %lld of %s, "
                 "not a 16-byte boundary", l, (long long)src_off[w0 + l],
                 s->ldsm.src->load.buf->name);
      return false;
    }
  for (int lane = 0; lane < MMA_LANES; lane++)
    for (int m = 0; m < s->ldsm.matrices; m++)
      for (int e = 0; e < 2; e++) {
        int row = s->ldsm.trans ? 2 * (lane % 4) + e : lane / 4;
        int col = s->ldsm.trans ? lane / 4 : 2 * (lane % 4) + e;
        int by = w0 + 8 * m + row; /* the lane whose address it is */
        float v = read_at(x, src, src_off[by] + col, by);
        if (x->fault ||
            !write_at(x, frag, frag_off[w0 + lane] + (2 * m + e) * fstep,
                      w0 + lane, v, false))
          return false;
      }
  return true;
}

void exec_run_ldmatrix(exec *x, const ir_stmt *s, const bool *active) {
  const ir_expr *src = s->ldsm.src;
  size_t n = (size_t)x->nthreads, mark = x->top;
  mem *ms = find_mem(x, src->load.buf), *mf = find_mem(x, s->ldsm.frag);
  int64_t *src_off = exec_push(x, sizeof(int64_t) * n);
  int64_t *frag_off = exec_push(x, sizeof(int64_t) * n);
  bool uniform[2];
  if (!ms || !mf || !src_off || !frag_off) {
    if (!x->fault)
      exec_fault(x, 0, "ldmatrix: %s or %s is not allocated here",
                 src->load.buf->name, s->ldsm.frag->name);
  } else if (eval_offsets(x, src->load.buf, src->load.idx, active,
                          "ldmatrix row address", src_off, &uniform[0]) &&
             eval_offsets(x, s->ldsm.frag, s->ldsm.idx, active,
                          "ldmatrix fragment", frag_off, &uniform[1])) {
    for (size_t t = 1; t < n; t++) {
      src_off[t] = uniform[0] ? src_off[0] : src_off[t];
      frag_off[t] = uniform[1] ? frag_off[0] : frag_off[t];
    }
    exec_observe(x, &(ir_observed){.node = s, .buf = src->load.buf,
                                   .lanes = 1, .matrices = s->ldsm.matrices,
                                   .off = src_off, .mask = active});
    char what[32];
    snprintf(what, sizeof(what), "ldmatrix.x%d", s->ldsm.matrices);
    for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += MMA_LANES)
      if (whole_warp(x, w0, active, what) &&
          !ldmatrix_warp(x, s, w0, ms, mf, src_off, frag_off))
        break;
  }
  x->top = mark;
}

/* ---- wgmma -------------------------------------------------------------------
 *
 * The a and b tiles are read from their shared caches at the logical
 * elements the tiles' first elements (src) and the instruction's shape
 * name, through the caches' layouts; whether the descriptors codegen
 * prints address the same bytes is mma_desc_address's, and its test's,
 * concern. */

typedef struct {
  const ir_buffer *buf;
  mem *m;
  int64_t *at[IR_MAX_DIMS]; /* each thread's index, by dimension */
  bool uniform[IR_MAX_DIMS];
} wg_operand;

static int64_t index_of(const wg_operand *o, int d, int t) {
  return o->at[d][o->uniform[d] ? 0 : t];
}

/* The element (row, col) of the tile whose first element lane t0 names,
 * or -1 after a fault. */
static int64_t tile_element(exec *x, const wg_operand *o, int t0, int row,
                            int col) {
  const ir_buffer *b = o->buf;
  int64_t off = 0;
  for (int d = 0; d < b->ndim; d++) {
    int64_t i = index_of(o, d, t0) + (d == b->ndim - 2 ? row : 0) +
                (d == b->ndim - 1 ? col : 0);
    if (i < 0 || i >= b->shape[d]) {
      exec_fault(x, t0, "wgmma reads element %lld of dimension %d of %s, "
                 "outside its %lld", (long long)i, d, b->name,
                 (long long)b->shape[d]);
      return -1;
    }
    off += i * b->strides[d];
  }
  return ir_swizzle_offset(b, off);
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

static bool run_warpgroup(exec *x, const ir_stmt *s, int w0,
                          const wg_operand *op, mem *acc,
                          const int64_t *acc_off, float *d) {
  const mma_instr *in = s->wgmma.in;
  if (!same_tile(x, &op[0], w0) || !same_tile(x, &op[1], w0))
    return false;
  float *a = d + in->m * in->n, *b = a + in->m * in->k;
  for (int r = 0; r < in->m; r++)
    for (int k = 0; k < in->k; k++) {
      int64_t off = tile_element(x, &op[0], w0, r, k);
      if (off < 0)
        return false;
      a[r * in->k + k] = read_at(x, op[0].m, off, w0);
    }
  for (int k = 0; k < in->k; k++)
    for (int c = 0; c < in->n; c++) {
      int64_t off = tile_element(x, &op[1], w0, k, c);
      if (off < 0)
        return false;
      b[k * in->n + c] = read_at(x, op[1].m, off, w0);
    }
  if (x->fault)
    return false;
  for (int r = 0; r < in->m; r++)
    for (int c = 0; c < in->n; c++) {
      float sum = 0;
      for (int k = 0; k < in->k; k++)
        sum += a[r * in->k + k] * b[k * in->n + c];
      d[r * in->n + c] = sum;
    }
  const ir_buffer *ab = s->wgmma.acc;
  int64_t step = ab->strides[ab->ndim - 1];
  for (int l = 0; l < WGMMA_LANES; l++)
    for (int r = 0; r < in->frag[MMA_ACC].regs; r++) {
      int row, col;
      mma_acc_coord(in, l, r, &row, &col);
      int64_t off = acc_off[w0 + l] + r * step;
      float v = read_at(x, acc, off, w0 + l) + d[row * in->n + col];
      if (x->fault || !write_at(x, acc, off, w0 + l, v, false))
        return false;
    }
  return true;
}

void exec_run_wgmma(exec *x, const ir_stmt *s, const bool *active) {
  const mma_instr *in = s->wgmma.in;
  size_t n = (size_t)x->nthreads, mark = x->top;
  wg_operand op[2];
  bool ok = true;
  for (int w = 0; w < 2 && ok; w++) {
    const ir_expr *src = s->wgmma.src[w];
    op[w].buf = src->load.buf;
    op[w].m = find_mem(x, src->load.buf);
    ok = op[w].m != NULL;
    for (int d = 0; d < op[w].buf->ndim && ok; d++) {
      op[w].at[d] = exec_push(x, sizeof(int64_t) * n);
      ok = op[w].at[d] != NULL;
      if (ok)
        op[w].uniform[d] = eval_int(x, src->load.idx[d], active, op[w].at[d]);
    }
  }
  mem *acc = ok ? find_mem(x, s->wgmma.acc) : NULL;
  int64_t *acc_off = exec_push(x, sizeof(int64_t) * n);
  float *d = exec_push(x, sizeof(float) * (size_t)(in->m * in->n +
                                                   in->m * in->k +
                                                   in->k * in->n));
  bool uniform;
  if (!acc || !acc_off || !d) {
    if (!x->fault)
      exec_fault(x, 0, "wgmma: an operand (%s, %s or %s) is not allocated "
                 "here", s->wgmma.acc->name, s->wgmma.src[0]->load.buf->name,
                 s->wgmma.src[1]->load.buf->name);
  } else if (!x->fault &&
             eval_offsets(x, s->wgmma.acc, s->wgmma.idx, active,
                          "wgmma accumulators", acc_off, &uniform)) {
    for (size_t t = 1; uniform && t < n; t++)
      acc_off[t] = acc_off[0];
    char what[32];
    snprintf(what, sizeof(what), "wgmma.%s", in->name);
    for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += WGMMA_LANES)
      if (whole_group(x, w0, WGMMA_LANES, active, what) &&
          !run_warpgroup(x, s, w0, op, acc, acc_off, d))
        break;
  }
  x->top = mark;
}
