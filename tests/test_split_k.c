/*
 * ts_split_k: the nest and both kernels against golden IR, both modes
 * through the reference executor at small odd shapes (alpha and beta, a
 * 2-byte C), each precondition's error, the primitives after it, the
 * trace, the program's kernels and CUDA source (NVRTC, no GPU), and the
 * executor's view of the sequence: a workspace read before it is written
 * and plain stores in place of atomic adds are faults.
 */
#include "helpers.h"

#include "ir/program_ir.h"
#include "schedule/sched.h"

static ts_sched *split_k_of(ts_gemm g, int64_t parts, ts_split_k_mode mode) {
  ts_sched *s = ts_matmul_named(&g, "sk");
  ts_loop *o, *i;
  assert_int_equal(ts_split_k(s, ts_get_loop(s, "k"), parts, mode, &o, &i),
                   TS_OK);
  return s;
}

/* i over blocks of 4 threads, after split-K. */
static void rows_on_threads(ts_sched *s) {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  assert_int_equal(ts_sched_status(s), TS_OK);
}

static void test_workspace_nest_and_reduction(void **state) {
  (void)state;
  ts_sched *s = split_k_of(ts_gemm_make(7, 5, 10), 4, TS_SPLIT_K_WORKSPACE);
  rows_on_threads(s);
  char *ir = ts_print_ir(s);
  assert_string_equal(ir,
      "// schedule \"sk\": C[7, 5] = A[7, 10] * B[10, 5], layout NN\n"
      "// workspace W[4, 7, 5] (fp32, 560 bytes)\n"
      "// kernel 1 of 2: tessel_sk\n"
      "// grid (2, 1, 4), block (4, 1, 1)\n"
      "for k.outer in 0..4 bound to blockIdx.z:\n"
      "  for i.outer in 0..2 bound to blockIdx.x:\n"
      "    for i.inner in 0..4 bound to threadIdx.x:\n"
      "      if i.outer*4 + i.inner < 7:\n"
      "        for j in 0..5:\n"
      "          local float acc[1][1]\n"
      "          acc[0, 0] = 0.0\n"
      "          for k.inner in 0..3:\n"
      "            if k.outer*3 + k.inner < 10:\n"
      "              acc[0, 0] = acc[0, 0] + A[i.outer*4 + i.inner, k.outer*3 + k.inner] * B[k.outer*3 + k.inner, j]\n"
      "          W[k.outer, i.outer*4 + i.inner, j] = acc[0, 0]\n"
      "\n"
      "// kernel 2 of 2: tessel_sk_reduce\n"
      "// grid (1, 1, 1), block (256, 1, 1)\n"
      "for e.block in 0..1 bound to blockIdx.x:\n"
      "  for e.thread in 0..256 bound to threadIdx.x:\n"
      "    if e.block*256 + e.thread < 35:\n"
      "      local float sum[1][1]\n"
      "      sum[0, 0] = 0.0\n"
      "      for z in 0..4:\n"
      "        sum[0, 0] = sum[0, 0] + W[z, (e.block*256 + e.thread)/5, (e.block*256 + e.thread) % 5]\n"
      "      C[(e.block*256 + e.thread)/5, (e.block*256 + e.thread) % 5] = sum[0, 0]\n");
  free(ir);
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_atomic_scales_c_first(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(3, 2, 5);
  g.alpha = 2.0f;
  g.beta = 0.5f;
  ts_sched *s = split_k_of(g, 2, TS_SPLIT_K_ATOMIC);
  /* assert_ir cuts the definition and "kernel 1 of 2: tessel_sk_scale" */
  assert_ir(s,
      "// grid (1, 1, 1), block (256, 1, 1)\n"
      "for e.block in 0..1 bound to blockIdx.x:\n"
      "  for e.thread in 0..256 bound to threadIdx.x:\n"
      "    if e.block*256 + e.thread < 6:\n"
      "      C[e.block*128 + e.thread/2, e.thread % 2] = 0.5 * C[e.block*128 + e.thread/2, e.thread % 2]\n"
      "\n"
      "// kernel 2 of 2: tessel_sk\n"
      "// grid (1, 1, 2), block (1, 1, 1)\n"
      "for k.outer in 0..2 bound to blockIdx.z:\n"
      "  for i in 0..3:\n"
      "    for j in 0..2:\n"
      "      local float acc[1][1]\n"
      "      acc[0, 0] = 0.0\n"
      "      for k.inner in 0..3:\n"
      "        if k.outer*3 + k.inner < 5:\n"
      "          acc[0, 0] = acc[0, 0] + A[i, k.outer*3 + k.inner] * B[k.outer*3 + k.inner, j]\n"
      "      C[i, j] atomic+= 2.0 * acc[0, 0]\n");
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_atomic_with_beta_one_is_one_kernel(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(5, 3, 4);
  g.beta = 1.0f;
  ts_sched *s = split_k_of(g, 2, TS_SPLIT_K_ATOMIC);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_kernel_count(p), 1);
  assert_int_equal(ts_program_workspace(p), 0);
  ts_program_free(p);
  assert_checks(s, 7);
  ts_sched_free(s);
}

static void test_one_part_changes_nothing(void **state) {
  (void)state;
  ts_sched *plain = sched_of(7, 5, 3);
  ts_sched *s = sched_of(7, 5, 3);
  ts_loop *k = ts_get_loop(s, "k"), *o = k, *i = NULL;
  assert_int_equal(ts_split_k(s, k, 1, TS_SPLIT_K_WORKSPACE, &o, &i), TS_OK);
  assert_null(o);
  assert_ptr_equal(i, k);
  char *want = ts_print_ir(plain), *got = ts_print_ir(s);
  assert_string_equal(got, want);
  free(want);
  free(got);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_kernel_count(p), 1);
  assert_string_equal(ts_program_kernel_entry(p, 0), ts_program_entry(p));
  assert_int_equal(ts_program_workspace(p), 0);
  ts_program_free(p);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_split_k(s, k, 1, TS_SPLIT_K_WORKSPACE, "
                                "&(ts_loop *){NULL}, &(ts_loop *){NULL});\n"));
  free(trace);
  ts_sched_free(plain);
  ts_sched_free(s);
}

