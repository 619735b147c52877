/*
 * CUDA C of a TMA pipeline (S_PIPELINE, S_TMA, S_MBARRIER): the stages'
 * mbarriers as static shared arrays tessel_full<id> and tessel_empty<id>,
 * initialized by the producer before a barrier; each copy a
 * cp.async.bulk.tensor of a box from the kernel's tensor map of its
 * operand (a __grid_constant__ parameter, tmap_A or tmap_B, or
 * tmap_A_packed and tmap_B_packed for ts_pack's copies in the workspace)
 * completing on the stage's full barrier; waits spin on try_wait.parity.  The helpers
 * are inline PTX, defined once when used.
 *
 * A warp-specialized pipeline (producer_threads) splits the block there:
 * the producer warpgroup gives registers back (setmaxnreg), all its
 * threads but the issuing one leave, and that one runs the body's
 * producer statements and returns; the consumers take the
 * registers and run the rest.  Each role's code is the body less the
 * other role's statements: an `if` holding the full barrier's wait is the
 * consumers', as are wgmma's fences and waits, and one holding an
 * arrive.expect_tx the producer's.
 */
#include "codegen_impl.h"

#include <string.h>

#include "../ir/visit.h"

static const char *const bars[3] = {"full", "empty", "order"};

static void barrier_ref(ts_buf *b, emitter *em, const ir_stmt *s,
                        ir_mbar_which w) {
  ts_buf_printf(b, "&tessel_%s%d[", bars[w], s->pipe.pipe->id);
  ir_print_expr(b, s->pipe.stage, &em->style);
  ts_buf_puts(b, "]");
}

/* The barriers, initialized by the producer; the fence makes the
 * initialization visible to the copy engine (the async proxy), the
 * barrier to every thread. */
static void c_pipeline(ts_buf *b, emitter *em, const ir_stmt *s, int depth) {
  const ir_pipeline *p = s->pipe.pipe;
  em->cluster_used |= p->cluster > 1;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "__shared__ __align__(8) unsigned long long tessel_full%d"
                "[%d], tessel_empty%d[%d];\n", p->id, p->stages, p->id,
                p->stages);
  if (p->pingpong) {
    ts_buf_indent(b, depth);
    ts_buf_printf(b, "__shared__ __align__(8) unsigned long long "
                  "tessel_order%d[%d];  // ping-pong's turn\n", p->id,
                  p->pingpong);
  }
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "if (threadIdx.x + threadIdx.y + threadIdx.z == 0) {\n");
  ts_buf_indent(b, depth + 1);
  ts_buf_printf(b, "for (int s = 0; s < %d; ++s) {\n", p->stages);
  ts_buf_indent(b, depth + 2);
  ts_buf_printf(b, "tessel_mbar_init(&tessel_full%d[s], 1);\n", p->id);
  ts_buf_indent(b, depth + 2);
  ts_buf_printf(b, "tessel_mbar_init(&tessel_empty%d[s], %d);\n", p->id,
                p->consumers);
  ts_buf_indent(b, depth + 1);
  ts_buf_puts(b, "}\n");
  if (p->pingpong) {
    ts_buf_indent(b, depth + 1);
    ts_buf_printf(b, "for (int s = 0; s < %d; ++s) "
                  "tessel_mbar_init(&tessel_order%d[s], %d);\n",
                  p->pingpong, p->id, p->consumers);
  }
  ts_buf_indent(b, depth + 1);
  ts_buf_puts(b, "asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" "
              "::: \"memory\");\n");
  ts_buf_indent(b, depth);
  ts_buf_puts(b, "}\n");
  ts_buf_indent(b, depth);
  /* In a cluster the peers' barriers too: a multicast or a release may
   * reach them as soon as a block passes. */
  ts_buf_puts(b, p->cluster > 1 ? "tessel_cluster_sync();\n"
                                : "__syncthreads();\n");
}

typedef enum { ROLE_ANY, ROLE_PRODUCER, ROLE_CONSUMER } role;

