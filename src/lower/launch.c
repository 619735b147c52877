/*
 * Launch dimensions: each loop bound to blockIdx.* or threadIdx.* gives its
 * extent to that dimension of the grid or the block; unbound ones are 1.
 * And the block's shared memory: every shared buffer, each rounded up to 16
 * bytes, as the code generator lays them out when they are dynamic, and
 * apart from them the TMA pipelines' barriers, which stay static.
 * A warp-specialized pipeline's producer warpgroup joins the block, and
 * the kernel learns the registers setmaxnreg moves between the roles.
 */
#include "lower.h"

#include "../base/limits.h"
#include "../ir/visit.h"

static bool dims(ir_visitor *v, const ir_stmt *s) {
  ir_kernel *k = v->ctx;
  if (s->kind == S_FOR) {
    const ts_loop *l = s->for_.loop;
    if (ir_kind_is_block(l->kind)) /* blocks that follow the launch's extents */
      k->grid_size[l->kind - TS_BLOCK_X] = l->size;
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
    /* full and empty a stage, and ping-pong's order barrier a team */
    k->barrier_bytes += 8 * (2 * (int64_t)s->pipe.pipe->stages +
                             s->pipe.pipe->pingpong);
  } else if (s->kind == S_ALLOC && s->alloc.buf->scope == SCOPE_SHARED &&
             s->alloc.buf->overlay) {
    /* From byte 0, over the buffers before it. */
    int64_t bytes = ir_shared_slot_bytes(s->alloc.buf);
    k->shared_bytes = bytes > k->shared_bytes ? bytes : k->shared_bytes;
  } else if (s->kind == S_ALLOC && s->alloc.buf->scope == SCOPE_SHARED) {
    k->shared_bytes = ir_shared_slot_start(s->alloc.buf, k->shared_bytes) +
                      ir_shared_slot_bytes(s->alloc.buf);
  }
  return true;
}

void lower_launch_dims(const ir_stmt *root, ir_kernel *k) {
  for (int d = 0; d < 3; d++) {
    k->grid[d] = k->block[d] = 1;
    k->grid_size[d] = NULL;
  }
  k->shared_bytes = k->barrier_bytes = 0;
  ir_visitor v = {.stmt = dims, .ctx = k};
  ir_visit_stmt(&v, root);
}

/* The blocks a multiprocessor a warp-specialized kernel is built for:
 * ts_min_blocks_per_sm's, or ts_persistent's blocks_per_sm where that is
 * more (a persistent grid of 2 blocks a multiprocessor needs both to
 * fit); 1 when neither asks. */
static int ws_blocks(const ir_kernel *k) {
  int blocks = k->min_blocks > k->persistent ? k->min_blocks : k->persistent;
  return blocks > 1 ? blocks : 1;
}

/* setmaxnreg's counts (codegen) for ws_blocks(k) blocks a multiprocessor,
 * within the registers each block holds from its launch; the kernel is
 * bounded to those blocks, which the counts assume. */
static bool split_registers(lower_ctx *cx, ir_kernel *k) {
  int blocks = ws_blocks(k);
  ts_register_split r;
  int64_t consumers = k->consumer_threads;
  int64_t threads = consumers + cx->producer_threads;
  if (!ts_register_split_of(consumers, cx->producer_threads, blocks, &r)) {
    if (blocks == 1)
      return lower_fail(cx, TS_ERR_RESOURCES, "ts_lower: ts_warp_specialize "
                        "gives each of %lld consumer threads %d registers "
                        "and each of %d producer threads %d: %lld, over the "
                        "%lld the block holds (%lld threads of %d at "
                        "launch); use at most 2 consumer warpgroups",
                        (long long)consumers, r.consumer,
                        cx->producer_threads, r.producer,
                        (long long)(r.consumer * consumers +
                                    r.producer * cx->producer_threads),
                        (long long)(r.launch * threads), (long long)threads,
                        r.launch);
    return lower_fail(cx, TS_ERR_RESOURCES, "ts_lower: ts_warp_specialize "
                      "at %d blocks a multiprocessor (ts_min_blocks_per_sm "
                      "or ts_persistent's blocks_per_sm) of %lld threads "
                      "leaves each thread %d registers at launch, fewer "
                      "than the %d setmaxnreg.dec gives the producer; ask "
                      "for fewer blocks a multiprocessor or fewer consumer "
                      "warpgroups", blocks, (long long)threads, r.launch,
                      r.producer);
  }
  k->min_blocks = blocks;
  k->registers = r;
  return true;
}

/* The producer's threads follow the consumers' in linear order: the
 * block's outermost thread dimension in use grows by whole slices of the
 * ones inside it, as the pipeline's role tests count them. */
bool lower_add_producer(lower_ctx *cx, ir_kernel *k) {
  int d = cx->producer_dim;
  if (cx->teams)
    k->block[2] *= cx->teams; /* ping-pong's consumer warpgroups */
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
  k->block[d] += cx->producer_threads / inner;
  k->consumer_threads = consumers;
  return split_registers(cx, k);
}
