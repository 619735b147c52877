/*
 * Tests of ts_pipeline, the multistage cp.async pipeline: the golden IR and
 * CUDA of a pipelined schedule, every refusal with its code and message
 * (and the schedule left as it was), lowering's refusals, the trace
 * replayed, the reference executor against a plain C GEMM at odd shapes in
 * every layout, fp32 and fp16, with 2..8 stages, the executor catching a
 * pipeline that waits too little, and NVRTC compiling the copies for sm_80
 * and refusing an older architecture.
 */
#include "tiles.h"

#include "exec/executor.h"
#include "ir/program_ir.h"
#include "ir/visit.h"

/* 8 x 8 x k in 4 x 4 tiles, A and B in shared memory at k.outer,
 * pipelined with `stages` copies each. */
static ts_sched *pipelined_k(const ts_gemm *def, int stages) {
  ts_stage *as, *bs;
  return shared_tiles(def, "pipelined_tiles", ts_pipeline, stages, &as, &bs,
                      NULL);
}

static ts_sched *pipelined(int64_t k, int stages) {
  ts_gemm g = ts_gemm_make(8, 8, k);
  return pipelined_k(&g, stages);
}

static void test_pipeline_ir(void **state) {
  (void)state;
  ts_sched *s = pipelined(16, 3);
  assert_ir(s,
            "for i.outer in 0..2 bound to blockIdx.y:\n"
            "  for j.outer in 0..2 bound to blockIdx.x:\n"
            "    for i.inner in 0..4 bound to threadIdx.y:\n"
            "      for j.inner in 0..4 bound to threadIdx.x:\n"
            "        local float acc[1][1]\n"
            "        acc[0, 0] = 0.0\n"
            "        shared float B.shared[3][4][4]\n"
            "        shared float A.shared[3][4][4]\n"
            "        async A.shared[0, i.inner, j.inner] = A[i.outer*4 + "
            "i.inner, j.inner]\n"
            "        async B.shared[0, i.inner, j.inner] = B[i.inner, "
            "j.outer*4 + j.inner]\n"
            "        cp.async.commit\n"
            "        async A.shared[1, i.inner, j.inner] = A[i.outer*4 + "
            "i.inner, j.inner + 4]\n"
            "        async B.shared[1, i.inner, j.inner] = B[i.inner + 4, "
            "j.outer*4 + j.inner]\n"
            "        cp.async.commit\n"
            "        for k.outer in 0..4:\n"
            "          cp.async.wait 1\n"
            "          barrier\n"
            "          if k.outer + 2 < 4:\n"
            "            async A.shared[(k.outer + 2) % 3, i.inner, j.inner] "
            "= A[i.outer*4 + i.inner, k.outer*4 + j.inner + 8]\n"
            "            async B.shared[(k.outer + 2) % 3, i.inner, j.inner] "
            "= B[k.outer*4 + i.inner + 8, j.outer*4 + j.inner]\n"
            "          cp.async.commit\n"
            "          for k.inner in 0..4:\n"
            "            acc[0, 0] = acc[0, 0] + A.shared[k.outer % 3, "
            "i.inner, k.inner] * B.shared[k.outer % 3, k.inner, j.inner]\n"
            "        C[i.outer*4 + i.inner, j.outer*4 + j.inner] = acc[0, 0]\n");
  assert_correct(s);
  ts_sched_free(s);
}

/* Fewer tiles than the prologue issues: the missing ones are empty copy
 * groups, so the waits count as at any extent. */
static void test_pipeline_deeper_than_the_loop(void **state) {
  (void)state;
  ts_sched *s = pipelined(8, 4);
  char *ir = ts_print_ir(s);
  assert_int_equal(count(ir, "cp.async.commit"), 4);
  assert_int_equal(count(ir, "cp.async.wait 2"), 1);
  assert_int_equal(count(ir, "async A.shared[2"), 0);
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
}

