/*
 * C's shared stage (ts_cache_write(s, "C", TS_SHARED, at, &st) and
 * ts_tma(s, st)), for the reduction pass: the epilogue writes C's tile
 * into shared memory, and one thread stores it with the TMA, a box a
 * 128-byte panel, clipped at C's edges by the tensor map:
 *
 *   barrier                      the block's use of shared memory is over
 *   shared C.shared[bm][bn]      over the pipeline's stages (overlay)
 *     for each panel q:
 *       C.shared[i - i0, j - j0] = alpha * acc + beta * C[i, j]
 *                                  (panel q's elements, in bounds)
 *       barrier                  panel q written, and fenced for the TMA
 *       if the block's first thread:
 *         tma.store C box (panel, bm) at (j0 + q * panel, i0)
 *     if the block's first thread:
 *       tma.store.wait           its reads of C.shared done
 *
 * so that the TMA reads panel q while the threads write the next.  That
 * takes an epilogue whose outermost loop walks the panels in order, a
 * chunk of its iterations each (wgmma's accumulators, 8 columns a
 * register pair), which interval analysis of the stores' columns checks;
 * elsewhere the whole tile is written before every panel's store.
 * Written whole, the stores cost wgws's 128 x 256 fp32 tile 2% of its
 * time on an H200; a panel at a time, within 1.2%, and a 16-bit C's is
 * 1.2-2.0% faster than wgws's at 4096^3 (docs/performance.md).
 *
 * The stage is swizzled in 128-byte rows, as the TMA's 128-byte swizzle
 * reads it, so that the 8 rows a warp's accumulators span at one column
 * fall in different banks.  It lies over the block's other shared
 * buffers (a 128 x 256 fp32 tile is 128 KiB, beside 192 KiB of stages),
 * whose last readers, the wgmma of the last k tile, are done once every
 * consumer has passed the first barrier: so no buffer's scope may enclose
 * the stage's (lower_tma_store_check), and the epilogue must run once a
 * tile, no serial loop between the stage's loop and the accumulators.
 * The barriers are of the consumers alone where a producer warpgroup has
 * left.  A 16-bit stage's chunks are written by stmatrix where they fit
 * (lower_stmatrix.c).
 *
 * In a persistent grid the producer fills the next tile's stages while
 * the consumers write C, so the stage is a ring of two panels of its own
 * beside them (`slots`), allocated around the tile loop by the persistent
 * pass: chunk q writes slot q % 2, the first thread waits for its stores
 * before the barrier after each chunk but the first (panel q - 1's store
 * has read its slot by then) and before the tile's first barrier, and the
 * kernel ends with a last wait (cx->drain).
 */
#include "lower.h"

#include "../base/dtype.h"
#include "../ir/analysis.h"
#include "../ir/visit.h"

const ts_stage *lower_shared_c_stage(const ts_sched *s) {
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->write && s->stages[i]->shared)
      return s->stages[i];
  return NULL;
}

/* What the stage needs that the schedule does not check, since a later
 * primitive can change it: the TMA's store, no split-K, and C's rows
 * 16-byte aligned. */
static bool check_store(lower_ctx *cx, const ts_stage *st) {
  const ts_sched *s = cx->s;
  int64_t size = ts_dtype_size(s->C->dtype);
  if (!st->tma)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\", C's shared "
                      "stage, is stored by the TMA: call ts_tma on it (a "
                      "store by the threads is not built)", st->name);
  if (cx->split_k)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" stores C's "
                      "tile, but with split-K (ts_split_k) each block adds "
                      "a part of it: leave one or the other out", st->name);
  if (s->C->stride_expr[0])
    return lower_rows_aligned(cx, st->name, "stored", s->C, 0);
  const char *ld = lower_ld_field(cx, s->C);
  if (s->C->strides[0] * size % 16 && ld)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is stored by "
                      "the TMA, which needs C's rows 16-byte aligned; "
                      "def->ldc puts them %lld elements of %lld bytes apart: "
                      "give ldc a multiple of %lld, or leave the stage out",
                      st->name, (long long)s->C->strides[0], (long long)size,
                      (long long)(16 / size));
  if (s->C->strides[0] * size % 16)
    return lower_fail(cx, TS_ERR_BAD_ARG, "ts_lower: \"%s\" is stored by "
                      "the TMA, which needs C's rows 16-byte aligned; they "
                      "are %lld elements of %lld bytes: leave the stage out "
                      "for N not a multiple of %lld", st->name,
                      (long long)s->C->strides[0], (long long)size,
                      (long long)(16 / size));
  return true;
}

