/*
 * TMA pipelines (ts_tma), for the stages pass (stages.c): shared caches in
 * S stages filled by the Tensor Memory Accelerator, one thread the
 * producer, a full and an empty mbarrier a stage in place of the block's
 * barriers; with ts_warp_specialize the producer is a warpgroup of its
 * own, and in a persistent grid (ts_persistent) the pipeline runs on
 * across the block's tiles (tma_across_tiles).
 */
#include "stages.h"

/* The expression `tid == 0` or `tid % 32 == 0`. */
static ir_expr *is_thread(ts_arena *a, ir_expr *tid, int64_t every) {
  ir_expr *x = every > 1 ? ir_binary(a, E_MOD, tid, ir_int(a, every)) : tid;
  return ir_binary(a, E_EQ, x, ir_int(a, 0));
}

/* The block's linear thread index from threadIdx itself, over the block
 * as warp specialization grows it: `producer_threads` more along the
 * outermost thread dimension in use (recorded for lower_add_producer),
 * or with ping-pong consumers (`teams`), along threadIdx.z, teams of the
 * block's threads and then the producer's.  The role tests read it, so
 * the simplifier, which bounds the consumers' thread variables by their
 * loops, cannot fold them. */
static ir_expr *block_thread(walker *w, int producer_threads, int teams) {
  lower_ctx *cx = w->cx;
  ts_arena *a = cx->arena;
  int outer = 0;
  int64_t inner = 1;
  for (int d = 0; d < 3; d++)
    if (w->threads[d])
      outer = d;
  if (teams)
    outer = 2;
  for (int d = 0; d < outer; d++)
    inner *= w->threads[d] ? w->threads[d]->extent : 1;
  if (producer_threads % inner) {
    stages_fail(
        w, TS_ERR_BAD_ARG, "ts_lower: ts_warp_specialize adds %d producer "
        "threads along the block's outermost thread dimension, whose "
        "slices hold %lld threads; bind the consumers so that they divide "
        "it", producer_threads, (long long)inner);
    return NULL;
  }
  cx->producer_dim = outer;
  ir_expr *tid = ir_int(a, 0);
  for (int d = outer; d >= 0; d--) {
    const ts_loop *l = w->threads[d];
    int64_t extent = (l ? l->extent : 1) * (d == 2 && teams ? teams : 1) +
                     (d == outer ? producer_threads / inner : 0);
    ir_var *v = ir_new_var(a, cx->next_var++, ir_loop_kind_name(
                               (ts_loop_kind)(TS_THREAD_X + d)), VAR_LAUNCH,
                           extent);
    if (!v)
      return NULL;
    v->tag = (ts_loop_kind)(TS_THREAD_X + d);
    tid = ir_add(a, ir_mul(a, tid, ir_int(a, extent)), ir_varref(a, v));
    if (d == 2 && teams)
      cx->turn_test = ir_binary(
          a, E_EQ, ir_varref(a, v),
          ir_binary(a, E_MOD, ir_varref(a, cx->wave->var), ir_int(a, teams)));
  }
  return tid;
}

/* Whether ping-pong consumers fit the pipeline at loop f: a persistent
 * grid's tiles to take in turn, a block of one warpgroup (a team) with
 * threadIdx.z free for the teams, no cluster, and C not stored by the
 * TMA (a team's epilogue would write the stage another's is storing). */
static bool pingpong_fits(walker *w, const ts_loop *f, int64_t threads) {
  const lower_ctx *cx = w->cx;
  const char *why = NULL;
  bool tma_store = false;
  for (int i = 0; i < cx->s->nstages; i++)
    tma_store |= cx->s->stages[i]->write && cx->s->stages[i]->tma;
  if (!cx->tiles.blocks_per_sm)
    why = "take the tiles of a persistent grid in turn: call ts_persistent";
  else if (cx->cluster)
    why = "are not built for clusters (ts_cluster): drop one of the two";
  else if (threads != 128 || w->threads[2])
    why = "are two teams of one warpgroup, 128 threads on threadIdx.x and "
          "threadIdx.y, threadIdx.z left free: split the block so that one "
          "warpgroup computes its tile (64 rows a wgmma)";
  else if (tma_store)
    why = "each write a tile's C while the other runs; through C's shared "
          "stage and the TMA the two would write one stage: store C from "
          "the registers (no ts_cache_write(C, TS_SHARED) and ts_tma)";
  if (!why)
    return true;
  stages_fail(w, TS_ERR_BAD_ARG, "ts_lower: the ping-pong consumers "
              "(ts_pingpong) of the TMA pipeline at loop \"%s\" (a block "
              "of %lld threads) %s", f->name, (long long)threads, why);
  return false;
}