/* Each mode at small odd shapes, alpha and beta, after a block tiling. */
static void test_both_modes_at_odd_shapes(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 29},
                                      {2, 3, 40}};
  static const int64_t parts[] = {2, 3, 4, 8};
  for (size_t n = 0; n < sizeof(shapes) / sizeof(shapes[0]); n++)
    for (int mode = 0; mode < 2; mode++)
      for (int b = 0; b < 3; b++) {
        ts_gemm g = ts_gemm_make(shapes[n][0], shapes[n][1], shapes[n][2]);
        g.alpha = b == 2 ? -1.5f : 1.0f;
        g.beta = (float[]){0.0f, 1.0f, 0.25f}[b];
        g.layout = (ts_layout)(n % 4);
        ts_sched *s = split_k_of(g, parts[n], (ts_split_k_mode)mode);
        rows_on_threads(s);
        assert_checks(s, 7);
        ts_sched_free(s);
      }
}

static void test_workspace_with_2_byte_c(void **state) {
  (void)state;
  for (ts_dtype t = TS_F16; t <= TS_BF16; t++) {
    ts_gemm g = ts_gemm_make(9, 7, 33);
    g.c_type = g.a_type = t;
    g.beta = 0.5f;
    ts_sched *s = split_k_of(g, 4, TS_SPLIT_K_WORKSPACE);
    assert_checks(s, 7);
    ts_sched_free(s);
  }
}

/* ---- Preconditions ----------------------------------------------------- */

/* The call fails with `want`, naming ts_split_k and `needle`, and leaves
 * the nest as it was. */
