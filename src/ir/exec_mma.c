/*
 * The reference executor's tensor-core instruction (S_MMA): once for each
 * warp that reaches it, the 32 lanes' registers are gathered into the
 * instruction's tiles, multiplied (mma.c) and the accumulators scattered
 * back.  Every lane of the warp must be there: a lane a condition left out
 * is a fault naming it, as the hardware's result would be undefined.  The
 * registers are read and written through the executor's memory, so one
 * nothing wrote is the usual fault.
 */
#include "exec_impl.h"

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

/* Which lane of warp w0 / 32 is missing (-1: none), and how many are
 * there. */
static int missing_lane(const exec *x, int w0, const bool *active, int *here) {
  int missing = -1;
  *here = 0;
  for (int l = 0; l < MMA_LANES; l++) {
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
  for (int w0 = 0; w0 < x->nthreads && !x->fault; w0 += MMA_LANES) {
    int here, missing = missing_lane(x, w0, active, &here);
    if (here == 0)
      continue;
    if (missing >= 0) {
      exec_fault(x, w0, "mma.%s reached by %d of the 32 lanes of warp %d "
                 "(lane %d is not there); the instruction needs the whole "
                 "warp", in->name, here, w0 / MMA_LANES, missing);
      break;
    }
    if (!run_warp(x, in, s, w0, m, off))
      break;
  }
  x->top = mark;
}
