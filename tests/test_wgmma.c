/*
 * wgmma: ts_tensorize over 64 x n x 16 tiles in fp16 and bf16.  The
 * descriptors' canonical layouts against the caches' swizzled storage
 * element by element (what the hardware reads is what the executor
 * reads); warpgroup schedules checked on the reference executor against a
 * plain GEMM at odd shapes in every layout, with the accumulators' lane
 * layout followed; batches left in flight across k tiles, with the
 * executor catching a copy into a tile a running batch reads; and
 * lowering's refusals, with what they say.
 */
#include "helpers.h"
#include "run_kernel.h"
#include "tiles.h"

#include <math.h>

#include "exec/executor.h"
#include "ir/ir.h"
#include "ir/mma.h"
#include "ir/program_ir.h"
#include "ir/visit.h"
#include "lower/lower.h"
#include "base/random.h"

/* ---- Descriptors and the swizzled caches ------------------------------------ */

/* A shared f16 cache of rows x cols elements, swizzled as
 * ts_storage_swizzle leaves it. */
static ir_buffer swizzled(int64_t rows, int64_t cols) {
  ir_buffer b = {.name = "S", .scope = SCOPE_SHARED, .dtype = TS_F16,
                 .ndim = 2, .shape = {rows, cols}};
  ir_buffer_set_layout(&b, (int[]){0, 1}, 0);
  b.swizzle = 8;
  return b;
}

/* Element (r, c)'s byte address in the cache as stored. */
static int64_t stored(const ir_buffer *b, int64_t r, int64_t c) {
  return 2 * ir_swizzle_offset(b, r * b->strides[0] + c);
}

/* Element (r, c)'s byte address with the chunk swizzle left out: what
 * codegen gives a descriptor as its start. */
static int64_t unswizzled(const ir_buffer *b, int64_t r, int64_t c) {
  int64_t cols = b->shape[1], rows = b->shape[0];
  int64_t panel = cols > 64 ? 64 : cols;
  return 2 * ((c / panel) * rows * panel + r * panel + c % panel);
}

/* k-major: a's rows are m, 64 k to a row (one panel), sbo 8 rows. */
static void test_k_major_descriptor_reads_the_cache(void **state) {
  (void)state;
  ir_buffer b = swizzled(128, 64);
  for (int64_t m0 = 0; m0 < 128; m0 += 64)
    for (int64_t k0 = 0; k0 < 64; k0 += 16) {
      mma_desc d = {.start = unswizzled(&b, m0, k0), .lbo = 16, .sbo = 1024,
                    .size = 2};
      for (int m = 0; m < 64; m++)
        for (int k = 0; k < 16; k++)
          assert_int_equal(mma_desc_address(&d, m, k),
                           stored(&b, m0 + m, k0 + k));
    }
}

/* mn-major: b's rows are k, stored in 128-byte panels of 64 n; lbo steps
 * a panel (its rows times 128 bytes), sbo 8 rows of k. */
static void test_mn_major_descriptor_reads_the_panels(void **state) {
  (void)state;
  const int64_t widths[] = {64, 128, 256};
  for (int w = 0; w < 3; w++) {
    ir_buffer b = swizzled(64, widths[w]);
    for (int64_t k0 = 0; k0 < 64; k0 += 16) {
      mma_desc d = {.start = unswizzled(&b, k0, 0), .lbo = 64 * 128,
                    .sbo = 1024, .mn_major = true, .size = 2};
      for (int n = 0; n < widths[w]; n++)
        for (int k = 0; k < 16; k++)
          assert_int_equal(mma_desc_address(&d, n, k),
                           stored(&b, k0 + k, n));
    }
  }
}

/* A descriptor with the wrong stride reads other bytes: the comparison
 * above can fail. */
static void test_a_wrong_stride_reads_elsewhere(void **state) {
  (void)state;
  ir_buffer b = swizzled(64, 128);
  mma_desc d = {.start = 0, .lbo = 1024, .sbo = 64 * 128, .mn_major = true,
                .size = 2};
  int differ = 0;
  for (int n = 0; n < 128; n++)
    for (int k = 0; k < 16; k++)
      differ += mma_desc_address(&d, n, k) != stored(&b, k, n);
  assert_true(differ > 0);
}

