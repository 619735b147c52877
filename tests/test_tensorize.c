/*
 * ts_tensorize and its lowering: warp-tiled tensor-core schedules checked
 * on the reference executor against a plain GEMM at small odd shapes, in
 * every element type and layout (the lanes' fragment layouts are index
 * expressions the executor follows, so a wrong one is a wrong C); ldmatrix
 * chosen where a cache's rows are aligned and plain loads where not; and
 * every refusal of the primitive and of lowering, with what it says.
 */
#include "helpers.h"

#include "ir/printer.h"

typedef struct {
  ts_loop *io, *jo, *warp, *ko, *kq, *mi, *nj, *ii, *jj, *kk;
  ts_stage *as, *bs;
} tc_loops;

/* 32 x 32 block tiles of 2 x 2 warps of 16 x 16 (two instruction tiles
 * along j), k in 32s; A and B in shared memory padded by `pad`. */
static ts_status tiles(ts_sched *s, int64_t pad, tc_loops *l) {
  int64_t kstep = ts_sched_gemm(s)->a_type == TS_F32 ? 8 : 16;
  ts_loop *ir, *wy, *r, *jr, *wx, *c, *ki;
  ts_split(s, ts_get_loop(s, "i"), 32, &l->io, &ir);
  ts_split(s, ir, 16, &wy, &r);
  ts_split(s, r, 16, &l->mi, &l->ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &l->jo, &jr);
  ts_split(s, jr, 16, &wx, &c);
  ts_split(s, c, 8, &l->nj, &l->jj);
  ts_split(s, ts_get_loop(s, "k"), 32, &l->ko, &ki);
  ts_split(s, ki, kstep, &l->kq, &l->kk);
  ts_reorder(s, 11, (ts_loop *[]){l->io, l->jo, wy, wx, l->ko, l->kq, l->mi,
                                   l->nj, l->ii, l->jj, l->kk});
  ts_fuse(s, wy, wx, &l->warp);
  ts_bind(s, l->io, TS_BLOCK_Y);
  ts_bind(s, l->jo, TS_BLOCK_X);
  ts_bind(s, l->warp, TS_THREAD_Y);
  ts_cache_read(s, "A", TS_SHARED, l->ko, &l->as);
  ts_cache_read(s, "B", TS_SHARED, l->ko, &l->bs);
  if (pad) {
    ts_storage_pad(s, l->as, pad);
    ts_storage_pad(s, l->bs, pad);
  }
  return ts_sched_status(s);
}

static ts_gemm def_of(int64_t m, int64_t n, int64_t k, ts_dtype ab) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = ab;
  g.math = ab == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
  return g;
}

static ts_sched *tensorized(const ts_gemm *g, int64_t pad) {
  ts_sched *s = ts_matmul_named(g, "tc");
  tc_loops l;
  tiles(s, pad, &l);
  assert_int_equal(ts_tensorize(s, l.ii, l.jj, l.kk), TS_OK);
  return s;
}

/* How many times `what` occurs in the lowered IR. */
static int occurrences(ts_sched *s, const char *what) {
  char *ir = ts_print_ir(s);
  assert_non_null(ir);
  int n = 0;
  for (const char *p = ir; (p = strstr(p, what)); p++)
    n++;
  free(ir);
  return n;
}

static void test_correct_in_every_type_layout_and_shape(void **state) {
  (void)state;
  static const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  static const int64_t shapes[][3] = {{37, 53, 29}, {1, 1, 1}, {64, 40, 48},
                                      {33, 17, 70}};
  for (size_t t = 0; t < 3; t++)
    for (size_t d = 0; d < 4; d++)
      for (int layout = TS_NN; layout <= TS_TT; layout++) {
        ts_gemm g = def_of(shapes[d][0], shapes[d][1], shapes[d][2], types[t]);
        g.layout = (ts_layout)layout;
        g.alpha = 1.5f;
        g.beta = layout == TS_TT ? 0.5f : 0.0f;
        ts_sched *s = tensorized(&g, 8);
        assert_checks(s, 7 + d);
        ts_sched_free(s);
      }
}