static bool find_role(ir_visitor *v, const ir_stmt *s) {
  role *r = v->ctx;
  if (s->kind == S_MBARRIER && (s->pipe.op == MBAR_EXPECT_TX ||
                                (s->pipe.op == MBAR_WAIT &&
                                 s->pipe.bar == MBAR_EMPTY)))
    *r = ROLE_PRODUCER;
  else if (s->kind == S_MBARRIER && ((s->pipe.op == MBAR_WAIT &&
                                      (s->pipe.bar == MBAR_FULL ||
                                       s->pipe.bar == MBAR_ORDER)) ||
                                     s->pipe.op == MBAR_ARRIVE))
    *r = ROLE_CONSUMER;
  v->stop |= *r != ROLE_ANY;
  return true;
}

static bool only_threads(ir_visitor *v, const ir_expr *e) {
  bool *ok = v->ctx;
  if (e->kind == E_VAR)
    *ok &= e->var->kind == VAR_LAUNCH && ir_kind_is_thread(e->var->tag);
  return *ok;
}

/* Whether c is `thread op p->producer` of the block's own thread
 * indices: the consumers' role test (E_LT: the threads before the
 * producer's) or the issuing thread's (E_EQ). */
static bool is_thread_test(const ir_expr *c, ir_expr_kind op,
                           const ir_pipeline *p) {
  if (c->kind != op || c->op.b->kind != E_INT || c->op.b->ival != p->producer)
    return false;
  bool ok = true;
  ir_visitor v = {.expr = only_threads, .ctx = &ok};
  ir_visit_expr(&v, c->op.a);
  return ok;
}

/* Whether s is the consumers' role test, `thread < consumers` of the
 * block's own thread indices, of the pipeline p. */
static bool is_consumer_test(const ir_stmt *s, const ir_pipeline *p) {
  return !s->if_.else_ && is_thread_test(s->if_.cond, E_LT, p);
}

/* Whose an `if` of the pipeline's body is (the consumers' role test's,
 * as a persistent grid's epilogue has, is theirs whatever it holds);
 * wgmma's fences and waits (after the loop) are the consumers'. */
static role role_of(const ir_stmt *s, const ir_pipeline *p) {
  role r = ROLE_ANY;
  if (s->kind == S_WGMMA_SYNC || s->kind == S_WGMMA ||
      (s->kind == S_IF && is_consumer_test(s, p)))
    r = ROLE_CONSUMER;
  else if (s->kind == S_IF) {
    ir_visitor v = {.stmt = find_role, .ctx = &r};
    ir_visit_stmt(&v, s->if_.then_);
  }
  return r;
}

/* c less its conjunct `thread < consumers`, true in the consumers' part
 * (NULL: nothing left; c itself: no such conjunct).  The guards pass
 * (guards.c) joins an `if` under the role test into one test of both,
 * as it does ping-pong's team test. */
static ir_expr *without_consumer_test(ts_arena *a, ir_expr *c,
                                      const ir_pipeline *p) {
  if (is_thread_test(c, E_LT, p))
    return NULL;
  if (c->kind != E_AND)
    return c;
  ir_expr *l = without_consumer_test(a, c->op.a, p);
  ir_expr *r = without_consumer_test(a, c->op.b, p);
  if (l == c->op.a && r == c->op.b)
    return c;
  return !l ? r : !r ? l : ir_and(a, l, r);
}

static bool reads_no_loop_or_memory(ir_visitor *v, const ir_expr *e) {
  const ir_var *loop = ((const ir_var **)v->ctx)[0];
  if (e->kind == E_LOAD || (e->kind == E_VAR && e->var == loop))
    ((const ir_var **)v->ctx)[1] = loop; /* found */
  return true;
}

