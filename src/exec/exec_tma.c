/*
 * The reference executor's TMA pipelines (S_PIPELINE, S_TMA, S_MBARRIER):
 * each stage's full and empty mbarriers as the hardware keeps them
 * (arrivals, a transaction count, the phases completed) and each thread's
 * view of them (the phases its waits have seen).
 *
 * A copy reads its box when issued (global memory does not change in a
 * kernel) through the kernel's tensor map of the operand, as given or
 * ts_pack's view of the workspace: zeros past the map's dimensions, rows
 * at its pitch.  Its elements are in flight until the full barrier's
 * phase completes: its one arrival
 * (arrive.expect_tx of the stage's bytes) has come and the copies have
 * delivered exactly those bytes.  Then they land, tagged with the phase,
 * and a thread may read one only after a wait of its own has seen that
 * phase.  A producer may write a stage again only after its wait has
 * seen the empty barrier complete once for each earlier fill, which the
 * consumer warps' arrivals do.  Faults name the buffer, the stage, the
 * phase and the thread: a read before the wait, a write over a stage not
 * released, bytes past or short of the expected count, a tensor map's box
 * that is not the cache's or that points elsewhere than the operand,
 * copies in flight at the pipeline's end.
 *
 * In a cluster's run (exec_impl.h) every block has its own barriers and
 * stages, and a stage or box corner need only be the same within a block
 * (each block loads its own tile).  A multicast copy lands in every
 * block's copy of the stage, each landing on that block's full barrier
 * and counting against its bytes; a multicast arrive arrives on the
 * stage's barrier in every block.  Because a peer reaches into a block
 * that cannot see it coming, two more faults: a producer's copy into a
 * block's stage before that block's consumers released it (the writer's
 * own empty barrier completed a phase short of that block's warps: the
 * count is right but the wrong block's warps filled it), and a block
 * leaving (the end of the pipeline) while a peer's arrival or multicast
 * went into a phase of one of its barriers that none of its waits saw,
 * as the hardware would then write into a block that is gone.  Lockstep
 * runs a peer's arrivals before a wait that on the GPU may already be
 * spinning; where they unbalance a barrier (wait_returns), the wait
 * returns at the first phase it could have seen, so that the write it
 * lets through meets the first of those faults.
 */
#include "exec_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"

static const char *const bar_names[3] = {"full", "empty", "order"};

/* Barrier w of stage s (of team s: an order barrier) in block `rank` of
 * the run. */
static mbar_state *barrier(tma_state *ts, int rank, ir_mbar_which w,
                           int64_t s) {
  size_t stages = (size_t)ts->p->stages;
  if (w == MBAR_ORDER)
    return &ts->order[(size_t)rank * (size_t)ts->p->pingpong + (size_t)s];
  return &ts->bars[((size_t)rank * 2 + (size_t)w) * stages + (size_t)s];
}

static int *fills_of(tma_state *ts, int rank, int64_t s) {
  return &ts->fills[(size_t)rank * (size_t)ts->p->stages + (size_t)s];
}

/* A pipeline a cluster shares is the kernel's cluster's. */
static bool cluster_fits(exec *x, const ir_pipeline *p) {
  if (p->cluster <= 1 || p->cluster == x->ranks)
    return true;
  exec_fault(x, 0, "pipeline %d is shared by a cluster of %d blocks, and "
             "the kernel's cluster has %d", p->id, p->cluster, x->ranks);
  return false;
}

/* Ping-pong's order barriers, each counting a team's warps, and the
 * threads' turns (none yet: the first tile's team waits too). */
static bool pingpong_begin(exec *x, tma_state *ts) {
  const ir_pipeline *p = ts->p;
  size_t teams = (size_t)p->pingpong;
  ts->order = calloc((size_t)x->ranks * teams, sizeof(*ts->order));
  ts->order_seen = calloc(teams * (size_t)x->nthreads, sizeof(int));
  ts->turn = calloc((size_t)x->nthreads, sizeof(bool));
  if (!ts->order || !ts->order_seen || !ts->turn)
    return false;
  for (size_t i = 0; i < (size_t)x->ranks * teams; i++)
    ts->order[i].count = p->consumers;
  return true;
}