static void test_pipeline_cuda(void **state) {
  (void)state;
  ts_sched *s = pipelined(16, 3);
  char *cu = ts_cuda_source(s);
  assert_non_null(cu);
  assert_non_null(strstr(
      cu, "__device__ __forceinline__ void tessel_cp_async4(void *dst, const "
          "void *src) {\n"
          "  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4;\\n\" ::\n"
          "               \"r\"((unsigned)__cvta_generic_to_shared(dst)), "
          "\"l\"(src) : \"memory\");\n}\n"));
  assert_non_null(strstr(
      cu, "    asm volatile(\"cp.async.wait_group 1;\\n\" ::: \"memory\");\n"
          "    __syncthreads();\n"
          "    if (k_outer + 2 < 4) {\n"
          "      tessel_cp_async4(&A_shared[(k_outer + 2) % 3][i_inner]"
          "[j_inner], &A[(i_outer*4 + i_inner)*16 + k_outer*4 + j_inner + "
          "8]);\n"));
  assert_int_equal(count(cu, "asm volatile(\"cp.async.commit_group;\\n\" ::: "
                             "\"memory\");\n"), 3);
  assert_null(strstr(cu, "tessel_cp_async16"));
  free(cu);
  ts_sched_free(s);
}

/* float4 copies are one 16-byte cp.async (.cg); a transposed cache's
 * float4 of global memory is four 4-byte ones. */
static void test_vectorized_copies_are_16_bytes(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 64);
  ts_sched *s = ts_builtin_schedule("pipelined", &g);
  ts_program *p = ts_lower(s);
  char *ir = ts_program_ir(p), *cu = ts_program_cuda(p);
  assert_non_null(strstr(ir, "async vec4(B.shared[0, "));
  assert_non_null(strstr(ir, "async A.shared[0, "));
  assert_non_null(strstr(cu, "cp.async.cg.shared.global [%0], [%1], 16;"));
  assert_non_null(strstr(cu, "tessel_cp_async16(&B_shared[0]"));
  assert_non_null(strstr(cu, "tessel_cp_async4(&A_shared[0][lane % 4*4 + 3]"));
  /* No vector temporaries pass the tiles through registers. */
  assert_null(strstr(cu, "A_v0"));
  assert_null(strstr(cu, "B_v0"));
  assert_int_equal(ts_program_min_arch(p), 80);
  free(ir);
  free(cu);
  ts_program_free(p);
  ts_sched_free(s);
  s = ts_builtin_schedule("warptiled", &g);
  p = ts_lower(s);
  assert_int_equal(ts_program_min_arch(p), 0);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Halves copied one at a time are 2 bytes, which cp.async cannot move:
 * they stay plain stores in the pipeline (its commit groups and waits
 * stay, empty), and the result is right. */
static void test_fp16_scalar_copies_fall_back(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 16);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = pipelined_k(&g, 3);
  char *ir = ts_print_ir(s);
  assert_null(strstr(ir, "async A"));
  assert_int_equal(count(ir, "cp.async.commit"), 3);
  assert_non_null(strstr(ir, "        A.shared[0, i.inner, j.inner] = A["));
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
}

/* The pipelined built-in in fp16: B's copy of 4 halves is one 8-byte
 * cp.async; A, stored transposed, is written a half at a time, which has
 * no cp.async: plain stores from the vector register. */
static void test_fp16_copies_of_the_builtin(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 64);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule("pipelined", &g);
  char *cu = ts_cuda_source(s);
  assert_non_null(strstr(cu, "cp.async.ca.shared.global [%0], [%1], 8;"));
  assert_non_null(strstr(cu, "tessel_cp_async8(&B_shared[0]"));
  assert_null(strstr(cu, "tessel_cp_async8(&A_shared"));
  assert_non_null(strstr(cu, "A_shared[0][lane % 4*4][A_shared_round*32 + "
                             "warp*8 + lane/4] = A_v0.v[0];"));
  free(cu);
  ts_sched_free(s);
}

/* ---- Refusals ------------------------------------------------------------ */

