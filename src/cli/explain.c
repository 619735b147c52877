/*
 * tessel explain: what each access of a schedule's kernels will cost and
 * what the kernels ask of a multiprocessor, from the lowered IR, before
 * anything is compiled (the library's ts_program_explain); as text, or as
 * JSON (jansson, as the run records are) for programs.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

static const char *explain_help =
    "usage: tessel explain SCHEDULE [--shape MxNxK] [--layout L]\n"
    "                     [--alpha X] [--beta Y] [--dtype T] [--c-dtype T]\n"
    "                     [--arch sm_80|sm_86|sm_89|sm_90] [--json FILE]\n"
    "                     [--tuned] [--runtime[=N[,L]]]\n"
    "Lowers the schedule and walks every warp of the grid's middle block\n"
    "through its kernels, lane by lane, on the CPU: each global and shared\n"
    "access with its width, how often a block (and a k step) makes it, the\n"
    "32-byte sectors a global request touches and the wavefronts a shared\n"
    "one takes (bank conflicts), and a verdict; then the registers the\n"
    "tiles need, shared memory, threads, occupancy (sm_80 and sm_90, or\n"
    "--arch), arithmetic intensity, and totals over the grid to set beside\n"
    "Nsight Compute's counters (docs/explain.md).\n"
    "  --shape  default 4096x4096x4096\n"
    "  --json   also write the report as JSON to FILE\n"
    "  --tuned  a space at its tuning record for this GPU and definition\n"
    "  --runtime[=N[,L]]  M, N, K and the leading dimensions taken at\n"
    "             launch: one kernel for every shape, run and checked at the\n"
    "             --shape given (extents multiples of N, leading dimensions\n"
    "             of L, else of N; docs/launch.md)\n"
    CLI_ISOLATION_HELP
    "Exit status: 0 explained, 1 a schedule or lowering error, 2 a usage\n"
    "error.\n";

static bool set(json_t *o, const char *key, json_t *v) {
  return v && json_object_set_new(o, key, v) == 0;
}

static json_t *access_json(const ts_access_report *r) {
  json_t *o = json_object();
  double q = r->requests > 0 ? r->requests : 1;
  bool ok = o && set(o, "kernel", json_integer(r->kernel)) &&
            set(o, "kind", json_string(ts_access_kind_name(r->kind))) &&
            set(o, "phase", json_string(ts_access_phase_name(r->phase))) &&
            set(o, "buffer", json_string(r->buffer)) &&
            set(o, "access", json_string(r->text)) &&
            set(o, "bytes", json_integer(r->bytes)) &&
            set(o, "scalar_lanes", json_boolean(r->scalar_lanes)) &&
            set(o, "requests_per_block", json_real(r->requests)) &&
            set(o, "requests_per_k_step", json_real(r->requests_per_step)) &&
            set(o, "active_lanes", json_real(r->active_lanes)) &&
            set(o, "sectors_per_request", json_real(r->sectors / q)) &&
            set(o, "ideal_sectors_per_request",
                json_real(r->ideal_sectors / q)) &&
            set(o, "wavefronts_per_request", json_real(r->wavefronts / q)) &&
            set(o, "ideal_wavefronts_per_request",
                json_real(r->ideal_wavefronts / q)) &&
            set(o, "misaligned", json_boolean(r->misaligned)) &&
            set(o, "verdict", json_string(r->verdict));
  if (!ok)
    json_decref(o);
  return ok ? o : NULL;
}

static json_t *occupancy_json(const ts_kernel_report *k) {
  json_t *a = json_array();
  for (int i = 0; a && i < k->noccupancy; i++) {
    const ts_occupancy *c = &k->occupancy[i];
    json_t *o = json_pack("{s:s, s:i, s:i, s:f, s:s}", "arch", c->arch,
                          "blocks_per_sm", c->blocks, "warps_per_sm", c->warps,
                          "fraction", c->fraction, "limit", c->limit);
    if (!o || json_array_append_new(a, o) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

static json_t *totals_json(const ts_kernel_report *k) {
  return json_pack(
      "{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
      "s:f}",
      "global_ld_requests", k->global_ld_requests, "global_ld_sectors",
      k->global_ld_sectors, "global_st_requests", k->global_st_requests,
      "global_st_sectors", k->global_st_sectors, "ldgsts_requests",
      k->ldgsts_requests, "ldgsts_sectors", k->ldgsts_sectors,
      "ldgsts_wavefronts", k->ldgsts_wavefronts, "ldgsts_conflicts",
      k->ldgsts_wavefronts - k->ldgsts_ideal,
      "shared_ld_requests", k->shared_ld_requests, "shared_ld_wavefronts",
      k->shared_ld_wavefronts, "shared_ld_conflicts",
      k->shared_ld_wavefronts - k->shared_ld_ideal, "shared_st_requests",
      k->shared_st_requests, "shared_st_wavefronts", k->shared_st_wavefronts,
      "shared_st_conflicts", k->shared_st_wavefronts - k->shared_st_ideal);
}

/* The TMA pipeline's node and one stage's boxes; NULL when none. */
static json_t *pipeline_json(const ts_pipeline_report *p) {
  json_t *boxes = json_array();
  for (int i = 0; boxes && i < p->ntma; i++) {
    const ts_tma_report *t = &p->tma[i];
    json_t *o = json_pack("{s:s, s:s, s:[I,I], s:I, s:I, s:i, s:i, s:b}",
                          "src", t->src, "dst", t->dst, "box",
                          (json_int_t)t->box[0], (json_int_t)t->box[1],
                          "bytes", (json_int_t)t->bytes, "l2_sectors",
                          (json_int_t)t->l2_sectors, "swizzle", t->swizzle,
                          "per_stage", t->per_stage, "multicast",
                          t->multicast);
    if (!o || json_array_append_new(boxes, o)) {
      json_decref(boxes);
      return NULL;
    }
  }
  return boxes ? json_pack("{s:i, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
                           "s:i, s:i, s:o}", "stages", p->stages,
                           "stage_bytes", (json_int_t)p->stage_bytes,
                           "consumer_warps", p->consumer_warps, "cluster",
                           p->cluster, "pingpong", p->pingpong,
                           "producer_thread",
                           p->producer_thread, "producer_threads",
                           p->producer_threads, "launch_registers",
                           p->launch_registers, "producer_registers",
                           p->producer_registers, "consumer_registers",
                           p->consumer_registers, "blocks", p->blocks, "tma",
                           boxes)
               : NULL;
}

