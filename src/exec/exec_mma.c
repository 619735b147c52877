/*
 * The reference executor's tensor-core instructions, run once for each
 * warp that reaches them.  S_MMA: the 32 lanes' registers are gathered
 * into the instruction's tiles, multiplied (mma.c) and the accumulators
 * scattered back.  S_LDMATRIX: the lanes' row addresses are gathered, and
 * each lane receives its elements of the 8 x 8 matrices they point at;
 * S_STMATRIX the other way, each lane's values written there.
 * Every lane of the warp must be there: a lane a condition left out is a
 * fault naming it, as the hardware's result would be undefined.  Registers
 * and shared memory are read and written through the executor's memory,
 * so an element nothing wrote, or a race, is the usual fault.  The
 * warpgroup's instruction, which runs asynchronously, is exec_wgmma.c's.
 */
#include "exec_impl.h"

#include <stdio.h>

#include "../ir/mma.h"

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

bool exec_whole_group(exec *x, int w0, int lanes, const bool *active,
                      const char *what) {
  const char *group = lanes == MMA_LANES ? "warp" : "warpgroup";
  int here, missing = missing_lane(x, w0, lanes, active, &here);
  /* A cluster's run lays its blocks end to end: a group must not span
   * two of them. */
  if (here > 0 && x->ranks > 1 && x->block_threads % lanes) {
    exec_fault(x, w0, "%s in a cluster of blocks of %d threads, not whole "
               "%ss: the executor runs a cluster's blocks together and "
               "needs each %s within one block", what, x->block_threads,
               group, group);
    return false;
  }
  if (here > 0 && missing >= 0)
    exec_fault(x, w0, "%s reached by %d of the %d lanes of %s %d (lane %d "
               "is not there); the instruction needs the whole %s", what,
               here, lanes, group, exec_in_block(x, w0) / lanes, missing,
               group);
  return here > 0 && missing < 0;
}

static bool whole_warp(exec *x, int w0, const bool *active, const char *what) {
  return exec_whole_group(x, w0, MMA_LANES, active, what);
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

/* ---- stmatrix -------------------------------------------------------------- */

/* One warp's stmatrix: lane l < 8 x matrices addresses row l % 8 of matrix
 * l / 8 (16 bytes, aligned); of matrix m, lane L's values 2m and 2m + 1
 * are the elements of row L / 4 at 2 (L % 4) and the next (S_STMATRIX). */
static bool stmatrix_warp(exec *x, const ir_stmt *s, int w0, mem *dst,
                          const int64_t *dst_off, float *const *val) {
  int rows = 8 * s->stsm.matrices;
  for (int l = 0; l < rows; l++)
    if (dst_off[w0 + l] % 8 != 0) {
      exec_fault(x, w0 + l, "stmatrix: lane %d addresses element %lld of %s, "
                 "not a 16-byte boundary", l, (long long)dst_off[w0 + l],
                 dst->buf->name);
      return false;
    }
  for (int lane = 0; lane < MMA_LANES; lane++)
    for (int m = 0; m < s->stsm.matrices; m++)
      for (int e = 0; e < 2; e++) {
        int64_t row = dst_off[w0 + 8 * m + lane / 4];
        if (!write_at(x, dst, row + 2 * (lane % 4) + e, w0 + lane,
                      val[2 * m + e][w0 + lane], false))
          return false;
      }
  return true;
}

/* Every value of every active lane (val[v][t]), and each lane's row
 * address (off[t]); false after a fault. */
static bool stmatrix_operands(exec *x, const ir_stmt *s, const bool *active,
                              int64_t *off, float **val) {
  const ir_expr *dst = s->stsm.dst;
  size_t n = (size_t)x->nthreads;
  for (int v = 0; v < 2 * s->stsm.matrices; v++) {
    val[v] = exec_push(x, sizeof(float) * n);
    if (!val[v])
      return false;
    if (eval_float(x, s->stsm.value[v], active, val[v]))
      for (size_t t = 1; t < n; t++)
        val[v][t] = val[v][0];
    if (x->fault)
      return false;
  }
  bool uniform;
  if (!eval_offsets(x, dst->load.buf, dst->load.idx, active,
                    "stmatrix row address", off, &uniform))
    return false;
  for (size_t t = 1; uniform && t < n; t++)
    off[t] = off[0];
  return true;
}

void exec_run_stmatrix(exec *x, const ir_stmt *s, const bool *active) {
  const ir_expr *dst = s->stsm.dst;
  size_t n = (size_t)x->nthreads, mark = x->top;
  mem *md = find_mem(x, dst->load.buf);
  int64_t *off = exec_push(x, sizeof(int64_t) * n);
  float *val[8];
  int m = s->stsm.matrices;
  if (m != 1 && m != 2 && m != 4) {
    exec_fault(x, 0, "stmatrix of %d matrices into %s: it stores 1, 2 or 4",
               m, dst->load.buf->name);
  } else if (!md || !off) {
    if (!x->fault)
      exec_fault(x, 0, "stmatrix: %s is not allocated here",
                 dst->load.buf->name);
  } else if (stmatrix_operands(x, s, active, off, val)) {
    exec_observe(x, &(ir_observed){.node = s, .buf = dst->load.buf,
                                   .lanes = 1, .store = true,
                                   .matrices = s->stsm.matrices, .off = off,
                                   .mask = active});
    char what[32];
    snprintf(what, sizeof(what), "stmatrix.x%d", s->stsm.matrices);
    for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += MMA_LANES)
      if (whole_warp(x, w0, active, what) &&
          !stmatrix_warp(x, s, w0, md, off, val))
        break;
  }
  x->top = mark;
}