bool exec_tma_begin(exec *x, const ir_stmt *s) {
  const ir_pipeline *p = s->pipe.pipe;
  if (!cluster_fits(x, p))
    return false;
  tma_state *ts = calloc(1, sizeof(*ts));
  size_t stages = (size_t)p->stages, ranks = (size_t)x->ranks;
  if (ts) {
    ts->p = p;
    ts->bars = calloc(ranks * 2 * stages, sizeof(*ts->bars));
    ts->seen = calloc(2 * stages * (size_t)x->nthreads, sizeof(*ts->seen));
    ts->fills = calloc(ranks * stages, sizeof(*ts->fills));
  }
  bool ok = ts && ts->bars && ts->seen && ts->fills &&
            (!p->pingpong || pingpong_begin(x, ts));
  if (!ok) {
    exec_tma_end(x, ts, false);
    exec_fault(x, 0, "the executor ran out of memory");
    return false;
  }
  for (int r = 0; r < x->ranks; r++)
    for (size_t i = 0; i < stages; i++) {
      barrier(ts, r, MBAR_FULL, (int64_t)i)->count = 1; /* the producer */
      /* each consumer warp, of every block sharing the pipeline */
      barrier(ts, r, MBAR_EMPTY, (int64_t)i)->count = p->consumers;
    }
  x->tma = ts;
  return true;
}

/* A phase of b completes: in a cluster, each block whose arrivals in it
 * fell short of its share (count / cluster, its consumer warps on an
 * empty barrier) is noted, the first time, with how many it had. */
static void note_shares(const exec *x, const tma_state *ts, mbar_state *b) {
  int64_t share = ts->p->cluster > 1 ? b->count / ts->p->cluster : 0;
  for (int r = 0; r < x->ranks; r++) {
    if (b->from[r] < share && !b->first_short[r]) {
      b->first_short[r] = b->phases;
      b->short_got[r] = b->from[r];
    }
    b->from[r] = 0;
  }
}

/* A barrier's phase completes when its arrivals are in and, for a full
 * barrier, its bytes: the copies waiting on it land. */
static void try_complete(const exec *x, const tma_state *ts, mbar_state *b) {
  if (b->arrivals < b->count || b->tx != 0)
    return;
  b->arrivals = 0;
  b->phases++;
  note_shares(x, ts, b);
  for (size_t i = 0; i < b->nland; i++) {
    landing *l = &b->land[i];
    mem *m = l->m;
    m->data[l->at] = l->value;
    m->defined[l->at] = 1;
    m->pending[l->at] = NONE;
    m->writer[l->at] = m->reader[l->at] = NONE;
    m->landed[l->at] = (int32_t)b->phases;
  }
  b->nland = 0;
}

/* A peer's arrival (or multicast landing) from block `from` goes into
 * b's phase in progress: the block must see that phase before leaving. */
static void note_remote(mbar_state *b, int from, bool landing) {
  if (b->phases + 1 < b->remote_phase)
    return;
  b->remote_phase = b->phases + 1;
  b->remote_from = from;
  b->remote_landing = landing;
}

/* e's value for each block of the run, into v by rank: the same for all
 * of a block's threads (a stage, a box's corner: one producer thread a
 * block issues them); false after a fault where it is not.  Without a
 * cluster, as it always was: a value uniform and not negative, else a
 * fault at thread t. */
static bool block_values(exec *x, const ir_expr *e, int t,
                         int64_t v[MAX_CLUSTER]) {
  size_t mark = x->top;
  int T = x->block_threads, bad = -1;
  int64_t *all = exec_push(x, sizeof(int64_t) * (size_t)x->nthreads);
  if (!all)
    return false;
  bool u = eval_int(x, e, x->all, all);
  for (int r = 0; r < x->ranks && !x->fault; r++) {
    v[r] = all[u ? 0 : r * T];
    for (int i = r * T; !u && i < (r + 1) * T && bad < 0; i++)
      if (all[i] != v[r])
        bad = i;
  }
  if (x->ranks == 1 && (!u || v[0] < 0))
    bad = t;
  x->top = mark;
  if (bad >= 0 && !x->fault)
    exec_fault(x, bad, "a TMA pipeline's stage or box corner differs "
               "between threads%s", x->ranks > 1 ? " of a block" : "");
  return !x->fault;
}

