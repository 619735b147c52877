/*
 * Caches: cache_read and cache_write, their validation and their rewrite.
 *
 * cache_read(A, shared, at ko) finds the part of A that the computation
 * reads in one iteration of ko, by interval analysis of A's indices over
 * the loops inside ko (and, for shared memory, over the thread loops: the
 * block's threads share one copy).  It allocates a buffer of that shape,
 * puts a copy nest at the start of ko's body and makes the computation
 * read the copy:
 *
 *   for ko:
 *     for A.shared.ax0: for A.shared.ax1:
 *       A.shared[ax0, ax1] = A[base0 + ax0, base1 + ax1]   (in bounds)
 *     ... C[i, j] += A.shared[i - base0, k - base1] * ...
 *
 * The copy's loops are ordinary loops a user can split, fuse, reorder,
 * unroll and vectorize.  Barriers, thread distribution and double
 * buffering are lowering's work (src/lower/stages.c).
 *
 * cache_write(C, local, at) only records where C's accumulators live;
 * lowering places them (src/lower/reduction.c).  cache_write(C, shared,
 * at) records C's tile at `at`, the block's, staged in shared memory on
 * its way out and stored by the TMA (ts_tma); lowering sizes and places
 * it (src/lower/lower_tma_store.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/analysis.h"
#include "sched.h"

enum { MAX_LOCAL_ELEMS = 4096 }; /* a register cache beyond this spills */

static const char *scope_word(ts_scope sc) {
  return sc == TS_SHARED ? "shared" : "local";
}

static const char *operand_name(const ir_stmt *compute, int w) {
  const ir_buffer *src = compute->compute.src[w];
  return src ? src->name : w == 0 ? "A" : "B";
}

/* The operand (0: op(A), 1: op(B)) the computation now reads from
 * `buffer`, or -1. */
static int operand_reading(const ir_stmt *compute, const char *buffer) {
  for (int w = 0; w < 2; w++)
    if (strcmp(operand_name(compute, w), buffer) == 0)
      return w;
  return -1;
}

/* op(A)'s (w 0) or op(B)'s dimension d: m x k or k x n, a number or the
 * value taken at launch. */
static ir_expr *operand_extent(ts_sched *s, int w, int d) {
  if (w == 0)
    return sched_value(s, d == 0 ? TS_VALUE_M : TS_VALUE_K);
  return sched_value(s, d == 0 ? TS_VALUE_K : TS_VALUE_N);
}

/* ---- The region ------------------------------------------------------------ */

/* The loop whose body holds the copy of `st`, or NULL. */
static const ts_loop *copy_attach(ts_sched *s, const ts_stage *st) {
  for (int i = 0; i < s->nloops; i++) {
    nest_path p;
    if (!s->loops[i]->live || s->loops[i]->stage != st ||
        !nest_find(s->root, s->loops[i], &p))
      continue;
    for (int d = 2; d < p.depth; d++)
      if (nest_copy_stage(p.node[d]) == st && p.node[d - 2]->kind == S_FOR)
        return p.node[d - 2]->for_.loop;
  }
  return NULL;
}

/* ---- Checks -------------------------------------------------------------------- */

static bool check_common(ts_sched *s, const char *fn, const char *buffer,
                         ts_scope scope, ts_loop *at, ts_stage **stage) {
  if (!buffer) {
    sched_fail(s, TS_ERR_NULL_ARG, NULL, "%s: argument 2 'buffer' is NULL", fn);
    return false;
  }
  if (scope != TS_SHARED && scope != TS_LOCAL) {
    sched_fail(s, TS_ERR_BAD_SCOPE, NULL,
               "%s: argument 3 'scope' must be TS_SHARED or TS_LOCAL (got %d)",
               fn, (int)scope);
    return false;
  }
  if (!sched_check_loop(s, fn, 4, "at", at))
    return false;
  if (!stage) {
    sched_fail(s, TS_ERR_NULL_ARG, NULL, "%s: argument 5 'stage' is NULL", fn);
    return false;
  }
  if (s->nstages == SCHED_MAX_STAGES) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL, "%s: a schedule has at most %d caches",
               fn, SCHED_MAX_STAGES);
    return false;
  }
  return true;
}

