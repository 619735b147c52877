/*
 * wgmma's epilogue with neighbouring lanes' registers exchanged
 * (src/lower/lower_exchange.c): made where every tile is whole, stored 4
 * elements a lane (8 bytes of a 16-bit C, 16 of fp32), correct on the
 * reference executor in every layout with alpha and beta; not made where
 * a guard could leave a lane out; and the executor's fault when a lane of
 * the warp does not take part in the shuffle.
 */
#include "helpers.h"

#include "exec/executor.h"

#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"

static ts_gemm gemm(int64_t m, int64_t n, int64_t k, ts_layout l,
                    ts_dtype in, ts_dtype c) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.layout = l;
  g.a_type = g.b_type = in;
  g.c_type = c;
  return g;
}

/* Whether `name` at g exchanges registers (its CUDA calls the pick), after
 * checking it against the plain C GEMM on the reference executor. */
static bool exchanges(const char *name, ts_gemm g) {
  ts_sched *s = ts_builtin_schedule(name, &g);
  char msg[1024];
  if (ts_check(s, 7, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s at %lldx%lldx%lld: %s", name, (long long)g.m,
             (long long)g.n, (long long)g.k, msg);
  ts_program *p = ts_lower(s);
  char *cuda = ts_program_cuda(p);
  assert_non_null(cuda);
  bool picks = strstr(cuda, "tessel_pair_pick(") != NULL;
  if (picks) /* 4 elements: one 8- or 16-byte store */
    assert_non_null(strstr(cuda, g.c_type == TS_F16    ? "tessel_f16x4"
                                 : g.c_type == TS_BF16 ? "tessel_bf16x4"
                                                       : "float4"));
  free(cuda);
  ts_program_free(p);
  ts_sched_free(s);
  return picks;
}

static void test_exchanged_in_every_layout_and_c_type(void **state) {
  (void)state;
  const char *names[] = {"wg128", "wgws", "wgpers"};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int b = 0; b < 3; b++)
    for (int t = 0; t < 3; t++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_gemm g = gemm(256, 512, 64, (ts_layout)l, types[t] == TS_F32
                         ? TS_F16 : types[t], types[t]);
        g.alpha = 1.5f;
        g.beta = l == TS_TT && types[t] != TS_F32 ? -0.5f : 0.0f;
        assert_true(exchanges(names[b], g));
      }
}

/* A tile cut by M or N keeps its guards, which could leave a lane out of
 * the shuffle; an fp32 C read for beta would hold 8 values more a lane in
 * its quads (spills where the registers are capped). */
static void test_exchange_only_where_it_applies(void **state) {
  (void)state;
  assert_false(exchanges("wgws", gemm(255, 512, 64, TS_NT, TS_F16, TS_F16)));
  assert_false(exchanges("wgws", gemm(256, 500, 64, TS_NN, TS_F16, TS_F16)));
  assert_false(exchanges("wgws", gemm(37, 53, 29, TS_TT, TS_BF16, TS_BF16)));
  assert_false(exchanges("wgws", gemm(999, 1001, 64, TS_NT, TS_F16, TS_F32)));
  ts_gemm beta = gemm(256, 512, 64, TS_NT, TS_F16, TS_F32);
  beta.beta = 0.5f;
  assert_false(exchanges("wgws", beta));
  beta.c_type = TS_F16;
  assert_true(exchanges("wgws", beta));
}

/* The lane loop's variable (threadIdx.x). */
static bool find_lane(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_FOR && s->for_.loop->kind == TS_THREAD_X) {
    *(ir_var **)v->ctx = s->for_.loop->var;
    v->stop = true;
  }
  return true;
}

typedef struct {
  ir_var *lane;
} leave_out;

/* Every store into C behind `lane != 5`. */
static ir_stmt *guard_c(ir_mutator *mu, ir_stmt *s) {
  leave_out *x = mu->ctx;
  ir_stmt *n = ir_mutate_stmt_children(mu, s);
  if (!n || n->kind != S_STORE || n->store.buf->scope != SCOPE_GLOBAL)
    return n;
  return ir_new_if(mu->a, ir_binary(mu->a, E_NE, ir_varref(mu->a, x->lane),
                                    ir_int(mu->a, 5)), n, NULL);
}

static void test_lane_left_out_of_the_pick_faults(void **state) {
  (void)state;
  ts_gemm g = gemm(128, 256, 64, TS_NT, TS_F16, TS_F16);
  ts_sched *s = ts_builtin_schedule("wgws", &g);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  leave_out x = {NULL};
  ir_visitor v = {.stmt = find_lane, .ctx = &x.lane};
  ir_visit_stmt(&v, p->k.body);
  assert_non_null(x.lane);
  ir_kernel k = p->k;
  ir_mutator mu = {.a = &p->arena, .stmt = guard_c, .ctx = &x};
  k.body = ir_mutate_stmt(&mu, p->k.body);
  float *A = calloc(64 * 128, sizeof(float)), *B = calloc(64 * 256, sizeof(float));
  float *C = calloc(128 * 256, sizeof(float));
  assert_true(A && B && C);
  char msg[1024];
  assert_true(ir_execute(&p->k, A, B, C, false, msg, sizeof(msg)));
  assert_false(ir_execute(&k, A, B, C, false, msg, sizeof(msg)));
  if (!strstr(msg, "pair_pick") || !strstr(msg, "lane 5"))
    fail_msg("the executor says: %s", msg);
  free(A);
  free(B);
  free(C);
  ts_program_free(p);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exchanged_in_every_layout_and_c_type),
      cmocka_unit_test(test_exchange_only_where_it_applies),
      cmocka_unit_test(test_lane_left_out_of_the_pick_faults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