/* e's value for thread t's block, -1 after a fault. */
static int64_t block_value(exec *x, const ir_expr *e, int t) {
  int64_t v[MAX_CLUSTER];
  return block_values(x, e, t, v) ? v[exec_rank(x, t)] : -1;
}

/* Each block's stage of s, within the pipeline's; false after a fault. */
static bool stages_of(exec *x, const ir_stmt *s, const char *what,
                      int64_t st[MAX_CLUSTER]) {
  tma_state *ts = x->tma;
  if (!block_values(x, s->pipe.stage, 0, st))
    return false;
  bool order = s->kind == S_MBARRIER && s->pipe.bar == MBAR_ORDER;
  for (int r = 0; r < x->ranks; r++)
    if (!ts || ts->p != s->pipe.pipe || st[r] < 0 ||
        st[r] >= (order ? ts->p->pingpong : ts->p->stages)) {
      exec_fault(x, r * x->block_threads, "%s outside its pipeline, or %s "
                 "a %s it does not have (%lld)", what,
                 s->kind == S_TMA ? "into" : "on",
                 order ? "ping-pong team" : "stage", (long long)st[r]);
      return false;
    }
  return true;
}

/* A multicast needs a pipeline a cluster shares. */
static bool multicast_fits(exec *x, const ir_stmt *s) {
  if (!s->pipe.multicast || s->pipe.pipe->cluster > 1)
    return true;
  exec_fault(x, 0, "a multicast %s in pipeline %d, which no cluster "
             "shares (ir_pipeline.cluster %d)",
             s->kind == S_TMA ? "TMA copy" : "arrive", s->pipe.pipe->id,
             s->pipe.pipe->cluster);
  return false;
}

static int *seen(exec *x, tma_state *ts, ir_mbar_which w, int64_t s, int t) {
  if (w == MBAR_ORDER)
    return &ts->order_seen[(size_t)s * (size_t)x->nthreads + (size_t)t];
  return &ts->seen[((size_t)w * (size_t)ts->p->stages + (size_t)s) *
                       (size_t)x->nthreads + (size_t)t];
}

/* Whether a phase up to completion c of b (1-based) fell short of some
 * block's share. */
static bool unbalanced(const exec *x, const mbar_state *b, uint64_t c) {
  for (int r = 0; r < x->ranks; r++)
    if (b->first_short[r] && b->first_short[r] <= c)
      return true;
  return false;
}

/* Whether a wait for parity `want`, by a thread that has seen `saw`
 * phases of b, returns, and with how many phases seen (*at).  While the
 * phase in progress has that parity the wait blocks.  But in a cluster,
 * where the lockstep run has a peer's arrivals come before the wait, the
 * barrier may have run two phases past the one wanted, and a wait
 * already spinning on the GPU returns at the first.  That happens only
 * where arrivals are unbalanced between the blocks (one block's filling
 * a phase another's owed), so only then the wait returns there, and the
 * writes it lets through are checked against the blocks' shares
 * (shares_released).  Otherwise it never returns. */
static bool wait_returns(const exec *x, const tma_state *ts,
                         const mbar_state *b, int64_t want, int saw,
                         uint64_t *at) {
  *at = b->phases;
  if ((int64_t)(b->phases % 2) != want)
    return true;
  uint64_t c = (uint64_t)saw + ((int64_t)(saw % 2) == want ? 1 : 2);
  if (ts->p->cluster <= 1 || c > b->phases || !unbalanced(x, b, c))
    return false;
  *at = c;
  return true;
}

/* A ping-pong consumer waits on a full barrier without the turn: on the
 * GPU the other team may still be reading the ring, and the stage's
 * parity then matches a phase of the other's tile, two fills old. */