/* The extent of the block along each thread dimension, as the nest binds
 * it: its thread loops' and the instruction's lanes (threadIdx.x). */
static void block_dims(const nest_path *path, const lower_mma *t,
                       int64_t dims[3]) {
  dims[0] = t->in ? t->lane->extent : 1;
  dims[1] = dims[2] = 1;
  for (int d = 0; d < path->depth; d++) {
    const ir_stmt *s = path->node[d];
    if (s->kind == S_FOR && ir_kind_is_thread(s->for_.loop->kind))
      dims[s->for_.loop->kind - TS_THREAD_X] *= s->for_.loop->extent;
  }
}

/* The epilogue runs once a tile: every loop between the stage's and the
 * accumulators' (which wrap path node `wrap`) is a thread loop, and the
 * stage's lies outside the accumulators'. */
static bool check_once_a_tile(lower_ctx *cx, const nest_path *path, int at,
                              int wrap, const ts_stage *st) {
  if (at >= wrap)
    return lower_fail(cx, TS_ERR_BAD_ATTACH, "ts_lower: \"%s\" is attached "
                      "at loop \"%s\", inside the accumulators' tile; C's "
                      "shared stage holds the block's tile: attach it at "
                      "the innermost block loop", st->name, st->at->name);
  for (int d = at + 1; d < wrap; d++) {
    const ir_stmt *s = path->node[d];
    if (s->kind == S_FOR && !ir_kind_is_thread(s->for_.loop->kind))
      return lower_fail(cx, TS_ERR_BAD_ATTACH, "ts_lower: \"%s\" is "
                        "attached at loop \"%s\", but loop \"%s\" inside "
                        "it repeats the epilogue, which would store the "
                        "stage before all of it is written: attach it "
                        "inside \"%s\", or move \"%s\" out", st->name,
                        st->at->name, s->for_.loop->name,
                        s->for_.loop->name, s->for_.loop->name);
  }
  return true;
}

/* In a persistent grid the stage cannot lie over the pipeline's stages,
 * which the producer fills for the next tile while the consumers write
 * this one's C: it is a ring of two panels of its own beside them (32
 * KiB of a 128-row tile), each panel written while the TMA stores the
 * other. */
static bool check_ring_fits(lower_ctx *cx, const tma_store_plan *p) {
  int64_t stages = sched_shared_bytes(cx->s);
  int64_t end = ir_shared_slot_start(p->buf, stages) +
                ir_buffer_bytes(p->buf);
  if (end <= SCHED_SHARED_LIMIT)
    return true;
  return lower_fail(cx, TS_ERR_SHARED_LIMIT, "ts_lower: \"%s\" in a "
                    "persistent grid is a ring of %lld panels of its own, "
                    "%lld bytes beside the %lld of the shared caches: %lld "
                    "bytes, over the limit of %d; give the pipeline fewer "
                    "stages (ts_pipeline) or the block fewer rows",
                    p->st->name, (long long)p->slots,
                    (long long)ir_buffer_bytes(p->buf), (long long)stages,
                    (long long)end, SCHED_SHARED_LIMIT);
}