static void test_c_in_sixteen_bits_and_replay(void **state) {
  (void)state;
  ts_gemm g = def_of(45, 30, 40, TS_BF16);
  g.c_type = TS_F16;
  ts_sched *s = tensorized(&g, 8);
  assert_checks(s, 3);
  assert_replays(s);
  char *trace = ts_print_trace(s);
  assert_non_null(strstr(trace, "ts_tensorize(s, i_inner_inner_inner, "
                                "j_inner_inner_inner, k_inner_inner);"));
  free(trace);
  ts_sched_free(s);
}

/* The launch: 32 lanes on threadIdx.x beside the 4 warps; each lane holds
 * 2 tiles x 4 registers of C. */
static void test_lanes_and_accumulators(void **state) {
  (void)state;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  ts_sched *s = tensorized(&g, 8);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "block (32, 4, 1)"));
  assert_non_null(strstr(ir, "for lane in 0..32 bound to threadIdx.x"));
  assert_non_null(strstr(ir, "local float acc[1][2][4]"));
  assert_non_null(strstr(ir, "mma.m16n8k16.f16 acc["));
  free(ir);
  ts_sched_free(s);
}

/* Rows padded by 8 halves stay 16-byte aligned: ldmatrix (x4 for A, x2
 * .trans for B, whose rows run along j); by 4 they do not: plain loads,
 * as for tf32, whose elements ldmatrix does not move. */
static void test_ldmatrix_where_rows_are_aligned(void **state) {
  (void)state;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  ts_sched *s = tensorized(&g, 8);
  assert_int_equal(occurrences(s, "ldmatrix.x4 a_frag"), 1);
  assert_int_equal(occurrences(s, "ldmatrix.x2.trans b_frag"), 1);
  ts_sched_free(s);
  s = tensorized(&g, 4);
  assert_int_equal(occurrences(s, "ldmatrix"), 0);
  assert_checks(s, 5);
  ts_sched_free(s);
  g = def_of(64, 64, 64, TS_F32);
  s = tensorized(&g, 8);
  assert_int_equal(occurrences(s, "ldmatrix"), 0);
  ts_sched_free(s);
  /* B's cache stored k-major, A's m-major: B without .trans, A with. */
  g = def_of(64, 64, 64, TS_F16);
  s = ts_matmul_named(&g, "tc");
  tc_loops l;
  tiles(s, 0, &l);
  ts_storage_transpose(s, l.as);
  ts_storage_transpose(s, l.bs);
  ts_storage_pad(s, l.as, 8);
  ts_storage_pad(s, l.bs, 8);
  assert_int_equal(ts_tensorize(s, l.ii, l.jj, l.kk), TS_OK);
  assert_int_equal(occurrences(s, "ldmatrix.x4.trans a_frag"), 1);
  assert_int_equal(occurrences(s, "ldmatrix.x2 b_frag"), 1);
  assert_checks(s, 9);
  ts_sched_free(s);
}

/* ---- Swizzled shared layouts ------------------------------------------------ */

/* Every element stored once; each chunk's 8 elements kept together and in
 * order; rows of up to 128 bytes kept in place, longer ones cut into
 * 128-byte panels; and 8 consecutive rows read at one logical chunk (an
 * ldmatrix) land in 8 different groups of 4 banks. */