/* C's stores by the TMA: a block's boxes. */
static json_t *stores_json(const ts_tma_store_report *t) {
  return json_pack("{s:s, s:s, s:[I,I], s:I, s:I, s:i, s:i}", "src", t->src,
                   "dst", t->dst, "box", (json_int_t)t->box[0],
                   (json_int_t)t->box[1], "bytes", (json_int_t)t->bytes,
                   "l2_sectors", (json_int_t)t->l2_sectors, "swizzle",
                   t->swizzle, "per_block", t->count);
}

/* A persistent grid's blocks and waves on an H100. */
static json_t *persistent_json(const ts_persistent_report *p) {
  return json_pack("{s:i, s:i, s:I, s:I, s:I, s:I}", "blocks_per_sm",
                   p->blocks_per_sm, "multiprocessors", p->multiprocessors,
                   "tiles", (json_int_t)p->tiles, "blocks",
                   (json_int_t)p->blocks, "full_waves",
                   (json_int_t)p->full_waves, "last_wave",
                   (json_int_t)p->last_wave);
}

/* A grid's fill of an H100's multiprocessors. */
static json_t *fill_json(const ts_grid_fill_report *f) {
  return json_pack("{s:s, s:i, s:i, s:I, s:I, s:f, s:I, s:I, s:i}", "arch",
                   f->arch, "multiprocessors", f->multiprocessors,
                   "blocks_per_sm", f->blocks_per_sm, "blocks",
                   (json_int_t)f->blocks, "slots", (json_int_t)f->slots,
                   "waves", f->waves, "full_waves", (json_int_t)f->full_waves,
                   "last_wave", (json_int_t)f->last_wave, "idle", f->idle);
}

