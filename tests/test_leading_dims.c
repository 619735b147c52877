/*
 * Leading dimensions and the operand table: ts_gemm_operand says how each
 * of A, B and C lies in memory; ts_matmul refuses a leading dimension that
 * is negative, shorter than the stored row or past an index's reach; the
 * buffers, the kernels' indices, vector loads, the TMA's tensor maps and
 * the executor's host arrays all take the rows that far apart; the
 * elements between C's rows are the caller's and stay as they were.  The
 * built-ins run on the executor against the plain C GEMM with rows apart
 * by more than packed, at small odd shapes, in every layout and type.
 */
#include "helpers.h"

#include <math.h>

#include "ir/program_ir.h"

/* def with each leading dimension its stored row plus the pad given (a
 * pad of -1 leaves it packed, 0). */
static ts_gemm padded(ts_gemm def, int64_t pa, int64_t pb, int64_t pc) {
  const int64_t pads[3] = {pa, pb, pc};
  int64_t *ld[3] = {&def.lda, &def.ldb, &def.ldc};
  for (int r = 0; r < 3; r++)
    if (pads[r] >= 0)
      *ld[r] = ts_gemm_operand(&def, (ts_operand_role)r).cols + pads[r];
  return def;
}

/* ---- The table --------------------------------------------------------- */

static void test_operand_table_of_each_layout(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(5, 7, 3);
  g.a_type = TS_F16;
  g.b_type = TS_BF16;
  struct { ts_layout layout; int64_t a[2], b[2]; bool ta, tb; } want[] = {
      {TS_NN, {5, 3}, {3, 7}, false, false},
      {TS_NT, {5, 3}, {7, 3}, false, true},
      {TS_TN, {3, 5}, {3, 7}, true, false},
      {TS_TT, {3, 5}, {7, 3}, true, true}};
  for (int l = 0; l < 4; l++) {
    g.layout = want[l].layout;
    ts_operand a = ts_gemm_operand(&g, TS_OPERAND_A);
    ts_operand b = ts_gemm_operand(&g, TS_OPERAND_B);
    ts_operand c = ts_gemm_operand(&g, TS_OPERAND_C);
    assert_int_equal(a.role, TS_OPERAND_A);
    assert_int_equal(a.type, TS_F16);
    assert_int_equal(b.type, TS_BF16);
    assert_int_equal(c.type, TS_F32);
    assert_int_equal(a.rows, want[l].a[0]);
    assert_int_equal(a.cols, want[l].a[1]);
    assert_int_equal(b.rows, want[l].b[0]);
    assert_int_equal(b.cols, want[l].b[1]);
    assert_int_equal(a.transposed, want[l].ta);
    assert_int_equal(b.transposed, want[l].tb);
    assert_false(c.transposed);
    assert_int_equal(c.rows, 5);
    assert_int_equal(c.cols, 7);
    /* 0 is packed: the stored row. */
    assert_int_equal(a.ld, a.cols);
    assert_int_equal(b.ld, b.cols);
    assert_int_equal(c.ld, 7);
    assert_int_equal(a.batch, 1);
    assert_int_equal(a.batch_stride, 0);
    assert_int_equal(ts_operand_elements(&a), 15);
    assert_int_equal(ts_operand_elements(&c), 35);
  }
  assert_string_equal(ts_operand_name(TS_OPERAND_A), "A");
  assert_string_equal(ts_operand_name(TS_OPERAND_B), "B");
  assert_string_equal(ts_operand_name(TS_OPERAND_C), "C");
  assert_string_equal(ts_operand_name(TS_OPERAND_COUNT), "?");
}

static void test_elements_span_the_rows_at_their_ld(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(5, 7, 3);
  g.layout = TS_TN; /* A stored 3 x 5 */
  g.lda = 8;
  g.ldc = 10;
  ts_operand a = ts_gemm_operand(&g, TS_OPERAND_A);
  ts_operand c = ts_gemm_operand(&g, TS_OPERAND_C);
  assert_int_equal(a.ld, 8);
  assert_int_equal(ts_operand_elements(&a), 2 * 8 + 5);
  assert_int_equal(ts_operand_elements(&c), 4 * 10 + 7);
}