bool lower_tma_store_plan(lower_ctx *cx, const nest_path *path, int wrap,
                          const lower_mma *t, tma_store_plan *out) {
  ts_arena *a = cx->arena;
  const ts_sched *s = cx->s;
  *out = (tma_store_plan){.st = lower_shared_c_stage(s)};
  if (!out->st)
    return true;
  if (!check_store(cx, out->st))
    return false;
  /* C's tile of the block: the loops inside the attach loop and the
   * thread loops. */
  nest_region rc = {path, nest_path_index(path, out->st->at), true};
  const ir_stmt *cs = path->node[path->depth - 1];
  int64_t ext[2];
  if (rc.at < 0 ||
      !ir_region(a, cs->compute.i, nest_inside_attach, &rc, &out->origin[0],
                 &ext[0]) ||
      !ir_region(a, cs->compute.j, nest_inside_attach, &rc, &out->origin[1],
                 &ext[1]))
    return lower_fail(cx, TS_ERR_BAD_ATTACH, "ts_lower: \"%s\" is attached "
                      "at loop \"%s\", which no longer encloses the "
                      "computation, or whose tile of C cannot be bounded",
                      out->st->name, out->st->at->name);
  if (!check_once_a_tile(cx, path, rc.at, wrap, out->st))
    return false;
  int64_t size = ts_dtype_size(s->C->dtype);
  if (ext[1] * size % 128 || ext[0] % 8 || ext[0] > 256)
    return lower_fail(cx, TS_ERR_BAD_ATTACH, "ts_lower: C's tile at loop "
                      "\"%s\" is now %lld x %lld elements; \"%s\" needs rows "
                      "of a multiple of 128 bytes and 8 to 256 rows, a "
                      "multiple of 8", out->st->at->name, (long long)ext[0],
                      (long long)ext[1], out->st->name);
  for (int d = 0; d < 2; d++)
    out->origin[d] = ir_simplify_expr(a, out->origin[d]);
  int64_t panels = ext[1] * size / 128;
  out->cols = ext[1];
  out->slots = cx->wave ? (panels < 2 ? panels : 2) : 0;
  int64_t shape[2] = {ext[0], out->slots ? out->slots * 128 / size : ext[1]};
  out->buf = ir_new_buffer(a, out->st->name, SCOPE_SHARED, s->C->dtype, 2,
                           shape, NULL);
  if (!out->buf || !out->origin[0] || !out->origin[1])
    return lower_fail(cx, TS_ERR_NO_MEMORY, "ts_lower: out of memory");
  out->buf->swizzle = 8;
  out->buf->overlay = !out->slots;
  if (out->slots && !check_ring_fits(cx, out))
    return false;
  cx->ring = out->slots ? out->buf : NULL;
  out->C = s->C;
  block_dims(path, t, out->dims);
  out->lane = t->in ? t->lane->var : NULL;
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->producer_warps)
      out->threads = out->dims[0] * out->dims[1] * out->dims[2];
  cx->tma_store = true;
  return true;
}

ir_stmt *lower_tma_store_target(ts_arena *a, const tma_store_plan *p,
                                ir_expr *const c_idx[2], ir_expr *value) {
  ir_expr *idx[2] = {ir_simplify_expr(a, ir_sub(a, c_idx[0], p->origin[0])),
                     ir_simplify_expr(a, ir_sub(a, c_idx[1], p->origin[1]))};
  return idx[0] && idx[1] ? ir_new_store(a, p->buf, idx, value) : NULL;
}

/* `threadIdx.x == 0 && threadIdx.y == 0 && ...`, of the launch indices
 * themselves, over the block's dimensions (the simplifier drops the test
 * of one that is 1; a producer warpgroup, added later, grows the
 * outermost, which is more than 1 then). */
static ir_expr *first_thread(lower_ctx *cx, const int64_t dims[3]) {
  ts_arena *a = cx->arena;
  ir_expr *all = NULL;
  for (int d = 0; d < 3; d++) {
    ts_loop_kind tag = (ts_loop_kind)(TS_THREAD_X + d);
    ir_var *v = ir_new_var(a, cx->next_var++, ir_loop_kind_name(tag),
                           VAR_LAUNCH, dims[d]);
    if (!v)
      return NULL;
    v->tag = tag;
    all = ir_and(a, all, ir_binary(a, E_EQ, ir_varref(a, v), ir_int(a, 0)));
  }
  return all;
}