/* ---- Schedules ---------------------------------------------------------------- */

typedef struct {
  int64_t bm, bn, bk;
  bool swizzle_a, swizzle_b, cache_b;
  int stages;    /* ts_pipeline's, or 0: caches filled by plain copies */
  int in_flight; /* ts_wgmma_in_flight's batches at the k tile loop */
} wg_shape;

/* A pipelined cache copied 8 halves (16 bytes, one cp.async) at a time. */
static void pipeline(ts_sched *s, ts_stage *st, int stages) {
  ts_loop *outer, *lanes;
  ts_split(s, ts_stage_axis(st, ts_stage_contiguous(st)), 8, &outer, &lanes);
  ts_vectorize(s, lanes);
  assert_int_equal(ts_pipeline(s, st, stages), TS_OK);
}

/* bm x bn block tiles of warpgroups of 64 x bn, k in bk (16 a step), A
 * and B cached in shared memory above the k loop, pipelined in `stages`
 * and with `in_flight` batches running on where asked. */
static ts_sched *warpgroups(const ts_gemm *g, const wg_shape *w) {
  ts_sched *s = ts_matmul_named(g, "wg");
  ts_loop *io, *ir, *wg, *ii, *jo, *jj, *ko, *ki, *kq, *kk;
  ts_stage *as, *bs;
  ts_split(s, ts_get_loop(s, "i"), w->bm, &io, &ir);
  ts_split(s, ir, 64, &wg, &ii);
  ts_split(s, ts_get_loop(s, "j"), w->bn, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), w->bk, &ko, &ki);
  ts_split(s, ki, 16, &kq, &kk);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, wg, ko, kq, ii, jj, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  if (w->swizzle_a)
    ts_storage_swizzle(s, as);
  if (w->cache_b) {
    ts_cache_read(s, "B", TS_SHARED, ko, &bs);
    if (w->swizzle_b)
      ts_storage_swizzle(s, bs);
    if (w->stages)
      pipeline(s, bs, w->stages);
  }
  if (w->stages)
    pipeline(s, as, w->stages);
  assert_int_equal(ts_tensorize(s, ii, jj, kk), TS_OK);
  if (w->in_flight)
    assert_int_equal(ts_wgmma_in_flight(s, ko, w->in_flight), TS_OK);
  return s;
}

static const wg_shape whole = {128, 128, 64, true, true, true, 0, 0};
/* As wg128: 4 stages, a batch left running into the next k tile. */
static const wg_shape flying = {128, 128, 64, true, true, true, 4, 1};
/* Two batches in flight, in the fewest stages that allow them. */
static const wg_shape flying2 = {128, 128, 64, true, true, true, 4, 2};

static void test_correct_in_every_type_layout_and_shape(void **state) {
  (void)state;
  static const ts_layout layouts[] = {TS_NN, TS_NT, TS_TN, TS_TT};
  static const int64_t shapes[][3] = {
      {67, 45, 70}, {1, 1, 1}, {130, 129, 200}, {128, 128, 64}};
  static const ts_dtype types[] = {TS_F16, TS_BF16};
  for (int t = 0; t < 2; t++)
    for (int l = 0; l < 4; l++)
      for (int z = 0; z < 4; z++) {
        ts_gemm g = ts_gemm_make(shapes[z][0], shapes[z][1], shapes[z][2]);
        g.a_type = g.b_type = types[t];
        g.layout = layouts[l];
        g.alpha = 1.5f;
        g.beta = 0.5f;
        for (int f = 0; f < 3; f++) {
          const wg_shape *w[3] = {&whole, &flying, &flying2};
          ts_sched *s = warpgroups(&g, w[f]);
          assert_checks(s, 17 + (uint64_t)z);
          ts_sched_free(s);
        }
      }
}

/* The lowered nest: 128 lanes on threadIdx.x, one wgmma a k step, the
 * batch fenced, committed and waited for, and an sm_90a program. */