static void test_pipeline_errors(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_sched *s = tiled(&ko, &ki);
  ts_stage *as, *ra, *cw;
  assert_int_equal(ts_cache_read(s, "A", TS_SHARED, ko, &as), TS_OK);
  assert_int_equal(ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra), TS_OK);
  assert_int_equal(ts_pipeline(NULL, as, 3), TS_ERR_NULL_ARG);
  EXPECT_FAIL(ts_pipeline(s, NULL, 3), TS_ERR_NULL_ARG,
              "ts_pipeline: argument 2");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  EXPECT_FAIL(ts_pipeline(s, as, 1), TS_ERR_BAD_ARG,
              "ts_pipeline: argument 3 'stages' must be in 2..8 (got 1)");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  EXPECT_FAIL(ts_pipeline(s, as, 9), TS_ERR_BAD_ARG,
              "ts_pipeline: argument 3 'stages' must be in 2..8 (got 9)");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &ra);
  EXPECT_FAIL(ts_pipeline(s, ra, 3), TS_ERR_NOT_SHARED,
              "ts_pipeline: \"A.shared.local\" is in registers; pipelining "
              "overlaps");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_write(s, "C", TS_LOCAL, ts_get_loop(s, "j.inner"), &cw);
  EXPECT_FAIL(ts_pipeline(s, cw, 3), TS_ERR_BAD_ARG,
              "ts_pipeline: \"C.local\" holds C's accumulators");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_pipeline(s, as, 3), TS_OK);
  EXPECT_FAIL(ts_pipeline(s, as, 3), TS_ERR_STAGE_USED,
              "ts_pipeline: \"A.shared\" is already pipelined with 3 stages");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_double_buffer(s, as), TS_OK);
  EXPECT_FAIL(ts_pipeline(s, as, 3), TS_ERR_STAGE_USED,
              "ts_pipeline: \"A.shared\" is double-buffered (through "
              "registers); ts_pipeline replaces that");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_pipeline(s, as, 2), TS_OK);
  EXPECT_FAIL(ts_double_buffer(s, as), TS_ERR_STAGE_USED,
              "ts_double_buffer: \"A.shared\" is already pipelined "
              "(ts_pipeline, 2 stages)");
  ts_sched_free(s);
}

static void test_pipeline_shared_limit(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  ts_sched *s = ts_matmul(&g);
  ts_stage *as, *bs;
  vectorized_tiles(s, 128, 64, &as, &bs);
  assert_int_equal(ts_pipeline(s, as, 4), TS_OK);
  EXPECT_FAIL(ts_pipeline(s, bs, 4), TS_ERR_SHARED_LIMIT,
              "ts_pipeline: 4 copies of \"B.shared\" bring the shared caches "
              "to 262144 bytes, over the limit of 232448");
  ts_sched_free(s);
}

/* The stages at one loop share copy groups: all pipelined, one count. */
static void test_stages_at_one_loop_pipeline_alike(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_stage *as, *bs;
  ts_sched *s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_pipeline(s, as, 3);
  expect_lowering_error(s, "ts_lower: \"A.shared\" is pipelined (ts_pipeline) "
                           "and \"B.shared\", attached at the same loop "
                           "\"k.outer\", is not; pipeline both with 3 stages");
  ts_double_buffer(s, bs);
  expect_lowering_error(s, "\"B.shared\", attached at the same loop "
                           "\"k.outer\", is double-buffered");
  ts_sched_free(s);

  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_pipeline(s, as, 3);
  ts_pipeline(s, bs, 2);
  expect_lowering_error(s, "ts_lower: \"A.shared\" and \"B.shared\", attached "
                           "at loop \"k.outer\", are pipelined with 3 and 2 "
                           "stages");
  ts_sched_free(s);
}

static void test_pipeline_trace_replays(void **state) {
  (void)state;
  ts_sched *s = pipelined(16, 5);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_pipeline(s, A_shared, 5);\n"
                                "ts_pipeline(s, B_shared, 5);\n"));
  free(trace);
  assert_replays(s);
  ts_sched_free(s);
}

/* ---- The executor ---------------------------------------------------------- */

static const int64_t odd_shapes[][3] = {
    {1, 1, 1}, {7, 5, 3}, {33, 17, 29}, {65, 63, 47}};