/* The path to the computation, with `at` on it at *at_index. */
static bool attach_path(ts_sched *s, const char *fn, const ts_loop *at,
                        nest_path *path, int *at_index) {
  if (!nest_find_compute(s->root, path)) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL, "%s: the nest has no computation", fn);
    return false;
  }
  *at_index = nest_path_index(path, at);
  if (*at_index < 0) {
    sched_fail(s, TS_ERR_BAD_ATTACH, at,
               "%s: loop \"%s\" does not enclose the computation; attach "
               "caches at a loop of the i/j/k nest", fn, at->name);
    return false;
  }
  return true;
}

/* Where `name` is what ts_cache_read(s, SOURCE, SCOPE, ...) names its
 * cache ("A.shared", "A.shared.local", "B.local2"), the call that makes
 * it, into b. */
static void say_maker(ts_buf *b, const char *name) {
  const char *const scopes[2] = {"shared", "local"};
  const char *dot = strrchr(name, '.');
  if (!dot || dot == name)
    return;
  for (int sc = 0; sc < 2; sc++) {
    size_t len = strlen(scopes[sc]);
    if (strncmp(dot + 1, scopes[sc], len) != 0 ||
        strspn(dot + 1 + len, "0123456789") != strlen(dot + 1 + len))
      continue;
    int source = (int)(dot - name);
    if (source == 1 && name[0] == 'C')
      return; /* C's cache is ts_cache_write's, and not read */
    ts_buf_printf(b, " yet; ts_cache_read(s, \"%.*s\", %s, ...) makes it: "
                  "call that first", source, name,
                  sc == 0 ? "TS_SHARED" : "TS_LOCAL");
    return;
  }
}

/* No buffer of that name: the call that would make it, the nearest of the
 * buffers there are, and the list. */
static void fail_unknown_source(ts_sched *s, const char *buffer) {
  const char *names[2 + SCHED_MAX_STAGES];
  int n = sched_buffer_names(s, names, 2 + SCHED_MAX_STAGES);
  ts_buf b;
  ts_buf_init(&b);
  say_maker(&b, buffer);
  sched_list_names(&b, buffer, names, n, "buffers");
  char *why = ts_buf_take(&b);
  if (!why) {
    sched_oom(s, "ts_cache_read");
    return;
  }
  sched_fail(s, TS_ERR_UNKNOWN_BUFFER, NULL,
             "ts_cache_read: argument 2 'buffer': no buffer named \"%s\"%s",
             buffer, why);
  free(why);
}

static bool check_source(ts_sched *s, const char *buffer, const ir_stmt *c,
                         int *operand) {
  *operand = operand_reading(c, buffer);
  if (*operand >= 0)
    return true;
  if (strcmp(buffer, "C") == 0) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "ts_cache_read: C is written, not read; use ts_cache_write");
    return false;
  }
  for (int w = 0; w < 2; w++) {
    const char *input = w == 0 ? "A" : "B";
    const ts_stage *st = sched_find_stage(s, buffer);
    if (strcmp(buffer, input) == 0 || (st && st->operand == w && !st->write)) {
      sched_fail(s, TS_ERR_BAD_ARG, NULL,
                 "ts_cache_read: the computation reads %s through \"%s\"; "
                 "cache \"%s\" instead", input, operand_name(c, w),
                 operand_name(c, w));
      return false;
    }
  }
  fail_unknown_source(s, buffer);
  return false;
}

/* A shared copy is made by the block's threads together, so it lies inside
 * every thread loop; a cache of a cache lies where its source is filled. */
/* A cache lives inside the launch loops: a register copy belongs to one
 * thread, a shared copy to one block, filled by its threads together. */
static bool check_inside_launch(ts_sched *s, const char *fn, const nest_path *p,
                                int at_index, ts_scope scope) {
  const ts_loop *at = p->node[at_index]->for_.loop;
  for (int d = at_index + 1; d < p->depth; d++) {
    const ts_loop *l = p->node[d]->kind == S_FOR ? p->node[d]->for_.loop : NULL;
    if (l && ir_kind_is_launch(l->kind)) {
      sched_fail(s, TS_ERR_BAD_ATTACH, at,
                 "%s: loop \"%s\" lies outside %s loop \"%s\"; a %s is "
                 "attached inside the loops bound to blockIdx and threadIdx, "
                 "%s", fn, at->name,
                 ir_kind_is_thread(l->kind) ? "thread" : "block", l->name,
                 scope == TS_SHARED ? "shared copy" : "register cache",
                 scope == TS_SHARED
                     ? "where the block's threads fill it together"
                     : "since each thread has its own registers");
      return false;
    }
  }
  return true;
}