/* ---- ts_matmul's checks ---------------------------------------------------- */

static void assert_matmul_refuses(ts_gemm g, const char *says) {
  ts_sched *s = ts_matmul(&g);
  assert_int_equal(ts_sched_status(s), TS_ERR_BAD_SHAPE);
  if (!strstr(ts_sched_errmsg(s), says))
    fail_msg("expected \"%s\" in: %s", says, ts_sched_errmsg(s));
  ts_sched_free(s);
}

static void test_matmul_refuses_a_negative_ld(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 32, 128);
  g.ldb = -1;
  assert_matmul_refuses(g, "ts_matmul: def->ldb is -1, negative; give the "
                        "elements from one stored row of B to the next "
                        "(>= 32), or 0 for packed");
}

static void test_matmul_refuses_an_ld_shorter_than_the_row(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 32, 128);
  g.lda = 100;
  assert_matmul_refuses(g, "ts_matmul: def->lda is 100, smaller than A's "
                        "stored row of 128 elements (A is 64 x 128, layout "
                        "NN); give lda >= 128, or 0 for packed");
  g = ts_gemm_make(64, 32, 128);
  g.layout = TS_TN; /* A stored 128 x 64: 64 is enough */
  g.lda = 64;
  g.ldc = 31;
  assert_matmul_refuses(g, "ts_matmul: def->ldc is 31, smaller than C's "
                        "stored row of 32 elements (C is 64 x 32, layout "
                        "TN); give ldc >= 32, or 0 for packed");
}

static void test_matmul_refuses_an_ld_past_an_index(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(1 << 20, 32, 128);
  g.lda = (int64_t)1 << 43;
  assert_matmul_refuses(g, "ts_matmul: def->lda is 8796093022208: A's "
                        "1048576 stored rows that far apart span more than "
                        "2^62 elements");
  /* One row: its ld reaches nothing. */
  g.m = 1;
  ts_sched *s = ts_matmul(&g);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_sched_free(s);
}

/* ---- The kernels ---------------------------------------------------------- */

static char *cuda_of(const char *builtin, ts_gemm g) {
  ts_sched *s = ts_builtin_schedule(builtin, &g);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_program *p = ts_lower(s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("%s: %s", builtin, ts_program_errmsg(p));
  char *text = ts_program_cuda(p);
  assert_non_null(text);
  ts_program_free(p);
  ts_sched_free(s);
  return text;
}

/* The naive kernel indexes A, B and C with their rows ld apart, and says
 * so in its header. */
static void test_kernel_indexes_rows_ld_apart(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(33, 17, 9);
  g.lda = 12;
  g.ldb = 20;
  g.ldc = 19;
  char *src = cuda_of("naive", g);
  assert_non_null(strstr(src, "A is op(A) (33 x 9, row-major, rows 12 apart), "
                              "B is op(B) (9 x 17, row-major, rows 20 apart), "
                              "C row-major, rows 19 apart."));
  assert_non_null(strstr(src, "A[(i_outer*32 + i_inner)*12 + k] * "
                              "B[k*20 + j_outer*32 + j_inner]"));
  assert_non_null(strstr(src, "C[(i_outer*32 + i_inner)*19 + j_outer*32 + "
                              "j_inner] = acc;"));
  free(src);
}

/* A leading dimension given as the packed row is the packed kernel, byte
 * for byte: 0 and cols are one definition. */
static void test_packed_ld_given_is_the_packed_kernel(void **state) {
  (void)state;
  const char *names[] = {"naive", "warptiled", "splitk", "wgtma"};
  for (int l = 0; l < 4; l++)
    for (size_t b = 0; b < sizeof(names) / sizeof(names[0]); b++) {
      ts_gemm g = ts_gemm_make(96, 80, 64);
      g.layout = (ts_layout)l;
      g.a_type = g.b_type = TS_F16;
      char *packed = cuda_of(names[b], g);
      char *given = cuda_of(names[b], padded(g, 0, 0, 0));
      assert_string_equal(packed, given);
      free(packed);
      free(given);
    }
}

/* vectorized loads A's and B's tiles 4 floats at a time; where a row of
 * A starts off the width (lda 67), A's loads stay scalar lanes and B's
 * stay vectors, and the kernel is still right. */
static void test_vector_loads_fall_back_where_ld_is_off_the_width(
    void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 64, 64);
  char *aligned = cuda_of("vectorized", padded(g, 4, 4, 4));
  ts_gemm off = padded(g, 3, 4, 4);
  char *scalar = cuda_of("vectorized", off);
  int vectors = count_in(aligned, "reinterpret_cast<const float4 *>(&A[");
  assert_true(vectors > 0);
  assert_int_equal(count_in(scalar, "reinterpret_cast<const float4 *>(&A["),
                   0);
  assert_int_equal(count_in(scalar, "reinterpret_cast<const float4 *>(&B["),
                   count_in(aligned, "reinterpret_cast<const float4 *>(&B["));
  free(aligned);
  free(scalar);
  ts_sched *s = ts_builtin_schedule("vectorized", &off);
  assert_checks(s, 3);
  ts_sched_free(s);
}