/* The producer's fill of tile `tile` into stage `stage`: the full
 * barrier's expected bytes, then every cache's boxes. */
static ir_stmt *tma_fill(lower_ctx *cx, const ir_pipeline *p,
                         const ts_loop *f, const attach *at,
                         const tma_tile *tiles, ir_buffer *const *staged,
                         ir_expr *tile, ir_expr *stage) {
  ts_arena *a = cx->arena;
  ir_stmt *items[MAX_ITEMS + 1];
  int n = 0;
  items[n++] = ir_new_mbarrier(a, p, MBAR_EXPECT_TX, MBAR_FULL, stage, NULL);
  for (int i = 0; i < at->n; i++) {
    if (!staged[i])
      continue;
    items[n] = lower_tma_issue(a, p, &tiles[i], staged[i], f, tile, stage);
    /* A cluster's shared tile: one block's turn, into both. */
    if (p->cluster > 1 && at->stages[i]->multicast)
      items[n] = lower_cluster_multicast(cx, items[n], tile);
    n++;
  }
  return ir_new_seq(a, items, n);
}

/* A consumer warp's release of a stage: in a cluster, in every block,
 * whose producers may all write it. */
static ir_stmt *tma_release(ts_arena *a, const ir_pipeline *p,
                            ir_expr *stage) {
  ir_stmt *s = ir_new_mbarrier(a, p, MBAR_ARRIVE, MBAR_EMPTY, stage, NULL);
  if (s)
    s->pipe.multicast = p->cluster > 1;
  return s;
}

/* A stage's wait for the phase of tile `tile`: parity (tile / S) % 2. */
static ir_stmt *tma_wait(ts_arena *a, const ir_pipeline *p, ir_mbar_which bar,
                         ir_expr *tile) {
  ir_expr *S = ir_int(a, p->stages);
  return ir_new_mbarrier(a, p, MBAR_WAIT, bar, ir_binary(a, E_MOD, tile, S),
                         ir_binary(a, E_MOD, ir_binary(a, E_DIV, tile, S),
                                   ir_int(a, 2)));
}

/* A warp-specialized pipeline's threads: the block's (tid), its roles'
 * (role_tid, with the producer's), the consumers', and the wgmma batches
 * in flight. */
typedef struct {
  ir_expr *tid, *role_tid;
  int64_t consumers;
  int lag;
} tma_roles;

/* The pipeline's g-th fill, of k tile `tile`: once the consumers released
 * the stage's fill before it (the phase before g / S of empty[g % S]; for
 * the first S fills the phase before a barrier's first, which has
 * passed), the fill. */
static ir_stmt *tma_refill(lower_ctx *cx, const ir_pipeline *p,
                           const ts_loop *f, const attach *at,
                           const tma_tile *tiles, ir_buffer *const *staged,
                           ir_expr *tile, ir_expr *g) {
  ts_arena *a = cx->arena;
  ir_expr *S = ir_int(a, p->stages), *two = ir_int(a, 2);
  ir_expr *stage = ir_binary(a, E_MOD, g, S);
  ir_expr *parity = ir_binary(a, E_MOD, ir_add(a, ir_binary(a, E_DIV, g, S),
                                                ir_int(a, 1)), two);
  ir_stmt *items[2] = {
      ir_new_mbarrier(a, p, MBAR_WAIT, MBAR_EMPTY, stage, parity),
      tma_fill(cx, p, f, at, tiles, staged, tile, stage)};
  return ir_new_seq(a, items, 2);
}

/* s under ping-pong's turn test (none: s). */
static ir_stmt *turned(ts_arena *a, ir_expr *turn, ir_stmt *s) {
  return turn ? ir_new_if(a, turn, s, NULL) : s;
}

