/*
 * What a kernel asks of a multiprocessor: registers for its tiles, shared
 * memory and threads per block, and the resident blocks that follow on
 * each architecture, as the CUDA occupancy calculator counts them:
 * registers allocated per warp in units of 256, shared memory per block
 * plus 1 KiB the system reserves, in units of 128 bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/limits.h"
#include "../base/strbuf.h"
#include "../ir/visit.h"
#include "explain_impl.h"

/* Registers a thread needs beyond its tiles: loop counters, indices,
 * addresses and predicates, a base and a share that grows with the tiles
 * (their addresses and the loads in flight).  Against ptxas's counts for
 * the built-ins at 4096^3 this is within about 15% (docs/explain.md). */
enum { BASE_REGISTERS = 30, REGISTER_UNIT = 256, SHARED_UNIT = 128,
       SHARED_RESERVED = 1024 };

const char *explain_arch_list(void) { return "sm_80, sm_86, sm_89, sm_90"; }

static int64_t round_up(int64_t v, int64_t unit) {
  return (v + unit - 1) / unit * unit;
}

typedef struct {
  ts_buf detail;
  int registers;
  const kernel_walk *kw;
} tile_sum;

/* The elements of b that hold values: those thread 0 touched where the
 * walk saw them (a tile with gaps declares its whole span, the compiler
 * keeps only what is used), else all of its span. */
static int64_t elements(const tile_sum *t, const ir_buffer *b) {
  for (int i = 0; t->kw && i < t->kw->nlocals; i++)
    if (t->kw->locals[i].buf == b && t->kw->locals[i].touched > 0)
      return t->kw->locals[i].touched;
  return ir_buffer_size(b);
}

/* A local buffer's registers: its elements, two 16-bit ones a register.
 * A vector temporary lives for one statement and is not counted. */
static void add_local(tile_sum *t, const ir_buffer *b) {
  if (b->scope != SCOPE_LOCAL || b->vector)
    return;
  int64_t bytes = elements(t, b) * ts_dtype_size(b->dtype);
  int regs = (int)((bytes + 3) / 4);
  ts_buf_printf(&t->detail, "%s%s %d", t->registers ? ", " : "", b->name,
                regs);
  t->registers += regs;
}

/* Each allocation's buffer, a vectorized loop's as it runs. */
static bool visit_alloc(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_ALLOC)
    add_local(v->ctx, s->alloc.buf);
  if (s->kind == S_LANES) {
    ir_visit_stmt(v, s->lanes.expanded);
    return false;
  }
  return true;
}

/* Resident blocks of k on one architecture, and what limits them. */
static ts_occupancy occupancy(const ts_arch_limits *a, int64_t threads,
                              int64_t shared, int registers) {
  ts_occupancy o = {.arch = a->name};
  int64_t warps = (threads + 31) / 32;
  int64_t per_warp = round_up((int64_t)registers * 32, REGISTER_UNIT);
  int64_t by_regs = a->registers / per_warp / warps;
  int64_t by_threads = a->threads / (warps * 32);
  int64_t by_shared = shared > a->shared_block
                          ? 0
                          : a->shared / round_up(shared + SHARED_RESERVED,
                                                 SHARED_UNIT);
  int64_t blocks = a->blocks;
  o.limit = "blocks";
  if (by_threads < blocks)
    blocks = by_threads, o.limit = "threads";
  if (by_regs < blocks)
    blocks = by_regs, o.limit = "registers";
  if (by_shared < blocks)
    blocks = by_shared, o.limit = "shared memory";
  o.blocks = (int)blocks;
  o.warps = (int)(blocks * warps);
  o.fraction = (double)o.warps / (a->threads / 32);
  return o;
}

/* Whether k runs on architecture a at all: sm_80's copies and tensor cores
 * need it or newer, sm_90a's wgmma needs sm_90 itself. */
bool explain_runs_on(const ir_kernel *k, const char *arch) {
  int have = atoi(arch + 3);
  return have >= k->min_arch && (!k->arch_specific || have == k->min_arch);
}

bool kernel_resources(const ir_kernel *k, const char *arch,
                      const kernel_walk *kw, ts_arena *strings,
                      ts_kernel_report *r) {
  tile_sum t = {.kw = kw};
  ts_buf_init(&t.detail);
  ir_visitor v = {.stmt = visit_alloc, .ctx = &t};
  ir_visit_stmt(&v, k->body);
  char *detail = ts_buf_take(&t.detail);
  r->register_detail = ts_arena_strdup(strings, detail ? detail : "");
  free(detail);
  r->tile_registers = t.registers;
  int regs = (int)round_up(BASE_REGISTERS + t.registers + t.registers * 3 / 20, 8);
  r->threads = k->block[0] * k->block[1] * k->block[2];
  /* __launch_bounds__ names the block's threads (and the blocks asked
   * for): ptxas keeps within what lets them all fit, spilling if it must;
   * the cap a warp-specialized kernel's register split is made within. */
  int64_t blocks = k->min_blocks > 0 ? k->min_blocks : 1;
  int cap = ts_launch_register_cap(r->threads, blocks);
  regs = regs > cap ? cap : regs;
  r->registers = regs;
  r->shared_bytes = k->shared_bytes + k->barrier_bytes;
  r->noccupancy = 0;
  int narchs;
  const ts_arch_limits *archs = ts_arch_table(&narchs);
  for (int i = 0; i < narchs; i++) {
    if (!archs[i].explained)
      continue;
    bool wanted = arch ? strcmp(arch, archs[i].name) == 0
                       : (!strcmp(archs[i].name, "sm_80") ||
                          !strcmp(archs[i].name, "sm_90")) &&
                             explain_runs_on(k, archs[i].name);
    if (wanted)
      r->occupancy[r->noccupancy++] =
          occupancy(&archs[i], r->threads, r->shared_bytes, regs);
  }
  return r->noccupancy > 0;
}
