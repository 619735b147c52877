/*
 * tessel explain's report as text: per kernel, its launch, each access
 * (where it lies, what it is, its cost for one warp, its verdict), its
 * resources and occupancy, and the totals over the grid that Nsight
 * Compute's counters sum.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../base/strbuf.h"
#include "explain_impl.h"

static const char *phase_tag(ts_access_phase p) {
  switch (p) {
  case TS_BEFORE_K: return "before k";
  case TS_IN_K: return "k loop";
  case TS_AFTER_K: return "after k";
  case TS_NO_K: return "kernel";
  }
  return "?";
}

static void print_counts(ts_buf *b, const ts_access_report *r) {
  if (r->phase == TS_IN_K)
    ts_buf_printf(b, "%.4g a k step, ", r->requests_per_step);
  ts_buf_printf(b, "%.6g a block", r->requests);
}

static void print_access(ts_buf *b, const ts_access_report *r) {
  ts_buf_printf(b, "  [%s] %s  %s\n", phase_tag(r->phase),
                ts_access_kind_name(r->kind), r->text);
  ts_buf_printf(b, "      %d-byte %s, %.3g lane%s; ", r->bytes,
                r->bytes > 4 ? "vectors" : "accesses", r->active_lanes,
                r->active_lanes == 1 ? "" : "s");
  print_counts(b, r);
  double q = r->requests > 0 ? r->requests : 1;
  if (r->sectors > 0)
    ts_buf_printf(b, "; %.3g sector%s a request (%.3g at best)",
                  r->sectors / q, r->sectors == q ? "" : "s",
                  r->ideal_sectors / q);
  if (r->wavefronts > 0)
    ts_buf_printf(b, "; %.3g wavefront%s a request (%.3g at best)",
                  r->wavefronts / q, r->wavefronts == q ? "" : "s",
                  r->ideal_wavefronts / q);
  if (r->ir_requests > r->requests * 1.001) /* compiled.c's doing */
    ts_buf_printf(b, "; one request for %.3g of the IR's loads (%s)",
                  r->ir_requests / r->requests,
                  r->kind == TS_ACCESS_GLOBAL_LOAD ? "reused in registers"
                                                   : "merged or reused");
  ts_buf_printf(b, "\n      %s\n", r->verdict);
}

/* A count's plural ending: "1 block", "2 blocks". */
static const char *plural(long long n) { return n == 1 ? "" : "s"; }

static void print_resources(ts_buf *b, const ts_kernel_report *k) {
  long long warps = (long long)(k->threads + 31) / 32;
  ts_buf_printf(b, "resources: %lld thread%s (%lld warp%s), %lld bytes of "
                "shared memory a block\n", (long long)k->threads,
                plural(k->threads), warps, plural(warps),
                (long long)k->shared_bytes);
  ts_buf_printf(b, "  registers: the tiles need %d a thread%s%s%s; about "
                "%d with indices and addresses (ptxas decides: tessel show "
                "--cuda prints its count)\n", k->tile_registers,
                *k->register_detail ? " (" : "", k->register_detail,
                *k->register_detail ? ")" : "", k->registers);
  for (int i = 0; i < k->noccupancy; i++) {
    const ts_occupancy *o = &k->occupancy[i];
    ts_buf_printf(b, "  occupancy on %s: %d block%s an SM (%d warp%s, %.0f%%),"
                  " limited by %s\n", o->arch, o->blocks,
                  plural(o->blocks), o->warps, plural(o->warps), 100 * o->fraction,
                  o->limit);
  }
  if (k->flops > 0)
    ts_buf_printf(b, "  arithmetic intensity: %.4g flops a block over %.4g "
                  "bytes read and written in global memory: %.3g flops a "
                  "byte\n", k->flops, k->global_bytes, k->intensity);
}

/* "  global loads   2 requests, 1 sector": a line of the totals, each
 * count with its noun, singular for one. */
static void print_total(ts_buf *b, const char *what, double requests,
                        double second, const char *noun) {
  ts_buf_printf(b, "  %-14s %.0f request%s, %.0f %s%s", what, requests,
                requests == 1 ? "" : "s", second, noun, second == 1 ? "" : "s");
}

/* "(3 bank conflicts)" and the line's end. */
static void print_conflicts(ts_buf *b, double n) {
  ts_buf_printf(b, " (%.0f bank conflict%s)\n", n, n == 1 ? "" : "s");
}