/* Ping-pong's team wave % 2 waits for the turn before its tile's first
 * stage: for the other team's arrival after its last tile, the
 * (wave + 1) / 2-th phase of order[wave % 2] counting from 1; the first
 * tile's wait is for the phase before the barrier's first (parity 1),
 * which has passed. */
static ir_stmt *order_wait(lower_ctx *cx, const ir_pipeline *p) {
  ts_arena *a = cx->arena;
  ir_expr *wave = ir_varref(a, cx->wave->var), *two = ir_int(a, 2);
  ir_expr *phase = ir_binary(a, E_DIV, ir_add(a, wave, ir_int(a, 1)), two);
  return ir_new_mbarrier(
      a, p, MBAR_WAIT, MBAR_ORDER, ir_binary(a, E_MOD, wave, two),
      ir_binary(a, E_MOD, ir_add(a, phase, ir_int(a, 1)), two));
}

/* ... and hands it over, each warp once it has waited for its tile's
 * last stage: an arrival on the other team's order barrier. */
static ir_stmt *order_hand_over(lower_ctx *cx, const ir_pipeline *p) {
  ts_arena *a = cx->arena;
  ir_expr *wave = ir_varref(a, cx->wave->var), *two = ir_int(a, 2);
  return ir_new_mbarrier(a, p, MBAR_ARRIVE, MBAR_ORDER,
                         ir_binary(a, E_MOD, ir_add(a, wave, ir_int(a, 1)),
                                   two), NULL);
}

/* A warp-specialized TMA pipeline in a persistent grid's tile loop (of
 * variable `wave`): the pipeline's fills and phases count on across the
 * block's tiles, k tile ko of the tile being the g = wave * n + ko-th,
 * so that the producer, running its own loop, fills the next tile's
 * first stages as soon as the consumers release them, while they finish
 * the last tile:
 *
 *   producer: for t in 0..min(S, n)-1: refill (wait empty) tile t
 *   for ko:
 *     consumers: wait full[g % S], parity (g / S) % 2; compute on g % S;
 *                r = ko - lag: a lane 0 of each warp arrives empty[...]
 *     producer, if r + S < n: refill tile r + S
 *   consumers: the last lag tiles' stages released (after the batches)
 *
 * A refill waits first on empty (tma_refill), so that a tile's first
 * fills wait for the stages the last tile's consumers still read.
 * lower_persistent hoists the pipeline around the tile loop. */