static void out_of_turn(exec *x, const tma_state *ts, int64_t st, int t) {
  char who[128];
  exec_thread_name(x, t, who, sizeof(who));
  exec_fault(x, t, "thread %s of a ping-pong consumer team waits on "
             "full[%lld] of pipeline %d without the turn: its warp has not "
             "waited on its order barrier since it last handed the ring "
             "over (or ever), so the other team may still be reading the "
             "ring and the wait's parity match a phase of that team's "
             "tile; wait on order[team] before the tile's first stage",
             who, (long long)st, ts->p->id);
}

/* A wait of each active thread on its block's barrier: the phase of the
 * parity it asks for must have completed, or it would wait for ever. */
static void run_wait_bar(exec *x, tma_state *ts, const ir_stmt *s,
                         const int64_t *st, const bool *active) {
  size_t mark = x->top;
  int64_t *par = exec_push(x, sizeof(int64_t) * (size_t)x->nthreads);
  if (!par)
    return;
  bool uniform = eval_int(x, s->pipe.parity, active, par);
  x->top = mark;
  for (int t = 0; t < x->nthreads && !x->fault; t++) {
    if (!active[t])
      continue;
    int64_t want = uniform ? par[0] : par[t], at = st[exec_rank(x, t)];
    if (s->pipe.bar == MBAR_FULL && ts->turn && !ts->turn[t]) {
      out_of_turn(x, ts, at, t);
      return;
    }
    mbar_state *b = barrier(ts, exec_rank(x, t), s->pipe.bar, at);
    int *saw = seen(x, ts, s->pipe.bar, at, t);
    uint64_t now;
    if (!wait_returns(x, ts, b, want, *saw, &now)) {
      char who[128];
      exec_thread_name(x, t, who, sizeof(who));
      exec_fault(x, t, "thread %s waits on %s[%lld] of pipeline %d for "
                 "phase %llu (parity %lld), which never completes: %s",
                 who, bar_names[s->pipe.bar], (long long)at, ts->p->id,
                 (unsigned long long)b->phases, (long long)want,
                 s->pipe.bar == MBAR_FULL && b->arrivals == b->count
                     ? "the copies delivered fewer bytes than its "
                       "arrive.expect_tx expects"
                     : "not every arrival it counts came");
      return;
    }
    *saw = (int)now;
    if (s->pipe.bar == MBAR_ORDER)
      ts->turn[t] = true;
  }
}

/* Thread t's arrival on the other team's order barrier stands for its
 * warp (as a release does): the warp's threads give up the turn. */
static void hand_over(exec *x, tma_state *ts, int t) {
  for (int i = t / 32 * 32; i < t / 32 * 32 + 32 && i < x->nthreads; i++)
    ts->turn[i] = false;
}

/* An arrival of a thread of block `from` on barrier w of block q's stage
 * st (arrive.expect_tx: with the stage's bytes, a fill of it). */
static void arrive_on(exec *x, tma_state *ts, int q, ir_mbar_which w,
                      int64_t st, int from, bool expect) {
  mbar_state *b = barrier(ts, q, w, st);
  if (from != q)
    note_remote(b, from, false);
  b->arrivals++;
  b->from[from]++;
  if (expect) {
    b->tx += ts->p->bytes;
    ++*fills_of(ts, q, st);
  }
  try_complete(x, ts, b);
}

/* Each active thread arrives on its block's barrier of its stage, or
 * with multicast on that barrier in every block of the cluster. */
static void run_arrive(exec *x, tma_state *ts, const ir_stmt *s,
                       const int64_t *st, const bool *active) {
  bool expect = s->pipe.op == MBAR_EXPECT_TX;
  for (int t = 0; t < x->nthreads && !x->fault; t++) {
    if (!active[t])
      continue;
    int r = exec_rank(x, t);
    for (int q = 0; q < x->ranks; q++)
      if (q == r || s->pipe.multicast)
        arrive_on(x, ts, q, s->pipe.bar, st[r], r, expect);
    if (s->pipe.bar == MBAR_ORDER)
      hand_over(x, ts, t);
  }
}

