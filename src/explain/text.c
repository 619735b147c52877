/*
 * tessel explain's report as text: per kernel, its launch, each access
 * (where it lies, what it is, its cost for one warp, its verdict), its
 * resources and occupancy, and the totals over the grid that Nsight
 * Compute's counters sum.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../ir/strbuf.h"
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
  ts_buf_printf(b, "      %d-byte %s, %.3g lanes; ", r->bytes,
                r->bytes > 4 ? "vectors" : "accesses", r->active_lanes);
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

static void print_resources(ts_buf *b, const ts_kernel_report *k) {
  ts_buf_printf(b, "resources: %lld threads (%lld warps), %lld bytes of "
                "shared memory a block\n", (long long)k->threads,
                (long long)(k->threads + 31) / 32,
                (long long)k->shared_bytes);
  ts_buf_printf(b, "  registers: the tiles need %d a thread%s%s%s; about "
                "%d with indices and addresses (ptxas decides: tessel show "
                "--cuda prints its count)\n", k->tile_registers,
                *k->register_detail ? " (" : "", k->register_detail,
                *k->register_detail ? ")" : "", k->registers);
  for (int i = 0; i < k->noccupancy; i++) {
    const ts_occupancy *o = &k->occupancy[i];
    ts_buf_printf(b, "  occupancy on %s: %d block%s an SM (%d warps, %.0f%%),"
                  " limited by %s\n", o->arch, o->blocks,
                  o->blocks == 1 ? "" : "s", o->warps, 100 * o->fraction,
                  o->limit);
  }
  if (k->flops > 0)
    ts_buf_printf(b, "  arithmetic intensity: %.4g flops a block over %.4g "
                  "bytes read and written in global memory: %.3g flops a "
                  "byte\n", k->flops, k->global_bytes, k->intensity);
}

static void print_totals(ts_buf *b, const ts_kernel_report *k) {
  ts_buf_printf(b, "totals over the grid (as Nsight Compute sums a launch):\n");
  if (k->global_ld_requests > 0)
    ts_buf_printf(b, "  global loads   %.0f requests, %.0f sectors\n",
                  k->global_ld_requests, k->global_ld_sectors);
  if (k->global_st_requests > 0)
    ts_buf_printf(b, "  global stores  %.0f requests, %.0f sectors\n",
                  k->global_st_requests, k->global_st_sectors);
  if (k->ldgsts_requests > 0)
    ts_buf_printf(b, "  cp.async       %.0f requests, %.0f sectors; %.0f "
                  "wavefronts stored (%.0f bank conflicts)\n",
                  k->ldgsts_requests, k->ldgsts_sectors, k->ldgsts_wavefronts,
                  k->ldgsts_wavefronts - k->ldgsts_ideal);
  if (k->shared_ld_requests > 0)
    ts_buf_printf(b, "  shared loads   %.0f requests, %.0f wavefronts (%.0f "
                  "bank conflicts)\n", k->shared_ld_requests,
                  k->shared_ld_wavefronts,
                  k->shared_ld_wavefronts - k->shared_ld_ideal);
  if (k->shared_st_requests > 0)
    ts_buf_printf(b, "  shared stores  %.0f requests, %.0f wavefronts (%.0f "
                  "bank conflicts)\n", k->shared_st_requests,
                  k->shared_st_wavefronts,
                  k->shared_st_wavefronts - k->shared_st_ideal);
}

static void print_kernel(ts_buf *b, const ts_explain *e, int i) {
  const ts_kernel_report *k = &e->kernels[i];
  ts_buf_printf(b, "\nkernel %s: grid (%lld, %lld, %lld) = %lld blocks of "
                "(%lld, %lld, %lld) threads", k->entry,
                (long long)k->grid[0], (long long)k->grid[1],
                (long long)k->grid[2], (long long)k->blocks,
                (long long)k->block[0], (long long)k->block[1],
                (long long)k->block[2]);
  if (k->k_steps)
    ts_buf_printf(b, "; %lld k steps", (long long)k->k_steps);
  ts_buf_printf(b, "\naccesses, a warp's requests (counts a block):\n");
  for (int a = 0; a < e->naccesses; a++)
    if (e->accesses[a].kernel == i)
      print_access(b, &e->accesses[a]);
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