static ir_stmt *tma_across_tiles(walker *w, ts_loop *f, const attach *at,
                                 const ir_pipeline *p, const tma_tile *tiles,
                                 ir_buffer *const *staged,
                                 const tma_roles *r, ir_stmt *rest) {
  lower_ctx *cx = w->cx;
  ts_arena *a = cx->arena;
  int64_t n = f->extent, S = p->stages;
  ir_expr *size = ir_loop_size(a, f); /* n, or K's tiles at the launch */
  ir_expr *base = ir_mul(a, ir_varref(a, cx->wave->var), size);
  ir_expr *fv = ir_varref(a, f->var);
  ir_expr *consumer = ir_binary(a, E_LT, r->role_tid, ir_int(a, r->consumers));
  ir_expr *producer = ir_binary(a, E_EQ, r->role_tid, ir_int(a, p->producer));
  ir_expr *lane0 = is_thread(a, r->tid, 32);
  cx->consumer_test = consumer;
  /* Ping-pong: the consumers' statements are the tile's team's. */
  ir_expr *turn = p->pingpong ? cx->turn_test : NULL;
  ir_stmt *fills[MAX_DEPTH];
  int nf = 0;
  for (int64_t t = 0; t < S && (f->size || t < n); t++) {
    fills[nf] = tma_refill(cx, p, f, at, tiles, staged, ir_int(a, t),
                           ir_add(a, base, ir_int(a, t)));
    if (f->size) /* as many as the launch's k tiles */
      fills[nf] = ir_new_if(a, ir_binary(a, E_LT, ir_int(a, t), size),
                            fills[nf], NULL);
    nf++;
  }
  ir_expr *rk = ir_sub(a, fv, ir_int(a, r->lag));
  ir_expr *rs = ir_binary(a, E_MOD, ir_add(a, base, rk), ir_int(a, S));
  ir_expr *started = r->lag ? ir_binary(a, E_LE, ir_int(a, r->lag), fv)
                            : NULL;
  ir_stmt *consume[3] = {
      tma_wait(a, p, MBAR_FULL, ir_add(a, base, fv)), rest,
      ir_new_if(a, ir_and(a, started, lane0), tma_release(a, p, rs), NULL)};
  ir_expr *more = ir_binary(a, E_LT, ir_add(a, rk, ir_int(a, S)), size);
  ir_stmt *body[2] = {
      ir_new_if(a, consumer, turned(a, turn, ir_new_seq(a, consume, 3)),
                NULL),
      ir_new_if(a, ir_and(a, started, ir_and(a, producer, more)),
                tma_refill(cx, p, f, at, tiles, staged,
                           ir_add(a, rk, ir_int(a, S)),
                           ir_add(a, ir_add(a, base, rk), ir_int(a, S))),
                NULL)};
  ir_stmt *tail[MAX_DEPTH + 1];
  int nt = 0;
  for (int64_t k = n - r->lag < 0 ? 0 : n - r->lag; !f->size && k < n; k++)
    tail[nt++] = tma_release(
        a, p, ir_binary(a, E_MOD, ir_add(a, base, ir_int(a, k)),
                        ir_int(a, S)));
  /* The last lag k tiles of a trip count chosen at launch: those there
   * are. */
  for (int64_t j = 0; f->size && j < r->lag; j++) {
    ir_expr *k = ir_add(a, size, ir_int(a, j - r->lag));
    tail[nt++] = ir_new_if(
        a, ir_binary(a, E_LE, ir_int(a, 0), k),
        tma_release(a, p, ir_binary(a, E_MOD, ir_add(a, base, k),
                                    ir_int(a, S))), NULL);
  }
  if (turn)
    tail[nt++] = order_hand_over(cx, p);
  ir_stmt *items[5] = {ir_new_if(a, producer, ir_new_seq(a, fills, nf), NULL)};
  int ni = 1;
  if (turn)
    items[ni++] = ir_new_if(a, consumer, turned(a, turn, order_wait(cx, p)),
                            NULL);
  items[ni++] = ir_new_for(a, f, ir_new_seq(a, body, 2));
  if (nt)
    items[ni++] = ir_new_if(a, consumer, turned(a, turn, ir_new_if(
                                a, lane0, ir_new_seq(a, tail, nt), NULL)),
                            NULL);
  /* A cluster's block leaves only once its peer's consumers no longer
   * arrive on its barriers: their last releases. */
  if (p->cluster > 1)
    items[ni++] = ir_new_if(a, producer,
                            lower_cluster_last_releases(cx, p, base, n), NULL);
  ir_stmt *out = ir_new_pipeline(a, p, ir_new_seq(a, items, ni));
  for (int i = 0; i < at->n; i++)
    out = ir_new_alloc(a, staged[i], out);
  return out;
}

/* Shared caches in `depth` stages filled by the TMA (ts_tma), one thread
 * the producer, every warp a consumer, no barrier in the loop:
 *
 *   producer: for t in 0..depth-1: fill tile t into stage t
 *   for ko:
 *     wait full[ko % S], parity (ko / S) % 2        tile ko has landed
 *     compute on stage ko % S
 *     r = ko - lag (the newest tile no wgmma batch still reads):
 *     a lane 0 of each warp: arrive empty[r % S]    released
 *     producer, if r + S < n: wait empty[r % S], parity (r / S) % 2;
 *               fill tile r + S into stage r % S
 *
 * A fill is the full barrier's arrive.expect_tx of the stage's bytes and
 * the boxes, which complete its phase as they land.  With lag batches of
 * wgmma in flight (ts_wgmma_in_flight) a stage is released lag iterations
 * after its computation, when the batch reading it has retired. */