static void test_lanes_batches_and_arch(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = warpgroups(&g, &whole);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  char *ir = ts_program_ir(p);
  assert_non_null(strstr(ir, "for lane in 0..128 bound to threadIdx.x"));
  assert_non_null(strstr(ir, "wgmma.m64n128k16.f16 acc[0, 0, 0:+64]"));
  assert_non_null(strstr(ir, "(a k-major, b n-major)"));
  char *fence = strstr(ir, "wgmma.fence"), *mma = strstr(ir, "wgmma.m64"),
       *wait = strstr(ir, "wgmma.commit; wgmma.wait 0");
  assert_true(fence && mma && wait && fence < mma && mma < wait);
  assert_int_equal(ts_program_min_arch(p), 90);
  assert_true(ts_program_arch_specific(p));
  char *cu = ts_program_cuda(p);
  assert_non_null(strstr(cu, "wgmma.mma_async.sync.aligned.m64n128k16"
                             ".f32.f16.f16"));
  assert_non_null(strstr(cu, "__align__(1024)"));
  /* Every tile whole: neighbouring lanes exchange registers and store 4
   * columns of C each, 16 bytes (lower_exchange.c). */
  assert_non_null(strstr(cu, "*reinterpret_cast<float4 *>(&C["));
  assert_non_null(strstr(cu, "tessel_pair_pick("));
  free(cu);
  free(ir);
  ts_program_free(p);
  ts_sched_free(s);
}

/* The descriptors lowering prints: a's k-major (sbo 8 rows of 128 bytes),
 * b's mn-major with lbo a panel of the tile's k rows, as the layout tests
 * above require; and the k tiles of two panels correct on the executor. */
static void test_descriptors_follow_the_tiles(void **state) {
  (void)state;
  const int64_t bks[] = {64, 128}, bns[] = {64, 128, 256};
  for (int k = 0; k < 2; k++)
    for (int n = 0; n < 3; n++) {
      ts_gemm g = ts_gemm_make(128, bns[n], 256);
      g.a_type = g.b_type = TS_F16;
      wg_shape w = {128, bns[n], bks[k], true, true, true, 0, 0};
      ts_sched *s = warpgroups(&g, &w);
      char *cu = ts_cuda_source(s);
      char want[64];
      snprintf(want, sizeof(want), "], %lld, 1024)",
               (long long)(bks[k] * 128));
      assert_non_null(strstr(cu, "], 16, 1024)")); /* a: lbo unused */
      if (!strstr(cu, want))
        fail_msg("bk %lld, bn %lld: no descriptor \"%s\"",
                 (long long)bks[k], (long long)bns[n], want);
      free(cu);
      assert_checks(s, 3);
      ts_sched_free(s);
    }
}

/* ---- Batches in flight ---------------------------------------------------------- */

/* With a batch in flight, a k tile's copies go one tile later (tile
 * ko + 2 into the 4 stages, not ko + 3), the copy groups waited for to
 * one pending, the batch to one pending inside the loop and to none
 * after it. */
