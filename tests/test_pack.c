/*
 * ts_pack: the packing kernels' nest, the views' strides and the
 * workspace's layout, the reference executor through every layout (fp32
 * exact, tf32 rounded, fp16, with split-K's workspace beside the packed
 * operands), a sampled run, caches that walk the packed copy k-major, each
 * refusal, the trace, and the executor catching a packing kernel that
 * leaves an element unwritten.
 */
#include "helpers.h"

#include "ir/program_ir.h"
#include "ir/visit.h"

/* i over blocks of 4 threads, each thread a row of C; `shared_b` caches B
 * in shared memory at j. */
static ts_sched *rows_on_threads(ts_gemm g, bool pack_a, bool pack_b,
                                 bool shared_b) {
  ts_sched *s = ts_matmul_named(&g, "pk");
  if (pack_a)
    assert_int_equal(ts_pack(s, "A"), TS_OK);
  if (pack_b)
    assert_int_equal(ts_pack(s, "B"), TS_OK);
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  ts_stage *st;
  if (shared_b)
    ts_cache_read(s, "B", TS_SHARED, ts_get_loop(s, "j"), &st);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

/* The packing kernel of op(B) in layout NN: a 32 x 32 tile read along n
 * (B's rows), written along k, rounded to tf32; the views' rows padded to
 * 16 bytes, B's after A's at a 256-byte boundary. */
static void test_nest_and_workspace(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(7, 5, 10);
  g.math = TS_MATH_TF32;
  ts_sched *s = rows_on_threads(g, true, true, true);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_int_equal(ts_program_kernel_count(p), 3);
  assert_string_equal(ts_program_kernel_entry(p, 0), "tessel_pk_pack_a");
  assert_string_equal(ts_program_kernel_entry(p, 1), "tessel_pk_pack_b");
  assert_string_equal(ts_program_kernel_entry(p, 2), "tessel_pk");
  /* A: 7 rows of 12 (K = 10 padded to 4), 328 bytes; B from byte 512. */
  assert_int_equal(ts_program_workspace(p), 512 + (9 + 4 * 12 + 1) * 4);
  char *ir = ts_program_ir(p);
  assert_non_null(strstr(ir,
      "// workspace A.packed[7, 10] (f32, k-major rows of 12, 328 bytes at "
      "byte 0)\n"
      "// workspace B.packed[10, 5] (f32, k-major rows of 12, 232 bytes at "
      "byte 512)\n"));
  assert_non_null(strstr(ir,
      "        for p.load in 0..4 unrolled:\n"
      "          if p.r*32 + p.tx < 5 && p.k*32 + p.ty + p.load*8 < 10:\n"
      "            P.tile[p.tx, p.ty + p.load*8] = B[p.k*32 + p.ty + p.load*8, p.r*32 + p.tx]\n"
      "        barrier\n"
      "        for p.store in 0..4 unrolled:\n"
      "          if p.r*32 + p.ty + p.store*8 < 5 && p.k*32 + p.tx < 10:\n"
      "            B.packed[p.k*32 + p.tx, p.r*32 + p.ty + p.store*8] = round_tf32(P.tile[p.ty + p.store*8, p.tx])\n"));
  /* The schedule's cache copies the view, k innermost. */
  assert_non_null(strstr(ir, "= B.packed[(B.shared.round*4 + i.inner) % 10, "
                             "j + (B.shared.round*4 + i.inner)/10]"));
  free(ir);
  char *cu = ts_program_cuda(p);
  assert_non_null(strstr(cu, "float *__restrict__ B_packed = (float *)((char "
                             "*)W + 512);"));
  assert_non_null(strstr(cu, "B_packed[p_k*32 + p_tx + (p_r*32 + p_ty + "
                             "p_store*8)*12] = tessel_round_tf32("));
  assert_non_null(strstr(cu, "asm(\"cvt.rna.tf32.f32 %0, %1;\\n\""));
  free(cu);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Every layout, either operand or both, exact fp32, tf32, fp16, alpha
 * and beta; with split-K's workspace before the packed copies. */
static void test_checks_in_every_layout_and_type(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{7, 5, 10}, {1, 1, 1}, {37, 53, 29}};
  for (int l = TS_NN; l <= TS_TT; l++)
    for (int z = 0; z < 3; z++)
      for (int t = 0; t < 3; t++)
        for (int which = 1; which <= 3; which++) {
          ts_gemm g = ts_gemm_make(shapes[z][0], shapes[z][1], shapes[z][2]);
          g.layout = (ts_layout)l;
          g.alpha = 1.5f;
          g.beta = -0.5f;
          if (t == 1)
            g.math = TS_MATH_TF32;
          if (t == 2)
            g.a_type = g.b_type = TS_F16;
          ts_sched *s = rows_on_threads(g, which & 1, which & 2, z != 1);
          assert_checks(s, 3 + (uint64_t)z);
          ts_sched_free(s);
        }
  ts_gemm g = ts_gemm_make(37, 53, 29);
  g.math = TS_MATH_TF32;
  ts_sched *s = ts_matmul_named(&g, "pk");
  ts_pack(s, "B");
  ts_loop *o, *in, *io, *ii;
  ts_split_k(s, ts_get_loop(s, "k"), 3, TS_SPLIT_K_WORKSPACE, &o, &in);
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_kernel_count(p), 3);
  assert_string_equal(ts_program_kernel_entry(p, 2), "tessel_pk_reduce");
  ts_program_free(p);
  assert_checks(s, 9);
  ts_sched_free(s);
}