/* body's one statement where it is an `if` (no else) whose test does not
 * change in loop f, else NULL: the role's part of the loop is then run
 * under the test, once, around the loop.  An IR variable is a loop's or
 * a launch index, never assigned, so a test that reads neither f's
 * variable nor memory is the same in every iteration.  Ping-pong's team
 * test so holds a tile's whole k loop of wgmma: tested each iteration,
 * ptxas serializes the wgmma (its C7515: a path may leave the batch in
 * flight while other code defines the accumulators). */
static ir_stmt *invariant_test(ir_stmt *body, const ir_stmt *f) {
  while (body && body->kind == S_SEQ && body->seq.n == 1)
    body = body->seq.items[0];
  if (!body || body->kind != S_IF || body->if_.else_)
    return NULL;
  const ir_var *ctx[2] = {f->for_.loop->var, NULL};
  ir_visitor v = {.expr = reads_no_loop_or_memory, .ctx = ctx};
  ir_visit_expr(&v, body->if_.cond);
  return ctx[1] ? NULL : body;
}

/* s less the other role's statements (NULL: nothing left); loops and
 * sequences are copied where they change, the rest shared.  In the
 * consumers' part their role test, true there, goes: wgmma inside a
 * branch that ptxas cannot prove uniform is serialized (its C7520
 * warning: every batch waits for the one before it). */
static ir_stmt *role_part(ts_arena *a, ir_stmt *s, const ir_pipeline *p,
                          role keep) {
  if (s->kind == S_SEQ) {
    ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)s->seq.n);
    int n = 0;
    for (int i = 0; items && i < s->seq.n; i++) {
      ir_stmt *c = role_part(a, s->seq.items[i], p, keep);
      if (c)
        items[n++] = c;
    }
    return items && n ? ir_new_seq(a, items, n) : NULL;
  }
  if (s->kind == S_FOR || s->kind == S_ALLOC) {
    ir_stmt **at = s->kind == S_FOR ? &s->for_.body : &s->alloc.body;
    ir_stmt *body = role_part(a, *at, p, keep);
    ir_stmt *test = s->kind == S_FOR && p->pingpong ? invariant_test(body, s)
                                                    : NULL;
    ir_stmt *c = body ? ts_arena_alloc(a, sizeof(*c)) : NULL;
    if (c) {
      memcpy(c, s, sizeof(*c));
      *(s->kind == S_FOR ? &c->for_.body : &c->alloc.body) =
          test ? test->if_.then_ : body;
    }
    return c && test ? ir_new_if(a, test->if_.cond, c, NULL) : c;
  }
  role r = role_of(s, p);
  if (r == ROLE_CONSUMER && keep == ROLE_CONSUMER && s->kind == S_IF &&
      !s->if_.else_) {
    ir_expr *rest = without_consumer_test(a, s->if_.cond, p);
    if (!rest)
      return s->if_.then_;
    if (rest != s->if_.cond)
      return ir_new_if(a, rest, s->if_.then_, NULL);
  }
  return r == ROLE_ANY || r == keep ? s : NULL;
}

/* Whether c has a conjunct `thread == p->producer` of the block's own
 * thread indices: the issuing thread's test. */
static bool tests_issuing_thread(const ir_expr *c, const ir_pipeline *p) {
  if (c->kind == E_AND)
    return tests_issuing_thread(c->op.a, p) || tests_issuing_thread(c->op.b, p);
  return is_thread_test(c, E_EQ, p);
}

typedef struct {
  const ir_pipeline *p;
  int guards; /* enclosing ifs that test for the issuing thread */
  bool ok;    /* no statement with an effect outside them so far */
} guard_walk;

static bool is_issuing_guard(const ir_stmt *s, const ir_pipeline *p) {
  return s->kind == S_IF && !s->if_.else_ &&
         tests_issuing_thread(s->if_.cond, p);
}

static bool guard_enter(ir_visitor *v, const ir_stmt *s) {
  guard_walk *g = v->ctx;
  if (is_issuing_guard(s, g->p))
    g->guards++;
  else if (s->kind != S_FOR && s->kind != S_SEQ && s->kind != S_IF &&
           s->kind != S_ALLOC && !g->guards) {
    g->ok = false;
    v->stop = true;
  }
  return true;
}

