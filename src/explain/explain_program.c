/*
 * tessel explain: a program's kernels walked (walk.c), their requests
 * costed (cost.c) and their resources counted (resources.c), then each
 * access given a one-line verdict.  The result, ts_explain, owns its
 * strings; ts_explain_text (text.c) prints it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/strbuf.h"
#include "../ir/visit.h"
#include "explain_impl.h"

const char *ts_access_kind_name(ts_access_kind k) {
  switch (k) {
  case TS_ACCESS_GLOBAL_LOAD: return "global load";
  case TS_ACCESS_GLOBAL_STORE: return "global store";
  case TS_ACCESS_GLOBAL_ATOMIC: return "global atomic";
  case TS_ACCESS_SHARED_LOAD: return "shared load";
  case TS_ACCESS_SHARED_STORE: return "shared store";
  case TS_ACCESS_CP_ASYNC: return "cp.async";
  case TS_ACCESS_LDMATRIX: return "ldmatrix";
  case TS_ACCESS_STMATRIX: return "stmatrix";
  }
  return "?";
}

const char *ts_access_phase_name(ts_access_phase p) {
  switch (p) {
  case TS_BEFORE_K: return "before the k loop";
  case TS_IN_K: return "in the k loop";
  case TS_AFTER_K: return "after the k loop";
  case TS_NO_K: return "no k loop";
  }
  return "?";
}

static bool is_global(ts_access_kind k) {
  return k == TS_ACCESS_GLOBAL_LOAD || k == TS_ACCESS_GLOBAL_STORE ||
         k == TS_ACCESS_GLOBAL_ATOMIC || k == TS_ACCESS_CP_ASYNC;
}

static bool is_shared(ts_access_kind k) {
  return k == TS_ACCESS_SHARED_LOAD || k == TS_ACCESS_SHARED_STORE ||
         k == TS_ACCESS_CP_ASYNC || k == TS_ACCESS_LDMATRIX ||
         k == TS_ACCESS_STMATRIX;
}

/* ---- Verdicts ------------------------------------------------------------ */

/* The global side: coalesced, a broadcast, a stride, scattered, or one
 * lane's (which has nothing to coalesce with: a request for each lane's
 * bytes is no coalescing, however few its sectors). */
static int global_verdict(const ts_access_report *r, char *out, size_t n) {
  double sec = r->sectors / r->requests, best = r->ideal_sectors / r->requests;
  if (r->misaligned)
    return snprintf(out, n, "misaligned: a lane's %d-byte access is not on "
                    "a %d-byte boundary", r->bytes, r->bytes);
  if (r->active_lanes / r->requests < 1.001)
    return snprintf(out, n, "one lane a request, so not coalesced: a "
                    "request for each lane's %d bytes; let the warp's lanes "
                    "take neighbouring elements (threadIdx.x along the "
                    "contiguous dimension)", r->bytes);
  if (sec <= best * 1.001)
    return snprintf(out, n, r->uniform_stride && r->stride == 0 &&
                                    r->active_lanes / r->requests > 1
                                ? "one address for the warp (a broadcast)"
                                : "coalesced");
  if (r->uniform_stride && r->stride > r->bytes)
    return snprintf(out, n, "stride-%lld access (%lld bytes between lanes):"
                    " %.1f sectors a request where %.1f would do; let "
                    "threadIdx.x walk the contiguous dimension, or stage "
                    "through shared memory", (long long)(r->stride / r->bytes),
                    (long long)r->stride, sec, best);
  return snprintf(out, n, "scattered: %.1f sectors a request where %.1f "
                  "would do", sec, best);
}

/* What padding does for a conflicted access of a shared buffer: the
 * padding the buffer's rows have, and the total that removes the access's
 * conflict and makes no other access of the buffer conflict more, with
 * the fewest conflicts left on the buffer (each access of it costed under
 * every padding by compiled.c).  A total, since ts_storage_pad sets the
 * padding rather than adds to it. */
typedef struct pad_advice {
  bool costed;     /* false: swizzled, or not a padded kind of buffer */
  bool swizzled;   /* by ts_storage_swizzle, which excludes padding */
  int64_t now, to; /* elements a row; to < 0: no padding removes it */
} pad_advice;

