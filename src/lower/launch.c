/*
 * Launch dimensions: each loop bound to blockIdx.* or threadIdx.* gives its
 * extent to that dimension of the grid or the block; unbound ones are 1.
 * And the block's shared memory: every shared buffer, each rounded up to 16
 * bytes, as the code generator lays them out when they are dynamic.
 */
#include "lower.h"

static void walk(const ir_stmt *s, ir_kernel *k) {
  switch (s->kind) {
  case S_FOR: {
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
    walk(s->for_.body, k);
    return;
  }
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      walk(s->seq.items[i], k);
    return;
  case S_IF:
    walk(s->if_.then_, k);
    if (s->if_.else_)
      walk(s->if_.else_, k);
    return;
  case S_ALLOC:
    if (s->alloc.buf->scope == SCOPE_SHARED)
      k->shared_bytes += ir_shared_slot_bytes(s->alloc.buf);
    walk(s->alloc.body, k);
    return;
  default:
    return;
  }
}

void lower_launch_dims(const ir_stmt *root, ir_kernel *k) {
  for (int d = 0; d < 3; d++)
    k->grid[d] = k->block[d] = 1;
  k->shared_bytes = 0;
  walk(root, k);
}