static bool check_attach(ts_sched *s, const nest_path *p, int at_index,
                         ts_scope scope, const char *buffer) {
  const ts_loop *at = p->node[at_index]->for_.loop;
  if (!check_inside_launch(s, "ts_cache_read", p, at_index, scope))
    return false;
  const ts_stage *src = sched_find_stage(s, buffer);
  if (!src)
    return true;
  if (src->buf->scope != SCOPE_SHARED || scope != TS_LOCAL) {
    sched_fail(s, TS_ERR_CACHE_ORDER, NULL,
               "ts_cache_read: \"%s\" is in %s memory; caches copy toward "
               "the registers (global -> shared -> local), so a cache of a "
               "cache is a register cache of a shared one", buffer,
               src->buf->scope == SCOPE_SHARED ? "shared" : "register");
    return false;
  }
  const ts_loop *filled = copy_attach(s, src);
  int fi = filled ? nest_path_index(p, filled) : -1;
  if (fi >= 0 && fi <= at_index)
    return true;
  sched_fail(s, TS_ERR_BAD_ATTACH, at,
             "ts_cache_read: \"%s\" is filled in loop \"%s\"; a cache of "
             "it is attached there or inside", buffer,
             filled ? filled->name : "?");
  return false;
}

/* ---- cache_read ------------------------------------------------------------ */

static const char *stage_name(ts_sched *s, const char *buffer, ts_scope sc) {
  const char *base = ts_arena_printf(&s->arena, "%s.%s", buffer, scope_word(sc));
  const char *name = base;
  for (int n = 2; name && sched_name_taken(s, name); n++)
    name = ts_arena_printf(&s->arena, "%s%d", base, n);
  return name;
}

typedef struct {
  ts_sched *s;
  const nest_path *path;
  int at;              /* path index of the attach loop */
  const ts_stage *src; /* the cache copied */
} skip_ctx;

/* The conjuncts of the computation's predicate that skip the copy of the
 * source: over loops at or outside the attach loop (so they hold across
 * one iteration of it), and guarding the source's copy, which a loop split
 * after the source was made does. */
static ir_expr *source_skipped(const skip_ctx *c, ir_expr *pred) {
  ts_arena *a = &c->s->arena;
  if (!pred)
    return NULL;
  if (pred->kind == E_AND)
    return ir_and(a, source_skipped(c, pred->op.a),
                  source_skipped(c, pred->op.b));
  for (int d = c->at + 1; d < c->path->depth; d++)
    if (c->path->node[d]->kind == S_FOR &&
        ir_expr_uses_var(pred, c->path->node[d]->for_.loop->var))
      return NULL;
  return nest_copy_guarded_by(a, c->s->root, c->src, pred) ? pred : NULL;
}

/* The copy nest: the source's contiguous dimension innermost, each element
 * copied where it lies inside op(A) or op(B) and inside the source, and 0
 * stored elsewhere (so the computation may read the whole region, see
 * src/lower/reduction.c); all of it only where `when` holds. */
static ir_stmt *copy_nest(ts_sched *s, const ts_stage *st, ir_buffer *src,
                          ir_expr *const src_origin[2], ir_expr *const base[2],
                          ir_expr *when) {
  ts_arena *a = &s->arena;
  ir_expr *src_idx[2], *dst_idx[2], *guard = NULL;
  for (int d = 0; d < 2; d++) {
    ir_expr *ax = ir_varref(a, st->axes[d]->var);
    ir_expr *g = ir_add(a, base[d], ax);
    src_idx[d] = src_origin ? ir_sub(a, g, src_origin[d]) : g;
    dst_idx[d] = ax;
    /* A cache of a cache reads only what its source holds: a loop split
     * after the source was made can reach past the source's edge.  Inside
     * it the source has its zeros past op(A) or op(B) already. */
    ir_expr *inside = src_origin ? ir_binary(a, E_LT, src_idx[d],
                                             ir_buffer_dim(a, src, d))
                                 : ir_binary(a, E_LT, g,
                                             operand_extent(s, st->operand,
                                                            d));
    guard = ir_and(a, guard, inside);
  }
  ir_stmt *body = ir_new_store(a, st->buf, dst_idx, ir_load(a, src, src_idx));
  guard = ir_simplify_expr(a, guard);
  if (guard && !ir_is_true(guard))
    body = ir_new_if(a, guard, body,
                     ir_new_store(a, st->buf, dst_idx, ir_float(a, 0.0f)));
  when = ir_simplify_expr(a, when);
  if (when && !ir_is_true(when))
    body = ir_new_if(a, when, body, NULL);
  body = ir_new_for(a, st->axes[st->inner], body);
  return ir_new_for(a, st->axes[1 - st->inner], body);
}