static void guard_leave(ir_visitor *v, const ir_stmt *s) {
  guard_walk *g = v->ctx;
  if (is_issuing_guard(s, g->p))
    g->guards--;
}

/* Whether every statement of the producer's part that does anything (a
 * copy, a barrier operation, a store) lies under the issuing thread's
 * test, so that the warpgroup's other threads have nothing to do in it.
 * Lowering builds the part so; this keeps a later change that does not
 * from losing work on the GPU, where the executor would still run it. */
static bool only_the_issuing_thread_acts(const ir_stmt *part,
                                         const ir_pipeline *p) {
  guard_walk g = {.p = p, .ok = true};
  ir_visitor v = {.stmt = guard_enter, .stmt_post = guard_leave, .ctx = &g};
  ir_visit_stmt(&v, part);
  return g.ok;
}

/* Every statement of the producer's part that does anything is under
 * `thread == p->producer` (checked above; where it is not, every producer
 * thread stays, as before); the warpgroup's other threads leave once they
 * have given their registers back (setmaxnreg is the whole warpgroup's).
 * Left in, the issuing thread's 31 warp-mates run on through the part's
 * loops, every tile's k loop in a persistent grid, and the issuing lane
 * waits behind them: a refill 70 us late in each block's first tile, 5%
 * of wgpers's time at 8192^3 and 3% of wgws's (docs/performance.md, "The
 * producer warpgroup's idle threads leave at once"). */
static void print_idle_producers_leave(ts_buf *b, const ir_pipeline *p,
                                       int depth) {
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "if ((threadIdx.z * blockDim.y + threadIdx.y) * "
                "blockDim.x + threadIdx.x != %d) return;  // only the "
                "issuing thread stays\n", p->producer);
}

/* The roles' split: the producer's registers to the consumers, the
 * counts lowering chose for the blocks a multiprocessor the kernel is
 * bounded to (ir_kernel's registers: 40 and 232 at one block, the file
 * the block's). */
static void c_roles(ts_buf *b, emitter *em, const ir_stmt *s, int depth,
                    const ir_stmt_style *st) {
  const ir_pipeline *p = s->pipe.pipe;
  ir_stmt *producer = role_part(em->a, s->pipe.body, p, ROLE_PRODUCER);
  ir_stmt *consumer = role_part(em->a, s->pipe.body, p, ROLE_CONSUMER);
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "if ((threadIdx.z * blockDim.y + threadIdx.y) * "
                "blockDim.x + threadIdx.x >= %d) {  // the producer "
                "warpgroup\n", p->producer);
  ts_buf_indent(b, depth + 1);
  ts_buf_printf(b, "asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %d;\\n\");\n",
                em->k->registers.producer);
  if (!producer || only_the_issuing_thread_acts(producer, p))
    print_idle_producers_leave(b, p, depth + 1);
  if (producer)
    ir_print_stmt_with(b, producer, depth + 1, st);
  ts_buf_indent(b, depth + 1);
  ts_buf_puts(b, "return;\n");
  ts_buf_indent(b, depth);
  ts_buf_puts(b, "}\n");
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %d;\\n\");\n",
                em->k->registers.consumer);
  /* Ping-pong's team tests hold the wgmma: threadIdx.z broadcast from
   * lane 0 is a value ptxas knows the warp agrees on (a test of
   * threadIdx.z itself it cannot prove uniform, and serializes the
   * wgmma under it, as for the role test above). */
  if (p->pingpong) {
    ts_buf_indent(b, depth);
    ts_buf_puts(b, "const int tessel_team = __shfl_sync(0xffffffffu, "
                "(int)threadIdx.z, 0);  // the consumer warpgroup\n");
    em->team_uniform = true;
  }
  if (consumer)
    ir_print_stmt_with(b, consumer, depth, st);
  em->team_uniform = false;
}