static void test_in_flight_lowering(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 1024);
  g.a_type = g.b_type = TS_F16;
  for (int f = 0; f < 2; f++) {
    ts_sched *s = warpgroups(&g, f ? &flying : &(wg_shape){128, 128, 64, true,
                                                         true, true, 4, 0});
    ts_program *p = ts_lower(s);
    char *ir = ts_program_ir(p);
    assert_non_null(ir);
    const char *ahead = f ? "if k.outer + 2 < 16:" : "if k.outer + 3 < 16:";
    const char *copies = f ? "cp.async.wait 1" : "cp.async.wait 2";
    const char *batch = f ? "wgmma.commit; wgmma.wait 1"
                          : "wgmma.commit; wgmma.wait 0";
    if (!strstr(ir, ahead) || !strstr(ir, copies) || !strstr(ir, batch))
      fail_msg("in flight %d: \"%s\", \"%s\" or \"%s\" missing from\n%s", f,
               ahead, copies, batch, ir);
    char *last = strstr(ir, "wgmma.commit; wgmma.wait 0");
    char *epilogue = strstr(ir, ") = pair_pick(");
    assert_true(last && epilogue && last < epilogue);
    free(ir);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* Every wait of kind from_to[2] (wgmma's or cp.async's) for from_to[0]
 * pending made one for from_to[1]. */
static ir_stmt *retarget_wait(ir_mutator *m, ir_stmt *s) {
  const int *from_to = m->ctx;
  if (s->kind != (ir_stmt_kind)from_to[2] || s->wait.pending != from_to[0])
    return ir_mutate_stmt_children(m, s);
  return s->kind == S_WGMMA_SYNC
             ? ir_new_wgmma_sync(m->a, from_to[1], s->wait.acc)
             : ir_new_async_wait(m->a, from_to[1]);
}

/* What the executor says of p's kernel with its waits of `kind` for
 * `from` pending made waits for `to`; NULL when it runs without a fault. */
static char *fault_with(ts_program *p, ir_stmt_kind kind, int from, int to) {
  int from_to[3] = {from, to, (int)kind};
  ir_mutator m = {.a = &p->arena, .stmt = retarget_wait, .ctx = from_to};
  ir_kernel k = p->k;
  k.body = ir_mutate_stmt(&m, p->k.body);
  assert_non_null(k.body);
  assert_true(k.body != p->k.body);
  return run_kernel(&k, &p->def);
}

/* The schedule w at 128 x 128 x K in f16, lowered: it runs on the
 * executor with its `same` waits of `kind` left alone (rewritten to
 * themselves), and with its `from` waits made `to` faults saying each of
 * `says` and not `never` (NULL: nothing excluded). */
static void assert_mutant_faults(int64_t k, const wg_shape *w,
                                 ir_stmt_kind kind, int same, int from,
                                 int to, const char *const says[2],
                                 const char *never) {
  ts_gemm g = ts_gemm_make(128, 128, k);
  g.a_type = g.b_type = TS_F16;
  g.beta = 0;
  ts_sched *s = warpgroups(&g, w);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_null(fault_with(p, kind, same, same));
  char *msg = fault_with(p, kind, from, to);
  assert_non_null(msg);
  if (!strstr(msg, says[0]) || (says[1] && !strstr(msg, says[1])) ||
      (never && strstr(msg, never)))
    fail_msg("the executor says: %s", msg);
  free(msg);
  ts_program_free(p);
  ts_sched_free(s);
}

/* A batch left in flight while the pipeline still copies 3 tiles ahead
 * into 4 stages: the next tile's copy lands in the tile the running batch
 * reads, and the executor, which reads a batch's tiles again when it
 * retires, finds the copy in flight there. */
static void test_executor_catches_a_copy_under_a_running_batch(void **state) {
  (void)state;
  assert_mutant_faults(512, &(wg_shape){128, 128, 64, true, true, true, 4, 0},
                       S_WGMMA_SYNC, 0, 0, 1,
                       (const char *[2]){"retired by wgmma.wait_group 1",
                                         "before its cp.async landed"},
                       NULL);
}

/* With a batch in flight, the copy groups waited for one tile short
 * (cp.async.wait 2 where the pipeline needs 1): each batch is issued on a
 * tile still in flight, a fault at its issue, before any wait could land
 * the tile and hide it. */
static void test_executor_catches_a_batch_on_a_tile_in_flight(void **state) {
  (void)state;
  assert_mutant_faults(512, &flying, S_ASYNC_WAIT, 1, 1, 2,
                       (const char *[2]){"read of shared A.shared",
                                         "before its cp.async landed"},
                       "retired");
}

/* The last batch never waited for (the wait after the loop, which
 * follows an empty commit, made to keep 2 batches): a fault when the
 * scope of the tiles it reads ends, not a silent result without it. */
static void test_executor_catches_a_batch_never_waited_for(void **state) {
  (void)state;
  assert_mutant_faults(256, &flying, S_WGMMA_SYNC, 1, 0, 2,
                       (const char *[2]){"(batch 3) is still in flight at "
                                         "the end of A.shared's scope",
                                         NULL},
                       NULL);
}

static void assert_refused(const wg_shape *w, ts_status want,
                           const char *says) {
  ts_gemm g = ts_gemm_make(128, 128, 128);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = warpgroups(&g, w);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), want);
  if (!strstr(ts_program_errmsg(p), says))
    fail_msg("\"%s\" does not say \"%s\"", ts_program_errmsg(p), says);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_in_flight_refusals(void **state) {
  (void)state;
  /* Lowering: 2 stages leave no copy ahead of the batch's tile; plain
   * copies cannot wait for a batch. */
  assert_refused(&(wg_shape){128, 128, 64, true, true, true, 2, 1},
                 TS_ERR_BAD_ARG, "needs 3 stages or more");
  assert_refused(&(wg_shape){128, 128, 64, true, true, true, 0, 1},
                 TS_ERR_BAD_ARG, "no caches are pipelined at it");
  /* A k loop without wgmma, in fp32. */
  ts_gemm g = ts_gemm_make(128, 128, 64);
  ts_sched *s = ts_matmul_named(&g, "plain");
  assert_int_equal(ts_wgmma_in_flight(s, ts_get_loop(s, "k"), 1), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_program_errmsg(p), "its body has no wgmma"));
  ts_program_free(p);
  ts_sched_free(s);
  /* The primitive: a k loop, 0..6 batches. */
  s = ts_matmul_named(&g, "plain");
  assert_refused_with(s, ts_wgmma_in_flight(s, ts_get_loop(s, "k"), 7),
                      TS_ERR_BAD_ARG, "must be in 0..6 (got 7)");
  s = ts_matmul_named(&g, "plain");
  assert_refused_with(s, ts_wgmma_in_flight(s, ts_get_loop(s, "i"), 1),
                      TS_ERR_BAD_ARG, "is a spatial loop");
  /* Caches pipelined at an inner k loop, not at the marked one. */
  g = ts_gemm_make(128, 128, 512);
  g.a_type = g.b_type = TS_F16;
  s = ts_matmul_named(&g, "wg");
  ts_loop *io, *ir, *wg, *ii, *jo, *jj, *k2, *ki, *ko, *kt, *kq, *kk;
  ts_stage *as, *bs;
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 64, &wg, &ii);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), 256, &k2, &ki);
  ts_split(s, ki, 64, &ko, &kt);
  ts_split(s, kt, 16, &kq, &kk);
  ts_reorder(s, 9, (ts_loop *[]){io, jo, wg, k2, ko, kq, ii, jj, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_swizzle(s, as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_storage_swizzle(s, bs);
  pipeline(s, as, 4);
  pipeline(s, bs, 4);
  assert_int_equal(ts_tensorize(s, ii, jj, kk), TS_OK);
  assert_int_equal(ts_wgmma_in_flight(s, k2, 1), TS_OK);
  p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_program_errmsg(p), "loop \"k.outer\" keeps 1 "
                         "wgmma batch in flight"));
  assert_non_null(strstr(ts_program_errmsg(p), "no caches are pipelined at "
                         "it"));
  ts_program_free(p);
  /* The mark is the last primitive on its loop. */
  assert_refused_with(s, ts_split(s, k2, 2, &ko, &kt), TS_ERR_ALREADY_BOUND,
                      "keeps wgmma batches in flight; call "
                      "ts_wgmma_in_flight after every other primitive");
  /* Replayed from its trace. */
  g.a_type = g.b_type = TS_F16;
  s = warpgroups(&g, &flying);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_wgmma_in_flight(s, k_outer, 1);"));
  free(trace);
  assert_replays(s);
  ts_sched_free(s);
}