static bool same_shared(const ts_access_report *r, const char *name) {
  return r->wavefronts > 0 && strcmp(r->buffer, name) == 0;
}

/* Row i's conflict (wavefronts a request past the fewest) with its
 * buffer's rows padded by `pad`, from its sample. */
static double excess(const explain_rows *e, int i, int pad) {
  const double *at = row_pad_wavefronts(e, i);
  if (at[PAD_WEIGHT] <= 0)
    return 0;
  double over = (at[pad] - at[PAD_IDEAL]) / at[PAD_WEIGHT];
  return over > 1e-9 ? over : 0;
}

/* The conflicts on the buffer of row `named` with its rows padded by
 * `pad`, or -1 where the padding leaves row `named` conflicted or makes
 * another row's conflicts worse (a new one among them). */
static double padded_excess(const explain_rows *e, int first, int named,
                            int pad, int64_t now) {
  if (excess(e, named, pad) > 0)
    return -1;
  double sum = 0;
  for (int i = first; i < e->n; i++) {
    if (!same_shared(&e->rows[i], e->rows[named].buffer))
      continue;
    double x = excess(e, i, pad);
    if (x > excess(e, i, (int)now) * 1.001)
      return -1;
    sum += x * e->rows[i].requests;
  }
  return sum;
}

static pad_advice advise_pad(const explain_rows *e, int first, int named,
                             const ir_buffer *b) {
  pad_advice a = {.to = -1, .swizzled = b && b->swizzle};
  if (!b || b->scope != SCOPE_SHARED || b->swizzle || b->ndim < 2)
    return a;
  const char *name = e->rows[named].buffer;
  int widest = 1;
  for (int i = first; i < e->n; i++)
    if (same_shared(&e->rows[i], name) && e->rows[i].bytes > widest)
      widest = e->rows[i].bytes;
  int64_t size = ts_dtype_size(b->dtype);
  int64_t inner = b->shape[b->order[b->ndim - 1]];
  a.costed = true;
  a.now = b->pad;
  double least = -1;
  for (int pad = 0; pad < PAD_CHOICES; pad++) {
    /* Vector accesses stay aligned: rows a multiple of the widest. */
    if ((inner + pad) * size % widest != 0)
      continue;
    double x = padded_excess(e, first, named, pad, a.now);
    if (x >= 0 && (least < 0 || x < least * 0.999)) {
      least = x;
      a.to = pad;
    }
  }
  return a;
}

/* The shared side: conflict-free, or n-way and what to do. */
static int shared_verdict(const ts_access_report *r, const pad_advice *pa,
                          const char *elem, bool tma_layout, char *out,
                          size_t n) {
  double wav = r->wavefronts / r->requests;
  double best = r->ideal_wavefronts / r->requests;
  if (wav <= best * 1.001)
    return snprintf(out, n, "no bank conflict");
  int at = snprintf(out, n, "%.3g-way bank conflict on %s (%.1f wavefronts a "
                    "request where %.1f would do): ", wav / best, r->buffer,
                    wav, best);
  if (at < 0 || (size_t)at >= n)
    return at;
  char *o = out + at;
  size_t left = n - (size_t)at;
  ts_buf stage;
  ts_buf_init(&stage);
  ts_buf_c_name(&stage, r->buffer);
  char *var = ts_buf_take(&stage);
  const char *unpadded = pa->now ? " unpadded" : "";
  int more;
  if (tma_layout) /* C's stage: what the TMA's store reads */
    more = snprintf(o, left, "its layout is the TMA's 128-byte swizzle, "
                    "which neither padding nor another swizzle may change");
  else if (pa->swizzled) /* neither more swizzle nor a padding applies */
    more = snprintf(o, left, "it is swizzled already (ts_storage_swizzle), "
                    "which leaves this one, and a swizzled buffer takes no "
                    "padding: change which lanes access which of its rows "
                    "and columns");
  else if (!pa->costed)
    more = snprintf(o, left, "pad its rows (ts_storage_pad) or swizzle it "
                    "(ts_storage_swizzle)");
  else if (pa->to < 0)
    more = snprintf(o, left, "no padding of its rows removes it without "
                    "another; swizzle it%s (ts_storage_swizzle)", unpadded);
  else if (pa->now)
    more = snprintf(o, left, "pad its rows by %lld %s%s in all, not %lld: "
                    "ts_storage_pad(s, %s, %lld); or swizzle it unpadded",
                    (long long)pa->to, elem, pa->to == 1 ? "" : "s",
                    (long long)pa->now, var ? var : r->buffer,
                    (long long)pa->to);
  else
    more = snprintf(o, left, "pad its rows by %lld %s%s: ts_storage_pad(s, "
                    "%s, %lld); or swizzle it", (long long)pa->to, elem,
                    pa->to == 1 ? "" : "s", var ? var : r->buffer,
                    (long long)pa->to);
  free(var);
  return at + more;
}