/* A TMA store of a panel of C's shared stage, or the issuing thread's
 * wait for its stores to have read shared memory (the stage may then be
 * rewritten, and the block may leave). */
static void c_tma_store(ts_buf *b, emitter *em, const ir_stmt *s, int depth) {
  em->tma_store_used = true;
  ts_buf_indent(b, depth);
  if (s->kind == S_TMA_STORE_WAIT) {
    ts_buf_puts(b, "tessel_tma_store_wait();\n");
    return;
  }
  const ir_expr *src = s->pipe.dst;
  ts_buf_puts(b, "tessel_tma_store_2d(&tmap_");
  ts_buf_c_name(b, s->pipe.src->name);
  ts_buf_puts(b, ", (int)(");
  ir_print_expr(b, s->pipe.coord[0], &em->style);
  ts_buf_puts(b, "), (int)(");
  ir_print_expr(b, s->pipe.coord[1], &em->style);
  ts_buf_puts(b, "), &");
  em->unswizzled = true; /* the panel's first element: the TMA swizzles */
  c_access(b, src->load.buf, src->load.idx, &em->style);
  em->unswizzled = false;
  ts_buf_puts(b, ");\n");
}

void c_pipe(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st) {
  emitter *em = st->ctx;
  if (s->kind == S_TMA_STORE || s->kind == S_TMA_STORE_WAIT) {
    c_tma_store(b, em, s, depth);
    return;
  }
  em->tma_used = true;
  if (s->kind == S_PIPELINE) {
    c_pipeline(b, em, s, depth);
    if (s->pipe.pipe->producer_threads)
      c_roles(b, em, s, depth, st);
    return;
  }
  ts_buf_indent(b, depth);
  if (s->kind == S_TMA) {
    const ir_expr *dst = s->pipe.dst;
    ts_buf_puts(b, s->pipe.multicast ? "tessel_tma_2d_multicast(&"
                                     : "tessel_tma_2d(&");
    em->unswizzled = true; /* the box's first element: the TMA swizzles */
    c_access(b, dst->load.buf, dst->load.idx, &em->style);
    em->unswizzled = false;
    ts_buf_puts(b, ", &tmap_");
    ts_buf_c_name(b, s->pipe.src->name); /* A, B, A_packed, B_packed */
    ts_buf_puts(b, ", (int)(");
    ir_print_expr(b, s->pipe.coord[0], &em->style);
    ts_buf_puts(b, "), (int)(");
    ir_print_expr(b, s->pipe.coord[1], &em->style);
    ts_buf_puts(b, "), ");
    barrier_ref(b, em, s, MBAR_FULL);
    ts_buf_puts(b, ");\n");
    return;
  }
  static const char *const fns[] = {"tessel_mbar_expect_tx",
                                    "tessel_mbar_arrive", "tessel_mbar_wait"};
  ts_buf_printf(b, "%s(", s->pipe.multicast ? "tessel_mbar_arrive_cluster"
                                            : fns[s->pipe.op]);
  barrier_ref(b, em, s, s->pipe.bar);
  if (s->pipe.op == MBAR_EXPECT_TX)
    ts_buf_printf(b, ", %lldu", (long long)s->pipe.pipe->bytes);
  if (s->pipe.op == MBAR_WAIT) {
    ts_buf_puts(b, ", (unsigned)(");
    ir_print_expr(b, s->pipe.parity, &em->style);
    ts_buf_puts(b, ")");
  }
  ts_buf_puts(b, ");\n");
}

/* The TMA's stores: a box of shared memory into global memory through a
 * tensor map, in a bulk group; the wait for the thread's groups to have
 * read their shared memory (their writes may still be on the way). */
static void tma_store_definitions(ts_buf *b) {
  ts_buf_puts(b,
      "__device__ __forceinline__ void tessel_tma_store_2d(const "
      "tessel_tensor_map *map, int x, int y, const void *src) {\n"
      "  asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta."
      "bulk_group [%0, {%2, %3}], [%1];\\n\" :: \"l\"(map), "
      "\"r\"(tessel_smem(src)), \"r\"(x), \"r\"(y) : \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_tma_store_wait() {\n"
      "  asm volatile(\"cp.async.bulk.commit_group;\\ncp.async.bulk."
      "wait_group.read 0;\\n\" ::: \"memory\");\n}\n");
}