static void assert_refused(ts_sched *s, ts_loop *k, int64_t parts,
                           ts_split_k_mode mode, ts_status want,
                           const char *needle) {
  ir_stmt *root = s->root;
  int ntrace = s->ntrace;
  ts_loop *o = k, *i = k;
  assert_int_equal(ts_split_k(s, k, parts, mode, &o, &i), want);
  assert_null(o);
  assert_null(i);
  assert_ptr_equal(s->root, root);
  assert_int_equal(s->ntrace, ntrace);
  const char *msg = errmsg_text(s);
  assert_int_equal(strncmp(msg, "ts_split_k: ", 12), 0);
  if (!strstr(msg, needle))
    fail_msg("\"%s\" not in: %s", needle, msg);
}

static void test_refuses_a_spatial_loop(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  assert_refused(s, ts_get_loop(s, "i"), 2, TS_SPLIT_K_WORKSPACE,
                 TS_ERR_BAD_ARG, "is a spatial loop");
  ts_sched_free(s);
}

static void test_refuses_an_inner_reduction_loop(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *ko, *ki;
  ts_split(s, ts_get_loop(s, "k"), 4, &ko, &ki);
  assert_refused(s, ki, 2, TS_SPLIT_K_WORKSPACE,
                 TS_ERR_NOT_OUTERMOST_REDUCTION, "\"k.outer\" lies outside");
  ts_sched_free(s);
}

static void test_refuses_after_a_cache(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_stage *st;
  ts_cache_read(s, "A", TS_LOCAL, ts_get_loop(s, "k"), &st);
  assert_refused(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_WORKSPACE,
                 TS_ERR_CACHE_REGION, "before ts_cache_read");
  ts_sched_free(s);
}

static void test_refuses_twice(void **state) {
  (void)state;
  ts_sched *s = split_k_of(ts_gemm_make(8, 8, 8), 2, TS_SPLIT_K_WORKSPACE);
  assert_refused(s, ts_get_loop(s, "k.inner"), 2, TS_SPLIT_K_WORKSPACE,
                 TS_ERR_TAG_BOUND_TWICE, "already split across blocks");
  ts_sched_free(s);
}

static void test_refuses_a_taken_block_z(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_bind(s, ts_get_loop(s, "j"), TS_BLOCK_Z);
  assert_refused(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_WORKSPACE,
                 TS_ERR_TAG_BOUND_TWICE, "already bound to loop \"j\"");
  ts_sched_free(s);
  s = split_k_of(ts_gemm_make(8, 8, 8), 2, TS_SPLIT_K_WORKSPACE);
  assert_int_equal(ts_bind(s, ts_get_loop(s, "j"), TS_BLOCK_Z),
                   TS_ERR_TAG_BOUND_TWICE);
  ts_sched_free(s);
}

static void test_refuses_bad_parts(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  assert_refused(s, ts_get_loop(s, "k"), 0, TS_SPLIT_K_WORKSPACE,
                 TS_ERR_BAD_FACTOR, "'parts' must be in 1..65535, the blocks along blockIdx.z (got 0)");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  assert_refused(s, ts_get_loop(s, "k"), 65536, TS_SPLIT_K_ATOMIC,
                 TS_ERR_LAUNCH_LIMIT, "(got 65536)");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  assert_refused(s, ts_get_loop(s, "k"), 2, (ts_split_k_mode)7,
                 TS_ERR_BAD_ARG, "argument 4 'mode'");
  ts_sched_free(s);
}

static void test_refuses_atomic_into_half(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  g.c_type = TS_F16;
  ts_sched *s = ts_matmul(&g);
  assert_refused(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_ATOMIC, TS_ERR_BAD_ARG,
                 "use TS_SPLIT_K_WORKSPACE");
  ts_sched_free(s);
}

static void test_refuses_null_results(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *o;
  assert_int_equal(ts_split_k(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_WORKSPACE,
                              &o, NULL), TS_ERR_NULL_ARG);
  assert_non_null(strstr(errmsg_text(s), "argument 6 'inner'"));
  ts_sched_free(s);
}

/* ---- Other primitives after it ----------------------------------------- */

static void test_the_z_loop_takes_no_other_primitive(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *o, *i, *a, *b;
  ts_split_k(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_WORKSPACE, &o, &i);
  assert_int_equal(ts_split(s, o, 2, &a, &b), TS_ERR_ALREADY_BOUND);
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  ts_split_k(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_WORKSPACE, &o, &i);
  assert_int_equal(ts_bind(s, i, TS_THREAD_X), TS_ERR_BIND_REDUCTION);
  ts_sched_free(s);
}

