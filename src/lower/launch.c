/*
 * Launch dimensions: each loop bound to blockIdx.* or threadIdx.* gives its
 * extent to that dimension of the grid or the block; unbound ones are 1.
 * And the block's shared memory: every shared buffer, each rounded up to 16
 * bytes, as the code generator lays them out when they are dynamic.
 */
#include "lower.h"

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
  } else if (s->kind == S_ALLOC && s->alloc.buf->scope == SCOPE_SHARED) {
    k->shared_bytes = ir_shared_slot_start(s->alloc.buf, k->shared_bytes) +
                      ir_shared_slot_bytes(s->alloc.buf);
  }
  return true;
}

void lower_launch_dims(const ir_stmt *root, ir_kernel *k) {
  for (int d = 0; d < 3; d++)
    k->grid[d] = k->block[d] = 1;
  k->shared_bytes = 0;
  ir_visitor v = {.stmt = dims, .ctx = k};
  ir_visit_stmt(&v, root);
}