static void verdict(ts_access_report *r, const pad_advice *pa,
                    const ir_buffer *shared_buf) {
  char *v = r->verdict;
  size_t n = sizeof(r->verdict), at = 0;
  if (r->requests <= 0)
    return (void)snprintf(v, n, "never reached");
  if (is_global(r->kind))
    at += (size_t)global_verdict(r, v, n);
  if (is_shared(r->kind) && at < n) {
    int eb = shared_buf ? ts_dtype_size(shared_buf->dtype) : 4;
    const char *elem = eb == 4 ? "element" : "16-bit element";
    at += (size_t)snprintf(v + at, n - at, "%s", at ? "; " : "");
    if (at < n)
      at += (size_t)shared_verdict(r, pa, elem,
                                   shared_buf && shared_buf->overlay,
                                   v + at, n - at);
  }
  if (r->scalar_lanes && at < n)
    snprintf(v + at, n - at, "; its vectorized loop makes one access a "
             "lane here (the lanes are not contiguous, or not aligned)");
}

/* ---- Assembling ---------------------------------------------------------- */

typedef struct owned {
  ts_arena arena;
} owned;

/* fmt has one %s, arg; the message is whole, however long arg is. */
static ts_explain *failed(ts_explain *e, ts_status st, const char *fmt,
                          const char *arg) {
  size_t n = strlen(fmt) + strlen(arg) + 1;
  e->status = st;
  free(e->errmsg);
  if ((e->errmsg = malloc(n)))
    snprintf(e->errmsg, n, fmt, arg);
  return e;
}

typedef struct {
  const char *name;
  const ir_buffer *found;
} buffer_search;

static bool visit_alloc(ir_visitor *v, const ir_stmt *s) {
  buffer_search *b = v->ctx;
  if (s->kind == S_ALLOC && strcmp(s->alloc.buf->name, b->name) == 0) {
    b->found = s->alloc.buf;
    v->stop = true;
  }
  return true;
}

/* The buffer a shared row names (its element type gives the padding). */
static const ir_buffer *find_buffer(const ir_stmt *body, const char *name) {
  buffer_search b = {.name = name};
  ir_visitor v = {.stmt = visit_alloc, .ctx = &b};
  ir_visit_stmt(&v, body);
  return b.found;
}

/* Grid totals of one kernel's rows, and its bytes a block. */
static void kernel_totals(ts_kernel_report *kr, const ts_access_report *rows,
                          int n, double scale) {
  for (int i = 0; i < n; i++) {
    const ts_access_report *r = &rows[i];
    double q = r->requests * scale;
    switch (r->kind) {
    case TS_ACCESS_GLOBAL_LOAD:
      kr->global_ld_requests += q;
      kr->global_ld_sectors += r->sectors * scale;
      break;
    case TS_ACCESS_GLOBAL_STORE: case TS_ACCESS_GLOBAL_ATOMIC:
      kr->global_st_requests += q;
      kr->global_st_sectors += r->sectors * scale;
      break;
    case TS_ACCESS_CP_ASYNC:
      kr->ldgsts_requests += q;
      kr->ldgsts_sectors += r->sectors * scale;
      kr->ldgsts_wavefronts += r->wavefronts * scale;
      kr->ldgsts_ideal += r->ideal_wavefronts * scale;
      break;
    case TS_ACCESS_SHARED_LOAD: case TS_ACCESS_LDMATRIX:
      kr->shared_ld_requests += q;
      kr->shared_ld_wavefronts += r->wavefronts * scale;
      kr->shared_ld_ideal += r->ideal_wavefronts * scale;
      break;
    case TS_ACCESS_SHARED_STORE: case TS_ACCESS_STMATRIX:
      kr->shared_st_requests += q;
      kr->shared_st_wavefronts += r->wavefronts * scale;
      kr->shared_st_ideal += r->ideal_wavefronts * scale;
      break;
    }
    if (is_global(r->kind)) /* a block's bytes */
      kr->global_bytes += r->active_lanes * r->requests * r->bytes;
  }
}