/* A sampled check of s (two random points) passes, running fewer blocks
 * than the grids hold; its report. */
static ts_sample sampled_ok(ts_sched *s, uint64_t seed) {
  ts_program *p = ts_lower(s);
  ts_sample sm = {.random = 2};
  char msg[512];
  assert_int_equal(ts_program_check_sampled(p, seed, &sm, msg, sizeof(msg)),
                   TS_OK);
  assert_true(sm.blocks_run < sm.blocks_total);
  ts_program_free(p);
  return sm;
}

/* A sampled run runs the packing blocks of the rows and columns its
 * blocks read, and checks them. */
static void test_sampled(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(301, 203, 77);
  g.math = TS_MATH_TF32;
  g.layout = TS_TN;
  ts_sched *s = rows_on_threads(g, true, true, true);
  assert_true(sampled_ok(s, 7).elements > 0);
  ts_sched_free(s);
}

/* A cache whose region over-reads: i and j fused and split by 64, so a
 * block's copy of A spans more rows than its C elements take.  The rows
 * outside the sample are not packed there, and reading them is no fault
 * (as C's elements outside it), while the full run packs them all. */
static void test_sampled_over_reading_cache(void **state) {
  (void)state;
  for (int packs = 0; packs < 4; packs++) {
    ts_gemm g = ts_gemm_make(300, 50, 20);
    ts_sched *s = ts_matmul_named(&g, "fz");
    if (packs & 1)
      ts_pack(s, "A");
    if (packs & 2)
      ts_pack(s, "B");
    ts_loop *f, *fo, *fi, *ko, *ki;
    ts_fuse(s, ts_get_loop(s, "i"), ts_get_loop(s, "j"), &f);
    ts_split(s, f, 64, &fo, &fi);
    ts_bind(s, fo, TS_BLOCK_X);
    ts_bind(s, fi, TS_THREAD_X);
    ts_split(s, ts_get_loop(s, "k"), 4, &ko, &ki);
    ts_stage *st;
    ts_cache_read(s, "A", TS_SHARED, ko, &st);
    assert_checks(s, 1);
    sampled_ok(s, 1);
    ts_sched_free(s);
  }
}

/* A packing kernel that skips its last row of k leaves elements that the
 * schedule reads unwritten: a fault. */
static ir_stmt *skip_last_k(ir_mutator *m, ir_stmt *s) {
  if (s->kind == S_IF && s->if_.then_->kind == S_STORE &&
      s->if_.then_->store.buf->workspace_view) {
    ir_expr *k = s->if_.then_->store.idx[0]; /* B.packed[k, n] */
    ir_expr *cond = ir_and(m->a, s->if_.cond,
                           ir_binary(m->a, E_LT, k, ir_int(m->a, 9)));
    return ir_new_if(m->a, cond, s->if_.then_, NULL);
  }
  return ir_mutate_stmt_children(m, s);
}

static void test_executor_catches_an_unpacked_element(void **state) {
  (void)state;
  ts_sched *s = rows_on_threads(ts_gemm_make(7, 5, 10), false, true, false);
  ts_program *p = ts_lower(s);
  ir_mutator m = {.a = &p->arena, .stmt = skip_last_k};
  p->pack[1].body = ir_mutate_stmt(&m, p->pack[1].body);
  char msg[512];
  assert_int_equal(ts_program_check(p, 3, msg, sizeof(msg)),
                   TS_ERR_EXEC_FAULT);
  assert_non_null(strstr(msg, "read of global B.packed"));
  assert_non_null(strstr(msg, "which nothing wrote"));
  ts_program_free(p);
  ts_sched_free(s);
}

/* Each refusal names the call and the fix (assert_refused_with frees). */
static void test_refusals(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  assert_refused_with(s, ts_pack(s, "C"), TS_ERR_BAD_ARG,
                      "must be \"A\" or \"B\"");
  s = sched_of(8, 8, 8);
  assert_int_equal(ts_pack(s, "A"), TS_OK);
  assert_refused_with(s, ts_pack(s, "A"), TS_ERR_BAD_ARG, "A is packed "
                      "already");
  s = sched_of(8, 8, 8);
  ts_stage *st;
  ts_cache_read(s, "B", TS_SHARED, ts_get_loop(s, "j"), &st);
  assert_refused_with(s, ts_pack(s, "B"), TS_ERR_BAD_ARG,
                      "call ts_pack before ts_cache_read");
  s = sched_of(8, 8, 8);
  assert_refused_with(s, ts_pack(s, NULL), TS_ERR_NULL_ARG, "'buffer' is "
                      "NULL");
  /* The generated source's names for the views are not loop names. */
  s = sched_of(8, 8, 8);
  assert_int_not_equal(ts_rename(s, ts_get_loop(s, "i"), "B_packed"), TS_OK);
  ts_sched_free(s);
}

/* The trace prints ts_pack and replays to the same nest. */
static void test_trace_replays(void **state) {
  (void)state;
  ts_sched *s = rows_on_threads(ts_gemm_make(9, 7, 5), true, true, true);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_pack(s, \"A\");\nts_pack(s, \"B\");\n"));
  free(trace);
  assert_replays(s);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nest_and_workspace),
      cmocka_unit_test(test_checks_in_every_layout_and_type),
      cmocka_unit_test(test_sampled),
      cmocka_unit_test(test_sampled_over_reading_cache),
      cmocka_unit_test(test_executor_catches_an_unpacked_element),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_trace_replays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