void exec_run_mbarrier(exec *x, const ir_stmt *s, const bool *active) {
  int64_t st[MAX_CLUSTER];
  if (!stages_of(x, s, "mbarrier operation", st) || !multicast_fits(x, s))
    return;
  if (s->pipe.op == MBAR_WAIT)
    run_wait_bar(x, x->tma, s, st, active);
  else
    run_arrive(x, x->tma, s, st, active);
}

const ts_param *exec_tma_map_of(const exec *x, const ir_buffer *src) {
  for (int i = 0; i < x->k->nparams; i++)
    if (x->k->params[i].p.kind == TS_PARAM_TENSOR_MAP &&
        x->k->params[i].buf == src)
      return &x->k->params[i].p;
  return NULL;
}

/* Where the map points: the operand's own parameter, or for ts_pack's
 * view the workspace at the view's offset, as the runtime resolves
 * buffers[buffer] + offset. */
static bool map_points_at(const exec *x, const ts_param *map,
                          const ir_buffer *src) {
  if (src->workspace_view)
    return map->buffer == TS_PARAM_WORKSPACE &&
           map->offset == src->workspace_offset;
  for (int i = 0; i < x->k->nparams; i++)
    if (x->k->params[i].p.kind == TS_PARAM_BUFFER &&
        x->k->params[i].buf == src)
      return map->buffer == x->k->params[i].p.buffer && map->offset == 0;
  return false;
}

/* The copy's box against the tensor map and the cache: the map's box is
 * what the hardware moves, the cache's rows are what the stage holds. */
static bool box_fits(exec *x, const ir_stmt *s, int t, int64_t st) {
  const ir_buffer *d = s->pipe.dst->load.buf, *src = s->pipe.src;
  const ts_param *map = exec_tma_map_of(x, src);
  int64_t rows = d->shape[d->order[d->ndim - 2]];
  int64_t row = 128 / ts_dtype_size(d->dtype);
  int inner = src->strides[1] == 1 ? 1 : 0;
  if (map && (!map_points_at(x, map, src) || src->strides[inner] != 1)) {
    exec_fault(x, t, "TMA copy into shared %s (stage %lld): the tensor map "
               "of %s points at %s + %lld bytes, not at %s%s", d->name,
               (long long)st, src->name, ts_param_buffer_name(map->buffer),
               (long long)map->offset, src->name,
               src->workspace_view ? " in the workspace" : "");
    return false;
  }
  if (!map || map->box[0] != s->pipe.box[0] || map->box[1] != s->pipe.box[1] ||
      s->pipe.box[0] != row || s->pipe.box[1] != rows) {
    exec_fault(x, t, "TMA copy into shared %s (stage %lld): the tensor map "
               "of %s moves a box of %lldx%lld elements, the copy %lldx%lld, "
               "and the cache's stage holds rows of %lld by %lld", d->name,
               (long long)st, src->name, (long long)(map ? map->box[0] : 0),
               (long long)(map ? map->box[1] : 0),
               (long long)s->pipe.box[0], (long long)s->pipe.box[1],
               (long long)row, (long long)rows);
    return false;
  }
  return true;
}

/* A producer writes a stage only after seeing it released once for each
 * fill before this one. */
static bool released(exec *x, tma_state *ts, const ir_stmt *s, int64_t st,
                     int t) {
  int fills = *fills_of(ts, exec_rank(x, t), st);
  int saw = *seen(x, ts, MBAR_EMPTY, st, t);
  if (fills - 1 <= saw)
    return true;
  char who[128];
  exec_thread_name(x, t, who, sizeof(who));
  exec_fault(x, t, "thread %s writes shared %s, stage %lld, for its fill %d "
             "before its consumers released it: its waits have seen %d "
             "phase%s of empty[%lld]; wait for parity %d first", who,
             s->pipe.dst->load.buf->name, (long long)st, fills, saw,
             saw == 1 ? "" : "s", (long long)st, (fills - 2) % 2);
  return false;
}