static void test_thread_loop_outside_z_is_refused(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *o, *i;
  ts_split_k(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_WORKSPACE, &o, &i);
  ts_bind(s, ts_get_loop(s, "i"), TS_THREAD_X);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_int_equal(ts_reorder(s, 2, (ts_loop *[]){ts_get_loop(s, "i"), o}),
                   TS_ERR_THREAD_OUTSIDE_BLOCK);
  ts_sched_free(s);
}

/* The inner part split, cached in shared memory and registers, C in
 * registers: a tiled schedule in every respect but the blockIdx.z loop. */
static void test_tiling_and_caches_inside(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; mode++) {
    ts_gemm g = ts_gemm_make(19, 23, 37);
    g.alpha = 0.5f;
    g.beta = 2.0f;
    ts_sched *s = ts_matmul(&g);
    ts_loop *kz, *kr, *io, *ii, *jo, *ji, *ko, *ki;
    ts_split_k(s, ts_get_loop(s, "k"), 3, (ts_split_k_mode)mode, &kz, &kr);
    ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
    ts_split(s, ts_get_loop(s, "j"), 8, &jo, &ji);
    ts_split(s, kr, 4, &ko, &ki);
    ts_reorder(s, 6, (ts_loop *[]){io, jo, ii, ji, ko, ki});
    ts_bind(s, io, TS_BLOCK_Y);
    ts_bind(s, jo, TS_BLOCK_X);
    ts_bind(s, ii, TS_THREAD_Y);
    ts_stage *as, *bs, *cw;
    ts_cache_read(s, "A", TS_SHARED, ko, &as);
    ts_cache_read(s, "B", TS_SHARED, ko, &bs);
    ts_cache_write(s, "C", TS_LOCAL, ji, &cw);
    ts_unroll(s, ki);
    if (ts_sched_status(s) != TS_OK)
      fail_msg("%s", errmsg_text(s));
    assert_checks(s, 7);
    ts_sched_free(s);
  }
}

/* A vectorized loop around the atomic epilogue adds lane by lane. */
static void test_vectorized_atomic_adds_each_lane(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(6, 8, 9);
  g.beta = 0.5f;
  ts_sched *s = split_k_of(g, 3, TS_SPLIT_K_ATOMIC);
  ts_loop *jo, *ji;
  ts_split(s, ts_get_loop(s, "j"), 4, &jo, &ji);
  ts_reorder(s, 2, (ts_loop *[]){ts_get_loop(s, "k.inner"), ji});
  ts_stage *cw;
  ts_cache_write(s, "C", TS_LOCAL, jo, &cw);
  ts_vectorize(s, ji);
  if (ts_sched_status(s) != TS_OK)
    fail_msg("%s", errmsg_text(s));
  assert_checks(s, 7);
  char *cu = ts_cuda_source(s);
  int adds = 0;
  for (const char *p = cu; (p = strstr(p, "atomicAdd(&C[")); p++)
    adds++;
  assert_int_equal(adds, 4);
  assert_null(strstr(cu, "float4 *>(&C"));
  free(cu);
  ts_sched_free(s);
}

/* ---- Trace, program, source -------------------------------------------- */

static void test_trace_replays(void **state) {
  (void)state;
  ts_sched *s = split_k_of(ts_gemm_make(9, 4, 17), 4, TS_SPLIT_K_ATOMIC);
  rows_on_threads(s);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_loop *k_outer, *k_inner;\nts_split_k(s, "
                                "k, 4, TS_SPLIT_K_ATOMIC, &k_outer, "
                                "&k_inner);\n"));
  free(trace);
  ts_gemm g = ts_gemm_make(9, 4, 17);
  ts_sched *again = ts_matmul_named(&g, "sk");
  assert_int_equal(ts_replay(s, again), TS_OK);
  char *want = ts_print_ir(s), *got = ts_print_ir(again);
  assert_string_equal(got, want);
  free(want);
  free(got);
  ts_sched_free(again);
  ts_sched_free(s);
}