/* The elements a 128-byte panel of the stage holds along its rows. */
static int64_t panel_width(const tma_store_plan *p) {
  return 128 / ts_dtype_size(p->buf->dtype);
}

/* The 128-byte panels of the tile (the stage holds them all, or a ring
 * of `slots`), and where panel q lies in the stage. */
static int64_t tile_panels(const tma_store_plan *p) {
  return p->cols / panel_width(p);
}

static int64_t panel_slot(const tma_store_plan *p, int64_t q) {
  return p->slots ? q % p->slots : q;
}

/* The TMA's store of panel q of the tile. */
static ir_stmt *store_panel(ts_arena *a, const tma_store_plan *p, int64_t q) {
  int64_t w = panel_width(p), box[2] = {w, p->buf->shape[0]};
  ir_expr *at[2] = {ir_int(a, 0), ir_int(a, panel_slot(p, q) * w)};
  ir_expr *coord[2] = {
      ir_simplify_expr(a, ir_add(a, p->origin[1], ir_int(a, q * w))),
      p->origin[0]};
  return ir_new_tma_store(a, ir_load(a, p->buf, at), p->C, coord, box);
}

/* `if (first thread) s`.  Each `if` has a test of its own: the guards
 * pass merges ifs that share a condition's node into nested ones. */
static ir_stmt *by_the_first(lower_ctx *cx, const tma_store_plan *p,
                             ir_stmt *s) {
  ir_expr *first = first_thread(cx, p->dims);
  return first && s ? ir_new_if(cx->arena, first, s, NULL) : NULL;
}

typedef struct {
  const ir_buffer *stage;
  int64_t lo, hi; /* the columns a chunk may write */
  bool inside;
} column_check;

/* A store into the stage whose column may lie outside the chunk's
 * panel (its index over every value of its variables, a vectorized
 * loop's among them) ends the walk. */
static bool check_column(ir_visitor *v, const ir_stmt *s) {
  column_check *c = v->ctx;
  int64_t lo, hi;
  if (s->kind == S_STORE && s->store.buf == c->stage &&
      (!ir_bounds(s->store.idx[1], &lo, &hi) || lo < c->lo || hi > c->hi)) {
    c->inside = false;
    v->stop = true;
  }
  return true;
}

/* The stores of s as stmatrix where they fit, else s. */
static ir_stmt *as_stmatrix(lower_ctx *cx, const tma_store_plan *p,
                            ir_stmt *s) {
  ir_stmt *m = s ? lower_stmatrix(cx, p, s) : NULL;
  return m ? m : s;
}

typedef struct {
  const ir_buffer *stage;
  int64_t by; /* columns less: panel q's place in the ring */
} to_slot;

static ir_stmt *into_slot(ir_mutator *m, ir_stmt *s) {
  const to_slot *t = m->ctx;
  ir_stmt *n = ir_mutate_stmt_children(m, s);
  if (!n || n->kind != S_STORE || n->store.buf != t->stage)
    return n;
  ir_expr *idx[2] = {n->store.idx[0],
                     ir_simplify_expr(m->a, ir_sub(m->a, n->store.idx[1],
                                                   ir_int(m->a, t->by)))};
  ir_stmt *c = idx[1] ? ir_new_store(m->a, n->store.buf, idx,
                                     n->store.value)
                      : NULL;
  if (!c)
    return NULL;
  ir_expr **moved = c->store.idx;
  c->store = n->store; /* the same store, its column moved */
  c->store.idx = moved;
  return c;
}

/* Chunk q of the epilogue's outermost loop `l` (its iterations q * n ..
 * q * n + n - 1, over a loop of its own), its stores moved to panel q's
 * slot of a ring; NULL where a store of the chunk may write outside
 * panel q. */
