/*
 * ts_tma: the TMA's copies on an mbarrier pipeline.  wgtma's lowered
 * program runs on the executor as lowered, and each mutation of it that
 * breaks the pipeline's protocol is a fault naming the buffer, the stage,
 * the phase and the thread: a consumer reading a stage without its wait
 * on the full barrier, a producer refilling a stage without its wait on
 * the empty one, an expected byte count that is not the copies', a
 * tensor map whose box is not the copy's.  The CUDA it prints has the
 * bulk tensor copies and the mbarriers.  wgws, warp-specialized, runs its
 * producer as a warpgroup of its own: the same mutations fault in that
 * thread, a consumer that skips its release leaves the producer's wait
 * on the empty barrier for ever, and its CUDA splits the roles with
 * setmaxnreg.
 */
#include "helpers.h"
#include "run_kernel.h"
#include "tiles.h"

#include <math.h>

#include "exec/check_impl.h"
#include "exec/executor.h"
#include "ir/ir.h"
#include "ir/mma.h"
#include "ir/program_ir.h"
#include "ir/visit.h"
#include "schedule/sched.h"

/* `name` (wgtma by default) at 128 x 256 x 512 in f16, NT: 8 k tiles in
 * 4 stages, so the producer refills each stage once. */
static const char *builtin = "wgtma";

static ts_program *lowered(ts_sched **s) {
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = TS_F16;
  g.layout = TS_NT;
  g.beta = 0;
  *s = ts_builtin_schedule(builtin, &g);
  ts_program *p = ts_lower(*s);
  assert_int_equal(ts_program_status(p), TS_OK);
  return p;
}

typedef struct {
  ir_stmt_kind kind;   /* the statements mutated */
  ir_mbar_op op;       /* for S_MBARRIER */
  ir_mbar_which bar;
  ir_pipeline *pipe;   /* non-NULL: every statement's pipeline made this */
} mutation;

/* Drops the matching barrier operations, or points every pipeline
 * statement at m->pipe. */
static ir_stmt *mutate(ir_mutator *mu, ir_stmt *s) {
  mutation *m = mu->ctx;
  bool pipe_stmt = s->kind == S_PIPELINE || s->kind == S_TMA ||
                   s->kind == S_MBARRIER;
  if (m->pipe && pipe_stmt) {
    ir_stmt *c = ir_mutate_stmt_children(mu, s);
    ir_stmt *n = ts_arena_alloc(mu->a, sizeof(*n));
    *n = *c;
    n->pipe.pipe = m->pipe;
    return n;
  }
  if (!m->pipe && s->kind == S_MBARRIER && s->pipe.op == m->op &&
      s->pipe.bar == m->bar)
    return ir_new_seq(mu->a, NULL, 0);
  return ir_mutate_stmt_children(mu, s);
}

