/*
 * Copy loops bound to threads: a cache's copy distributed over the block's
 * threads (bind, split, fuse of its axes), at odd shapes and double
 * buffered, the errors binding them, and the zeros a cache stores past the
 * edges of op(A) and op(B).
 */
#include "tiles.h"

static void test_bind_copy_loops(void **state) {
  (void)state;
  ts_loop *ko, *ki, *f, *fo, *fi;
  ts_sched *s = tiled(&ko, &ki);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  /* A's 4 x 4 tile one element per thread, as seed 001 loads it; B's
   * fused and spread over threadIdx.x alone, so threadIdx.y == 0 copies. */
  assert_int_equal(ts_bind(s, ts_stage_axis(as, 0), TS_THREAD_Y), TS_OK);
  assert_int_equal(ts_bind(s, ts_stage_axis(as, 1), TS_THREAD_X), TS_OK);
  ts_fuse(s, ts_stage_axis(bs, 0), ts_stage_axis(bs, 1), &f);
  ts_split(s, f, 4, &fo, &fi);
  assert_int_equal(ts_bind(s, fi, TS_THREAD_X), TS_OK);
  assert_ir(s,
            "for i.outer in 0..2 bound to blockIdx.y:\n"
            "  for j.outer in 0..2 bound to blockIdx.x:\n"
            "    for i.inner in 0..4 bound to threadIdx.y:\n"
            "      for j.inner in 0..4 bound to threadIdx.x:\n"
            "        local float acc[1][1]\n"
            "        acc[0, 0] = 0.0\n"
            "        shared float B.shared[4][4]\n"
            "        shared float A.shared[4][4]\n"
            "        for k.outer in 0..2:\n"
            "          A.shared[i.inner, j.inner] = A[i.outer*4 + i.inner, "
            "k.outer*4 + j.inner]\n"
            "          if i.inner == 0:\n"
            "            for B.shared.ax0.B.shared.ax1.fused.outer in 0..4:\n"
            "              B.shared[B.shared.ax0.B.shared.ax1.fused.outer, "
            "j.inner] = B[k.outer*4 + B.shared.ax0.B.shared.ax1.fused.outer, "
            "j.outer*4 + j.inner]\n"
            "          barrier\n"
            "          for k.inner in 0..4:\n"
            "            acc[0, 0] = acc[0, 0] + A.shared[i.inner, k.inner] * "
            "B.shared[k.inner, j.inner]\n"
            "          barrier\n"
            "        C[i.outer*4 + i.inner, j.outer*4 + j.inner] = acc[0, 0]\n");
  assert_correct(s);
  char *t = ts_print_trace(s);
  assert_non_null(strstr(t, "ts_bind(s, A_shared_ax0, TS_THREAD_Y);\n"));
  ts_sched *r = sched_of(8, 8, 8);
  assert_int_equal(ts_replay(s, r), TS_OK);
  char *x1 = ts_print_ir(s), *x2 = ts_print_ir(r);
  assert_string_equal(x1, x2);
  free(x1);
  free(x2);
  free(t);
  ts_sched_free(r);
  ts_sched_free(s);
}

/* A 4 x 8 block over 8-wide steps of k: A's copy bound along both axes, B's
 * contiguous axis vectorized, the rest fused, split and bound, one part
 * shorter than the block (guarded).  Refilled as written (refill 0),
 * double-buffered (1) or pipelined with `refill` stages. */
static ts_sched *bound_copies(const ts_gemm *def, int refill) {
  ts_sched *s = ts_matmul(def);
  ts_loop *ko, *ki, *x, *v, *f, *fo, *fi;
  block_tiled(s, 4, 8, 8, &ko, &ki);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_bind(s, ts_stage_axis(as, 0), TS_THREAD_Y);
  ts_bind(s, ts_stage_axis(as, 1), TS_THREAD_X);
  int c = ts_stage_contiguous(bs);
  ts_split(s, ts_stage_axis(bs, c), 4, &x, &v);
  ts_vectorize(s, v);
  ts_fuse(s, ts_stage_axis(bs, 1 - c), x, &f);
  ts_split(s, f, 4, &fo, &fi);
  ts_bind(s, fo, TS_THREAD_X); /* 4 of the block's 8 */
  ts_bind(s, fi, TS_THREAD_Y);
  if (refill == 1) {
    ts_double_buffer(s, as);
    ts_double_buffer(s, bs);
  } else if (refill > 1) {
    ts_pipeline(s, as, refill);
    ts_pipeline(s, bs, refill);
  }
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

static void test_bound_copies_at_odd_shapes(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{9, 13, 11}, {8, 16, 32}, {17, 9, 30}};
  for (int i = 0; i < 3; i++)
    for (int l = 0; l < 4; l++)
      for (int refill = 0; refill < 4; refill++) {
        ts_gemm def = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
        def.layout = (ts_layout)l;
        ts_sched *s = bound_copies(&def, refill);
        assert_correct(s);
        char *ir = ts_print_ir(s);
        assert_non_null(strstr(ir, "if j.inner < 4"));
        ts_sched_free(s);
        free(ir);
      }
  /* Aligned, B's rows come in as float4. */
  ts_gemm def = ts_gemm_make(8, 16, 32);
  ts_sched *s = bound_copies(&def, 1);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "vec4(B["));
  free(ir);
  ts_sched_free(s);
  s = bound_copies(&def, 3);
  ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "async vec4(B.shared[(k.outer + 2) % 3, "));
  free(ir);
  ts_sched_free(s);
}