/* The dimension of the source that is contiguous in memory: from the
 * layout for A and B (also when a dimension of 1 makes strides tie), from
 * the storage order for a cache. */
static int contiguous_dim(const ir_buffer *src) {
  if (src->scope != SCOPE_GLOBAL)
    return src->order[1];
  return src->strides[0] == 1 ? 0 : 1; /* the layout's, or ts_pack's */
}

/* at's body with the copy after the copies already there. */
static ir_stmt *insert_copy(ts_arena *a, ir_stmt *for_at, ir_stmt *copy) {
  ir_stmt *body = for_at->for_.body;
  int n = body->kind == S_SEQ ? body->seq.n : 1;
  ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)(n + 1));
  if (!items)
    return NULL;
  ir_stmt *const *old = body->kind == S_SEQ ? body->seq.items : &body;
  int lead = 0;
  while (lead < n && nest_copy_stage(old[lead]))
    lead++;
  for (int i = 0, o = 0; i <= n; i++)
    items[i] = i == lead ? copy : old[o++];
  return ir_new_for(a, for_at->for_.loop, ir_new_seq(a, items, n + 1));
}

/* A shared copy keeps its source's elements (fp16 stays fp16: half the
 * bytes to move and to hold); a register copy holds them widened to the
 * accumulator's type, so each is converted once, when it is copied, not at
 * every multiply-add that reads it. */
static ts_dtype cache_type(const ts_sched *s, const ir_buffer *src,
                           ts_scope scope) {
  return scope == TS_SHARED ? src->dtype : s->def.acc_type;
}

