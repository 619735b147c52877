/*
 * The lowering pipeline, one straight list of passes:
 *
 *   reduction   place the accumulator, its initialization and the
 *               alpha/beta epilogue around the k loops
 *   stages      spread shared copies over the threads, add barriers,
 *               build double-buffered pipelines, allocate caches
 *   simplify    fold constants and cancel terms, drop guards proven true
 *   guards      hoist each guard out of the loops it does not depend on
 *   partition   split each partitioned loop into a steady part, where its
 *               guards are proven, and a tail
 *   vectors     mark the accesses of vectorized loops that are contiguous
 *               and aligned
 *   lanes       expand each vectorized loop into its lanes: vector
 *               temporaries, per-lane statements, vector stores
 *   async       make the stores into pipelined caches cp.async copies
 *   wgmma       fence, commit and wait around each batch of wgmma
 *   swizzle     give swizzled block loops their index expressions
 *   persistent  wrap the kernel in a persistent grid's tile loop, the
 *               block loops' indices derived from the tile
 *   launch      read grid and block dimensions off the bound loops
 *   verify      check the result is well formed
 *   adopt       copy the kernel into the program's own arena
 *
 * The passes read the schedule and build in a scratch arena; the program
 * that comes out shares nothing with the schedule, which lowering never
 * changes.  TESSEL_DUMP=after-<pass> prints the IR after that pass to
 * stderr, vectorized loops as the lanes that run.
 */
#include "lower.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/analysis.h"
#include "../ir/printer.h"

static void dump(const char *pass, const ir_stmt *s) {
  const char *want = getenv("TESSEL_DUMP");
  if (!s || !want || strncmp(want, "after-", 6) != 0 ||
      strcmp(want + 6, pass) != 0)
    return;
  ts_buf b;
  ts_buf_init(&b);
  ir_print_stmt_lanes(&b, s, 0);
  char *text = ts_buf_take(&b);
  fprintf(stderr, "// after %s\n%s", pass, text ? text : "(out of memory)\n");
  free(text);
}

bool lower_fail(lower_ctx *cx, ts_status code, const char *fmt, ...) {
  if (cx->status == TS_OK) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cx->errmsg, sizeof(cx->errmsg), fmt, ap);
    va_end(ap);
    cx->status = code;
  }
  return false;
}

const char *lower_ld_field(const lower_ctx *cx, const ir_buffer *b) {
  const ts_gemm *g = &cx->s->def;
  if (b == cx->s->C && g->ldc)
    return "ldc";
  if (b->workspace_view || b->scope != SCOPE_GLOBAL)
    return NULL;
  if (b == cx->s->input[0] && g->lda)
    return "lda";
  if (b == cx->s->input[1] && g->ldb)
    return "ldb";
  return NULL;
}

ts_loop *lower_new_loop(lower_ctx *cx, const char *name, int64_t extent,
                        ts_loop_kind kind) {
  ts_loop *l = ir_new_loop(cx->arena, cx->next_var++, name, extent, false, cx);
  if (l) {
    l->kind = kind;
    l->live = false;
  }
  return l;
}

/* The entry point: "tessel_" and the schedule's name, as a C identifier. */
static const char *entry_name(ts_arena *a, const char *name) {
  char *e = ts_arena_printf(a, "tessel_%s", name);
  for (char *p = e ? e + 7 : NULL; p && *p; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_';
    *p = ok ? c : '_';
  }
  return e;
}

/* Extents chosen at launch reach the loops, guards, strides, grid and
 * tensor maps of the kernels; ts_pack's workspace and split-K's, and a
 * cluster's pairs of tiles, are still laid out for the compiled extents,
 * so a schedule with any of them is refused rather than run past its
 * edges. */
static bool check_runtime(lower_ctx *cx) {
  const ts_sched *s = cx->s;
  if (!s->def.runtime)
    return true;
  if (s->cluster.blocks)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: ts_cluster pairs the "
                      "tiles and releases the stages of a grid compiled "
                      "in; extents chosen at launch (def->runtime) do not "
                      "reach them yet: leave ts_cluster out, or compile "
                      "this schedule's extents in");
  if (cx->split_k)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: split-K (loop \"%s\") "
                      "sums its parts in a workspace, or scales C in a "
                      "kernel, sized for the compiled extents; extents "
                      "chosen at launch (def->runtime) do not reach them "
                      "yet: compile this schedule's extents in",
                      cx->split_k->name);
  for (int w = 0; w < 2; w++)
    if (lower_packed(s, w))
      return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: op(%c) is packed "
                        "(ts_pack) into a workspace laid out for the "
                        "compiled extents; extents chosen at launch "
                        "(def->runtime) do not reach it yet: compile this "
                        "schedule's extents in", "AB"[w]);
  return true;
}