/* The verifier passes the kernel as lowered, and refuses it for blocks of
 * partial warpgroups, for an architecture other than sm_90a, and with a
 * wgmma reading a tile not swizzled for its descriptors. */
static bool find_wgmma(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_WGMMA)
    *(const ir_stmt **)v->ctx = s;
  return true;
}

static void test_verifier_checks_wgmma(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 128, 256);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = warpgroups(&g, &flying);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_null(lower_verify(&p->arena, &p->k));
  ir_kernel k = p->k;
  k.block[0] = 96; /* 2 x 96 threads: a warpgroup and a half */
  assert_non_null(strstr(lower_verify(&p->arena, &k),
                         "in a kernel of partial warpgroups:"));
  k = p->k;
  k.arch_specific = false;
  assert_non_null(strstr(lower_verify(&p->arena, &k),
                         "in a kernel not built for sm_90a:"));
  const ir_stmt *mma = NULL;
  ir_visitor v = {.stmt = find_wgmma, .ctx = &mma};
  ir_visit_stmt(&v, p->k.body);
  assert_non_null(mma);
  ir_buffer *b = mma->wgmma.src[1]->load.buf;
  b->swizzle = 0;
  const char *why = lower_verify(&p->arena, &p->k);
  b->swizzle = 8;
  assert_non_null(why);
  assert_non_null(strstr(why, "swizzled in 128-byte rows: \"B.shared\""));
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- Refusals ------------------------------------------------------------------ */