/* The pipeline node's stages and roles, and its first stage's fill: the
 * boxes of one stage (the prologue's copies into stage 0), merged by
 * shape. */
static bool pipeline_node(ir_visitor *v, const ir_stmt *s) {
  ts_pipeline_report *r = v->ctx;
  if (s->kind == S_PIPELINE && r->stages == 0) {
    const ir_pipeline *p = s->pipe.pipe;
    *r = (ts_pipeline_report){.stages = p->stages, .stage_bytes = p->bytes,
                              .consumer_warps = p->consumers,
                              .producer_thread = p->producer,
                              .producer_threads = p->producer_threads,
                              .cluster = p->cluster > 1 ? p->cluster : 1,
                              .pingpong = p->pingpong};
  }
  if (s->kind != S_TMA || s->pipe.stage->kind != E_INT ||
      s->pipe.stage->ival != 0)
    return true;
  const ir_buffer *dst = s->pipe.dst->load.buf;
  int64_t size = ts_dtype_size(dst->dtype);
  ts_tma_report t = {.src = s->pipe.src->name, .dst = dst->name,
                     .box = {s->pipe.box[0], s->pipe.box[1]},
                     .bytes = s->pipe.box[0] * s->pipe.box[1] * size,
                     .l2_sectors = s->pipe.box[1] *
                                   ((s->pipe.box[0] * size + 31) / 32),
                     .swizzle = dst->swizzle ? 16 * dst->swizzle : 0,
                     .per_stage = 1, .multicast = s->pipe.multicast};
  for (int i = 0; i < r->ntma; i++)
    if (!strcmp(r->tma[i].src, t.src) && !strcmp(r->tma[i].dst, t.dst) &&
        r->tma[i].box[0] == t.box[0] && r->tma[i].box[1] == t.box[1]) {
      r->tma[i].per_stage++;
      return true;
    }
  if (r->ntma < TS_MAX_TMA_REPORTS)
    r->tma[r->ntma++] = t;
  return true;
}

/* What L2 serves a block for a stage: every box, those multicast to a
 * cluster shared by its blocks. */
static int64_t block_fill_bytes(const ts_pipeline_report *p) {
  int64_t bytes = p->stage_bytes;
  for (int i = 0; i < p->ntma; i++)
    if (p->tma[i].multicast)
      bytes -= p->tma[i].bytes * p->tma[i].per_stage *
               (p->cluster - 1) / p->cluster;
  return bytes;
}

/* C's stores by the TMA: a block's, one box a panel of the stage. */
static bool store_node(ir_visitor *v, const ir_stmt *s) {
  ts_tma_store_report *r = v->ctx;
  if (s->kind != S_TMA_STORE)
    return true;
  const ir_buffer *src = s->pipe.dst->load.buf;
  int64_t size = ts_dtype_size(src->dtype);
  if (!r->count)
    *r = (ts_tma_store_report){
        .src = src->name, .dst = s->pipe.src->name,
        .box = {s->pipe.box[0], s->pipe.box[1]},
        .bytes = s->pipe.box[0] * s->pipe.box[1] * size,
        .l2_sectors = s->pipe.box[1] * ((s->pipe.box[0] * size + 31) / 32),
        .swizzle = src->swizzle ? 16 * src->swizzle : 0};
  r->count++;
  return true;
}

/* The report's names copied into the rows' arena, which outlives the
 * program's buffers; false when out of memory. */
static bool own_names(ts_arena *a, const char **src, const char **dst) {
  *src = ts_arena_strdup(a, *src);
  *dst = ts_arena_strdup(a, *dst);
  return *src && *dst;
}