static void assert_fault(mutation *m, const ir_param *params,
                         const char *const says[3]) {
  ts_sched *s;
  ts_program *p = lowered(&s);
  ir_kernel k = p->k;
  if (params)
    k.params = params;
  else {
    ir_mutator mu = {.a = &p->arena, .stmt = mutate, .ctx = m};
    k.body = ir_mutate_stmt(&mu, p->k.body);
  }
  assert_kernel_faults(p, &k, says, 3);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_consumer_reading_before_its_wait(void **state) {
  (void)state;
  mutation m = {.op = MBAR_WAIT, .bar = MBAR_FULL};
  assert_fault(&m, NULL, (const char *[]){"reads shared A.shared",
               "(stage 0) before its wait", "phase 0 of full[0]"});
}

static void test_producer_refilling_a_stage_not_released(void **state) {
  (void)state;
  mutation m = {.op = MBAR_WAIT, .bar = MBAR_EMPTY};
  assert_fault(&m, NULL, (const char *[]){"thread (0, 0, 0) writes shared "
               "A.shared, stage 0, for its fill 2 before its consumers "
               "released it", "0 phases of empty[0]", NULL});
}

static void test_wrong_expected_bytes(void **state) {
  (void)state;
  /* The stage holds 128 x 64 of A and 256 x 64 of B: 49152 bytes. */
  ir_pipeline wrong = {.id = 0, .stages = 4, .bytes = 49152 - 16,
                       .consumers = 8};
  mutation m = {.pipe = &wrong};
  assert_fault(&m, NULL, (const char *[]){"TMA copy into shared B.shared "
               "(stage 0, phase 0)", "pass what full[0] expects", NULL});
  wrong.bytes = 49152 + 16;
  assert_fault(&m, NULL, (const char *[]){"waits on full[0] of pipeline 0 "
               "for phase 0", "never completes: the copies delivered fewer "
               "bytes", NULL});
}

static void test_tensor_map_box_not_the_caches(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = lowered(&s);
  ir_param params[8];
  assert_true(p->k.nparams <= 8);
  memcpy(params, p->k.params, sizeof(ir_param) * (size_t)p->k.nparams);
  int maps = 0;
  for (int i = 0; i < p->k.nparams; i++)
    if (params[i].p.kind == TS_PARAM_TENSOR_MAP &&
        params[i].p.buffer == TS_PARAM_A) {
      params[i].p.box[1] = 64; /* the cache holds 128 rows of A */
      maps++;
    }
  assert_int_equal(maps, 1);
  ts_program_free(p);
  ts_sched_free(s);
  /* The same program lowered again, with the mutated list. */
  p = lowered(&s);
  ir_kernel k = p->k;
  for (int i = 0; i < k.nparams; i++)
    params[i].buf = k.params[i].buf;
  k.params = params;
  char *msg = run_kernel(&k, &p->def);
  assert_non_null(msg);
  if (!strstr(msg, "TMA copy into shared A.shared (stage 0): the tensor map "
              "of A moves a box of 64x64 elements, the copy 64x128"))
    fail_msg("the executor says: %s", msg);
  free(msg);
  ts_program_free(p);
  ts_sched_free(s);
}

/* The kernel's parameters end with the operands' tensor maps, and its
 * CUDA copies by cp.async.bulk.tensor on mbarriers. */
static void test_cuda_has_bulk_copies_and_mbarriers(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = lowered(&s);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  assert_non_null(strstr(src, "cp.async.bulk.tensor.2d"));
  assert_non_null(strstr(src, "mbarrier.try_wait.parity"));
  assert_non_null(strstr(src, "const __grid_constant__ tessel_tensor_map "
                              "tmap_A"));
  assert_null(strstr(src, "__syncthreads();\n          "));
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* K = 29 in f16: no row of A is 16-byte aligned, so the TMA cannot copy
 * it as it lies.  wgtma packs it first (ts_pack) and the TMA copies the
 * packed copy; B's rows (256 halves) are aligned and B is copied as it
 * lies; wg128, without the TMA, keeps cp.async on the operands as they
 * lie. */
static void test_unaligned_rows_are_packed(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 256, 29);
  g.a_type = g.b_type = TS_F16;
  const char *names[] = {"wgtma", "wg128"};
  for (int b = 0; b < 2; b++) {
    ts_sched *s = ts_builtin_schedule(names[b], &g);
    ts_program *p = ts_lower(s);
    assert_int_equal(ts_program_status(p), TS_OK);
    char *src = ts_program_cuda(p);
    assert_non_null(src);
    bool tma = b == 0;
    assert_int_equal(strstr(src, "cp.async.bulk.tensor") != NULL, tma);
    assert_int_equal(strstr(src, "cp.async.cg.shared.global") != NULL, !tma);
    assert_int_equal(p->k.packed[0] != NULL, tma);
    assert_null(p->k.packed[1]);
    free(src);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* Only the operand whose stored rows are not 16-byte aligned (36 halves,
 * 72 bytes) is packed, in every layout (A's rows are K long in NN and NT,
 * M in TN and TT; B's N in NN and TN, K in NT and TT), and each such mix
 * checks correct against the reference. */
static void test_only_the_unaligned_operand_is_packed(void **state) {
  (void)state;
  const struct {
    ts_layout layout;
    int64_t m, n, k;
    bool a, b; /* packed */
  } cases[] = {{TS_NN, 64, 64, 36, true, false},  {TS_NN, 64, 36, 64, false, true},
               {TS_NN, 64, 36, 36, true, true},   {TS_NN, 64, 64, 64, false, false},
               {TS_NT, 64, 36, 36, true, true},   {TS_NT, 40, 36, 64, false, false},
               {TS_TN, 36, 64, 64, true, false},  {TS_TN, 64, 36, 64, false, true},
               {TS_TT, 36, 64, 64, true, false},  {TS_TT, 64, 64, 36, false, true}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_gemm g = ts_gemm_make(cases[i].m, cases[i].n, cases[i].k);
    g.a_type = g.b_type = TS_F16;
    g.layout = cases[i].layout;
    ts_sched *s = ts_builtin_schedule("wgws", &g);
    ts_program *p = ts_lower(s);
    assert_int_equal(ts_program_status(p), TS_OK);
    if ((p->k.packed[0] != NULL) != cases[i].a ||
        (p->k.packed[1] != NULL) != cases[i].b)
      fail_msg("case %zu: A %spacked, B %spacked; expected A %spacked, B "
               "%spacked", i, p->k.packed[0] ? "" : "not ",
               p->k.packed[1] ? "" : "not ", cases[i].a ? "" : "not ",
               cases[i].b ? "" : "not ");
    char msg[512];
    if (ts_check(s, 3, msg, sizeof(msg)) != TS_OK)
      fail_msg("case %zu: %s", i, msg);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* pack=1 is pruned where A and B are packed anyway (the TMA on rows not
 * 16-byte aligned, both A's and B's; in tf32 also an operand stored m- or
 * n-major), so tune does not time one kernel twice; kept where it changes
 * the kernel (one operand aligned; in tf32 NN, A k-major, read as it lies
 * and truncated, which pack=1 rounds instead). */
static void test_pack_knob_pruned_where_it_changes_nothing(void **state) {
  (void)state;
  const struct {
    ts_dtype type;
    int64_t n, k;
    const char *knobs;
    bool pruned;
  } cases[] = {{TS_F32, 250, 29, "pack=1", true},
               {TS_F32, 256, 29, "pack=1", false},
               {TS_F32, 256, 64, "pack=1", false},
               {TS_F16, 250, 29, "tma=1,pack=1", true},
               {TS_F16, 256, 29, "tma=1,pack=1", false},
               {TS_F16, 250, 29, "tma=0,warpspec=0,pack=1", false},
               {TS_F16, 256, 64, "tma=1,pack=1", false}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_gemm g = ts_gemm_make(128, cases[i].n, cases[i].k);
    g.a_type = g.b_type = cases[i].type;
    if (cases[i].type == TS_F32)
      g.math = TS_MATH_TF32;
    ts_sched *s = warpgroup_at(&g, cases[i].knobs);
    if (cases[i].pruned)
      assert_non_null(strstr(ts_sched_errmsg(s), "packed anyway"));
    else if (ts_sched_status(s) != TS_OK)
      fail_msg("%s: %s", cases[i].knobs, ts_sched_errmsg(s));
    ts_sched_free(s);
  }
}

/* bm 128, bn 64, 2 stages: the tiles are 48 KiB, all a kernel may declare
 * statically, and the pipeline's 4 mbarriers (32 bytes, static) pass it,
 * so the tiles must go to dynamic shared memory (the driver refused the
 * static 49184 bytes). */
static void test_barriers_count_in_the_static_limit(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(1024, 1024, 1024);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = warpgroup_at(&g, "bm=128,bn=64,stages=2,swizzle=0,inflight=0,"
                                "tma=1,warpspec=0,persistent=0,pack=0");
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_int_equal(p->k.shared_bytes, 48 * 1024);
  assert_int_equal(p->k.barrier_bytes, 32);
  assert_int_equal(p->dynamic_shared, 48 * 1024);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  assert_non_null(strstr(src, "extern __shared__"));
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* assert_fault on wgws, the warp-specialized built-in. */
static void assert_ws_fault(mutation *m, const char *const says[3]) {
  builtin = "wgws";
  assert_fault(m, NULL, says);
  builtin = "wgtma";
}

/* The producer warpgroup is the block's third (threadIdx.y 2): its first
 * thread issues the copies and waits for the releases. */
static void test_ws_producer_refilling_a_stage_not_released(void **state) {
  (void)state;
  mutation m = {.op = MBAR_WAIT, .bar = MBAR_EMPTY};
  assert_ws_fault(&m, (const char *[]){"thread (0, 2, 0) writes shared "
                  "A.shared, stage 0, for its fill 2 before its consumers "
                  "released it", "0 phases of empty[0]", NULL});
}

static void test_ws_consumer_reading_before_its_wait(void **state) {
  (void)state;
  mutation m = {.op = MBAR_WAIT, .bar = MBAR_FULL};
  assert_ws_fault(&m, (const char *[]){"reads shared A.shared",
                  "(stage 0) before its wait", "phase 0 of full[0]"});
}

/* Consumers that never release a stage: the producer's wait for the
 * first release of stage 0 never completes, and says so. */
static void test_ws_consumer_skipping_its_release(void **state) {
  (void)state;
  mutation m = {.op = MBAR_ARRIVE, .bar = MBAR_EMPTY};
  assert_ws_fault(&m, (const char *[]){"thread (0, 2, 0) waits on empty[0] "
                  "of pipeline 0 for phase 0 (parity 0), which never "
                  "completes", "not every arrival it counts came", NULL});
}

/* The roles split once: the producer warpgroup gives registers back and
 * returns, the consumers take them; 3 warpgroups a block, one block a
 * multiprocessor: in `name`, whose pipeline has `stages` stages. */
static void assert_roles_split(const char *name, int stages) {
  builtin = name;
  ts_sched *s;
  ts_program *p = lowered(&s);
  builtin = "wgtma";
  assert_int_equal(p->k.block[0], 128);
  assert_int_equal(p->k.block[1], 3);
  assert_int_equal(p->k.consumer_threads, 256);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  assert_non_null(strstr(src, "__launch_bounds__(384, 1)"));
  const char *dec = strstr(src, "setmaxnreg.dec.sync.aligned.u32 40;");
  const char *inc = strstr(src, "setmaxnreg.inc.sync.aligned.u32 232;");
  assert_true(dec && inc && dec < inc);
  /* Only the issuing thread stays in the producer warpgroup: the others
   * leave right after setmaxnreg, before the part's loops. */
  const char *leave = strstr(dec, "threadIdx.x != 256) return;");
  const char *first_loop = strstr(dec, "for (");
  assert_true(leave && first_loop && leave < first_loop);
  const char *after_dec = strchr(dec, '\n'), *leave_line = leave;
  while (leave_line > src && leave_line[-1] != '\n')
    leave_line--;
  assert_true(after_dec && after_dec + 1 == leave_line); /* the next line */
  /* The producer's part issues copies and no wgmma; the consumers' part
   * waits on full barriers and issues no copy. */
  const char *ret = strstr(first_loop, "return;");
  assert_true(ret && ret < inc);
  char *producer = strndup(dec, (size_t)(ret - dec));
  char full_wait[64];
  snprintf(full_wait, sizeof(full_wait),
           "tessel_mbar_wait(&tessel_full0[k_outer %% %d]", stages);
  assert_non_null(strstr(producer, "tessel_tma_2d("));
  assert_non_null(strstr(producer, "tessel_mbar_wait(&tessel_empty0"));
  assert_null(strstr(producer, "wgmma"));
  assert_null(strstr(producer, "tessel_mbar_wait(&tessel_full0"));
  assert_null(strstr(inc, "tessel_tma_2d("));
  /* No role test around the consumers' wgmma, which ptxas would then
   * serialize (C7520). */
  assert_null(strstr(inc, "< 256"));
  assert_non_null(strstr(inc, full_wait));
  free(producer);
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_ws_cuda_splits_the_roles(void **state) {
  (void)state;
  assert_roles_split("wgws", 4);
  assert_roles_split("wgskinny", 6);
  assert_roles_split("wgstore", 4);
}

/* The producer's prologue of fills, `if (thread == 256) { ... }`, made
 * unconditional: a fill every producer thread would issue. */
static ir_stmt *unguard_fills(ir_mutator *mu, ir_stmt *s) {
  bool *done = mu->ctx;
  const ir_expr *c = s->kind == S_IF ? s->if_.cond : NULL;
  if (!*done && c && c->kind == E_EQ && c->op.b->kind == E_INT &&
      c->op.b->ival == 256 && !s->if_.else_) {
    *done = true;
    return s->if_.then_;
  }
  return ir_mutate_stmt_children(mu, s);
}

/* Only where every effect of the producer's part is the issuing thread's
 * do the warpgroup's other threads leave early: a part with a fill outside
 * that test (which lowering never builds) keeps them all, as the executor
 * runs it. */
static void test_ws_producer_threads_stay_for_unguarded_work(void **state) {
  (void)state;
  builtin = "wgws";
  ts_sched *s;
  ts_program *p = lowered(&s);
  builtin = "wgtma";
  char *src = ts_program_cuda(p);
  assert_non_null(strstr(src, "threadIdx.x != 256) return;"));
  free(src);
  bool done = false;
  ir_mutator mu = {.a = &p->arena, .stmt = unguard_fills, .ctx = &done};
  p->k.body = ir_mutate_stmt(&mu, p->k.body);
  assert_true(done);
  src = ts_program_cuda(p);
  assert_non_null(src);
  assert_non_null(strstr(src, "setmaxnreg.dec.sync.aligned.u32 40;"));
  assert_null(strstr(src, "threadIdx.x != 256) return;"));
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* wgws and wgskinny against the reference in every layout and 16-bit
 * type, at shapes where they are warp-specialized (rows 16-byte aligned)
 * and where they pack first (odd sizes); wgskinny also where a block's k
 * loop is shorter than its 6 stages (K 200: 4 k tiles). */
static void test_ws_checks_in_every_layout(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{136, 264, 200}, {37, 53, 29}, {1, 1, 1}};
  const ts_dtype types[] = {TS_F16, TS_BF16};
  const char *const names[] = {"wgws", "wgskinny"};
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++)
      for (int t = 0; t < 2; t++)
        for (int l = TS_NN; l <= TS_TT; l++) {
          ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
          g.a_type = g.b_type = types[t];
          g.layout = (ts_layout)l;
          ts_sched *s = ts_builtin_schedule(names[b], &g);
          char msg[1024];
          if (ts_check(s, 3, msg, sizeof(msg)) != TS_OK)
            fail_msg("%s %lldx%lldx%lld layout %d type %d: %s", names[b],
                     (long long)g.m, (long long)g.n, (long long)g.k, l, t,
                     msg);
          ts_sched_free(s);
        }
}

/* ts_warp_specialize on `name`'s cache of A with `warps`: the status,
 * and the message in msg. */
static ts_status specialize(const char *name, int warps, char *msg,
                            size_t n) {
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule(name, &g);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_stage *a = NULL;
  for (int i = 0; i < s->nstages; i++)
    if (!strcmp(s->stages[i]->name, "A.shared"))
      a = s->stages[i];
  assert_non_null(a);
  ts_warp_specialize(s, a, warps);
  ts_status st = ts_sched_status(s);
  snprintf(msg, n, "%s", ts_sched_errmsg(s));
  ts_sched_free(s);
  return st;
}

static void test_ws_needs_the_tma(void **state) {
  (void)state;
  char msg[1024];
  assert_int_equal(specialize("wg128", 4, msg, sizeof(msg)),
                   TS_ERR_BAD_ARG);
  assert_non_null(strstr(msg, "ts_warp_specialize: \"A.shared\" is not "
                              "filled by the TMA"));
}

static void test_ws_needs_a_warpgroup(void **state) {
  (void)state;
  char msg[1024];
  assert_int_equal(specialize("wgtma", 2, msg, sizeof(msg)),
                   TS_ERR_BAD_ARG);
  assert_non_null(strstr(msg, "argument 3 'producer_warps' must be 4 "
                              "(got 2)"));
}

static void test_ws_twice(void **state) {
  (void)state;
  char msg[1024];
  assert_int_equal(specialize("wgtma", 4, msg, sizeof(msg)), TS_OK);
  assert_int_equal(specialize("wgws", 4, msg, sizeof(msg)),
                   TS_ERR_STAGE_USED);
  assert_non_null(strstr(msg, "already has 4 producer warps"));
}

/* wgtma's tiles at 128 x 256 x 512 in f16, NT, by hand: `stages` stages
 * filled by the TMA, `batches` of wgmma in flight; lowering's status and
 * message. */
static ts_status lower_in_flight(int stages, int batches, char *msg,
                                 size_t n) {
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = TS_F16;
  g.layout = TS_NT;
  ts_loop *ko;
  ts_sched *s = tma_tiles(&g, 2, 256, stages, false, &ko);
  ts_wgmma_in_flight(s, ko, batches);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return lowering_says(s, msg, n);
}

/* A TMA pipeline with wgmma batches in flight needs batches + 2 stages,
 * as a cp.async one does: with 2 stages and 2 batches the producer's
 * refill of a tile waited for that very tile's consumers (the fuzzer's
 * case 0x563ff8dd48414b9e, a deadlock on the full barrier). */
static void test_in_flight_needs_the_stages(void **state) {
  (void)state;
  char msg[1024];
  assert_int_equal(lower_in_flight(2, 2, msg, sizeof(msg)), TS_ERR_BAD_ARG);
  assert_non_null(strstr(msg, "keeps 2 wgmma batches in flight, so its "
                              "pipeline needs 4 stages or more"));
  assert_int_equal(lower_in_flight(4, 2, msg, sizeof(msg)), TS_OK);
}

/* ---- tf32: the TMA copies ts_pack's copies in the workspace ------------- */

/* `name` in tf32 at m x n x k in layout l, lowered. */
static ts_program *lowered_tf32(const char *name, int64_t m, int64_t n,
                                int64_t k, ts_layout l, ts_sched **s) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.math = TS_MATH_TF32;
  g.layout = l;
  *s = ts_builtin_schedule(name, &g);
  ts_program *p = ts_lower(*s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("%s in tf32 at %lldx%lldx%lld: %s", name, (long long)m,
             (long long)n, (long long)k, ts_program_errmsg(p));
  return p;
}

/* The schedule's kernel has a tensor map of each packed operand: the
 * workspace at the view's offset, K elements (not the padded row) by M
 * or N rows 16-byte-padded K apart, fp32, boxes of 32 x bm or bn. */
static void assert_workspace_maps(const ts_program *p) {
  const ts_gemm *g = &p->def;
  int64_t row = (g->k + 3) / 4 * 4, box_rows[2] = {128, 256};
  int maps = 0;
  for (int i = 0; i < p->k.nparams; i++) {
    const ir_param *ip = &p->k.params[i];
    if (ip->p.kind != TS_PARAM_TENSOR_MAP)
      continue;
    int w = ip->buf == p->k.packed[1];
    assert_true(ip->buf == p->k.packed[w] && ip->buf);
    assert_int_equal(ip->p.buffer, TS_PARAM_WORKSPACE);
    assert_int_equal(ip->p.offset, p->k.packed[w]->workspace_offset);
    assert_int_equal(ip->p.dtype, TS_F32);
    assert_int_equal(ip->p.dims[0], g->k);
    assert_int_equal(ip->p.dims[1], w ? g->n : g->m);
    assert_int_equal(ip->p.row_bytes, row * 4);
    assert_int_equal(ip->p.box[0], 32);
    assert_int_equal(ip->p.box[1], box_rows[w]);
    maps |= 1 << w;
  }
  assert_int_equal(maps, 3);
  assert_true(p->k.packed[1]->workspace_offset >=
              ir_buffer_bytes(p->k.packed[0]));
}

/* wgtma and wgws in tf32 copy both packed operands by the TMA, and check
 * against the reference in every layout, at shapes of one element and of
 * odd K (rows padded past it: the map's zeros, not the padding, fill the
 * last k tile), where no row of A or B is 16-byte aligned and both are
 * packed. */
static void test_tf32_packed_operands_in_every_layout(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{1, 1, 1}, {37, 53, 29}, {1, 135, 203}};
  const char *const names[] = {"wgtma", "wgws"};
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_sched *s;
        ts_program *p = lowered_tf32(names[b], shapes[i][0], shapes[i][1],
                                     shapes[i][2], (ts_layout)l, &s);
        assert_workspace_maps(p);
        char msg[1024];
        if (ts_check(s, 5, msg, sizeof(msg)) != TS_OK)
          fail_msg("%s tf32 %lldx%lldx%lld layout %d: %s", names[b],
                   (long long)shapes[i][0], (long long)shapes[i][1],
                   (long long)shapes[i][2], l, msg);
        ts_program_free(p);
        ts_sched_free(s);
      }
}

/* Whether the rows of operand A (else B) as it lies are 16-byte aligned
 * in tf32: the TMA copies it as it lies. */
static bool tf32_rows_aligned(const ts_gemm *g, bool a) {
  bool t = a ? g->layout == TS_TN || g->layout == TS_TT
             : g->layout == TS_NT || g->layout == TS_TT;
  int64_t row = a ? (t ? g->m : g->k) : (t ? g->k : g->n);
  return row % 4 == 0;
}

/* wgtma, wgws and wgpers in tf32 pack an operand only where its rows are
 * not 16-byte aligned, and B in TN, where both lie m- or n-major: wgmma
 * reads tf32 from shared memory k-major only, and takes its a from
 * registers in any layout (A in TT; B on C's transpose in NN).  Each
 * checks against the reference (which bounds each truncated product by
 * 2^-9 of itself) at odd M and N in every layout. */
static void test_tf32_k_major_operands_read_as_they_lie(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{1, 1, 4}, {37, 53, 36}, {136, 264, 200}};
  const char *const names[] = {"wgtma", "wgws", "wgpers"};
  for (int b = 0; b < 3; b++)
    for (int i = 0; i < 3; i++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_sched *s;
        ts_program *p = lowered_tf32(names[b], shapes[i][0], shapes[i][1],
                                     shapes[i][2], (ts_layout)l, &s);
        bool pack_a = !tf32_rows_aligned(&p->def, true);
        bool pack_b = !tf32_rows_aligned(&p->def, false) || l == TS_TN;
        if ((p->k.packed[0] != NULL) != pack_a ||
            (p->k.packed[1] != NULL) != pack_b)
          fail_msg("%s tf32 %s: A %spacked, B %spacked", names[b],
                   ts_layout_name((ts_layout)l), p->k.packed[0] ? "" : "not ",
                   p->k.packed[1] ? "" : "not ");
        char msg[1024];
        if (ts_check(s, 7, msg, sizeof(msg)) != TS_OK)
          fail_msg("%s tf32 %lldx%lldx%lld %s: %s", names[b],
                   (long long)shapes[i][0], (long long)shapes[i][1],
                   (long long)shapes[i][2], ts_layout_name((ts_layout)l),
                   msg);
        ts_program_free(p);
        ts_sched_free(s);
      }
}

/* C of a 1 x 1 x 4 GEMM of A = (x, 0, 0, 0) and B = (1, 0, 0, 0) on the
 * executor: x as the program's tensor cores read it. */
static float tf32_of(ts_sched *s, float x) {
  ts_program *p = ts_lower(s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("%s", ts_program_errmsg(p));
  float A[4] = {x, 0, 0, 0}, B[4] = {1, 0, 0, 0}, C[1] = {0};
  char msg[512];
  if (ts_program_execute(p, A, B, C, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s", msg);
  ts_program_free(p);
  return C[0];
}

/* 1 + 3 x 2^-12 lies between tf32's 1 and 1 + 2^-10, past the halfway
 * point: rounded to nearest it is 1 + 2^-10, truncated 1.  wgws and wg128
 * read A as it lies in NN and NT (truncated, as wgmma does); pack=1
 * rounds it in the packing kernel first; tc128's mma.sync rounds it in
 * registers (cvt.rna). */
static void test_tf32_unpacked_operand_truncated(void **state) {
  (void)state;
  const float x = 1.0f + 3 * 0x1p-12f, rounded = 1.0f + 0x1p-10f;
  assert_true(mma_round_tf32(x) == rounded && mma_truncate_tf32(x) == 1.0f);
  for (int l = TS_NN; l <= TS_NT; l++) {
    ts_gemm g = ts_gemm_make(1, 1, 4);
    g.math = TS_MATH_TF32;
    g.layout = (ts_layout)l;
    const char *const truncating[] = {"wgws", "wg128", "wgpers"};
    for (int b = 0; b < 3; b++) {
      ts_sched *s = ts_builtin_schedule(truncating[b], &g);
      float c = tf32_of(s, x);
      if (c != 1.0f)
        fail_msg("%s %s: C = %.9g, not 1 (x truncated)", truncating[b],
                 ts_layout_name(g.layout), (double)c);
      ts_sched_free(s);
    }
    ts_sched *s = warpgroup_at(&g, "pack=1");
    assert_true(tf32_of(s, x) == rounded);
    ts_sched_free(s);
    s = ts_builtin_schedule("tc128", &g);
    assert_true(tf32_of(s, x) == rounded);
    ts_sched_free(s);
  }
}

/* The reference check's bound on an element covers truncation: with every
 * element of A and B 1 + 2^-10 - 2^-23, which wgmma reads as 1, each
 * product is short by almost 2^-9 of itself, all the same way, twice
 * what two rounded inputs could be off (2^-10), and within the bound for
 * two truncated ones; rounded by pack=1 they are within 2^-10. */
static void test_tolerance_covers_truncated_inputs(void **state) {
  (void)state;
  const float x = 1.0f + 0x1p-10f - 0x1p-23f;
  ts_gemm g = ts_gemm_make(37, 53, 64);
  g.math = TS_MATH_TF32;
  g.layout = TS_NT;
  float *A = malloc(sizeof(float) * 37 * 64), *B = malloc(sizeof(float) * 53 * 64);
  float *C = calloc(37 * 53, sizeof(float));
  assert_true(A && B && C);
  for (int i = 0; i < 37 * 64; i++)
    A[i] = x;
  for (int i = 0; i < 53 * 64; i++)
    B[i] = x;
  for (int packed = 0; packed < 2; packed++) {
    ts_sched *s = packed ? warpgroup_at(&g, "pack=1")
                         : ts_builtin_schedule("wgws", &g);
    ts_program *p = ts_lower(s);
    assert_int_equal(ts_program_status(p), TS_OK);
    assert_true((p->k.packed[0] != NULL) == packed);
    char msg[512];
    if (ts_program_execute(p, A, B, C, msg, sizeof(msg)) != TS_OK)
      fail_msg("%s", msg);
    double want = 64.0 * x * x, scale = want;
    double err = fabs(C[0] - want);
    for (int e = 1; e < 37 * 53; e++)
      assert_true(C[e] == C[0]);
    assert_true(err <= check_element_tolerance(p, 64, want, scale));
    if (packed)
      assert_true(err <= 0x1p-10 * scale);
    else
      assert_true(err > 1.99 * 0x1p-10 * scale);
    ts_program_free(p);
    ts_sched_free(s);
  }
  free(A);
  free(B);
  free(C);
}

/* wgws's CUDA in tf32 at 256 x 256 x 100 in layout l; its kernels'
 * count into *kernels. */
static char *wgws_tf32_cuda(ts_layout l, int *kernels) {
  ts_sched *s;
  ts_program *p = lowered_tf32("wgws", 256, 256, 100, l, &s);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  *kernels = p->nkernels;
  ts_program_free(p);
  ts_sched_free(s);
  return src;
}

/* wgws's CUDA in tf32: the bulk tensor copies, issued by a producer
 * warpgroup (setmaxnreg), no cp.async; in NN (K 100: rows of 400 bytes)
 * and NT from both as they lie: one kernel, nothing rounded; in NN B's
 * tile in panels of 32 columns, read into registers as wgmma's a (C's
 * transpose), in TN B's packed copy. */
static void test_tf32_cuda_copies_by_the_tma(void **state) {
  (void)state;
  int kernels;
  char *src = wgws_tf32_cuda(TS_NN, &kernels);
  assert_non_null(strstr(src, "cp.async.bulk.tensor.2d"));
  assert_non_null(strstr(src, "setmaxnreg.dec.sync.aligned.u32 40;"));
  assert_non_null(strstr(src, "tessel_tma_2d(&A_shared[0][0][0], &tmap_A, "
                              "(int)(0)"));
  assert_non_null(strstr(src, "tessel_tma_2d(&B_shared[0][(32) / 32][0]"
                              "[(32) % 32], &tmap_B, (int)(j_outer*128 + "
                              "32), (int)(0)"));
  assert_non_null(strstr(src, "tessel_wgmma_m64n256k8_tf32_rk("));
  assert_null(strstr(src, "_packed"));
  assert_null(strstr(src, "cp.async.cg.shared.global"));
  assert_int_equal(kernels, 1);
  free(src);
  src = wgws_tf32_cuda(TS_TN, &kernels);
  assert_non_null(strstr(src, "tessel_tma_2d(&B_shared[0][0][0], "
                              "&tmap_B_packed, (int)(0)"));
  assert_null(strstr(src, "tmap_A_packed"));
  assert_int_equal(kernels, 2);
  free(src);
  src = wgws_tf32_cuda(TS_NT, &kernels);
  assert_non_null(strstr(src, "tessel_tma_2d(&B_shared[0][0][0], &tmap_B, "
                              "(int)(0)"));
  assert_null(strstr(src, "_packed"));
  assert_null(strstr(src, "tessel_round_tf32"));
  assert_int_equal(kernels, 1);
  free(src);
}

/* What the executor says of wgws's program in tf32 at 37x53x29 (K padded
 * to 32 in the workspace) with the schedule kernel's map of operand w
 * changed by `change`; NULL when it runs without a fault. */
static char *run_tf32_with_map(int w, void (*change)(ts_param *)) {
  ts_sched *s;
  ts_program *p = lowered_tf32("wgws", 37, 53, 29, TS_NN, &s);
  ir_param params[8];
  assert_true(p->k.nparams <= 8);
  memcpy(params, p->k.params, sizeof(ir_param) * (size_t)p->k.nparams);
  for (int i = 0; i < p->k.nparams; i++)
    if (params[i].p.kind == TS_PARAM_TENSOR_MAP &&
        params[i].buf == p->k.packed[w])
      change(&params[i].p);
  ir_kernel k = p->k;
  k.params = params;
  const ir_kernel *ks[3];
  int n = 0;
  for (int i = 0; i < p->nkernels; i++)
    ks[n++] = p->order[i] == &p->k ? &k : p->order[i];
  const ts_gemm *g = &p->def;
  float *A = calloc((size_t)(g->m * g->k), sizeof(float));
  float *B = calloc((size_t)(g->k * g->n), sizeof(float));
  float *C = calloc((size_t)(g->m * g->n), sizeof(float));
  assert_true(A && B && C);
  char msg[1024];
  bool ok = ir_execute_kernels(ks, n, A, B, C, false, msg, sizeof(msg));
  free(A);
  free(B);
  free(C);
  ts_program_free(p);
  ts_sched_free(s);
  return ok ? NULL : strdup(msg);
}

static void keep(ts_param *m) { (void)m; }
static void padded_k(ts_param *m) { m->dims[0] = m->row_bytes / 4; }
static void workspace_start(ts_param *m) { m->offset = 0; }

/* A map as wide as the padded rows reads the padding, which the pack
 * never writes; a map of B at the workspace's start points at A's copy. */
static void test_tf32_map_must_be_the_view(void **state) {
  (void)state;
  assert_null(run_tf32_with_map(0, keep));
  char *msg = run_tf32_with_map(0, padded_k);
  assert_non_null(msg);
  if (!strstr(msg, "read of global A.packed at element 29, which nothing "
              "wrote"))
    fail_msg("the executor says: %s", msg);
  free(msg);
  msg = run_tf32_with_map(1, workspace_start);
  assert_non_null(msg);
  if (!strstr(msg, "the tensor map of B.packed points at W + 0 bytes, not "
              "at B.packed in the workspace"))
    fail_msg("the executor says: %s", msg);
  free(msg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_consumer_reading_before_its_wait),
      cmocka_unit_test(test_producer_refilling_a_stage_not_released),
      cmocka_unit_test(test_wrong_expected_bytes),
      cmocka_unit_test(test_tensor_map_box_not_the_caches),
      cmocka_unit_test(test_cuda_has_bulk_copies_and_mbarriers),
      cmocka_unit_test(test_unaligned_rows_are_packed),
      cmocka_unit_test(test_only_the_unaligned_operand_is_packed),
      cmocka_unit_test(test_barriers_count_in_the_static_limit),
      cmocka_unit_test(test_pack_knob_pruned_where_it_changes_nothing),
      cmocka_unit_test(test_ws_producer_refilling_a_stage_not_released),
      cmocka_unit_test(test_ws_consumer_reading_before_its_wait),
      cmocka_unit_test(test_ws_consumer_skipping_its_release),
      cmocka_unit_test(test_ws_cuda_splits_the_roles),
      cmocka_unit_test(test_ws_producer_threads_stay_for_unguarded_work),
      cmocka_unit_test(test_ws_checks_in_every_layout),
      cmocka_unit_test(test_ws_needs_the_tma),
      cmocka_unit_test(test_ws_needs_a_warpgroup),
      cmocka_unit_test(test_ws_twice),
      cmocka_unit_test(test_in_flight_needs_the_stages),
      cmocka_unit_test(test_tf32_packed_operands_in_every_layout),
      cmocka_unit_test(test_tf32_k_major_operands_read_as_they_lie),
      cmocka_unit_test(test_tf32_unpacked_operand_truncated),
      cmocka_unit_test(test_tolerance_covers_truncated_inputs),
      cmocka_unit_test(test_tf32_cuda_copies_by_the_tma),
      cmocka_unit_test(test_tf32_map_must_be_the_view),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