static void test_refuses_operands_it_cannot_describe(void **state) {
  (void)state;
  assert_refused(&(wg_shape){128, 128, 64, false, true, true, 0, 0},
                 TS_ERR_BAD_TENSORIZE, "not swizzled in 128-byte rows");
  assert_refused(&(wg_shape){128, 128, 64, true, true, false, 0, 0},
                 TS_ERR_BAD_TENSORIZE,
                 "it is not in shared memory: cache it with TS_SHARED");
  /* B n-major in 32-element tiles: rows of 64 bytes, swizzled in 4
   * chunks, not the 8 of a descriptor's 128-byte rows. */
  assert_refused(&(wg_shape){128, 32, 64, true, true, true, 0, 0},
                 TS_ERR_BAD_TENSORIZE,
                 "with a tile of 64 or more elements");
}

/* B mn-major in a 128-wide cache, its instruction 32 wide (m64n32k16):
 * the second tile starts at column 32, inside a 128-byte row, where no
 * descriptor starts. */
static void test_refuses_a_tile_narrower_than_the_row(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 128, 128);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_matmul_named(&g, "wg");
  ts_loop *io, *ir, *wg, *ii, *jo, *jr, *jw, *jj, *ko, *ki, *kq, *kk;
  ts_stage *as, *bs;
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 64, &wg, &ii);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 32, &jw, &jj);
  ts_split(s, ts_get_loop(s, "k"), 64, &ko, &ki);
  ts_split(s, ki, 16, &kq, &kk);
  ts_reorder(s, 9, (ts_loop *[]){io, jo, wg, ko, kq, jw, ii, jj, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_swizzle(s, as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_storage_swizzle(s, bs);
  assert_int_equal(ts_tensorize(s, ii, jj, kk), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_TENSORIZE);
  assert_non_null(strstr(ts_program_errmsg(p), "B.shared (op(B), its operand b)"));
  assert_non_null(strstr(ts_program_errmsg(p), "multiples of 64 elements "
                                               "along its contiguous"));
  ts_program_free(p);
  ts_sched_free(s);
}

/* In every layout each operand's tile lies as the operand lies in memory,
 * so every copy into it is one 16-byte cp.async: no scalar store into a
 * tile (8 of them a 16-byte row, as B's tile had in NT, A's in TN). */
static void test_every_layout_copies_16_bytes(void **state) {
  (void)state;
  static const ts_dtype types[] = {TS_F16, TS_BF16};
  for (int t = 0; t < 2; t++)
    for (int l = 0; l < 4; l++) {
      ts_gemm g = ts_gemm_make(4096, 4096, 4096);
      g.layout = (ts_layout)l;
      g.a_type = g.b_type = types[t];
      ts_sched *s = ts_builtin_schedule("wg128", &g);
      char *cu = ts_cuda_source(s);
      assert_non_null(cu);
      for (const char *line = cu; line; line = strchr(line, '\n')) {
        while (*line == '\n' || *line == ' ')
          line++;
        if (strncmp(line, "A_shared[", 9) == 0 ||
            strncmp(line, "B_shared[", 9) == 0)
          fail_msg("wg128 %s %s: a scalar store into a shared tile: %.60s",
                   ts_dtype_name(types[t]), ts_layout_name(g.layout), line);
      }
      const char *at = cu;
      int copies = 0;
      while ((at = strstr(at, "tessel_cp_async16(&"))) {
        copies++;
        at++;
      }
      assert_true(copies >= 2); /* A's and B's */
      free(cu);
      ts_sched_free(s);
    }
}

/* wg128 in tf32 against the reference at odd shapes in every layout,
 * alpha and beta included: NT reads both operands k-major as they lie
 * (truncated); TT takes A, m-major, from registers; NN computes C's
 * transpose, B, n-major, from registers; TN packs B (rounded) and takes
 * A from registers.  Every form m64n256k8, with no batch in flight where
 * a is in registers. */
static void test_tf32_correct_in_every_layout(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{67, 45, 70}, {1, 1, 1},
                                      {130, 129, 200}};
  static const char *const forms[4] = {
      "(a in registers, b k-major)", "(a k-major, b k-major)",
      "(a in registers, b k-major)", "(a in registers, b k-major)"};
  for (int l = TS_NN; l <= TS_TT; l++)
    for (int z = 0; z < 3; z++) {
      ts_gemm g = ts_gemm_make(shapes[z][0], shapes[z][1], shapes[z][2]);
      g.math = TS_MATH_TF32;
      g.layout = (ts_layout)l;
      g.alpha = 1.5f;
      g.beta = 0.5f;
      ts_sched *s = ts_builtin_schedule("wg128", &g);
      assert_checks(s, 5 + (uint64_t)z);
      char *ir = ts_print_ir(s);
      assert_non_null(strstr(ir, "wgmma.m64n256k8.tf32"));
      if (!strstr(ir, forms[l]))
        fail_msg("layout %d: no \"%s\" in\n%s", l, forms[l], ir);
      if (g.k > 32) /* more than one k tile: a loop to leave batches in */
        assert_true((strstr(ir, "wgmma.commit; wgmma.wait 1") != NULL) ==
                    (l == TS_NT));
      free(ir);
      ts_program *p = ts_lower(s);
      assert_int_equal(ts_program_status(p), TS_OK);
      assert_true((p->pack[1].body != NULL) == (l == TS_TN));
      assert_null(p->pack[0].body);
      ts_program_free(p);
      ts_sched_free(s);
    }
}

/* The packing kernels' rounding is what makes wgmma's truncation exact:
 * the program's C is the fp32 sum of the products of A and B rounded to
 * tf32 (to fp32's accumulation error, far below tf32's); without the
 * rounding it is the sum of the truncated products, as the hardware reads
 * fp32 operands, and misses the rounded one by tf32's error. */
static ir_expr *unrounded(ir_mutator *m, ir_expr *e) {
  return e->kind == E_ROUND_TF32 ? e->op.a : ir_mutate_expr_children(m, e);
}

/* The largest |C - the GEMM of the inputs as `as_tf32` makes them| over
 * the tolerance of an fp32 sum of K products. */
static double tf32_gemm_error(const ts_program *p, const float *A,
                              const float *B, float (*as_tf32)(float)) {
  const ts_gemm *g = ts_program_gemm(p);
  float *C = calloc((size_t)(g->m * g->n), sizeof(float));
  char msg[512];
  assert_int_equal(ts_program_execute(p, A, B, C, msg, sizeof(msg)), TS_OK);
  double worst = 0;
  for (int64_t i = 0; i < g->m; i++)
    for (int64_t j = 0; j < g->n; j++) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < g->k; k++) {
        double x = (double)as_tf32(A[i * g->k + k]) *
                   as_tf32(B[k * g->n + j]);
        sum += x;
        mag += fabs(x);
      }
      double err = fabs(C[i * g->n + j] - sum) / ((g->k + 4) * 0x1p-24 * mag);
      worst = err > worst ? err : worst;
    }
  free(C);
  return worst;
}