/* The TMA's tensor map of an operand as given has its rows ld apart. */
static void test_tensor_map_rows_are_ld_apart(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = TS_F16;
  g.layout = TS_NT;
  g = padded(g, 8, 24, -1);
  ts_sched *s = ts_builtin_schedule("wgtma", &g);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  int maps = 0;
  for (int i = 0; i < p->k.nparams; i++) {
    const ts_param *q = &p->k.params[i].p;
    if (q->kind != TS_PARAM_TENSOR_MAP || q->buffer == TS_PARAM_C)
      continue;
    assert_int_equal(q->row_bytes, q->buffer == TS_PARAM_A ? 520 * 2
                                                           : 536 * 2);
    maps++;
  }
  assert_int_equal(maps, 2);
  ts_program_free(p);
  ts_sched_free(s);
}

/* A schedule made for rows 16-byte aligned, replayed onto a definition
 * whose ld is not: lowering's refusal names the field and the fix. */
static void assert_replay_refused(const char *builtin, ts_gemm aligned,
                                  ts_gemm off, const char *says) {
  ts_sched *from = ts_builtin_schedule(builtin, &aligned);
  ts_sched *onto = ts_matmul(&off);
  assert_int_equal(ts_replay(from, onto), TS_OK);
  ts_program *p = ts_lower(onto);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_ARG);
  if (!strstr(ts_program_errmsg(p), says))
    fail_msg("expected \"%s\" in: %s", says, ts_program_errmsg(p));
  ts_program_free(p);
  ts_sched_free(onto);
  ts_sched_free(from);
}

static void test_tma_refuses_rows_off_16_bytes_naming_ld(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = TS_F16;
  g.layout = TS_NT;
  assert_replay_refused(
      "wgtma", padded(g, 8, -1, -1), padded(g, 3, -1, -1),
      "which needs the rows of A 16-byte aligned; def->lda puts them 515 "
      "elements of 2 bytes apart: give lda a multiple of 8, pack A first "
      "(ts_pack) or fill the cache with cp.async (no ts_tma)");
  g.c_type = TS_F16;
  assert_replay_refused(
      "wgstore", padded(g, -1, -1, 8), padded(g, -1, -1, 1),
      "which needs C's rows 16-byte aligned; def->ldc puts them 257 "
      "elements of 2 bytes apart: give ldc a multiple of 8, or leave the "
      "stage out");
}

/* ---- The executor's host arrays --------------------------------------------- */

/* ts_program_execute reads and writes the arrays with their rows ld
 * apart, and leaves the elements between C's rows as they were. */
