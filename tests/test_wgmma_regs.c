/*
 * wgmma on C's transpose and with its a from registers: ts_tensorize(s,
 * jj, ii, kk) puts the instruction's m on C's columns (a from op(B), b
 * from op(A)), and a tf32 a that lies m- or n-major is loaded by the
 * lanes into registers.  Schedules checked on the reference executor
 * against a plain GEMM at odd shapes in every layout and type; the
 * executor catching a register written while its instruction runs and
 * one never filled; lowering's refusals; the register form in the CUDA.
 */
#include "helpers.h"
#include "tiles.h"

#include "exec/executor.h"
#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"
#include "lower/lower.h"

typedef struct {
  bool unroll;   /* the k steps of a k tile unrolled */
  int in_flight; /* ts_wgmma_in_flight's batches at the k tile loop */
  int stages;    /* the caches pipelined (cp.async), or 0 */
} transpose_opts;

/* Blocks of 128 x 128 of C, two warpgroups on 64 columns each by all 128
 * rows: the instruction m64n128 on C's transpose, k tiles of 128 bytes. */
static ts_sched *transposed(const ts_gemm *g, const transpose_opts *o) {
  ts_sched *s = ts_matmul_named(g, "wgt");
  int64_t size = ts_dtype_size(g->a_type);
  ts_loop *io, *ii, *jo, *jr, *wg, *jj, *ko, *ki, *kq, *kk;
  ts_stage *st[2];
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 64, &wg, &jj);
  ts_split(s, ts_get_loop(s, "k"), 128 / size, &ko, &ki);
  ts_split(s, ki, size == 4 ? 8 : 16, &kq, &kk);
  ts_reorder(s, 8, (ts_loop *[]){io, jo, wg, ko, kq, jj, ii, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  for (int w = 0; w < 2; w++) {
    ts_cache_read(s, w ? "B" : "A", TS_SHARED, ko, &st[w]);
    ts_storage_swizzle(s, st[w]);
    if (o->stages) {
      ts_loop *outer, *lanes;
      ts_split(s, ts_stage_axis(st[w], ts_stage_contiguous(st[w])),
               16 / size, &outer, &lanes);
      ts_vectorize(s, lanes);
      ts_pipeline(s, st[w], o->stages);
    }
  }
  if (o->unroll)
    ts_unroll(s, kq);
  assert_int_equal(ts_tensorize(s, jj, ii, kk), TS_OK);
  if (o->in_flight)
    ts_wgmma_in_flight(s, ko, o->in_flight);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

static ts_gemm def_of(int64_t m, int64_t n, int64_t k, ts_dtype t,
                      ts_layout l) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = t;
  if (t == TS_F32)
    g.math = TS_MATH_TF32;
  g.layout = l;
  g.alpha = 1.5f;
  g.beta = 0.5f;
  return g;
}

static const transpose_opts plain = {true, 0, 0};
static const transpose_opts piped = {true, 0, 3};

/* C's transpose in f16 and bf16 (a, op(B)'s tile, n-major by descriptor;
 * b, op(A)'s, k-major) and tf32 (a in registers), plain copies and a
 * cp.async pipeline, every layout, odd shapes, alpha and beta. */
static void test_transpose_correct_in_every_type_and_layout(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{67, 45, 70}, {1, 1, 1},
                                      {130, 129, 200}};
  static const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int t = 0; t < 3; t++)
    for (int l = TS_NN; l <= TS_TT; l++)
      for (int z = 0; z < 3; z++)
        for (int o = 0; o < 2; o++) {
          ts_gemm g = def_of(shapes[z][0], shapes[z][1], shapes[z][2],
                             types[t], (ts_layout)l);
          ts_sched *s = transposed(&g, o ? &piped : &plain);
          assert_checks(s, 3 + (uint64_t)z);
          char *ir = ts_print_ir(s);
          const char *form = types[t] == TS_F32
                                 ? "(a in registers, b k-major)"
                                 : "(a m-major, b k-major)";
          if (!strstr(ir, form))
            fail_msg("type %d layout %d: no \"%s\" in\n%s", t, l, form, ir);
          free(ir);
          ts_sched_free(s);
        }
}