/* A cluster's pieces: the barrier of every thread of the cluster (with
 * release and acquire, so the barriers' initialization before it is seen
 * by the peers after it); a box multicast into every block of the
 * cluster, at the same offset of each, completing on each block's barrier
 * at the same offset; an arrival on a barrier in every block (mapa gives
 * the peer's address of a shared variable).  Clusters of 2. */
static void cluster_definitions(ts_buf *b) {
  ts_buf_puts(b,
      "__device__ __forceinline__ void tessel_cluster_sync() {\n"
      "  asm volatile(\"barrier.cluster.arrive.release.aligned;\\n"
      "barrier.cluster.wait.acquire.aligned;\\n\" ::: \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_tma_2d_multicast(void *dst, "
      "const tessel_tensor_map *map, int x, int y, unsigned long long "
      "*bar) {\n"
      "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile."
      "mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], "
      "[%4], %5;\\n\" :: \"r\"(tessel_smem(dst)), \"l\"(map), \"r\"(x), "
      "\"r\"(y), \"r\"(tessel_smem(bar)), \"h\"((unsigned short)3) : "
      "\"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_mbar_arrive_cluster(unsigned "
      "long long *bar) {\n"
      "  for (unsigned rank = 0; rank < 2; ++rank)\n"
      "    asm volatile(\"{\\n.reg .b32 r;\\nmapa.shared::cluster.u32 r, "
      "%0, %1;\\nmbarrier.arrive.shared::cluster.b64 _, [r];\\n}\\n\" :: "
      "\"r\"(tessel_smem(bar)), \"r\"(rank) : \"memory\");\n}\n");
}

void tma_definitions(ts_buf *b, const emitter *em) {
  if (!em->tma_used && !em->tma_store_used)
    return;
  ts_buf_puts(b,
      "struct __align__(64) tessel_tensor_map { unsigned long long "
      "opaque[16]; };\n"
      "__device__ __forceinline__ unsigned tessel_smem(const void *p) {\n"
      "  return (unsigned)__cvta_generic_to_shared(p);\n}\n");
  if (em->tma_store_used)
    tma_store_definitions(b);
  if (!em->tma_used)
    return;
  ts_buf_puts(b,
      "__device__ __forceinline__ void tessel_mbar_init(unsigned long long "
      "*bar, unsigned count) {\n"
      "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: "
      "\"r\"(tessel_smem(bar)), \"r\"(count) : \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_mbar_expect_tx(unsigned long "
      "long *bar, unsigned bytes) {\n"
      "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], "
      "%1;\\n\" :: \"r\"(tessel_smem(bar)), \"r\"(bytes) : \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_mbar_arrive(unsigned long long "
      "*bar) {\n"
      "  asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\\n\" :: "
      "\"r\"(tessel_smem(bar)) : \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_mbar_wait(unsigned long long "
      "*bar, unsigned parity) {\n"
      "  unsigned done;\n"
      "  do {\n"
      "    asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity."
      "shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}\\n\" : "
      "\"=r\"(done) : \"r\"(tessel_smem(bar)), \"r\"(parity) : \"memory\");\n"
      "  } while (!done);\n}\n"
      "__device__ __forceinline__ void tessel_tma_2d(void *dst, const "
      "tessel_tensor_map *map, int x, int y, unsigned long long *bar) {\n"
      "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile."
      "mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\\n\" :: "
      "\"r\"(tessel_smem(dst)), \"l\"(map), \"r\"(x), \"r\"(y), "
      "\"r\"(tessel_smem(bar)) : \"memory\");\n}\n");
  if (em->cluster_used)
    cluster_definitions(b);
}