static ir_stmt *chunk(lower_ctx *cx, const tma_store_plan *p,
                      const ir_stmt *loop, int64_t n, int64_t q) {
  ts_arena *a = cx->arena;
  const ts_loop *l = loop->for_.loop;
  ts_loop *c = lower_new_loop(cx, l->name, n, l->kind);
  if (!c)
    return NULL;
  c->made_by = l->made_by;
  ir_expr *it = ir_add(a, ir_int(a, q * n), ir_varref(a, c->var));
  ir_stmt *body = ir_subst_stmt(a, loop->for_.body, l->var, it);
  ir_stmt *out = body ? ir_new_for(a, c, body) : NULL;
  int64_t w = panel_width(p), slot = panel_slot(p, q);
  if (out && slot != q) {
    ir_mutator m = {.a = a, .stmt = into_slot,
                    .ctx = &(to_slot){p->buf, (q - slot) * w}};
    out = ir_mutate_stmt(&m, out);
  }
  column_check cc = {.stage = p->buf, .lo = slot * w,
                     .hi = slot * w + w - 1, .inside = true};
  ir_visitor v = {.stmt = check_column, .ctx = &cc};
  if (out)
    ir_visit_stmt(&v, out);
  return cc.inside ? as_stmatrix(cx, p, out) : NULL;
}

/* The epilogue a panel at a time, where its outermost loop walks the
 * panels in order (wgmma's accumulator registers: 8 columns a pair):
 * panel q's writes, a barrier, its store by the first thread while the
 * threads write the next, so the TMA's reads overlap the writes; the
 * wait at the end.  In a ring, panel q + 1's slot is panel q - 1's, whose
 * store the first thread waits for before the barrier after panel q's
 * writes (the store had those writes' time), and no wait ends the tile:
 * the next tile's epilogue begins with one, and the kernel ends with
 * cx->drain.  NULL where the loop does not split so. */
static ir_stmt *by_panels(lower_ctx *cx, const tma_store_plan *p,
                          ir_stmt *epilogue) {
  ts_arena *a = cx->arena;
  int64_t panels = tile_panels(p);
  if (epilogue->kind != S_FOR || panels < 2 ||
      epilogue->for_.loop->extent % panels)
    return NULL;
  int64_t n = epilogue->for_.loop->extent / panels;
  ir_stmt **items = ts_arena_alloc(a, sizeof(*items) *
                                          (size_t)(4 * panels + 1));
  int k = 0;
  for (int64_t q = 0; items && q < panels; q++) {
    if (!(items[k++] = chunk(cx, p, epilogue, n, q)))
      return NULL;
    if (p->slots && q > 0 &&
        !(items[k++] = by_the_first(cx, p, ir_new_tma_store_wait(a))))
      return NULL;
    if (!(items[k++] = ir_new_named_barrier(a, p->threads)) ||
        !(items[k++] = by_the_first(cx, p, store_panel(a, p, q))))
      return NULL;
  }
  if (items && !p->slots &&
      !(items[k++] = by_the_first(cx, p, ir_new_tma_store_wait(a))))
    return NULL;
  return items ? ir_new_seq(a, items, k) : NULL;
}

/* The whole tile written, a barrier, then every panel's store. */
static ir_stmt *whole_tile(lower_ctx *cx, const tma_store_plan *p,
                           ir_stmt *epilogue) {
  ts_arena *a = cx->arena;
  int64_t panels = tile_panels(p);
  ir_stmt **issue = ts_arena_alloc(a, sizeof(*issue) * (size_t)(panels + 1));
  for (int64_t q = 0; issue && q < panels; q++)
    issue[q] = store_panel(a, p, q);
  if (!issue)
    return NULL;
  issue[panels] = ir_new_tma_store_wait(a);
  ir_stmt *items[3] = {as_stmatrix(cx, p, epilogue),
                       ir_new_named_barrier(a, p->threads),
                       by_the_first(cx, p,
                                    ir_new_seq(a, issue, (int)panels + 1))};
  return items[1] && items[2] ? ir_new_seq(a, items, 3) : NULL;
}