ir_stmt *stages_tma_pipeline(walker *w, ts_loop *f, attach *at, int depth,
                             int lag, bool outer_repeats) {
  lower_ctx *cx = w->cx;
  ts_arena *a = cx->arena;
  ir_buffer *staged[MAX_ITEMS] = {NULL};
  tma_tile tiles[MAX_ITEMS];
  int64_t threads, bytes = 0;
  int cluster = 1; /* blocks sharing the pipeline's multicast tile */
  ir_expr *tid = stages_thread_id(w, &threads);
  if (outer_repeats || threads % 32 || at->n > 2) {
    stages_fail(
        w, TS_ERR_BAD_ARG, "ts_lower: the TMA pipeline at loop \"%s\" "
        "needs %s", f->name, outer_repeats ? "to run once (no serial loop "
        "around it)" : at->n > 2 ? "the caches of A and B only"
        : "whole warps (its consumers arrive one a warp)");
    return NULL;
  }
  int producer_warps = at->stages[0]->producer_warps;
  bool pingpong = at->stages[0]->pingpong;
  for (int i = 1; i < at->n; i++)
    if (at->stages[i]->producer_warps != producer_warps) {
      stages_fail(
          w, TS_ERR_STAGES_DIFFER, "ts_lower: \"%s\" and \"%s\" share "
          "the TMA pipeline at loop \"%s\" with %d and %d producer warps; "
          "specialize both alike (ts_warp_specialize)", at->stages[0]->name,
          at->stages[i]->name, f->name, producer_warps,
          at->stages[i]->producer_warps);
      return NULL;
    } else if (at->stages[i]->pingpong != pingpong) {
      stages_fail(
          w, TS_ERR_STAGES_DIFFER, "ts_lower: \"%s\" and \"%s\" share "
          "the TMA pipeline at loop \"%s\"; \"%s\" has no ts_pingpong: "
          "call it on both", at->stages[0]->name, at->stages[i]->name,
          f->name, pingpong ? at->stages[i]->name : at->stages[0]->name);
      return NULL;
    }
  if (producer_warps && w->cx->producer_threads) {
    stages_fail(
        w, TS_ERR_BAD_ARG, "ts_lower: a kernel has one warp-specialized "
        "pipeline; loop \"%s\" would be a second", f->name);
    return NULL;
  }
  if (cx->wave && !producer_warps) {
    stages_fail(
        w, TS_ERR_BAD_ARG, "ts_lower: the TMA pipeline of \"%s\" at loop "
        "\"%s\" would run on across a persistent grid's tiles (%s), "
        "which needs a producer warpgroup: add ts_warp_specialize(s, <its "
        "stage>, 4) on each of its caches, or fill them by cp.async (no "
        "ts_tma)", at->stages[0]->name, f->name,
        cx->tiles.blocks_per_sm ? "ts_persistent"
                                : "ts_cluster's blocks take their tiles so");
    return NULL;
  }
  if (pingpong && !pingpong_fits(w, f, threads))
    return NULL;
  int teams = pingpong ? 2 : 0;
  ir_pipeline *p = ts_arena_alloc(a, sizeof(*p));
  if (!p)
    return NULL;
  /* In a persistent grid the k tiles count on across the block's tiles:
   * k tile ko of its tile `wave` is the pipeline's wave * n + ko-th. */
  ir_expr *count = ir_varref(a, f->var);
  if (cx->wave)
    count = ir_add(a, ir_mul(a, ir_varref(a, cx->wave->var),
                             ir_loop_size(a, f)), count);
  retarget cur = {NULL, NULL, ir_binary(a, E_MOD, count, ir_int(a, depth))};
  ir_stmt *rest = at->rest;
  for (int i = 0; i < at->n; i++) {
    if (at->stages[i]->buf->scope != SCOPE_SHARED || !at->stages[i]->tma) {
      stages_fail(
          w, TS_ERR_STAGES_DIFFER, "ts_lower: \"%s\" is attached at loop "
          "\"%s\" beside a TMA-filled cache; fill it by the TMA too "
          "(ts_pipeline, ts_storage_swizzle, ts_tma)", at->stages[i]->name,
          f->name);
      return NULL;
    }
    if (!lower_tma_tile(cx, at->stages[i], at->raw[i], &tiles[i])) {
      w->failed = true;
      return NULL;
    }
    if (!(staged[i] = stages_copies_of(a, at->stages[i]->buf, depth)))
      return NULL;
    if (at->stages[i]->multicast) {
      if (!lower_cluster_shared(cx, at->stages[i], &tiles[i])) {
        w->failed = true;
        return NULL;
      }
      cluster = cx->cluster;
    }
    bytes += tiles[i].bytes;
    cur.from = at->stages[i]->buf;
    cur.to = staged[i];
    rest = stages_retarget_stmt(a, rest, &cur);
  }
  *p = (ir_pipeline){.id = cx->pipelines++, .stages = depth, .bytes = bytes,
                     .consumers = (int)(threads / 32) * cluster,
                     .producer = producer_warps
                                     ? (int)threads * (teams ? teams : 1)
                                     : 0,
                     .producer_threads = producer_warps * 32,
                     .cluster = cluster, .pingpong = teams};
  cx->multicasts += cluster > 1;
  if (producer_warps) {
    cx->consumers = p->producer;
    cx->producer_threads = p->producer_threads;
    cx->teams = teams;
  }
  ir_expr *fv = ir_varref(a, f->var);
  ir_expr *role_tid = producer_warps ? block_thread(w, p->producer_threads,
                                                    teams)
                                     : tid;
  if (!role_tid)
    return NULL;
  if (cx->wave) {
    tma_roles roles = {tid, role_tid, p->producer, lag};
    return tma_across_tiles(w, f, at, p, tiles, staged, &roles, rest);
  }
  ir_expr *producer = ir_binary(a, E_EQ, role_tid, ir_int(a, p->producer));
  ir_expr *r = ir_sub(a, fv, ir_int(a, lag));
  ir_expr *rs = ir_binary(a, E_MOD, r, ir_int(a, depth));
  ir_stmt *refill[2] = {
      tma_wait(a, p, MBAR_EMPTY, r),
      tma_fill(cx, p, f, at, tiles, staged, ir_add(a, r, ir_int(a, depth)),
               rs)};
  ir_expr *more = ir_binary(a, E_LT, ir_add(a, r, ir_int(a, depth)),
                            ir_loop_size(a, f));
  ir_expr *started = lag ? ir_binary(a, E_LE, ir_int(a, lag), fv) : NULL;
  ir_stmt *consume[3] = {
      tma_wait(a, p, MBAR_FULL, fv), rest,
      ir_new_if(a, ir_and(a, started, is_thread(a, tid, 32)),
                tma_release(a, p, rs), NULL)};
  ir_stmt *produce = ir_new_if(a, ir_and(a, started, ir_and(a, producer, more)),
                               ir_new_seq(a, refill, 2), NULL);
  /* Warp-specialized, the consumers' part is a role of its own: the
   * producer's threads skip it (the code generator splits the roles). */
  ir_stmt *body[4] = {consume[0], consume[1], consume[2], produce};
  int nbody = 4;
  if (producer_warps) {
    body[0] = ir_new_if(a, ir_binary(a, E_LT, role_tid, ir_int(a, threads)),
                        ir_new_seq(a, consume, 3), NULL);
    body[1] = produce;
    nbody = 2;
  }
  ir_stmt *fills[MAX_DEPTH];
  int nf = 0;
  for (int t = 0; t < depth && (f->size || t < f->extent); t++) {
    fills[nf] = tma_fill(cx, p, f, at, tiles, staged, ir_int(a, t),
                         ir_int(a, t));
    if (f->size) /* k tiles chosen at launch: as many as there are */
      fills[nf] = ir_new_if(a, ir_binary(a, E_LT, ir_int(a, t), f->size),
                            fills[nf], NULL);
    nf++;
  }
  ir_stmt *items[2] = {ir_new_if(a, producer, ir_new_seq(a, fills, nf), NULL),
                       ir_new_for(a, f, ir_new_seq(a, body, nbody))};
  ir_stmt *out = ir_new_pipeline(a, p, ir_new_seq(a, items, 2));
  for (int i = 0; i < at->n; i++)
    out = ir_new_alloc(a, staged[i], out);
  return out;
}