static void test_swizzle_is_a_conflict_free_permutation(void **state) {
  (void)state;
  const int64_t widths[] = {16, 32, 64, 128}; /* halves: 2, 4, 8, 16 chunks */
  for (int w = 0; w < 4; w++) {
    int64_t shape[2] = {32, widths[w]};
    ir_buffer b = {.name = "S", .scope = SCOPE_SHARED, .dtype = TS_F16,
                   .ndim = 2, .shape = {shape[0], shape[1]}};
    ir_buffer_set_layout(&b, (int[]){0, 1}, 0);
    int64_t chunks = widths[w] / 8, panel = widths[w] > 64 ? 64 : widths[w];
    b.swizzle = chunks < 8 ? (int)chunks : 8;
    assert_int_equal(ir_swizzle_panel(&b), widths[w] > 64 ? 64 : 0);
    bool seen[32 * 128] = {false};
    for (int64_t row = 0; row < 32; row++)
      for (int64_t col = 0; col < widths[w]; col++) {
        int64_t off = ir_swizzle_offset(&b, row * widths[w] + col);
        assert_true(off >= 0 && off < 32 * widths[w]);
        assert_false(seen[off]);
        seen[off] = true;
        assert_int_equal(off % 8, col % 8);                /* in-chunk order */
        assert_int_equal(off / (32 * panel), col / panel); /* its panel */
        assert_int_equal(off % (32 * panel) / panel, row); /* its row */
      }
    for (int64_t c = 0; c < chunks; c++)
      for (int64_t r0 = 0; r0 < 32; r0 += 8) {
        bool bank_quad[8] = {false};
        for (int64_t r = r0; r < r0 + 8; r++) {
          int64_t off = ir_swizzle_offset(&b, r * widths[w] + c * 8);
          int64_t quad = (off * 2 / 16) % 8; /* 16 bytes: 4 of 32 banks */
          assert_false(bank_quad[quad]);
          bank_quad[quad] = true;
        }
      }
  }
}

static void test_swizzled_tiles_are_correct(void **state) {
  (void)state;
  static const ts_dtype types[] = {TS_F16, TS_F32};
  for (int t = 0; t < 2; t++) {
    ts_gemm g = def_of(70, 45, 77, types[t]);
    g.layout = TS_TN;
    ts_sched *s = ts_matmul_named(&g, "tc");
    tc_loops l;
    tiles(s, 0, &l);
    assert_int_equal(ts_storage_swizzle(s, l.as), TS_OK);
    assert_int_equal(ts_storage_swizzle(s, l.bs), TS_OK);
    assert_int_equal(ts_tensorize(s, l.ii, l.jj, l.kk), TS_OK);
    assert_checks(s, 21);
    assert_replays(s);
    char *ir = ts_print_ir(s), *cu = ts_cuda_source(s);
    /* Rows of 32 elements: 4 chunks of halves, 8 of floats. */
    assert_non_null(strstr(ir, types[t] == TS_F16
                                   ? "swizzled (16-byte chunk ^ row / 2 % 4)"
                                   : "swizzled (16-byte chunk ^ row / 1 % 8)"));
    assert_non_null(strstr(cu, " ^ ("));
    assert_int_equal(occurrences(s, "ldmatrix"), types[t] == TS_F16 ? 2 : 0);
    free(ir);
    free(cu);
    ts_sched_free(s);
  }
}

static void test_swizzle_refusals(void **state) {
  (void)state;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  tc_loops l;
  ts_sched *s = ts_matmul_named(&g, "tc");
  tiles(s, 8, &l);
  assert_refused_with(s, ts_storage_swizzle(s, l.as), TS_ERR_STAGE_USED,
                      "padding and swizzling are alternatives");
  s = ts_matmul_named(&g, "tc");
  tiles(s, 0, &l);
  ts_storage_swizzle(s, l.as);
  assert_refused_with(s, ts_storage_pad(s, l.as, 8), TS_ERR_STAGE_USED,
                      "is swizzled");
  s = ts_matmul_named(&g, "tc");
  tiles(s, 0, &l);
  ts_storage_swizzle(s, l.as);
  assert_refused_with(s, ts_storage_transpose(s, l.as), TS_ERR_STAGE_USED,
                      "transpose it first");
  /* Rows of 8 halves: one chunk, nothing to permute. */
  s = ts_matmul_named(&g, "small");
  ts_loop *io, *ii, *jo, *jj, *ko, *kk;
  ts_split(s, ts_get_loop(s, "i"), 16, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 16, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &kk);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ko, ii, jj, kk});
  ts_stage *as, *rs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_refused_with(s, ts_storage_swizzle(s, as), TS_ERR_BAD_ARG,
                      "stores 16 rows of 16 bytes");
  s = ts_matmul_named(&g, "local");
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &kk);
  ts_cache_read(s, "A", TS_LOCAL, ko, &rs);
  assert_refused_with(s, ts_storage_swizzle(s, rs), TS_ERR_NOT_SHARED,
                      "only shared memory has banks");
}