static void check_or_fail(ts_sched *s, const ts_gemm *g, const char *what) {
  char msg[1024];
  ts_status st = ts_check(s, 5, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("%s at %lldx%lldx%lld %s %s: %s", what, (long long)g->m,
             (long long)g->n, (long long)g->k, ts_layout_name(g->layout),
             ts_dtype_name(g->a_type), msg);
}

/* 4 x 4 tiles with scalar copies (4-byte cp.async in fp32, plain stores in
 * fp16) and the pipelined built-in (16-byte copies where aligned, per-lane
 * copies at the edges), every odd shape, layout and type, 2..8 stages. */
static void test_pipelines_compute_the_gemm(void **state) {
  (void)state;
  const ts_dtype types[] = {TS_F32, TS_F16};
  for (size_t i = 0; i < sizeof(odd_shapes) / sizeof(odd_shapes[0]); i++)
    for (int l = TS_NN; l <= TS_TT; l++)
      for (int t = 0; t < 2; t++) {
        ts_gemm g = ts_gemm_make(odd_shapes[i][0], odd_shapes[i][1],
                                 odd_shapes[i][2]);
        g.layout = (ts_layout)l;
        g.a_type = g.b_type = types[t];
        ts_sched *s = pipelined_k(&g, 2 + (int)(i + (size_t)l + (size_t)t) % 7);
        check_or_fail(s, &g, "4x4 tiles");
        ts_sched_free(s);
        s = ts_builtin_schedule("pipelined", &g);
        check_or_fail(s, &g, "pipelined");
        ts_sched_free(s);
      }
}

/* The pipeline inside a serial loop that runs it twice: the barrier after
 * it keeps the next prologue off the tiles still in use. */
static void test_pipeline_run_twice(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 12);
  ts_stage *bs;
  ts_sched *s = b_cached_twice(&g, &bs);
  assert_int_equal(ts_pipeline(s, bs, 2), TS_OK);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "            acc[0, 0] = acc[0, 0] + A["));
  assert_int_equal(count(ir, "barrier"), 2);
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
}

/* A register cache filled at the pipelined loop reads the current copy,
 * after the barrier, as the computation does. */
static void test_register_cache_at_the_pipelined_loop(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_gemm g = ts_gemm_make(9, 7, 29);
  g.layout = TS_TN;
  ts_sched *s = ts_matmul(&g);
  block_tiled(s, 4, 4, 4, &ko, &ki);
  ts_stage *as, *bs, *ra;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  assert_int_equal(ts_cache_read(s, "A.shared", TS_LOCAL, ko, &ra), TS_OK);
  ts_pipeline(s, as, 3);
  assert_int_equal(ts_pipeline(s, bs, 3), TS_OK);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(
      ir, "          cp.async.commit\n"
          "          for A.shared.local.ax1 in 0..4 unrolled:\n"
          "            A.shared.local[0, A.shared.local.ax1] = "
          "A.shared[k.outer % 3, i.inner, A.shared.local.ax1]\n"));
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
}

/* The lowered pipeline with one wait loosened: the tile a thread computes
 * on has not landed, and the executor says which wait was missing. */
static bool loosen_wait(ir_visitor *v, const ir_stmt *s) {
  (void)v;
  if (s->kind == S_ASYNC_WAIT)
    ((ir_stmt *)s)->wait.pending++;
  return true;
}