/* The passes, in a scratch arena; the kernel, or NULL with cx's error. */
static bool run_passes(lower_ctx *cx, ir_kernel *k) {
  ts_arena *a = cx->arena;
  const ts_sched *s = cx->s;
  ir_stmt *body = lower_reduction(cx, s->root);
  dump("reduction", body);
  body = body ? lower_stages(cx, body) : NULL;
  dump("stages", body);
  if (!body || (cx->tma_store && !lower_tma_store_check(cx, body)))
    return false; /* the pass recorded why */
  body = ir_simplify_stmt(a, body);
  dump("simplify", body);
  body = body ? lower_guards(a, body) : NULL;
  dump("guards", body);
  body = body ? lower_partition(cx, body) : NULL;
  dump("partition", body);
  body = body ? lower_vectors(a, body) : NULL;
  dump("vectors", body);
  body = body ? lower_lanes(a, body) : NULL;
  dump("lanes", body);
  int min_arch = 0;
  body = body ? lower_async(a, body, &min_arch) : NULL;
  dump("async", body);
  if (!body || a->failed)
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  if (cx->mma && min_arch < 80)
    min_arch = 80; /* mma.sync with these shapes and types */
  if (cx->wgmma || cx->tma_store)
    min_arch = 90; /* wgmma: sm_90a, which NVRTC is asked for; the TMA */
  body = lower_wgmma_batches(cx, body);
  dump("wgmma", body);
  if (!body)
    return false; /* the pass recorded why */
  body = lower_swizzle(cx, body);
  dump("swizzle", body);
  if (!body)
    return false; /* the pass recorded why */
  body = lower_persistent(cx, body);
  dump("persistent", body);
  if (!body)
    return false; /* the pass recorded why */
  *k = (ir_kernel){.body = body, .A = s->input[0], .B = s->input[1],
                   .C = s->C, .W = cx->W, .min_blocks = s->min_blocks,
                   .min_arch = min_arch, .arch_specific = cx->wgmma,
                   .tma_store = cx->tma_store};
  for (int w = 0; w < 2; w++)
    k->packed[w] = lower_packed(s, w);
  lower_launch_dims(body, k);
  lower_persistent_launch(cx, k);
  if (cx->producer_threads && !lower_add_producer(cx, k))
    return false;
  k->nvars = cx->next_var;
  int64_t threads = k->block[0] * k->block[1] * k->block[2];
  if (k->min_blocks * threads > SCHED_MAX_THREADS_PER_SM)
    return lower_fail(cx, TS_ERR_RESOURCES,
                      "ts_lower: ts_min_blocks_per_sm asks for %d blocks of "
                      "%lld threads on one multiprocessor, %lld threads; it "
                      "holds at most %d", k->min_blocks, (long long)threads,
                      (long long)(k->min_blocks * threads),
                      SCHED_MAX_THREADS_PER_SM);
  const char *bad = lower_verify(a, k);
  if (bad)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: malformed kernel: %s",
                      bad);
  return true;
}

/* Split-K's second kernel, beside the schedule's: built, verified, and
 * named after the entry point with what it does. */
static bool run_aux(lower_ctx *cx, ts_program *p, ir_kernel *aux) {
  if (!lower_split_k_aux(cx, aux))
    return false;
  const char *bad = lower_verify(cx->arena, aux);
  if (bad)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: malformed split-K "
                      "kernel: %s", bad);
  aux->nvars = cx->next_var;
  aux->entry = ts_arena_printf(&p->arena, "%s_%s", p->entry,
                               cx->W ? "reduce" : "scale");
  return aux->entry || lower_fail(cx, TS_ERR_NO_MEMORY,
                                  "ts_lower: out of memory");
}

/* ts_pack's kernel of operand w, verified, named "<entry>_pack_a" or
 * "_pack_b", and adopted into p. */
static bool run_pack(lower_ctx *cx, ts_program *p, int w) {
  ir_kernel k;
  if (!lower_pack_kernel(cx, w, &k))
    return false;
  const char *bad = lower_verify(cx->arena, &k);
  if (bad)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: malformed packing "
                      "kernel: %s", bad);
  k.nvars = cx->next_var;
  k.entry = ts_arena_printf(&p->arena, "%s_pack_%c", p->entry, "ab"[w]);
  if (!k.entry || !lower_adopt_pack(p, w, &k))
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  return true;
}