static void test_bind_copy_loop_errors(void **state) {
  (void)state;
  ts_loop *ko, *ki, *x, *v;
  ts_stage *as, *al;
  ts_sched *s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  EXPECT_FAIL(ts_bind(s, ts_stage_axis(as, 0), TS_BLOCK_Z), TS_ERR_BAD_TAG,
              "ts_bind: loop \"A.shared.ax0\" copies cache \"A.shared\"; a "
              "copy loop is bound to TS_THREAD_X/Y/Z");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &al);
  EXPECT_FAIL(ts_bind(s, ts_stage_axis(al, 1), TS_THREAD_X), TS_ERR_BAD_TAG,
              "ts_bind: loop \"A.shared.local.ax1\" copies register cache "
              "\"A.shared.local\"");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_split(s, ts_stage_axis(as, 1), 2, &x, &v);
  ts_bind(s, x, TS_THREAD_X);
  EXPECT_FAIL(ts_bind(s, v, TS_THREAD_X), TS_ERR_TAG_BOUND_TWICE,
              "ts_bind: threadIdx.x is already bound to loop "
              "\"A.shared.ax1.outer\" of the copy of \"A.shared\"");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_fuse(s, ts_stage_axis(as, 0), ts_stage_axis(as, 1), &x);
  EXPECT_FAIL(ts_bind(s, x, TS_THREAD_X), TS_ERR_LAUNCH_LIMIT,
              "ts_bind: copy loop \"A.shared.ax0.A.shared.ax1.fused\" has "
              "extent 16; the block has 4 threads along threadIdx.x (loop "
              "\"j.inner\"); split the copy loop by 4 first");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  EXPECT_FAIL(ts_bind(s, ts_stage_axis(as, 0), TS_THREAD_Z), TS_ERR_LAUNCH_LIMIT,
              "ts_bind: copy loop \"A.shared.ax0\" has extent 4; the block "
              "has 1 threads along threadIdx.z; split");
  ts_sched_free(s);
  /* A bound copy loop is not split, fused or vectorized again. */
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_bind(s, ts_stage_axis(as, 1), TS_THREAD_X);
  EXPECT_FAIL(ts_split(s, ts_stage_axis(as, 1), 2, &x, &v), TS_ERR_ALREADY_BOUND,
              "ts_split: loop \"A.shared.ax1\" is already bound to threadIdx.x");
  ts_sched_free(s);
}

/* Caches hold zeros past op(A) and op(B), so the update needs no test of
 * i < M, j < N or k < K where its operands come from caches. */
static void test_zero_filled_caches(void **state) {
  (void)state;
  ts_gemm def = ts_gemm_make(9, 13, 11);
  ts_sched *s = bound_copies(&def, 0);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "else:\n            A.shared[i.inner, j.inner] = 0.0\n"));
  assert_non_null(strstr(ir, "          for k.inner in 0..8:\n"
                             "            acc[0, 0] = acc[0, 0] + "));
  /* The epilogue keeps its tests. */
  assert_non_null(strstr(ir, "if i.outer*4 + i.inner < 9 && j.outer*8 + j.inner < 13:\n"
                             "          C["));
  free(ir);
  ts_sched_free(s);
  /* Loops split after the caches were made (fuzzer cases 0x127af6c7472b63a8
   * and 0xafe6ca8118612ee3, which failed while the rule was being built):
   * the iterations past the split reach past a cache's region, so the
   * update keeps its bounds. */
  def = ts_gemm_make(34, 3, 11);
  def.layout = TS_TT;
  s = ts_matmul(&def);
  ts_stage *st;
  ts_loop *x, *y, *z;
  ts_cache_read(s, "B", TS_SHARED, ts_get_loop(s, "i"), &st);
  ts_split(s, ts_get_loop(s, "j"), 2, &x, &y);
  assert_correct(s);
  ts_sched_free(s);
  def = ts_gemm_make(16, 19, 10);
  s = ts_matmul(&def);
  ts_cache_read(s, "A", TS_LOCAL, ts_get_loop(s, "i"), &st);
  ts_bind(s, ts_get_loop(s, "i"), TS_THREAD_Y);
  ts_split(s, ts_get_loop(s, "k"), 8, &x, &y);
  ts_cache_read(s, "B", TS_SHARED, x, &st);
  ts_split(s, y, 32, &y, &z);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_correct(s);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bind_copy_loops),
      cmocka_unit_test(test_bound_copies_at_odd_shapes),
      cmocka_unit_test(test_bind_copy_loop_errors),
      cmocka_unit_test(test_zero_filled_caches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