static void test_execute_keeps_the_callers_elements(void **state) {
  (void)state;
  ts_gemm g = padded(ts_gemm_make(3, 5, 2), 2, 1, 3);
  g.beta = 1.0f;
  ts_operand oa = ts_gemm_operand(&g, TS_OPERAND_A);
  ts_operand ob = ts_gemm_operand(&g, TS_OPERAND_B);
  ts_operand oc = ts_gemm_operand(&g, TS_OPERAND_C);
  float A[16], B[16], C[32];
  for (int i = 0; i < 16; i++)
    A[i] = B[i] = 1000.0f; /* between rows: never read */
  for (int64_t r = 0; r < oa.rows; r++)
    for (int64_t c = 0; c < oa.cols; c++)
      A[r * oa.ld + c] = (float)(r + c);
  for (int64_t r = 0; r < ob.rows; r++)
    for (int64_t c = 0; c < ob.cols; c++)
      B[r * ob.ld + c] = (float)(r - c);
  for (int i = 0; i < 32; i++)
    C[i] = -7.0f;
  ts_sched *s = ts_builtin_schedule("naive", &g);
  ts_program *p = ts_lower(s);
  char msg[512];
  assert_int_equal(ts_program_execute(p, A, B, C, msg, sizeof(msg)), TS_OK);
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 8; j++) {
      if (j >= 5) {
        assert_true(C[i * oc.ld + j] == -7.0f);
        continue;
      }
      float want = -7.0f;
      for (int64_t k = 0; k < 2; k++)
        want += A[i * oa.ld + k] * B[k * ob.ld + j];
      assert_true(fabsf(C[i * oc.ld + j] - want) < 1e-5f);
    }
  ts_program_free(p);
  ts_sched_free(s);
}

/* The same on an f16 C held as its bits: the caller's elements between
 * rows keep their bits (a NaN's payload too), not narrowed back. */