/* Whether block q's consumers released its stage st for the writer's
 * fill: in a cluster, every phase of the writer's own empty barrier that
 * its waits counted on (the f - 1 before fill f) must have had all of
 * q's consumer warps' arrivals.  A phase filled by others' (a warp
 * arriving twice, a release not multicast, a count of one block's warps)
 * says nothing of q's, whose consumers may still read the stage. */
static bool share_released(exec *x, tma_state *ts, const ir_stmt *s,
                           int64_t st, int t, int q) {
  int p = exec_rank(x, t), fills = *fills_of(ts, p, st);
  const mbar_state *b = barrier(ts, p, MBAR_EMPTY, st);
  uint64_t first = b->first_short[q];
  if (!first || (int64_t)first > (int64_t)fills - 1)
    return true;
  char who[128], block[80], owed[160];
  exec_thread_name(x, t, who, sizeof(who));
  exec_block_name(x, q, block, sizeof(block));
  if (q == p)
    snprintf(owed, sizeof(owed), "its own block's consumer warps, the rest "
             "by a cluster peer's");
  else
    snprintf(owed, sizeof(owed), "block %s's consumer warps", block);
  char block_[96];
  snprintf(block_, sizeof(block_), "%s ", block);
  exec_fault(x, t, "thread %s writes shared %s, stage %lld, %s%sfor its "
             "fill %d, which %s consumers have not released: phase %llu of "
             "its empty[%lld], which its waits have seen, completed with "
             "%lld of the %lld arrivals owed by %s; an empty barrier counts "
             "the consumer warps of every block of the cluster, each "
             "arriving once a release in every block (a multicast arrive)",
             who, s->pipe.dst->load.buf->name, (long long)st,
             q == p ? "" : "of cluster peer block ", q == p ? "" : block_,
             fills, q == p ? "its own block's" : "that block's",
             (unsigned long long)(first - 1), (long long)st,
             (long long)b->short_got[q],
             (long long)(b->count / ts->p->cluster), owed);
  return false;
}

/* Every block the copy writes into released the stage (share_released):
 * its own, and with multicast every peer. */
static bool shares_released(exec *x, tma_state *ts, const ir_stmt *s,
                            int64_t st, int t) {
  int own = exec_rank(x, t);
  for (int q = 0; q < x->ranks; q++)
    if ((q == own || s->pipe.multicast) &&
        !share_released(x, ts, s, st, t, q))
      return false;
  return true;
}

/* One element of the box as the hardware reads it through the map: zero
 * outside the map's dimensions, else the element at the map's row pitch
 * (so a map wider than the operand reads a packed row's padding, which
 * nothing wrote, and faults). */
static float box_value(exec *x, const ts_param *map, const ir_buffer *src,
                       int64_t c0, int64_t c1, int t) {
  if (c0 < 0 || c1 < 0 || c0 >= map->dims[0] || c1 >= map->dims[1])
    return 0.0f;
  mem *m = find_mem(x, src);
  return read_at(x, m, c0 + c1 * (map->row_bytes / ts_dtype_size(src->dtype)),
                 t);
}

static bool push_landing(exec *x, mbar_state *b, landing l) {
  if (b->nland == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 4096;
    landing *n = realloc(b->land, cap * sizeof(*n));
    if (!n) {
      exec_fault(x, 0, "the executor ran out of memory");
      return false;
    }
    b->land = n;
    b->cap = cap;
  }
  b->land[b->nland++] = l;
  return true;
}

/* " of block (bx, by, bz)" for block q in a cluster's run, else "". */
static void of_block(const exec *x, int q, char *out, size_t n) {
  char name[80];
  exec_block_name(x, q, name, sizeof(name));
  snprintf(out, n, "%s%s", x->ranks > 1 ? " of block " : "",
           x->ranks > 1 ? name : "");
}

/* The box's bytes against what block q's full barrier expects; then its
 * phase may complete. */
