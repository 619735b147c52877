/*
 * Launch dimensions: each loop bound to blockIdx.* or threadIdx.* gives its
 * extent to that dimension of the grid or the block; unbound ones are 1.
 * And the block's shared memory: every shared buffer, each rounded up to 16
 * bytes, as the code generator lays them out when they are dynamic, and
 * apart from them the TMA pipelines' barriers, which stay static.
 */
#include "lower.h"

#include "../base/limits.h"
#include "../ir/visit.h"

static bool dims(ir_visitor *v, const ir_stmt *s) {
  ir_kernel *k = v->ctx;
  if (s->kind == S_FOR) {
    const ts_loop *l = s->for_.loop;
    switch (l->kind) {
    case TS_BLOCK_X: k->grid[0] = l->extent; break;
    case TS_BLOCK_Y: k->grid[1] = l->extent; break;
    case TS_BLOCK_Z: k->grid[2] = l->extent; break;
    case TS_THREAD_X: k->block[0] = l->extent; break;
    case TS_THREAD_Y: k->block[1] = l->extent; break;
    case TS_THREAD_Z: k->block[2] = l->extent; break;
    default: break;
    }
  } else if (s->kind == S_PIPELINE) {
    k->barrier_bytes += 2 * 8 * (int64_t)s->pipe.pipe->stages; /* full, empty */
  } else if (s->kind == S_ALLOC && s->alloc.buf->scope == SCOPE_SHARED) {
    k->shared_bytes = ir_shared_slot_start(s->alloc.buf, k->shared_bytes) +
                      ir_shared_slot_bytes(s->alloc.buf);
  }
  return true;
}

void lower_launch_dims(const ir_stmt *root, ir_kernel *k) {
  for (int d = 0; d < 3; d++)
    k->grid[d] = k->block[d] = 1;
  k->shared_bytes = k->barrier_bytes = 0;
  ir_visitor v = {.stmt = dims, .ctx = k};
  ir_visit_stmt(&v, root);
}

/* The producer's threads follow the consumers' in linear order: the
 * block's outermost thread dimension in use grows by whole slices of the
 * ones inside it, as the pipeline's role tests count them. */
bool lower_add_producer(lower_ctx *cx, ir_kernel *k) {
  int d = cx->producer_dim;
  int64_t inner = 1;
  for (int e = 0; e < d; e++)
    inner *= k->block[e];
  int64_t consumers = k->block[0] * k->block[1] * k->block[2];
  if (consumers != cx->consumers || (d < 2 && k->block[d + 1] != 1))
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_warp_specialize's "
                      "producer follows the pipeline's %lld consumer "
                      "threads; the block has %lld, or threads outside the "
                      "pipeline's loops", (long long)cx->consumers,
                      (long long)consumers);
  /* setmaxnreg's counts (codegen): 40 a producer thread, 232 a
   * consumer's, within the multiprocessor's file. */
  int64_t regs = 40 * cx->producer_threads + 232 * consumers;
  if (regs > TS_REGISTERS_PER_BLOCK)
    return lower_fail(cx, TS_ERR_RESOURCES, "ts_lower: ts_warp_specialize "
                      "gives each of %lld consumer threads 232 registers "
                      "and the producer's 40: %lld of the %d a "
                      "multiprocessor has; use at most 2 consumer "
                      "warpgroups", (long long)consumers, (long long)regs,
                      TS_REGISTERS_PER_BLOCK);
  k->block[d] += cx->producer_threads / inner;
  k->consumer_threads = consumers;
  k->min_blocks = 1; /* setmaxnreg counts on the block owning the SM's file */
  return true;
}