/* A ring holds two panels: the tile goes a panel at a time, or, of no
 * more panels than the ring holds, whole. */
static ir_stmt *into_the_ring(lower_ctx *cx, const tma_store_plan *p,
                              ir_stmt *epilogue) {
  ir_stmt *written = tile_panels(p) <= p->slots
                         ? whole_tile(cx, p, epilogue)
                         : by_panels(cx, p, epilogue);
  cx->drain = by_the_first(cx, p, ir_new_tma_store_wait(cx->arena));
  if (!written && cx->status == TS_OK && !cx->arena->failed)
    lower_fail(cx, TS_ERR_BAD_ATTACH, "ts_lower: \"%s\" in a persistent "
               "grid holds two of the tile's %lld panels, so the epilogue "
               "must write it a panel at a time, its outermost loop walking "
               "the panels in order; this nest's does not (tensorize with "
               "C's columns innermost, or leave ts_persistent out)",
               p->st->name, (long long)tile_panels(p));
  return cx->drain ? written : NULL;
}

/* The tile's epilogue: its scope's barrier, the stage's allocation (in
 * a ring, after the issuing thread's wait for the last tile's stores;
 * the persistent pass moves the allocation out of the tile loop) and
 * the writes and stores. */
ir_stmt *lower_tma_store_epilogue(lower_ctx *cx, const tma_store_plan *p,
                                  ir_stmt *epilogue) {
  ts_arena *a = cx->arena;
  ir_stmt *written = p->slots ? into_the_ring(cx, p, epilogue)
                              : by_panels(cx, p, epilogue);
  if (!written && !p->slots)
    written = whole_tile(cx, p, epilogue);
  ir_stmt *all[3] = {p->slots ? by_the_first(cx, p, ir_new_tma_store_wait(a))
                              : NULL,
                     ir_new_named_barrier(a, p->threads),
                     written ? ir_new_alloc(a, p->buf, written) : NULL};
  if (!all[1] || !all[2] || (p->slots && !all[0]))
    return NULL;
  return p->slots ? ir_new_seq(a, all, 3) : ir_new_seq(a, all + 1, 2);
}

typedef struct {
  lower_ctx *cx;
  const ir_buffer *open[16]; /* shared buffers whose scopes enclose */
  int nopen;
  bool ok;
} scope_walk;

static bool enter_alloc(ir_visitor *v, const ir_stmt *s) {
  scope_walk *w = v->ctx;
  if (s->kind != S_ALLOC || s->alloc.buf->scope != SCOPE_SHARED)
    return true;
  const ir_buffer *b = s->alloc.buf;
  if (b->overlay && w->nopen) {
    w->ok = lower_fail(w->cx, TS_ERR_BAD_ATTACH, "ts_lower: \"%s\" would "
                       "lie over shared \"%s\", whose scope encloses it and "
                       "which is read again after it: attach C's stage "
                       "where \"%s\" is no longer live", b->name,
                       w->open[w->nopen - 1]->name,
                       w->open[w->nopen - 1]->name);
    v->stop = true;
  } else if (w->nopen < 16) {
    w->open[w->nopen++] = b;
  }
  return true;
}

static void leave_alloc(ir_visitor *v, const ir_stmt *s) {
  scope_walk *w = v->ctx;
  if (s->kind == S_ALLOC && s->alloc.buf->scope == SCOPE_SHARED &&
      !s->alloc.buf->overlay && w->nopen)
    w->nopen--;
}

bool lower_tma_store_check(lower_ctx *cx, const ir_stmt *root) {
  scope_walk w = {.cx = cx, .ok = true};
  ir_visitor v = {.stmt = enter_alloc, .stmt_post = leave_alloc, .ctx = &w};
  ir_visit_stmt(&v, root);
  return w.ok;
}