/* ---- Refusals ---------------------------------------------------------------- */

static ts_sched *tiled(const ts_gemm *g, tc_loops *l) {
  ts_sched *s = ts_matmul_named(g, "tc");
  assert_int_equal(tiles(s, 8, l), TS_OK);
  return s;
}

static void test_refuses_loops_that_are_not_the_tile(void **state) {
  (void)state;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  tc_loops l;
  ts_sched *s = tiled(&g, &l);
  /* (j, i, k) is C's transpose, a warpgroup's instruction's alone. */
  assert_refused_with(s, ts_tensorize(s, l.jj, l.ii, l.kk),
                      TS_ERR_BAD_TENSORIZE, "walks j as the instruction's "
                      "m; only a warpgroup's wgmma");
  s = tiled(&g, &l);
  assert_refused_with(s, ts_tensorize(s, l.kk, l.jj, l.ii),
                      TS_ERR_BAD_TENSORIZE, "it must walk i and only i");
  s = tiled(&g, &l);
  assert_refused_with(s, ts_tensorize(s, l.ii, l.ii, l.kk),
                      TS_ERR_DUPLICATE_LOOP, "a loop is given twice");
  s = tiled(&g, &l);
  assert_refused_with(s, ts_tensorize(s, l.mi, l.jj, l.kk),
                      TS_ERR_BAD_TENSORIZE, "has 1 iteration;");
  s = tiled(&g, &l);
  assert_refused_with(s, ts_tensorize(s, l.ii, l.jj, l.kq),
                      TS_ERR_BAD_TENSORIZE, "has 2 iterations;");
  s = tiled(&g, &l);
  assert_refused_with(s, ts_tensorize(s, l.ii, l.jj, NULL), TS_ERR_NULL_ARG,
                      "'k' is NULL");
}

static void test_refuses_a_strided_tile(void **state) {
  (void)state;
  /* i split so that the 16 iterations of the inner loop step by 2. */
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  ts_sched *s = ts_matmul_named(&g, "tc");
  ts_loop *a, *b, *jo, *jj, *ko, *kk;
  ts_split(s, ts_get_loop(s, "i"), 2, &a, &b);
  ts_split(s, ts_get_loop(s, "j"), 8, &jo, &jj);
  ts_split(s, ts_get_loop(s, "k"), 16, &ko, &kk);
  ts_loop *ao, *ai;
  ts_split(s, a, 16, &ao, &ai);
  ts_reorder(s, 7, (ts_loop *[]){ao, b, jo, ko, ai, jj, kk});
  assert_refused_with(s, ts_tensorize(s, ai, jj, kk), TS_ERR_BAD_TENSORIZE,
                      "does not step i by 1");
}

static void test_refuses_loops_not_innermost(void **state) {
  (void)state;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  tc_loops l;
  ts_sched *s = tiled(&g, &l);
  ts_reorder(s, 2, (ts_loop *[]){l.jj, l.nj});
  assert_refused_with(s, ts_tensorize(s, l.ii, l.jj, l.kk),
                      TS_ERR_NOT_INNERMOST, "directly around the computation");
}

static void test_refuses_types_without_an_instruction(void **state) {
  (void)state;
  tc_loops l;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  g.b_type = TS_BF16;
  ts_sched *s = tiled(&g, &l);
  assert_refused_with(s, ts_tensorize(s, l.ii, l.jj, l.kk),
                      TS_ERR_TENSOR_TYPE, "A is f16 and B is bf16");
  g = def_of(64, 64, 64, TS_F32);
  g.math = TS_MATH_F32; /* exact fp32 asked for */
  s = tiled(&g, &l);
  assert_refused_with(s, ts_tensorize(s, l.ii, l.jj, l.kk),
                      TS_ERR_TENSOR_TYPE, "TS_MATH_TF32");
  g = def_of(64, 64, 64, TS_F16);
  g.math = TS_MATH_TF32; /* tf32 of halves means nothing */
  s = ts_matmul(&g);
  assert_int_equal(ts_sched_status(s), TS_ERR_BAD_ARG);
  assert_non_null(strstr(ts_sched_errmsg(s), "TS_MATH_TF32 with f32 A and B"));
  ts_sched_free(s);
}