/* A persistent grid's blocks and waves on TS_EXPLAIN_MULTIPROCESSORS. */
static void persistent_report(const ir_kernel *k, ts_persistent_report *r) {
  *r = (ts_persistent_report){0};
  if (!k->persistent)
    return;
  int64_t grid[3];
  ir_kernel_grid(k, TS_EXPLAIN_MULTIPROCESSORS, grid);
  *r = (ts_persistent_report){
      .blocks_per_sm = k->persistent,
      .multiprocessors = TS_EXPLAIN_MULTIPROCESSORS, .tiles = k->grid[0],
      .blocks = grid[0], .full_waves = k->grid[0] / grid[0],
      .last_wave = k->grid[0] % grid[0]};
}

/* The occupancy the grid fill is counted at: sm_90's (an H100's), else
 * the first reported; NULL when none is. */
static const ts_occupancy *fill_occupancy(const ts_kernel_report *kr) {
  for (int i = 0; i < kr->noccupancy; i++)
    if (strcmp(kr->occupancy[i].arch, "sm_90") == 0)
      return &kr->occupancy[i];
  return kr->noccupancy ? &kr->occupancy[0] : NULL;
}

/* How a grid that is not persistent fills TS_EXPLAIN_MULTIPROCESSORS at
 * its occupancy: its waves, the last's blocks, the multiprocessors left
 * idle. */
static void grid_fill_report(ts_kernel_report *kr) {
  const ts_occupancy *o = fill_occupancy(kr);
  kr->fill = (ts_grid_fill_report){0};
  if (kr->persistent.blocks_per_sm || !o || o->blocks <= 0 || kr->blocks <= 0)
    return;
  ts_grid_fill_report *f = &kr->fill;
  f->arch = o->arch;
  f->multiprocessors = TS_EXPLAIN_MULTIPROCESSORS;
  f->blocks_per_sm = o->blocks;
  f->blocks = kr->blocks;
  f->slots = (int64_t)f->multiprocessors * o->blocks;
  f->waves = (double)f->blocks / (double)f->slots;
  f->full_waves = f->blocks / f->slots;
  f->last_wave = f->blocks % f->slots;
  f->idle = f->blocks < f->multiprocessors
                ? f->multiprocessors - (int)f->blocks : 0;
}

/* Kernel i of p: walked, its rows made per block, its resources. */
static bool explain_kernel(ts_explain *e, const ts_program *p, int i,
                           const ts_explain_opts *o, explain_rows *rows) {
  const ir_kernel *k = p->order[i];
  ts_kernel_report *kr = &e->kernels[i];
  int first = rows->n;
  kernel_walk kw = {0};
  if (!walk_kernel(k, i, o, rows, &kw)) {
    kernel_walk_free(&kw);
    return false;
  }
  kr->entry = ts_arena_strdup(rows->arena, k->entry ? k->entry : "");
  kr->blocks = 1;
  for (int d = 0; d < 3; d++) {
    kr->grid[d] = k->grid[d];
    kr->block[d] = k->block[d];
    kr->blocks *= k->grid[d];
  }
  kr->k_steps = kw.k_steps;
  persistent_report(k, &kr->persistent);
  ir_visitor pv = {.stmt = pipeline_node, .ctx = &kr->pipeline};
  ir_visit_stmt(&pv, k->body);
  ir_visitor sv = {.stmt = store_node, .ctx = &kr->stores};
  ir_visit_stmt(&sv, k->body);
  if (kr->pipeline.producer_threads) { /* the split lowering chose */
    kr->pipeline.launch_registers = k->registers.launch;
    kr->pipeline.producer_registers = k->registers.producer;
    kr->pipeline.consumer_registers = k->registers.consumer;
    kr->pipeline.blocks = k->registers.blocks;
  }
  bool named = !kr->stores.count ||
               own_names(rows->arena, &kr->stores.src, &kr->stores.dst);
  for (int t = 0; named && t < kr->pipeline.ntma; t++)
    named = own_names(rows->arena, &kr->pipeline.tma[t].src,
                      &kr->pipeline.tma[t].dst);
  if (!named) {
    kernel_walk_free(&kw);
    return false;
  }
  /* Rows hold sums over the blocks walked; a row reads per block. */
  double per_block = 1.0 / (double)kw.blocks_walked;
  for (int r = first; r < rows->n; r++) {
    ts_access_report *a = &rows->rows[r];
    a->requests *= per_block;
    a->ir_requests *= per_block;
    a->requests_per_step *= per_block;
    a->active_lanes *= per_block;
    a->sectors *= per_block;
    a->ideal_sectors *= per_block;
    a->wavefronts *= per_block;
    a->ideal_wavefronts *= per_block;
  }
  for (int r = first; r < rows->n; r++) {
    ts_access_report *a = &rows->rows[r];
    const ir_buffer *sb = find_buffer(k->body, a->buffer);
    pad_advice pa = advise_pad(rows, first, r, sb);
    verdict(a, &pa, sb);
    if (a->requests > 0)
      a->active_lanes /= a->requests;
  }
  kernel_totals(kr, rows->rows + first, rows->n - first, (double)kr->blocks);
  /* What the TMA moves rather than the threads: every k step's fill of
   * the pipeline's stage, and C's stores. */
  if (kr->pipeline.stages)
    kr->global_bytes += (double)block_fill_bytes(&kr->pipeline) *
                        (double)kr->k_steps;
  kr->global_bytes += (double)kr->stores.count * (double)kr->stores.bytes;
  const ts_gemm *d = &p->def;
  kr->flops = k == &p->k ? 2.0 * (double)d->m * (double)d->n * (double)d->k /
                               (double)kr->blocks
                         : 0;
  kr->intensity = kr->global_bytes > 0 ? kr->flops / kr->global_bytes : 0;
  bool ok = kernel_resources(k, o->arch, &kw, rows->arena, kr);
  if (ok)
    grid_fill_report(kr);
  kernel_walk_free(&kw);
  return ok;
}