static void deliver(exec *x, tma_state *ts, const ir_stmt *s, int64_t st,
                    int t, int q) {
  const ir_buffer *d = s->pipe.dst->load.buf;
  mbar_state *b = barrier(ts, q, MBAR_FULL, st);
  if (q != exec_rank(x, t))
    note_remote(b, exec_rank(x, t), true);
  int64_t bytes = s->pipe.box[0] * s->pipe.box[1] * ts_dtype_size(d->dtype);
  b->tx -= bytes;
  if (b->tx < 0 || b->arrivals < b->count) {
    char block[96];
    of_block(x, q, block, sizeof(block));
    exec_fault(x, t, "TMA copy into shared %s (stage %lld, phase %llu): its "
               "%lld bytes pass what full[%lld]%s expects (%s)", d->name,
               (long long)st, (unsigned long long)b->phases, (long long)bytes,
               (long long)st, block, b->arrivals < b->count
                   ? "no arrive.expect_tx came before it"
                   : "the arrive.expect_tx counts fewer bytes");
    return;
  }
  try_complete(x, ts, b);
}

/* Thread t's box into its block's copy of the stage, or with multicast
 * into every block's: each element read once, in flight in each copy
 * until that block's full barrier completes its phase. */
static void issue_box(exec *x, tma_state *ts, const ir_stmt *s, int64_t st,
                      int t) {
  const ir_buffer *d = s->pipe.dst->load.buf;
  const ts_param *map = exec_tma_map_of(x, s->pipe.src); /* box_fits found it */
  mem *m = find_mem(x, d);
  int64_t idx[IR_MAX_DIMS], c[2];
  for (int k = 0; k < d->ndim; k++)
    idx[k] = block_value(x, s->pipe.dst->load.idx[k], t);
  for (int k = 0; k < 2; k++)
    c[k] = block_value(x, s->pipe.coord[k], t);
  if (!m->landed &&
      !(m->landed = calloc(m->size * m->copies, sizeof(int32_t)))) {
    exec_fault(x, t, "the executor ran out of memory");
    return;
  }
  int own = exec_rank(x, t), T = x->block_threads;
  int lo = s->pipe.multicast ? 0 : own;
  int hi = s->pipe.multicast ? x->ranks : own + 1;
  int in = d->order[d->ndim - 1], out = d->order[d->ndim - 2];
  for (int64_t r = 0; r < s->pipe.box[1] && !x->fault; r++)
    for (int64_t e = 0; e < s->pipe.box[0] && !x->fault; e++) {
      int64_t off = 0;
      for (int k = 0; k < d->ndim; k++)
        off += (idx[k] + (k == in ? e : k == out ? r : 0)) * d->strides[k];
      int64_t elem = ir_swizzle_offset(d, off);
      for (int q = lo; q < hi; q++)
        if (m->pending[mem_slot(m, elem, q * T)] != NONE) {
          char block[96];
          of_block(x, q, block, sizeof(block));
          exec_fault(x, t, "TMA copy into shared %s at element %lld (stage "
                     "%lld)%s over a copy still in flight", d->name,
                     (long long)off, (long long)st, block);
          return;
        }
      float v = box_value(x, map, s->pipe.src, c[0] + e, c[1] + r, t);
      for (int q = lo; q < hi && !x->fault; q++) {
        size_t at = mem_slot(m, elem, q * T);
        m->pending[at] = exec_gid(x, t);
        push_landing(x, barrier(ts, q, MBAR_FULL, st), (landing){m, at, v});
      }
    }
  for (int q = lo; q < hi && !x->fault; q++)
    deliver(x, ts, s, st, t, q);
}

void exec_run_tma(exec *x, const ir_stmt *s, const bool *active) {
  tma_state *ts = x->tma;
  int64_t st[MAX_CLUSTER];
  if (!stages_of(x, s, "TMA copy", st) || !multicast_fits(x, s))
    return;
  for (int t = 0; t < x->nthreads && !x->fault; t++) {
    int64_t at = st[exec_rank(x, t)];
    if (active[t] && box_fits(x, s, t, at) && released(x, ts, s, at, t) &&
        shares_released(x, ts, s, at, t)) {
      issue_box(x, ts, s, at, t);
      x->steps += ir_issue_steps(s);
    }
  }
}