static json_t *kernel_json(const ts_kernel_report *k) {
  json_t *o = json_pack(
      "{s:s, s:[I,I,I], s:[I,I,I], s:I, s:I, s:I, s:I, s:i, s:i, s:s, s:f, "
      "s:f, s:f}",
      "entry", k->entry, "grid", (json_int_t)k->grid[0],
      (json_int_t)k->grid[1], (json_int_t)k->grid[2], "block",
      (json_int_t)k->block[0], (json_int_t)k->block[1],
      (json_int_t)k->block[2], "blocks", (json_int_t)k->blocks, "threads",
      (json_int_t)k->threads, "k_steps", (json_int_t)k->k_steps,
      "shared_bytes", (json_int_t)k->shared_bytes, "tile_registers",
      k->tile_registers, "registers_estimate", k->registers,
      "register_detail", k->register_detail, "flops_per_block", k->flops,
      "global_bytes_per_block", k->global_bytes, "intensity", k->intensity);
  if (o && (!set(o, "occupancy", occupancy_json(k)) ||
            !set(o, "totals", totals_json(k)) ||
            (k->pipeline.stages &&
             !set(o, "pipeline", pipeline_json(&k->pipeline))) ||
            (k->persistent.blocks_per_sm &&
             !set(o, "persistent", persistent_json(&k->persistent))) ||
            (k->fill.blocks_per_sm &&
             !set(o, "grid_fill", fill_json(&k->fill))) ||
            (k->stores.count &&
             !set(o, "tma_stores", stores_json(&k->stores))))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *explain_json(const ts_explain *e) {
  const ts_gemm *d = &e->def;
  json_t *root = json_pack(
      "{s:s, s:s, s:{s:I, s:I, s:I, s:s, s:s, s:s}, s:[], s:[]}", "tessel",
      "explain", "schedule", e->name, "shape", "m", (json_int_t)d->m, "n",
      (json_int_t)d->n, "k", (json_int_t)d->k, "layout",
      ts_layout_name(d->layout), "ab", ts_dtype_name(d->a_type), "c",
      ts_dtype_name(d->c_type), "kernels", "accesses");
  bool ok = root != NULL;
  for (int i = 0; ok && i < e->nkernels; i++) {
    json_t *k = kernel_json(&e->kernels[i]);
    ok = k && json_array_append_new(json_object_get(root, "kernels"), k) == 0;
  }
  for (int i = 0; ok && i < e->naccesses; i++) {
    json_t *a = access_json(&e->accesses[i]);
    ok = a &&
         json_array_append_new(json_object_get(root, "accesses"), a) == 0;
  }
  if (!ok)
    json_decref(root);
  return ok ? root : NULL;
}

static int write_json(const ts_explain *e, const char *path) {
  json_t *root = explain_json(e);
  int rc = root && json_dump_file(root, path, JSON_INDENT(1) |
                                                  JSON_PRESERVE_ORDER) == 0
               ? 0
               : EXIT_FAIL;
  if (rc)
    fprintf(stderr, "tessel: explain --json %s: could not write it\n", path);
  json_decref(root);
  return rc;
}

int cli_explain(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(argc, argv, explain_help, CLI_EXPLAIN, &o);
  if (rc >= 0)
    return rc;
  if (o.nnames != 1 || o.nshapes > 1) {
    fprintf(stderr, "tessel: explain takes one schedule and one --shape "
            "(got %d schedule%s and %d shape%s)\n", o.nnames,
            o.nnames == 1 ? "" : "s", o.nshapes, o.nshapes == 1 ? "" : "s");
    return EXIT_USAGE;
  }
  cli_finish_shapes(&o, 4096, 4096, 4096);
  ts_gpu *gpu = cli_gpu_for_records(&o);
  ts_sched *s = cli_schedule(&o, o.names[0], &o.shapes[0], gpu);
  ts_gpu_close(gpu);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  ts_explain_opts eo = {.arch = o.arch_given ? o.arch : NULL};
  ts_explain *e = ts_program_explain(p, &eo);
  ts_program_free(p);
  char *text = ts_explain_text(e);
  if (!e || !text) {
    fprintf(stderr, "tessel: %s\n", e ? e->errmsg : "out of memory");
    rc = e && e->status == TS_ERR_BAD_ARCH ? EXIT_USAGE : EXIT_FAIL;
  } else {
    fputs(text, stdout);
    rc = o.json ? write_json(e, o.json) : 0;
  }
  free(text);
  ts_explain_free(e);
  return rc;
}