static void test_tf32_needs_the_packs_rounding(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 256, 300);
  g.math = TS_MATH_TF32;
  /* wg128's tiling with both operands packed (wg128 itself reads A, k-major
   * in NN, as it lies). */
  ts_sched *s = warpgroup_at(&g, "swizzle=0,tma=0,warpspec=0,pack=1");
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_program *p = ts_lower(s);
  float *A = malloc(sizeof(float) * 64 * 300);
  float *B = malloc(sizeof(float) * 300 * 256);
  uint64_t seed = 5;
  ts_fill_random(A, 64 * 300, &seed);
  ts_fill_random(B, 300 * 256, &seed);
  assert_true(tf32_gemm_error(p, A, B, mma_round_tf32) <= 1.0);
  ir_mutator m = {.a = &p->arena, .expr = unrounded};
  for (int w = 0; w < 2; w++)
    p->pack[w].body = ir_mutate_stmt(&m, p->pack[w].body);
  assert_true(tf32_gemm_error(p, A, B, mma_truncate_tf32) <= 1.0);
  assert_true(tf32_gemm_error(p, A, B, mma_round_tf32) > 1.0);
  free(A);
  free(B);
  ts_program_free(p);
  ts_sched_free(s);
}

/* tf32 64 x 64 x 8 tiles of warpgroups, A and B packed or not, B's tile
 * stored k-major or not. */