bool exec_tma_read_ok(exec *x, const mem *m, size_t at, int64_t off, int t) {
  tma_state *ts = x->tma;
  if (!m->landed || !m->landed[at] || !ts)
    return true;
  int64_t st = off / m->buf->strides[0];
  int saw = *seen(x, ts, MBAR_FULL, st, t);
  if (saw >= m->landed[at])
    return true;
  char who[128];
  exec_thread_name(x, t, who, sizeof(who));
  exec_fault(x, t, "thread %s reads shared %s at element %lld (stage %lld) "
             "before its wait: the TMA copy landed in phase %d of full[%lld] "
             "and its waits have seen %d", who, m->buf->name, (long long)off,
             (long long)st, m->landed[at] - 1, (long long)st, saw);
  return false;
}

/* The most phases of barrier w of stage st that a wait of a thread of
 * block `rank` has seen. */
static int block_saw(exec *x, tma_state *ts, int rank, ir_mbar_which w,
                     int64_t st) {
  int most = 0, T = x->block_threads;
  for (int t = rank * T; t < (rank + 1) * T; t++) {
    int saw = *seen(x, ts, w, st, t);
    most = saw > most ? saw : most;
  }
  return most;
}

/* Block `rank` leaves the pipeline: a peer's arrival or multicast into a
 * phase of its barriers that none of its waits saw would reach a block
 * that is gone (or its memory reused). */
static void peers_done(exec *x, tma_state *ts, int rank) {
  const ir_pipeline *p = ts->p;
  for (int i = 0; i < 2 * p->stages && !x->fault; i++) {
    ir_mbar_which w = i < p->stages ? MBAR_FULL : MBAR_EMPTY;
    int64_t st = i % p->stages;
    const mbar_state *b = barrier(ts, rank, w, st);
    int saw = block_saw(x, ts, rank, w, st);
    if (!b->remote_phase || b->remote_phase <= (uint64_t)saw)
      continue;
    char self[80], peer[80];
    exec_block_name(x, rank, self, sizeof(self));
    exec_block_name(x, b->remote_from, peer, sizeof(peer));
    int t = rank * x->block_threads + (w == MBAR_EMPTY ? p->producer : 0);
    exec_fault(x, t, "block %s leaves (the end of pipeline %d) before its "
               "waits have seen phase %llu of %s[%lld] (they saw %d "
               "phase%s), into which block %s's %s: a cluster peer's %s "
               "into a block that left; %s", self, p->id,
               (unsigned long long)(b->remote_phase - 1), bar_names[w],
               (long long)st, saw, saw == 1 ? "" : "s", peer,
               b->remote_landing ? "multicast copy lands" : "consumers arrive",
               b->remote_landing ? "multicast" : "arrival",
               w == MBAR_EMPTY
                   ? "the producer must wait for each stage's last release "
                     "before the block ends"
                   : "its consumers must wait for each stage's last fill "
                     "before the block ends");
  }
}

void exec_tma_end(exec *x, tma_state *ts, bool check) {
  if (!ts)
    return;
  int nbars = x->ranks * 2 * (ts->bars ? ts->p->stages : 0);
  for (int i = 0; check && i < nbars && !x->fault; i++)
    if (ts->bars[i].nland) {
      int stage = i % ts->p->stages;
      char block[96];
      of_block(x, i / (2 * ts->p->stages), block, sizeof(block));
      exec_fault(x, 0, "TMA copies into stage %d of pipeline %d still in "
                 "flight at its end: full[%d]%s never completed its phase",
                 stage, ts->p->id, stage, block);
    }
  for (int r = 0; check && ts->p->cluster > 1 && r < x->ranks; r++)
    peers_done(x, ts, r);
  for (int i = 0; i < nbars; i++)
    free(ts->bars[i].land);
  free(ts->bars);
  free(ts->seen);
  free(ts->fills);
  free(ts->order);
  free(ts->order_seen);
  free(ts->turn);
  free(ts);
  if (x->tma == ts)
    x->tma = NULL;
}