ts_status (ts_cache_read)(ts_sched *s, const char *buffer, ts_scope scope,
                          ts_loop *at, ts_stage **stage) {
  if (stage)
    *stage = NULL;
  CHECK_SCHED(s);
  const char *fn = "ts_cache_read";
  /* Check: a buffer the computation reads, a loop enclosing it where the
   * source is available, a region the analysis can bound that fits. */
  nest_path path;
  int at_index, w;
  if (!check_common(s, fn, buffer, scope, at, stage) ||
      !attach_path(s, fn, at, &path, &at_index))
    return s->status;
  ir_stmt *compute = path.node[path.depth - 1];
  if (!check_source(s, buffer, compute, &w) ||
      !check_attach(s, &path, at_index, scope, buffer))
    return s->status;
  ts_arena *a = &s->arena;
  nest_region rc = {&path, at_index, scope == TS_SHARED};
  ir_expr *base[2];
  int64_t ext[2];
  for (int d = 0; d < 2; d++) {
    const ts_loop *sized = nest_sized_inside(&rc, ir_compute_coord(compute, w,
                                                                   d));
    if (sized)
      return sched_fail(s, TS_ERR_BAD_ATTACH, at, "ts_cache_read: the "
                        "region of %s read inside loop \"%s\" spans loop "
                        "\"%s\", which runs a number of times chosen at "
                        "launch (def->runtime); attach the cache inside it",
                        buffer, at->name, sized->name);
    if (!ir_region(a, ir_compute_coord(compute, w, d), nest_inside_attach, &rc,
                   &base[d], &ext[d]))
      return sched_fail(s, TS_ERR_BAD_ATTACH, at,
                        "ts_cache_read: cannot bound the region of %s read "
                        "inside loop \"%s\"", buffer, at->name);
    base[d] = ir_simplify_expr(a, base[d]);
  }
  ir_buffer *src = compute->compute.src[w] ? compute->compute.src[w]
                                            : (w == 0 ? s->A : s->B);
  ts_dtype type = cache_type(s, src, scope);
  int64_t bytes = ext[0] * ext[1] * ts_dtype_size(type);
  if (scope == TS_SHARED && sched_shared_bytes(s) + bytes > SCHED_SHARED_LIMIT)
    return sched_fail(s, TS_ERR_SHARED_LIMIT, at,
                      "ts_cache_read: a %lld x %lld shared copy of %s at loop "
                      "\"%s\" takes %lld bytes; with the shared caches before "
                      "it, %lld bytes, over the limit of %d",
                      (long long)ext[0], (long long)ext[1], buffer, at->name,
                      (long long)bytes,
                      (long long)(sched_shared_bytes(s) + bytes),
                      SCHED_SHARED_LIMIT);
  if (scope == TS_LOCAL && ext[0] * ext[1] > MAX_LOCAL_ELEMS)
    return sched_fail(s, TS_ERR_BAD_ATTACH, at,
                      "ts_cache_read: a %lld x %lld register copy of %s at "
                      "loop \"%s\" is over the limit of %d elements; attach "
                      "it at an inner loop", (long long)ext[0],
                      (long long)ext[1], buffer, at->name, MAX_LOCAL_ELEMS);

  /* Step 1. The stage, its buffer and its copy loops. */
  ts_stage *st = ts_arena_alloc(a, sizeof(*st));
  if (!st)
    return sched_oom(s, fn);
  *st = (ts_stage){.id = s->nstages, .name = stage_name(s, buffer, scope),
                   .operand = w, .at = at, .owner = s};
  st->src = src;
  st->inner = contiguous_dim(st->src);
  st->buf = ir_new_buffer(a, st->name, scope == TS_SHARED ? SCOPE_SHARED
                                                          : SCOPE_LOCAL,
                          type, 2, ext, NULL);
  ts_loop *made[2];
  for (int d = 0; d < 2; d++) {
    made[d] = sched_new_loop(s, ts_arena_printf(a, "%s.ax%d", st->name, d),
                             ext[d], false, d);
    if (!made[d])
      return sched_oom(s, fn);
    made[d]->stage = st;
    st->axes[d] = made[d];
  }
  /* Step 2. The computation reads the copy. */
  ir_stmt *reads = ir_compute_with_src(a, compute, w, st->buf, base[0], base[1]);
  ir_stmt *root = reads ? nest_replace(a, &path, reads) : NULL;
  /* Step 3. The copy at the start of at's body. */
  ir_expr *const *src_origin = compute->compute.src[w]
                                   ? compute->compute.origin[w] : NULL;
  /* A cache of a cache copies only where the computation runs: where a
   * split's guard skipped its source's copy, the source holds nothing. */
  skip_ctx skip = {s, &path, at_index, sched_find_stage(s, buffer)};
  ir_expr *when = src_origin ? source_skipped(&skip, compute->compute.pred)
                             : NULL;
  ir_stmt *copy = copy_nest(s, st, st->src, src_origin, base, when);
  nest_path ap;
  if (!root || !copy || !nest_find(root, at, &ap))
    return sched_oom(s, fn);
  root = nest_replace(a, &ap, insert_copy(a, ap.node[ap.depth - 1], copy));
  trace_rec rec = {.op = TR_CACHE_READ, .loops = {at->id}, .nloops = 1,
                   .name = ts_arena_strdup(a, buffer), .scope = scope,
                   .stage = st->id};
  ts_status status = sched_commit(s, fn, root, made, 2, &rec);
  if (status != TS_OK)
    return status;
  if (st->buf)
    st->buf->made_by = rec.label;
  s->stages[s->nstages++] = st;
  *stage = st;
  return TS_OK;
}

/* ---- cache_write ----------------------------------------------------------- */

/* C's shared stage is the block's tile: no block loop inside `at`, a
 * region of whole 128-byte rows (the TMA's swizzle), a multiple of 8 and
 * at most 256 of them (one box a panel), that fits shared memory. */