static void test_refuses_thread_x_and_a_second_instruction(void **state) {
  (void)state;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  ts_sched *s = ts_matmul_named(&g, "tc");
  tc_loops l;
  ts_loop *ir, *wy, *r, *jr, *wx, *c, *ki;
  ts_split(s, ts_get_loop(s, "i"), 32, &l.io, &ir);
  ts_split(s, ir, 16, &wy, &r);
  ts_split(s, ts_get_loop(s, "j"), 32, &l.jo, &jr);
  ts_split(s, jr, 16, &wx, &c);
  ts_split(s, c, 8, &l.nj, &l.jj);
  ts_split(s, ts_get_loop(s, "k"), 16, &l.ko, &ki);
  ts_reorder(s, 8, (ts_loop *[]){l.io, l.jo, wy, wx, l.ko, l.nj, r, l.jj});
  ts_reorder(s, 2, (ts_loop *[]){l.jj, ki});
  ts_bind(s, wx, TS_THREAD_X);
  assert_refused_with(s, ts_tensorize(s, r, l.jj, ki), TS_ERR_TAG_BOUND_TWICE,
                      "bound to threadIdx.x");
  /* The loops of an instruction are not tensorized twice. */
  s = tiled(&g, &l);
  ts_tensorize(s, l.ii, l.jj, l.kk);
  assert_refused_with(s, ts_tensorize(s, l.ii, l.jj, l.kk),
                      TS_ERR_ALREADY_BOUND, "already tensorized");
}

/* The headline `tessel check` prints (the status's fixed text) names the
 * type when the operands have no tensor-core instruction, not the loops. */
static void test_headline_names_the_type(void **state) {
  (void)state;
  const ts_dtype b_types[2] = {TS_BF16, TS_F32};
  for (int c = 0; c < 2; c++) {
    tc_loops l;
    ts_gemm g = def_of(64, 64, 64, c == 0 ? TS_F16 : TS_F32);
    g.b_type = b_types[c];
    g.math = TS_MATH_F32; /* exact fp32 in the second case */
    ts_sched *s = tiled(&g, &l);
    ts_tensorize(s, l.ii, l.jj, l.kk);
    const char *headline = ts_strerror(ts_sched_status(s));
    if (!strstr(headline, "type"))
      fail_msg("the headline \"%s\" does not name the type", headline);
    ts_sched_free(s);
  }
}

static void test_lowering_refuses_a_moved_tile(void **state) {
  (void)state;
  ts_gemm g = def_of(64, 64, 64, TS_F16);
  tc_loops l;
  ts_sched *s = tiled(&g, &l);
  assert_int_equal(ts_tensorize(s, l.ii, l.jj, l.kk), TS_OK);
  /* A later reorder moves one instruction loop out of the three. */
  assert_int_equal(ts_reorder(s, 2, (ts_loop *[]){l.ii, l.nj}), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_NOT_INNERMOST);
  assert_non_null(strstr(ts_program_errmsg(p), "call ts_tensorize after"));
  ts_program_free(p);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_correct_in_every_type_layout_and_shape),
      cmocka_unit_test(test_c_in_sixteen_bits_and_replay),
      cmocka_unit_test(test_lanes_and_accumulators),
      cmocka_unit_test(test_ldmatrix_where_rows_are_aligned),
      cmocka_unit_test(test_swizzle_is_a_conflict_free_permutation),
      cmocka_unit_test(test_swizzled_tiles_are_correct),
      cmocka_unit_test(test_swizzle_refusals),
      cmocka_unit_test(test_refuses_loops_that_are_not_the_tile),
      cmocka_unit_test(test_refuses_a_strided_tile),
      cmocka_unit_test(test_refuses_loops_not_innermost),
      cmocka_unit_test(test_refuses_types_without_an_instruction),
      cmocka_unit_test(test_refuses_thread_x_and_a_second_instruction),
      cmocka_unit_test(test_headline_names_the_type),
      cmocka_unit_test(test_lowering_refuses_a_moved_tile),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