static void test_program_reads_each_kernel(void **state) {
  (void)state;
  ts_sched *s = split_k_of(ts_gemm_make(7, 5, 10), 4, TS_SPLIT_K_WORKSPACE);
  rows_on_threads(s);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_kernel_count(p), 2);
  assert_string_equal(ts_program_kernel_entry(p, 0), "tessel_sk");
  assert_string_equal(ts_program_kernel_entry(p, 1), "tessel_sk_reduce");
  assert_string_equal(ts_program_kernel_entry(p, 2), "");
  assert_int_equal(ts_program_workspace(p), 4 * 7 * 5 * 4);
  ts_launch_geometry l;
  assert_int_equal(ts_program_kernel_launch(p, 0, &l), TS_OK);
  assert_int_equal(l.grid[2], 4);
  assert_int_equal(l.block[0], 4);
  assert_int_equal(ts_program_kernel_launch(p, 1, &l), TS_OK);
  assert_int_equal(l.grid[0], 1);
  assert_int_equal(l.block[0], 256);
  assert_int_equal(ts_program_kernel_launch(p, 2, &l), TS_ERR_BAD_ARG);
  assert_int_equal(ts_program_kernel_launch(p, 0, NULL), TS_ERR_NULL_ARG);
  assert_int_equal(ts_program_kernel_count(NULL), 0);
  assert_string_equal(ts_program_kernel_entry(NULL, 0), "");
  assert_int_equal(ts_program_launch(p, &l), TS_OK); /* the schedule's */
  assert_int_equal(l.grid[2], 4);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_one_source_compiles_both_entries(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; mode++) {
    ts_gemm g = ts_gemm_make(7, 5, 10);
    g.beta = 0.5f;
    ts_sched *s = split_k_of(g, 4, (ts_split_k_mode)mode);
    rows_on_threads(s);
    char *cu = ts_cuda_source(s);
    assert_non_null(strstr(cu, mode ? "tessel_sk_scale(" : "tessel_sk_reduce("));
    assert_non_null(strstr(cu, "\ntessel_sk("));
    assert_non_null(strstr(cu, mode ? "atomicAdd(&C[" : "float *__restrict__ W)"));
    free(cu);
    ts_kernel *k = ts_compile_sched(s, "sm_80");
    if (ts_kernel_status(k) != TS_OK)
      fail_msg("%s", ts_kernel_errmsg(k));
    assert_int_equal(ts_kernel_count(k), 2);
    assert_string_equal(ts_kernel_entry(k, mode ? 1 : 0), "tessel_sk");
    assert_int_equal(ts_kernel_workspace(k), mode ? 0 : 4 * 7 * 5 * 4);
    ts_launch_geometry l;
    assert_int_equal(ts_kernel_launch(k, mode ? 1 : 0, &l), TS_OK);
    assert_int_equal(l.grid[2], 4);
    ts_kernel_free(k);
    ts_sched_free(s);
  }
}

/* ptxas reports each entry point; the kernel's report is the schedule's
 * kernel's (shared memory for its tiles), not the reduction's. */
static void test_ptxas_report_is_the_schedules_kernel(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 512);
  ts_sched *s = ts_builtin_schedule("splitk", &g);
  ts_kernel *k = ts_compile_sched(s, "sm_90");
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("%s", ts_kernel_errmsg(k));
  assert_non_null(strstr(ts_kernel_log(k), "tessel_splitk_reduce"));
  assert_true(ts_kernel_ptxas(k).valid);
  assert_int_equal(ts_kernel_ptxas(k).shared_bytes, 2 * 128 * 8 * 4);
  ts_kernel_free(k);
  ts_sched_free(s);
}