/* The transpose replays from its trace: the loops in the order given. */
static void test_transpose_replays(void **state) {
  (void)state;
  ts_gemm g = def_of(128, 128, 64, TS_F32, TS_NN);
  ts_sched *s = transposed(&g, &plain);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_tensorize(s, j_inner_inner, "
                                "i_inner, k_inner_inner);"));
  free(trace);
  assert_replays(s);
  ts_sched_free(s);
}

/* ---- The executor's faults ---------------------------------------------------- */

typedef enum { REFILL_AFTER_ISSUE, REWRITE_SAME, NEVER_FILLED } mutation;

/* After each wgmma reading a from registers, a store into its first
 * register, of 0.25 (REFILL_AFTER_ISSUE) or of the value it holds
 * (REWRITE_SAME: the hardware's registers may be read at any time until
 * the wait, so rewriting a value unchanged is a hazard too); or every
 * store into the registers dropped (NEVER_FILLED). */
static ir_stmt *mutate(ir_mutator *m, ir_stmt *s) {
  const mutation *how = m->ctx;
  if (*how != NEVER_FILLED && s->kind == S_WGMMA && ir_wgmma_a_regs(s)) {
    const ir_expr *src = s->wgmma.src[0];
    ir_expr *value = *how == REWRITE_SAME
                         ? ir_load(m->a, src->load.buf, src->load.idx)
                         : ir_float(m->a, 0.25f);
    ir_stmt *items[2] = {s, ir_new_store(m->a, src->load.buf, src->load.idx,
                                         value)};
    return ir_new_seq(m->a, items, 2);
  }
  if (*how == NEVER_FILLED && s->kind == S_STORE && s->store.buf->async_read)
    return ir_new_seq(m->a, NULL, 0);
  return ir_mutate_stmt_children(m, s);
}

/* What the executor says of tf32 NN on C's transpose at 128 x 128 x 64
 * mutated by `how`; it runs without a fault as lowered. */
static char *fault_of(mutation how) {
  ts_gemm g = def_of(128, 128, 64, TS_F32, TS_NN);
  g.beta = 0;
  ts_sched *s = transposed(&g, &plain);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  float *A = calloc(128 * 64, sizeof(float)), *B = calloc(64 * 128, 4);
  float *C = calloc(128 * 128, sizeof(float));
  assert_true(A && B && C);
  for (int i = 0; i < 128 * 64; i++) {
    A[i] = (float)(i % 7) - 3;
    B[i] = (float)(i % 5) - 2;
  }
  char msg[1024];
  if (!ir_execute(&p->k, A, B, C, false, msg, sizeof(msg)))
    fail_msg("as lowered: %s", msg);
  ir_mutator m = {.a = &p->arena, .stmt = mutate, .ctx = &how};
  ir_kernel k = p->k;
  k.body = ir_mutate_stmt(&m, p->k.body);
  assert_non_null(k.body);
  bool ok = ir_execute(&k, A, B, C, false, msg, sizeof(msg));
  free(A);
  free(B);
  free(C);
  ts_program_free(p);
  ts_sched_free(s);
  return ok ? NULL : strdup(msg);
}

static void test_executor_catches_a_register_written_while_read(void **st) {
  (void)st;
  for (mutation how = REFILL_AFTER_ISSUE; how <= REWRITE_SAME; how++) {
    char *msg = fault_of(how);
    assert_non_null(msg);
    if (!strstr(msg, "register 0 of lane 0's a_frag (row 0, column 0 of "
                     "the a tile) was written after the wgmma that reads it "
                     "was issued") ||
        !strstr(msg, "retired by wgmma.wait_group 0"))
      fail_msg("mutation %d: the executor says: %s", (int)how, msg);
    free(msg);
  }
}