static void test_execute_matrices_keeps_the_callers_bits(void **state) {
  (void)state;
  ts_gemm g = padded(ts_gemm_make(4, 6, 8), 0, 0, 2);
  g.a_type = g.b_type = g.c_type = TS_F16;
  uint16_t A[32], B[48], C[30];
  for (int i = 0; i < 32; i++)
    A[i] = 0x3c00; /* 1.0 */
  for (int i = 0; i < 48; i++)
    B[i] = 0x3800; /* 0.5 */
  for (int i = 0; i < 30; i++)
    C[i] = 0x7c01; /* a signalling NaN */
  ts_sched *s = ts_builtin_schedule("naive", &g);
  ts_program *p = ts_lower(s);
  char msg[512];
  assert_int_equal(ts_program_execute_matrices(
                       p, (ts_matrix){A, TS_F16}, (ts_matrix){B, TS_F16},
                       (ts_matrix){C, TS_F16}, msg, sizeof(msg)),
                   TS_OK);
  for (int e = 0; e < 30; e++) /* rows of 6, 8 apart */
    assert_int_equal(C[e], e % 8 < 6 ? 0x4400 /* 4.0 */ : 0x7c01);
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- Against the plain C GEMM -------------------------------------------- */

/* Built-ins, each of a kind of kernel: one thread an element, register
 * tiles with vector loads, warp tiles, split-K's two kernels, tensor
 * cores (mma.sync; wgmma from cp.async and from the TMA, with C stored
 * by the TMA), and a packed operand (wg128's tf32 packs A and B, wgtma
 * packs a row not 16-byte aligned). */
static const char *const sweep[] = {"naive", "vectorized", "warptiled",
                                    "splitk", "tc64", "wg128", "wgtma",
                                    "wgstore"};

/* Leading dimensions past packed, every layout, fp32 (tf32 for the
 * tensor cores), fp16 and bf16, beta 0 and not, at a small odd shape and
 * at one whose packed rows are all 16-byte aligned but A's and C's
 * leading dimensions are not (so the Hopper built-ins pack A and store C
 * without the TMA): each schedule lowers, is right on the executor, and
 * leaves the elements between C's rows alone (ts_check compares them). */
static void test_builtins_with_ld_against_plain_gemm(void **state) {
  (void)state;
  static const ts_dtype types[] = {TS_F32, TS_F16, TS_BF16};
  static const int64_t shapes[2][3] = {{37, 45, 29}, {64, 48, 40}};
  for (size_t b = 0; b < sizeof(sweep) / sizeof(sweep[0]); b++)
    for (int sh = 0; sh < 2; sh++)
      for (int l = 0; l < 4; l++)
        for (int t = 0; t < 3; t++) {
          ts_gemm g = ts_gemm_make(shapes[sh][0], shapes[sh][1],
                                   shapes[sh][2]);
          g.layout = (ts_layout)l;
          g.a_type = g.b_type = g.c_type = types[t];
          g.beta = (l + t) % 2 ? 0.5f : 0.0f;
          g = def_for_builtin(ts_builtin_find(sweep[b]),
                              padded(g, 3 + 8 * (t == 1), 8, 5));
          ts_sched *s = ts_builtin_schedule(sweep[b], &g);
          assert_int_equal(ts_sched_status(s), TS_OK);
          if (!sweep_point_runs()) {
            assert_lowers(s);
            ts_sched_free(s);
            continue;
          }
          char msg[512];
          ts_status st = ts_check(s, 11 + (uint64_t)t, msg, sizeof(msg));
          if (st != TS_OK)
            fail_msg("%s %lldx%lldx%lld %s %s: %s", sweep[b],
                     (long long)g.m, (long long)g.n, (long long)g.k,
                     ts_layout_name(g.layout), ts_dtype_name(types[t]), msg);
          ts_sched_free(s);
        }
}

/* ts_pack's kernel reads A and B along their rows ld apart. */
static void test_pack_reads_rows_ld_apart(void **state) {
  (void)state;
  for (int l = 0; l < 4; l++) {
    ts_gemm g = ts_gemm_make(21, 19, 35);
    g.layout = (ts_layout)l;
    g = padded(g, 5, 2, 1);
    ts_sched *s = ts_matmul(&g);
    assert_int_equal(ts_pack(s, "A"), TS_OK);
    assert_int_equal(ts_pack(s, "B"), TS_OK);
    ts_loop *i = ts_get_loop(s, "i"), *j = ts_get_loop(s, "j");
    assert_int_equal(ts_bind(s, i, TS_BLOCK_X), TS_OK);
    assert_int_equal(ts_bind(s, j, TS_THREAD_X), TS_OK);
    assert_checks(s, 5);
    ts_sched_free(s);
  }
}

/* The sampled check reads its computed A and B, and C's pages, at the
 * rows' leading dimensions. */
static void test_sampled_check_with_ld(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(300, 260, 70);
  g.beta = 0.5f;
  g.layout = TS_TT;
  g = padded(g, 7, 3, 9);
  ts_sched *s = ts_builtin_schedule("splitk", &g);
  ts_program *p = ts_lower(s);
  ts_sample sample = {.random = 4};
  char msg[512];
  ts_status st = ts_program_check_sampled(p, 9, &sample, msg, sizeof(msg));
  if (st != TS_OK)
    fail_msg("%s: %s", ts_strerror(st), msg);
  assert_true(sample.elements > 0);
  ts_program_free(p);
  ts_sched_free(s);
}

/* The trace as C sets the leading dimensions it replays with. */
static void test_trace_sets_the_leading_dimensions(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(8, 8, 8);
  g.ldb = 12;
  ts_sched *s = ts_matmul(&g);
  char *trace = ts_print_trace(s);
  assert_non_null(trace);
  assert_non_null(strstr(trace, "def.ldb = 12;\n"));
  assert_null(strstr(trace, "def.lda"));
  free(trace);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_operand_table_of_each_layout),
      cmocka_unit_test(test_elements_span_the_rows_at_their_ld),
      cmocka_unit_test(test_matmul_refuses_a_negative_ld),
      cmocka_unit_test(test_matmul_refuses_an_ld_shorter_than_the_row),
      cmocka_unit_test(test_matmul_refuses_an_ld_past_an_index),
      cmocka_unit_test(test_kernel_indexes_rows_ld_apart),
      cmocka_unit_test(test_packed_ld_given_is_the_packed_kernel),
      cmocka_unit_test(test_vector_loads_fall_back_where_ld_is_off_the_width),
      cmocka_unit_test(test_tensor_map_rows_are_ld_apart),
      cmocka_unit_test(test_tma_refuses_rows_off_16_bytes_naming_ld),
      cmocka_unit_test(test_execute_keeps_the_callers_elements),
      cmocka_unit_test(test_execute_matrices_keeps_the_callers_bits),
      cmocka_unit_test(test_builtins_with_ld_against_plain_gemm),
      cmocka_unit_test(test_pack_reads_rows_ld_apart),
      cmocka_unit_test(test_sampled_check_with_ld),
      cmocka_unit_test(test_trace_sets_the_leading_dimensions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