static ts_sched *tf32_warpgroups(bool pack_a, bool pack_b, bool b_k_major) {
  ts_gemm g = ts_gemm_make(128, 128, 128);
  g.math = TS_MATH_TF32;
  ts_sched *s = ts_matmul_named(&g, "wg");
  if (pack_a)
    ts_pack(s, "A");
  if (pack_b)
    ts_pack(s, "B");
  ts_loop *io, *ii, *jo, *jj, *ko, *ki, *kq, *kk;
  ts_stage *as, *bs;
  ts_split(s, ts_get_loop(s, "i"), 64, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 64, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), 32, &ko, &ki);
  ts_split(s, ki, 8, &kq, &kk);
  ts_reorder(s, 7, (ts_loop *[]){io, jo, ko, kq, ii, jj, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_swizzle(s, as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  if (b_k_major)
    ts_storage_transpose(s, bs);
  ts_storage_swizzle(s, bs);
  assert_int_equal(ts_tensorize(s, ii, jj, kk), TS_OK);
  return s;
}

/* wgmma takes tf32 operands k-major only: a tile stored mn-major is
 * refused, naming the operand and the primitives that fix it (an
 * unpacked one: ts_pack, which lays it k-major, or ts_storage_transpose;
 * a packed one: ts_storage_transpose).  A k-major tile is taken packed
 * (rounded) or not (read as it lies, truncated), and checks. */
static void test_tf32_refusals(void **state) {
  (void)state;
  const struct {
    bool a, b, k_major;
    const char *operand, *why, *not_why;
  } cases[] = {
      {true, false, false, "B.shared (op(B), its operand b)",
       "wgmma takes tf32 operands k-major only: pack op(B) first "
       "(ts_pack(s, \"B\"), before ts_cache_read), which lays it k-major "
       "and rounds it to tf32, or store its tile transposed "
       "(ts_storage_transpose", NULL},
      {true, true, false, "B.shared (op(B), its operand b)",
       "wgmma takes tf32 operands k-major only: store its tile transposed "
       "(ts_storage_transpose", "ts_pack"},
  };
  for (int i = 0; i < 2; i++) {
    ts_sched *s = tf32_warpgroups(cases[i].a, cases[i].b, cases[i].k_major);
    ts_program *p = ts_lower(s);
    assert_int_equal(ts_program_status(p), TS_ERR_BAD_TENSORIZE);
    const char *msg = ts_program_errmsg(p);
    if (!strstr(msg, cases[i].operand) || !strstr(msg, cases[i].why) ||
        (cases[i].not_why && strstr(msg, cases[i].not_why)))
      fail_msg("case %d: %s", i, msg);
    ts_program_free(p);
    ts_sched_free(s);
  }
  const bool accepted[][3] = {{true, true, true}, {false, true, true},
                              {true, false, true}, {false, false, true}};
  for (int i = 0; i < 4; i++) {
    ts_sched *s = tf32_warpgroups(accepted[i][0], accepted[i][1],
                                  accepted[i][2]);
    assert_checks(s, 9);
    ts_sched_free(s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_k_major_descriptor_reads_the_cache),
      cmocka_unit_test(test_mn_major_descriptor_reads_the_panels),
      cmocka_unit_test(test_a_wrong_stride_reads_elsewhere),
      cmocka_unit_test(test_correct_in_every_type_layout_and_shape),
      cmocka_unit_test(test_lanes_batches_and_arch),
      cmocka_unit_test(test_descriptors_follow_the_tiles),
      cmocka_unit_test(test_in_flight_lowering),
      cmocka_unit_test(test_executor_catches_a_copy_under_a_running_batch),
      cmocka_unit_test(test_executor_catches_a_batch_on_a_tile_in_flight),
      cmocka_unit_test(test_executor_catches_a_batch_never_waited_for),
      cmocka_unit_test(test_in_flight_refusals),
      cmocka_unit_test(test_every_layout_copies_16_bytes),
      cmocka_unit_test(test_verifier_checks_wgmma),
      cmocka_unit_test(test_refuses_operands_it_cannot_describe),
      cmocka_unit_test(test_refuses_a_tile_narrower_than_the_row),
      cmocka_unit_test(test_tf32_correct_in_every_layout),
      cmocka_unit_test(test_tf32_needs_the_packs_rounding),
      cmocka_unit_test(test_tf32_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