static void test_executor_catches_registers_never_filled(void **state) {
  (void)state;
  char *msg = fault_of(NEVER_FILLED);
  assert_non_null(msg);
  if (!strstr(msg, "read of local a_frag at element 0, which nothing "
                   "wrote"))
    fail_msg("the executor says: %s", msg);
  free(msg);
}

/* ---- Where the fill goes ------------------------------------------------------ */

/* Two instructions a k step on C's transpose, side by side along C's rows
 * (an unrolled loop over i's two tiles of 64, which a, from op(B), does
 * not use): one fill of a's registers serves both, so it comes before
 * that loop, not inside it, where each iteration would refill registers
 * the other's instruction reads.  Correct, and the fill before the loop
 * in the CUDA. */
static void test_fill_outside_loops_a_does_not_use(void **state) {
  (void)state;
  ts_gemm g = def_of(150, 100, 70, TS_F32, TS_NN);
  ts_sched *s = ts_matmul_named(&g, "wgt2");
  ts_loop *io, *ir, *ni, *ii, *jo, *jr, *wg, *jj, *ko, *ki, *kq, *kk;
  ts_stage *st[2];
  ts_split(s, ts_get_loop(s, "i"), 128, &io, &ir);
  ts_split(s, ir, 64, &ni, &ii);
  ts_split(s, ts_get_loop(s, "j"), 128, &jo, &jr);
  ts_split(s, jr, 64, &wg, &jj);
  ts_split(s, ts_get_loop(s, "k"), 32, &ko, &ki);
  ts_split(s, ki, 8, &kq, &kk);
  ts_reorder(s, 9, (ts_loop *[]){io, jo, wg, ko, kq, ni, jj, ii, kk});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, wg, TS_THREAD_Y);
  for (int w = 0; w < 2; w++) {
    ts_cache_read(s, w ? "B" : "A", TS_SHARED, ko, &st[w]);
    ts_storage_swizzle(s, st[w]);
  }
  ts_unroll(s, kq);
  ts_unroll(s, ni);
  assert_int_equal(ts_tensorize(s, jj, ii, kk), TS_OK);
  assert_checks(s, 11);
  char *src = ts_cuda_source(s);
  assert_non_null(src);
  const char *fill = strstr(src, "a_frag[k_inner_outer][3] = B_shared[");
  assert_non_null(fill);
  const char *loop = strstr(fill, "for (int i_inner_outer = 0;");
  const char *mma = strstr(fill, "tessel_wgmma_m64n64k8_tf32_rk(");
  assert_true(loop && mma && loop < mma);
  free(src);
  ts_sched_free(s);
}

/* The warpgroup space's first configuration in tf32 NN is wgws's tiling
 * on C's transpose (as `tessel show warpgroup --dtype tf32` and --tuned
 * without a record take it), its blocks in launch order, and its
 * inflight=0 and 2 and swizzle=0, the same kernel there, are pruned. */
static void test_space_takes_the_register_form(void **state) {
  (void)state;
  ts_gemm g = def_of(256, 256, 64, TS_F32, TS_NN);
  ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &g, NULL);
  assert_int_equal(ts_sched_status(s), TS_OK);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "(a in registers, b k-major)"));
  free(ir);
  char *trace = ts_print_trace(s);
  assert_null(strstr(trace, "ts_swizzle("));
  free(trace);
  ts_sched_free(s);
  const char *const pruned[3][2] = {
      {"inflight=0", "the kernel of inflight=1"},
      {"inflight=2", "the kernel of inflight=1"},
      {"swizzle=0", "the kernel of swizzle=8"}};
  for (int i = 0; i < 3; i++) {
    s = warpgroup_at(&g, pruned[i][0]);
    assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
    assert_non_null(strstr(ts_sched_errmsg(s), pruned[i][1]));
    ts_sched_free(s);
  }
}

/* ---- Lowering's refusals --------------------------------------------------------- */