ts_explain *ts_program_explain(const ts_program *p,
                               const ts_explain_opts *opts) {
  ts_explain_opts o = opts ? *opts : (ts_explain_opts){0};
  ts_explain *e = calloc(1, sizeof(*e));
  owned *own = calloc(1, sizeof(*own));
  if (!e || !own) {
    free(e);
    free(own);
    return NULL;
  }
  ts_arena_init(&own->arena);
  e->own_ = own;
  e->errmsg = strdup("");
  if (!p)
    return failed(e, TS_ERR_NULL_ARG, "ts_program_explain: %s", "no program");
  e->def = p->def;
  e->name = ts_arena_strdup(&own->arena, p->name ? p->name : "");
  if (p->status != TS_OK)
    return failed(e, p->status, "%s", p->errmsg);
  if (o.arch && !kernel_resources(&(ir_kernel){.block = {1, 1, 1}}, o.arch,
                                  NULL, &own->arena, &(ts_kernel_report){0}))
    return failed(e, TS_ERR_BAD_ARCH, "explain: no occupancy table for %s",
                  o.arch);
  if (o.arch && !explain_runs_on(&p->k, o.arch)) {
    char why[256];
    snprintf(why, sizeof(why), "%s needs sm_%d%s; it does not run on %s",
             e->name, p->k.min_arch, p->k.arch_specific
             ? "a itself (wgmma)" : " or newer (asynchronous copies or "
             "tensor-core instructions)", o.arch);
    return failed(e, TS_ERR_BAD_ARCH, "explain: %s", why);
  }
  e->kernels = calloc((size_t)p->nkernels, sizeof(*e->kernels));
  explain_rows rows = {.arena = &own->arena};
  bool ok = e->kernels != NULL;
  for (int i = 0; ok && i < p->nkernels; i++)
    ok = explain_kernel(e, p, i, &o, &rows);
  free(rows.keys);
  free(rows.pad_wavefronts);
  e->accesses = rows.rows;
  e->naccesses = rows.n;
  e->nkernels = ok ? p->nkernels : 0;
  if (!ok || own->arena.failed)
    return failed(e, TS_ERR_NO_MEMORY, "ts_program_explain: %s",
                  "out of memory");
  return e;
}

void ts_explain_free(ts_explain *e) {
  if (!e)
    return;
  owned *own = e->own_;
  if (own)
    ts_arena_release(&own->arena);
  free(own);
  free(e->kernels);
  free(e->accesses);
  free(e->errmsg);
  free(e);
}