static bool check_block_tile(ts_sched *s, const nest_path *p, int at_index) {
  ts_loop *at = p->node[at_index]->for_.loop;
  for (int d = at_index + 1; d < p->depth; d++) {
    const ts_loop *l = p->node[d]->kind == S_FOR ? p->node[d]->for_.loop : NULL;
    if (l && ir_kind_is_launch(l->kind) && !ir_kind_is_thread(l->kind)) {
      sched_fail(s, TS_ERR_BAD_ATTACH, at, "ts_cache_write: block loop \"%s\" "
                 "lies inside loop \"%s\"; C's shared stage holds the "
                 "block's tile: attach it at the innermost block loop or "
                 "inside", l->name, at->name);
      return false;
    }
  }
  const ir_stmt *compute = p->node[p->depth - 1];
  nest_region rc = {p, at_index, true};
  ir_expr *base;
  int64_t ext[2];
  for (int d = 0; d < 2; d++) {
    const ts_loop *sized = nest_sized_inside(
        &rc, d ? compute->compute.j : compute->compute.i);
    if (sized) {
      sched_fail(s, TS_ERR_BAD_ATTACH, at, "ts_cache_write: C's tile at "
                 "loop \"%s\" spans loop \"%s\", which runs a number of "
                 "times chosen at launch (def->runtime); attach it inside",
                 at->name, sized->name);
      return false;
    }
    if (!ir_region(&s->arena, d ? compute->compute.j : compute->compute.i,
                   nest_inside_attach, &rc, &base, &ext[d])) {
      sched_fail(s, TS_ERR_BAD_ATTACH, at, "ts_cache_write: cannot bound "
                 "the region of C written inside loop \"%s\"", at->name);
      return false;
    }
  }
  int64_t size = ts_dtype_size(s->C->dtype), row = ext[1] * size;
  if (row % 128 || ext[0] % 8 || ext[0] > 256) {
    sched_fail(s, TS_ERR_BAD_ATTACH, at, "ts_cache_write: C's tile at loop "
               "\"%s\" is %lld x %lld elements; its shared stage needs rows "
               "of a multiple of 128 bytes (%lld elements of %lld bytes: the "
               "TMA's swizzle) and 8 to 256 rows, a multiple of 8",
               at->name, (long long)ext[0], (long long)ext[1],
               (long long)(128 / size), (long long)size);
    return false;
  }
  if (ext[0] * row > SCHED_SHARED_LIMIT) {
    sched_fail(s, TS_ERR_SHARED_LIMIT, at, "ts_cache_write: C's %lld x %lld "
               "tile at loop \"%s\" takes %lld bytes of shared memory, over "
               "the limit of %d", (long long)ext[0], (long long)ext[1],
               at->name, (long long)(ext[0] * row), SCHED_SHARED_LIMIT);
    return false;
  }
  return true;
}

ts_status (ts_cache_write)(ts_sched *s, const char *buffer, ts_scope scope,
                           ts_loop *at, ts_stage **stage) {
  if (stage)
    *stage = NULL;
  CHECK_SCHED(s);
  const char *fn = "ts_cache_write";
  /* Check: C, registers, one write cache, a loop enclosing every k loop. */
  nest_path path;
  int at_index;
  if (!check_common(s, fn, buffer, scope, at, stage) ||
      !attach_path(s, fn, at, &path, &at_index))
    return s->status;
  if (strcmp(buffer, "C") != 0)
    return sched_fail(s, sched_buffer_exists(s, buffer) ? TS_ERR_BAD_ARG
                                                        : TS_ERR_UNKNOWN_BUFFER,
                      NULL, "ts_cache_write: argument 2 'buffer' must be "
                      "\"C\", the one buffer the computation writes (got "
                      "\"%s\")", buffer);
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->write && s->stages[i]->shared == (scope == TS_SHARED))
      return sched_fail(s, TS_ERR_STAGE_USED, at,
                        "ts_cache_write: C is already cached in %s memory as "
                        "\"%s\"", scope_word(scope), s->stages[i]->name);
  if (scope == TS_SHARED ? !check_block_tile(s, &path, at_index)
                         : !check_inside_launch(s, fn, &path, at_index,
                                                TS_LOCAL))
    return s->status;
  for (int d = 0; d <= at_index; d++)
    if (path.node[d]->kind == S_FOR && path.node[d]->for_.loop->reduce &&
        !ir_loop_is_split_k(path.node[d]->for_.loop))
      return sched_fail(s, TS_ERR_BAD_ATTACH, at,
                        "ts_cache_write: loop \"%s\" lies inside reduction "
                        "loop \"%s\"; the accumulators must live across the "
                        "whole reduction", at->name,
                        path.node[d]->for_.loop->name);
  /* Step 1. Record the stage; lowering allocates it. */
  ts_arena *a = &s->arena;
  ts_stage *st = ts_arena_alloc(a, sizeof(*st));
  if (!st)
    return sched_oom(s, fn);
  *st = (ts_stage){.id = s->nstages, .write = true, .operand = -1,
                   .shared = scope == TS_SHARED,
                   .name = stage_name(s, "C", scope), .at = at, .owner = s};
  trace_rec rec = {.op = TR_CACHE_WRITE, .loops = {at->id}, .nloops = 1,
                   .name = "C", .scope = scope, .stage = st->id};
  ts_status status = sched_commit(s, fn, s->root, NULL, 0, &rec);
  if (status != TS_OK)
    return status;
  if (st->buf)
    st->buf->made_by = rec.label;
  s->stages[s->nstages++] = st;
  *stage = st;
  return TS_OK;
}