static void print_totals(ts_buf *b, const ts_kernel_report *k) {
  ts_buf_printf(b, "totals over the grid (as Nsight Compute sums a launch):\n");
  if (k->global_ld_requests > 0) {
    print_total(b, "global loads", k->global_ld_requests, k->global_ld_sectors,
                "sector");
    ts_buf_printf(b, "\n");
  }
  if (k->global_st_requests > 0) {
    print_total(b, "global stores", k->global_st_requests,
                k->global_st_sectors, "sector");
    ts_buf_printf(b, "\n");
  }
  if (k->ldgsts_requests > 0) {
    print_total(b, "cp.async", k->ldgsts_requests, k->ldgsts_sectors, "sector");
    ts_buf_printf(b, "; %.0f wavefront%s stored", k->ldgsts_wavefronts,
                  k->ldgsts_wavefronts == 1 ? "" : "s");
    print_conflicts(b, k->ldgsts_wavefronts - k->ldgsts_ideal);
  }
  if (k->shared_ld_requests > 0) {
    print_total(b, "shared loads", k->shared_ld_requests,
                k->shared_ld_wavefronts, "wavefront");
    print_conflicts(b, k->shared_ld_wavefronts - k->shared_ld_ideal);
  }
  if (k->shared_st_requests > 0) {
    print_total(b, "shared stores", k->shared_st_requests,
                k->shared_st_wavefronts, "wavefront");
    print_conflicts(b, k->shared_st_wavefronts - k->shared_st_ideal);
  }
}

/* The TMA pipeline: its stages, roles (with a producer warpgroup, the
 * registers setmaxnreg moves) and one stage's boxes. */
static void print_pipeline(ts_buf *b, const ts_pipeline_report *p) {
  if (!p->stages)
    return;
  ts_buf_printf(b, "TMA pipeline: %d stages of %lld bytes (full and empty "
                "mbarriers), released by %d consumer warp%s", p->stages,
                (long long)p->stage_bytes, p->consumer_warps,
                plural(p->consumer_warps));
  if (p->cluster > 1)
    ts_buf_printf(b, " (%d in each of a cluster's %d blocks)",
                  p->consumer_warps / p->cluster, p->cluster);
  if (p->pingpong)
    ts_buf_printf(b, " of the tile's team: %d ping-pong consumer "
                  "warpgroups take the tiles in turn, handing the stages "
                  "over on order barriers", p->pingpong);
  ts_buf_puts(b, "; ");
  if (p->producer_threads)
    ts_buf_printf(b, "a producer warpgroup of %d threads (thread %d "
                  "issues)\n", p->producer_threads, p->producer_thread);
  else
    ts_buf_printf(b, "thread %d issues, a consumer\n", p->producer_thread);
  if (p->producer_threads)
    ts_buf_printf(b, "  registers (setmaxnreg): %d a thread at launch (%d "
                  "block%s a multiprocessor), then %d a producer thread and "
                  "%d a consumer's\n", p->launch_registers, p->blocks,
                  plural(p->blocks), p->producer_registers,
                  p->consumer_registers);
  for (int i = 0; i < p->ntma; i++) {
    const ts_tma_report *t = &p->tma[i];
    ts_buf_printf(b, "  %d x tma %s -> %s a stage: box %lldx%lld elements, "
                  "%lld bytes, %lld L2 sector%s, ", t->per_stage, t->src,
                  t->dst, (long long)t->box[0], (long long)t->box[1],
                  (long long)t->bytes, (long long)t->l2_sectors,
                  plural(t->l2_sectors));
    if (t->swizzle)
      ts_buf_printf(b, "%d-byte swizzle", t->swizzle);
    else
      ts_buf_printf(b, "no swizzle");
    if (t->multicast)
      ts_buf_printf(b, "; multicast to the cluster's %d blocks, each "
                    "issuing every %s box, so L2 serves it once for them",
                    p->cluster, p->cluster == 2 ? "second" : "nth");
    ts_buf_puts(b, "\n");
  }
}

/* C's tile stored by the TMA: a block's boxes. */
static void print_stores(ts_buf *b, const ts_tma_store_report *t) {
  if (!t->count)
    return;
  ts_buf_printf(b, "TMA stores: %d x tma %s -> %s a block: box %lldx%lld "
                "elements, %lld bytes, %lld L2 sector%s written, %d-byte "
                "swizzle; the block leaves once they have read %s\n",
                t->count, t->src, t->dst, (long long)t->box[0],
                (long long)t->box[1], (long long)t->bytes,
                (long long)t->l2_sectors, plural(t->l2_sectors), t->swizzle,
                t->src);
}

/* A persistent grid: the blocks a launch makes on an H100 and the waves
 * of tiles they take. */