/* Bytes rounded up to the 256 a workspace view starts at. */
static int64_t view_aligned(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/* The workspace: split-K's partial sums, then each packed operand; every
 * kernel's copy of a view learns its offset. */
static void lay_out_workspace(ts_program *p, const lower_ctx *cx) {
  int64_t at = cx->W ? ir_buffer_bytes(cx->W) : 0;
  for (int w = 0; w < 2; w++) {
    if (!p->pack[w].body)
      continue;
    at = view_aligned(at);
    ir_kernel *ks[3] = {&p->k, &p->aux, &p->pack[w]};
    for (int i = 0; i < 3; i++)
      if (ks[i]->packed[w])
        ks[i]->packed[w]->workspace_offset = at;
    at += ir_buffer_bytes(p->pack[w].packed[w]);
  }
  p->workspace = at;
}

/* The kernels in launch order: the packing kernels, then the schedule's
 * with split-K's second before or after it; each one's parameters. */
static bool launch_order(ts_program *p, const lower_ctx *cx) {
  p->k.entry = p->entry;
  ir_kernel *order[4];
  int n = 0;
  for (int w = 0; w < 2; w++)
    if (p->pack[w].body)
      order[n++] = &p->pack[w];
  bool aux = lower_split_k_has_aux(cx), first = lower_split_k_aux_first(cx);
  if (aux && first)
    order[n++] = &p->aux;
  order[n++] = &p->k;
  if (aux && !first)
    order[n++] = &p->aux;
  lay_out_workspace(p, cx);
  p->order = ts_arena_alloc(&p->arena, (size_t)n * sizeof(*p->order));
  if (!p->order)
    return false;
  for (int i = 0; i < n; i++) {
    ts_param_values_of(&p->def, order[i]->values);
    if (!ir_kernel_set_params(&p->arena, order[i]))
      return false;
    p->order[i] = order[i];
  }
  p->nkernels = n;
  return true;
}

static ts_program nomem_program = {
    .status = TS_ERR_NO_MEMORY, .errmsg = (char *)"ts_lower: out of memory",
    .name = "", .entry = ""};

static ts_program *program_fail(ts_program *p, ts_status code,
                                const char *msg) {
  free(p->errmsg);
  p->errmsg = strdup(msg);
  p->status = code;
  if (!p->errmsg) {
    ts_program_free(p);
    return &nomem_program;
  }
  return p;
}

ts_program *ts_lower(const ts_sched *s) {
  ts_program *p = calloc(1, sizeof(*p));
  if (!p)
    return &nomem_program;
  ts_arena_init(&p->arena);
  p->name = p->entry = "";
  if (!s)
    return program_fail(p, TS_ERR_NULL_ARG,
                        "ts_lower: argument 1 's' is NULL");
  p->def = s->def; /* a failed program still says what it was to compute */
  if (s->status != TS_OK) { /* its message whole, however long */
    const char *why = s->errmsg ? s->errmsg : "";
    size_t n = strlen(why) + 64;
    char *msg = malloc(n);
    if (!msg)
      return program_fail(p, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
    snprintf(msg, n, "ts_lower: the schedule is in error: %s", why);
    p = program_fail(p, s->status, msg);
    free(msg);
    return p;
  }
  p->name = ts_arena_strdup(&p->arena, s->name);
  p->entry = p->name ? entry_name(&p->arena, s->name) : NULL;
  if (!p->name || !p->entry)
    return program_fail(p, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  ts_arena scratch;
  ts_arena_init(&scratch);
  lower_ctx cx = {.s = s, .arena = &scratch, .next_var = s->nloops,
                  .split_k = lower_split_k_loop(s)};
  if (check_runtime(&cx)) /* else cx holds why */
    lower_cluster_plan(&cx);
  if (cx.split_k && s->split_k == TS_SPLIT_K_WORKSPACE &&
      !(cx.W = lower_workspace(&cx)))
    lower_fail(&cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  ir_kernel k, aux;
  bool has_aux = lower_split_k_has_aux(&cx);
  if (cx.status == TS_OK && run_passes(&cx, &k) &&
      (!has_aux || run_aux(&cx, p, &aux)) &&
      (!lower_packed(s, 0) || run_pack(&cx, p, 0)) &&
      (!lower_packed(s, 1) || run_pack(&cx, p, 1))) {
    if (!lower_adopt(p, &k) || (has_aux && !lower_adopt_aux(p, &aux)) ||
        !launch_order(p, &cx))
      lower_fail(&cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  }
  ts_arena_release(&scratch);
  if (cx.status != TS_OK)
    return program_fail(p, cx.status, cx.errmsg);
  /* The buffers go dynamic where they and the static barriers beside them
   * pass what a kernel may declare statically. */
  p->dynamic_shared =
      p->k.shared_bytes + p->k.barrier_bytes > SCHED_STATIC_SHARED ||
              p->k.tma_store /* its stage lies over the other buffers */
          ? p->k.shared_bytes
          : 0;
  return program_fail(p, TS_OK, "");
}

void ts_program_free(ts_program *p) {
  if (!p || p == &nomem_program)
    return;
  ts_arena_release(&p->arena);
  free(p->errmsg);
  free(p);
}