/* parts x M x N past 2^31 elements: 64-bit indices, though C has fewer. */
static void test_large_workspace_takes_wide_indices(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(16384, 16384, 64);
  ts_sched *s = split_k_of(g, 8, TS_SPLIT_K_WORKSPACE);
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 64, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  char *cu = ts_cuda_source(s);
  assert_non_null(strstr(cu, "const long long k_outer = blockIdx.z;"));
  free(cu);
  g = ts_gemm_make(1024, 1024, 64);
  ts_sched_free(s);
  s = split_k_of(g, 8, TS_SPLIT_K_WORKSPACE);
  cu = ts_cuda_source(s);
  assert_null(strstr(cu, "long long"));
  free(cu);
  ts_sched_free(s);
}

/* ---- The executor's view of the sequence -------------------------------- */

static void check_program(ts_program *p, ts_status want, const char *needle) {
  char msg[512];
  ts_status st = ts_program_check(p, 3, msg, sizeof(msg));
  assert_int_equal(st, want);
  if (!strstr(msg, needle))
    fail_msg("\"%s\" not in: %s", needle, msg);
}

static void test_unwritten_workspace_is_a_fault(void **state) {
  (void)state;
  ts_sched *s = split_k_of(ts_gemm_make(7, 5, 10), 4, TS_SPLIT_K_WORKSPACE);
  ts_program *p = ts_lower(s);
  p->order[0] = &p->aux; /* the reduction alone */
  p->nkernels = 1;
  check_program(p, TS_ERR_EXEC_FAULT, "read of global W at element 0, which "
                "nothing wrote");
  ts_program_free(p);
  ts_sched_free(s);
}

static ir_stmt *find_atomic(ir_stmt *s) {
  switch (s->kind) {
  case S_STORE: return s->store.atomic ? s : NULL;
  case S_FOR: return find_atomic(s->for_.body);
  case S_ALLOC: return find_atomic(s->alloc.body);
  case S_IF: return find_atomic(s->if_.then_);
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (find_atomic(s->seq.items[i]))
        return find_atomic(s->seq.items[i]);
    return NULL;
  default: return NULL;
  }
}

static void test_plain_stores_of_two_blocks_race(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(3, 2, 5);
  g.beta = 1.0f;
  ts_sched *s = split_k_of(g, 2, TS_SPLIT_K_ATOMIC);
  ts_program *p = ts_lower(s);
  check_program(p, TS_OK, "");
  ir_stmt *add = find_atomic(p->k.body);
  assert_non_null(add);
  add->store.atomic = false; /* each block's store would overwrite */
  check_program(p, TS_ERR_EXEC_FAULT, "race: two threads write global C");
  ts_program_free(p);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workspace_nest_and_reduction),
      cmocka_unit_test(test_atomic_scales_c_first),
      cmocka_unit_test(test_atomic_with_beta_one_is_one_kernel),
      cmocka_unit_test(test_one_part_changes_nothing),
      cmocka_unit_test(test_both_modes_at_odd_shapes),
      cmocka_unit_test(test_workspace_with_2_byte_c),
      cmocka_unit_test(test_refuses_a_spatial_loop),
      cmocka_unit_test(test_refuses_an_inner_reduction_loop),
      cmocka_unit_test(test_refuses_after_a_cache),
      cmocka_unit_test(test_refuses_twice),
      cmocka_unit_test(test_refuses_a_taken_block_z),
      cmocka_unit_test(test_refuses_bad_parts),
      cmocka_unit_test(test_refuses_atomic_into_half),
      cmocka_unit_test(test_refuses_null_results),
      cmocka_unit_test(test_the_z_loop_takes_no_other_primitive),
      cmocka_unit_test(test_thread_loop_outside_z_is_refused),
      cmocka_unit_test(test_tiling_and_caches_inside),
      cmocka_unit_test(test_vectorized_atomic_adds_each_lane),
      cmocka_unit_test(test_trace_replays),
      cmocka_unit_test(test_program_reads_each_kernel),
      cmocka_unit_test(test_one_source_compiles_both_entries),
      cmocka_unit_test(test_ptxas_report_is_the_schedules_kernel),
      cmocka_unit_test(test_large_workspace_takes_wide_indices),
      cmocka_unit_test(test_unwritten_workspace_is_a_fault),
      cmocka_unit_test(test_plain_stores_of_two_blocks_race),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