static void print_persistent(ts_buf *b, const ts_persistent_report *p) {
  if (!p->blocks_per_sm)
    return;
  double waves = (double)p->tiles / (double)p->blocks;
  ts_buf_printf(b, "\npersistent grid: %d block%s a multiprocessor; on an "
                "H100 SXM's %d, %lld block%s loop over the grid's %lld "
                "tiles (the counts below are a tile's): %.3g wave%s, ",
                p->blocks_per_sm, plural(p->blocks_per_sm),
                p->multiprocessors, (long long)p->blocks, plural(p->blocks),
                (long long)p->tiles, waves, waves == 1 ? "" : "s");
  if (!p->last_wave)
    ts_buf_printf(b, "%lld full", (long long)p->full_waves);
  else
    ts_buf_printf(b, "%lld full and a last of %lld tile%s (%.0f%% of the "
                  "blocks)", (long long)p->full_waves,
                  (long long)p->last_wave, plural(p->last_wave),
                  100.0 * (double)p->last_wave / (double)p->blocks);
}

/* A grid's fill of the H100's multiprocessors, a line of its own: a grid
 * of fewer blocks than multiprocessors leaves most of the GPU idle. */
static void print_fill(ts_buf *b, const ts_grid_fill_report *f) {
  if (!f->blocks_per_sm)
    return;
  ts_buf_printf(b, "grid fill: %lld block%s on an H100 SXM's %d "
                "multiprocessors, %d at once on each (%s's occupancy): ",
                (long long)f->blocks, plural(f->blocks), f->multiprocessors,
                f->blocks_per_sm, f->arch);
  if (f->idle)
    ts_buf_printf(b, "%d of the multiprocessors idle (%.0f%% of the GPU "
                  "busy): too few blocks; smaller tiles, or split K "
                  "(ts_split_k), give it more\n", f->idle,
                  100.0 * (double)f->blocks / f->multiprocessors);
  else if (!f->full_waves)
    ts_buf_printf(b, "one wave, %lld of the %lld blocks that run at once "
                  "(%.0f%%)\n", (long long)f->blocks, (long long)f->slots,
                  100.0 * (double)f->blocks / (double)f->slots);
  else if (!f->last_wave)
    ts_buf_printf(b, "%lld full wave%s of %lld\n", (long long)f->full_waves,
                  plural(f->full_waves), (long long)f->slots);
  else
    ts_buf_printf(b, "%.3g waves of %lld, %lld full and a last of %lld "
                  "block%s (%.0f%% full)\n", f->waves, (long long)f->slots,
                  (long long)f->full_waves, (long long)f->last_wave,
                  plural(f->last_wave),
                  100.0 * (double)f->last_wave / (double)f->slots);
}

static void print_kernel(ts_buf *b, const ts_explain *e, int i) {
  const ts_kernel_report *k = &e->kernels[i];
  ts_buf_printf(b, "\nkernel %s: grid (%lld, %lld, %lld) = %lld block%s of "
                "(%lld, %lld, %lld) threads", k->entry,
                (long long)k->grid[0], (long long)k->grid[1],
                (long long)k->grid[2], (long long)k->blocks,
                plural(k->blocks), (long long)k->block[0],
                (long long)k->block[1], (long long)k->block[2]);
  if (k->k_steps)
    ts_buf_printf(b, "; %lld k step%s", (long long)k->k_steps,
                  plural(k->k_steps));
  print_persistent(b, &k->persistent);
  ts_buf_printf(b, "\n");
  print_fill(b, &k->fill);
  ts_buf_printf(b, "accesses, a warp's requests (counts a block):\n");
  for (int a = 0; a < e->naccesses; a++)
    if (e->accesses[a].kernel == i)
      print_access(b, &e->accesses[a]);
  print_pipeline(b, &k->pipeline);
  print_stores(b, &k->stores);
  print_resources(b, k);
  print_totals(b, k);
}

char *ts_explain_text(const ts_explain *e) {
  if (!e || e->status != TS_OK)
    return NULL;
  ts_buf b;
  ts_buf_init(&b);
  const ts_gemm *d = &e->def;
  ts_buf_printf(&b, "// explain \"%s\": C[%lld, %lld] = A * B, K %lld, layout "
                "%s, A and B %s, C %s\n", e->name, (long long)d->m,
                (long long)d->n, (long long)d->k, ts_layout_name(d->layout),
                ts_dtype_name(d->a_type), ts_dtype_name(d->c_type));
  ts_buf_printf(&b, "// from the lowered IR, before compiling: one warp's "
                "requests in the middle block, docs/explain.md\n");
  for (int i = 0; i < e->nkernels; i++)
    print_kernel(&b, e, i);
  return ts_buf_take(&b);
}