static void test_a_wait_too_loose_is_caught(void **state) {
  (void)state;
  ts_sched *s = pipelined(16, 3);
  ts_program *p = ts_lower(s);
  ir_visitor v = {.stmt = loosen_wait};
  ir_visit_stmt(&v, p->k.body);
  char msg[1024];
  assert_int_equal(ts_program_check(p, 1, msg, sizeof(msg)), TS_ERR_EXEC_FAULT);
  if (!strstr(msg, "read of shared A.shared at element 0 (stage 0 of 3) "
                   "before its cp.async landed: thread (0, 0, 0) issued it "
                   "in its copy group 0, and its last cp.async.wait left it "
                   "in flight: it needs cp.async.wait 1 or less"))
    fail_msg("%s", msg);
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- Hand-built kernels: the executor's model of copy groups -------------- */

typedef struct {
  ts_arena a;
  ir_kernel k;
  ts_loop *tx;
  ir_buffer *s;
  float A[4], B[4], C[4];
  char msg[512];
} kfix;

static int setup(void **state) {
  kfix *f = calloc(1, sizeof(*f));
  ts_arena_init(&f->a);
  int64_t row[2] = {1, 4}, two[2] = {2, 4};
  f->k.A = ir_new_buffer(&f->a, "A", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->k.B = ir_new_buffer(&f->a, "B", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->k.C = ir_new_buffer(&f->a, "C", SCOPE_GLOBAL, TS_F32, 2, row, NULL);
  f->s = ir_new_buffer(&f->a, "S", SCOPE_SHARED, TS_F32, 2, two, NULL);
  f->s->async_fill = true;
  f->tx = ir_new_loop(&f->a, 0, "tx", 4, false, NULL);
  f->tx->kind = TS_THREAD_X;
  for (int d = 0; d < 3; d++)
    f->k.grid[d] = f->k.block[d] = 1;
  f->k.block[0] = 4;
  f->k.nvars = 1;
  for (int i = 0; i < 4; i++)
    f->A[i] = (float)i + 1;
  *state = f;
  return 0;
}

#define TX ir_varref(&f->a, f->tx->var)
#define I(n) ir_int(&f->a, n)
/* Another thread's element: thread t reads what thread (t + 1) % 4 copied. */
#define NEXT ir_binary(&f->a, E_MOD, ir_add(&f->a, TX, I(1)), I(4))

/* async S[0, t] = A[0, t] */
static ir_stmt *copy(kfix *f) {
  ir_expr *src[2] = {I(0), TX}, *dst[2] = {I(0), TX};
  ir_stmt *st = ir_new_store(&f->a, f->s, dst, ir_load(&f->a, f->k.A, src));
  st->store.async = true;
  return st;
}

/* C[0, t] = S[0, t'] */
static ir_stmt *use(kfix *f, ir_expr *from) {
  ir_expr *src[2] = {I(0), from}, *dst[2] = {I(0), TX};
  return ir_new_store(&f->a, f->k.C, dst, ir_load(&f->a, f->s, src));
}

static bool run_kernel(kfix *f, ir_stmt *const *items, int n) {
  f->k.body = ir_new_for(&f->a, f->tx,
                         ir_new_alloc(&f->a, f->s, ir_new_seq(&f->a, items, n)));
  assert_true(ir_kernel_set_params(&f->a, &f->k));
  return ir_execute(&f->k, f->A, f->B, f->C, false, f->msg, sizeof(f->msg));
}

static void expect_fault(kfix *f, const char *want) {
  if (!strstr(f->msg, want))
    fail_msg("\"%s\" lacks \"%s\"", f->msg, want);
}

static void test_copy_wait_barrier_runs_clean(void **state) {
  kfix *f = *state;
  ir_stmt *items[] = {copy(f), ir_new_async_commit(&f->a),
                      ir_new_async_wait(&f->a, 0), ir_new_barrier(&f->a),
                      use(f, NEXT)};
  assert_true(run_kernel(f, items, 5));
  for (int t = 0; t < 4; t++)
    assert_true(f->C[t] == f->A[(t + 1) % 4]);
}

static void test_wait_leaving_the_group_in_flight(void **state) {
  kfix *f = *state;
  ir_stmt *items[] = {copy(f), ir_new_async_commit(&f->a),
                      ir_new_async_wait(&f->a, 1), ir_new_barrier(&f->a),
                      use(f, NEXT)};
  assert_false(run_kernel(f, items, 5));
  expect_fault(f, "read of shared S at element 1 (stage 0 of 2) before its "
                  "cp.async landed: thread (1, 0, 0) issued it in its copy "
                  "group 0, and its last cp.async.wait left it in flight: it "
                  "needs cp.async.wait 0 or less, by thread (0, 0, 0)");
}

/* A barrier completes no copy. */
static void test_barrier_alone_completes_nothing(void **state) {
  kfix *f = *state;
  ir_stmt *items[] = {copy(f), ir_new_async_commit(&f->a),
                      ir_new_barrier(&f->a), use(f, TX)};
  assert_false(run_kernel(f, items, 4));
  expect_fault(f, "before its cp.async landed: thread (0, 0, 0) issued it in "
                  "its copy group 0, and no cp.async.wait came after its "
                  "commit");
}

static void test_uncommitted_group_is_not_waited_for(void **state) {
  kfix *f = *state;
  ir_stmt *items[] = {copy(f), ir_new_async_wait(&f->a, 0),
                      ir_new_barrier(&f->a), use(f, TX)};
  assert_false(run_kernel(f, items, 4));
  expect_fault(f, "its group is not committed yet (cp.async.commit)");
}

/* A copy lands at its wait: another thread needs a barrier after it. */
static void test_wait_without_barrier_races(void **state) {
  kfix *f = *state;
  ir_stmt *items[] = {copy(f), ir_new_async_commit(&f->a),
                      ir_new_barrier(&f->a), ir_new_async_wait(&f->a, 0),
                      use(f, NEXT)};
  assert_false(run_kernel(f, items, 5));
  expect_fault(f, "race: read of shared S at element 1 written by another "
                  "thread without a barrier between");
}

/* Its own copy a thread may read after its own wait. */
static void test_own_copy_after_own_wait(void **state) {
  kfix *f = *state;
  ir_stmt *items[] = {copy(f), ir_new_async_commit(&f->a),
                      ir_new_async_wait(&f->a, 0), use(f, TX)};
  assert_true(run_kernel(f, items, 4));
  for (int t = 0; t < 4; t++)
    assert_true(f->C[t] == f->A[t]);
}

static void test_write_over_a_copy_in_flight(void **state) {
  kfix *f = *state;
  ir_expr *dst[2] = {I(0), TX};
  ir_stmt *items[] = {copy(f), ir_new_async_commit(&f->a),
                      ir_new_store(&f->a, f->s, dst, ir_float(&f->a, 0.0f))};
  assert_false(run_kernel(f, items, 3));
  expect_fault(f, "write of shared S at element 0 (stage 0 of 2) before its "
                  "cp.async landed");
}

static void test_copy_in_flight_at_end_of_scope(void **state) {
  kfix *f = *state;
  ir_stmt *items[] = {copy(f), ir_new_async_commit(&f->a)};
  assert_false(run_kernel(f, items, 2));
  expect_fault(f, "end of scope of shared S at element 0 (stage 0 of 2) "
                  "before its cp.async landed");
}

static void test_copy_into_global_memory(void **state) {
  kfix *f = *state;
  ir_expr *src[2] = {I(0), TX}, *dst[2] = {I(0), TX};
  ir_stmt *st = ir_new_store(&f->a, f->k.C, dst, ir_load(&f->a, f->k.A, src));
  st->store.async = true;
  assert_false(run_kernel(f, &st, 1));
  expect_fault(f, "asynchronous copy into global C: cp.async writes only "
                  "shared memory");
}

/* ---- Compiling ------------------------------------------------------------- */

static void test_pipeline_compiles_for_sm80_only(void **state) {
  (void)state;
  ts_sched *s = pipelined(16, 3);
  const char *archs[] = {"sm_80", "sm_90"};
  for (int i = 0; i < 2; i++) {
    ts_kernel *k = ts_compile_sched(s, archs[i]);
    if (ts_kernel_status(k) != TS_OK)
      fail_msg("%s: %s", archs[i], ts_kernel_errmsg(k));
    ts_kernel_free(k);
  }
  ts_kernel *k = ts_compile_sched(s, "sm_75");
  assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_ARCH);
  assert_string_equal(ts_kernel_errmsg(k),
                      "ts_compile: \"pipelined_tiles\" needs sm_80 or newer "
                      "(its asynchronous copies of ts_pipeline or "
                      "tensor-core instructions of ts_tensorize); sm_75 is "
                      "older: compile for sm_80 or later");
  ts_kernel_free(k);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pipeline_ir),
      cmocka_unit_test(test_pipeline_deeper_than_the_loop),
      cmocka_unit_test(test_pipeline_cuda),
      cmocka_unit_test(test_vectorized_copies_are_16_bytes),
      cmocka_unit_test(test_fp16_scalar_copies_fall_back),
      cmocka_unit_test(test_fp16_copies_of_the_builtin),
      cmocka_unit_test(test_pipeline_errors),
      cmocka_unit_test(test_pipeline_shared_limit),
      cmocka_unit_test(test_stages_at_one_loop_pipeline_alike),
      cmocka_unit_test(test_pipeline_trace_replays),
      cmocka_unit_test(test_pipelines_compute_the_gemm),
      cmocka_unit_test(test_pipeline_run_twice),
      cmocka_unit_test(test_register_cache_at_the_pipelined_loop),
      cmocka_unit_test(test_a_wait_too_loose_is_caught),
      cmocka_unit_test_setup_teardown(test_copy_wait_barrier_runs_clean, setup,
                                      free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_wait_leaving_the_group_in_flight,
                                      setup, free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_barrier_alone_completes_nothing,
                                      setup, free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_uncommitted_group_is_not_waited_for,
                                      setup, free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_wait_without_barrier_races, setup,
                                      free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_own_copy_after_own_wait, setup,
                                      free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_write_over_a_copy_in_flight, setup,
                                      free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_copy_in_flight_at_end_of_scope,
                                      setup, free_arena_fixture),
      cmocka_unit_test_setup_teardown(test_copy_into_global_memory, setup,
                                      free_arena_fixture),
      cmocka_unit_test(test_pipeline_compiles_for_sm80_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