static void assert_lowering_refuses(const transpose_opts *o,
                                    const char *says) {
  ts_gemm g = def_of(128, 128, 128, TS_F32, TS_NN);
  ts_sched *s = transposed(&g, o);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_TENSORIZE);
  if (!strstr(ts_program_errmsg(p), says))
    fail_msg("\"%s\" does not say \"%s\"", ts_program_errmsg(p), says);
  ts_program_free(p);
  ts_sched_free(s);
}

/* A batch left in flight would read registers the next k tile refills;
 * k steps not unrolled would refill them inside the batch. */
static void test_register_form_refusals(void **state) {
  (void)state;
  assert_lowering_refuses(&(transpose_opts){true, 1, 4},
                          "B.shared (op(B), its operand a) from registers, "
                          "since it lies n-major");
  assert_lowering_refuses(&(transpose_opts){true, 1, 4},
                          "drop ts_wgmma_in_flight");
  assert_lowering_refuses(&(transpose_opts){false, 0, 0},
                          "loop \"k.inner.outer\" refills wgmma's register "
                          "operand a_frag inside a batch");
}

/* The verifier passes the kernel as lowered and refuses a register
 * operand without room for a lane's 4 registers. */
static bool find_wgmma(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_WGMMA)
    *(const ir_stmt **)v->ctx = s;
  return true;
}

static void test_verifier_checks_the_registers(void **state) {
  (void)state;
  ts_gemm g = def_of(128, 128, 64, TS_F32, TS_NN);
  ts_sched *s = transposed(&g, &plain);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_null(lower_verify(&p->arena, &p->k));
  const ir_stmt *mma = NULL;
  ir_visitor v = {.stmt = find_wgmma, .ctx = &mma};
  ir_visit_stmt(&v, p->k.body);
  assert_non_null(mma);
  ir_expr *const *idx = mma->wgmma.src[0]->load.idx;
  ir_expr *last = idx[mma->wgmma.src[0]->load.buf->ndim - 1];
  last->ival = 1;
  const char *why = lower_verify(&p->arena, &p->k);
  last->ival = 0;
  assert_non_null(why);
  assert_non_null(strstr(why, "wgmma register operand"));
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- The CUDA --------------------------------------------------------------------- */

/* The register form's helper, its 4 registers in braces before b's
 * descriptor; each k step's fill, then a fence, then its instruction;
 * C stored from the transposed accumulators 4 bytes at a time. */
static void test_register_form_in_the_cuda(void **state) {
  (void)state;
  ts_gemm g = def_of(256, 256, 64, TS_F32, TS_NN);
  ts_sched *s = transposed(&g, &piped);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  assert_non_null(strstr(src, "wgmma.mma_async.sync.aligned.m64n128k8.f32."
                              "tf32.tf32 {%0,"));
  assert_non_null(strstr(src, "%63}, {%64, %65, %66, %67}, %68, p, 1, 1;"));
  assert_non_null(strstr(src, "\"r\"(__float_as_uint(a[3])), \"l\"(b));"));
  assert_non_null(strstr(src, "tessel_wgmma_m64n128k8_tf32_rk(&acc["));
  const char *fill = strstr(src, "a_frag[k_inner_outer][3] = B_shared[");
  assert_non_null(fill);
  const char *fence = strstr(fill, "wgmma.fence.sync.aligned");
  const char *mma = strstr(fill, "tessel_wgmma_m64n128k8_tf32_rk(");
  assert_true(fence && mma && fence < mma);
  assert_null(strstr(fill + 1, "a_frag[k_inner_outer][3] = B_shared["));
  assert_null(strstr(src, "float2"));
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transpose_correct_in_every_type_and_layout),
      cmocka_unit_test(test_transpose_replays),
      cmocka_unit_test(test_executor_catches_a_register_written_while_read),
      cmocka_unit_test(test_executor_catches_registers_never_filled),
      cmocka_unit_test(test_fill_outside_loops_a_does_not_use),
      cmocka_unit_test(test_space_takes_the_register_form),
      cmocka_unit_test(test_register_form_refusals),
      cmocka_unit_test(test_verifier_checks_the_registers),
      cmocka_unit_test(test_register_form_in_the_cuda),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
