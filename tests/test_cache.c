/*
 * Tests of the memory-hierarchy primitives: cache_read, cache_write,
 * storage layout, vectorize and double_buffer (copy loops bound to threads
 * are in test_bound_copies.c).  Golden IR for each, every
 * error with its code and message (and the schedule left as it was), the
 * trace replayed, and each result run through the reference executor.
 */
#include "tiles.h"

#include "ir/printer.h"
#include "ir/program_ir.h"

static void test_cache_read_shared(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_sched *s = tiled(&ko, &ki);
  ts_stage *as, *bs;
  assert_int_equal(ts_cache_read(s, "A", TS_SHARED, ko, &as), TS_OK);
  assert_int_equal(ts_cache_read(s, "B", TS_SHARED, ko, &bs), TS_OK);
  assert_string_equal(ts_stage_name(as), "A.shared");
  assert_int_equal(ts_loop_extent(ts_stage_axis(as, 0)), 4);
  assert_int_equal(ts_stage_contiguous(as), 1);
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
            "          B.shared[i.inner, j.inner] = B[k.outer*4 + i.inner, "
            "j.outer*4 + j.inner]\n"
            "          barrier\n"
            "          for k.inner in 0..4:\n"
            "            acc[0, 0] = acc[0, 0] + A.shared[i.inner, k.inner] * "
            "B.shared[k.inner, j.inner]\n"
            "          barrier\n"
            "        C[i.outer*4 + i.inner, j.outer*4 + j.inner] = acc[0, 0]\n");
  assert_correct(s);
  ts_sched_free(s);
}

/* One k step: the copy is filled once, so no barrier ends the body. */
static void test_no_trailing_barrier_without_refill(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_sched *s = tiled_k(4, &ko, &ki);
  ts_stage *as;
  assert_int_equal(ts_cache_read(s, "A", TS_SHARED, ko, &as), TS_OK);
  char *ir = ts_print_ir(s);
  assert_int_equal(count(ir, "barrier"), 1);
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
}

static void test_register_cache_and_cache_write(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *io, *ii, *ko, *ki, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 4, &jo, &ji);
  ts_split(s, ts_get_loop(s, "k"), 4, &ko, &ki);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ko, ki, ii, ji});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_stage *ra, *cw;
  assert_int_equal(ts_cache_read(s, "A", TS_LOCAL, ki, &ra), TS_OK);
  assert_int_equal(ts_cache_write(s, "C", TS_LOCAL, jo, &cw), TS_OK);
  assert_ir(s,
            "for i.outer in 0..2 bound to blockIdx.y:\n"
            "  for j.outer in 0..2 bound to blockIdx.x:\n"
            "    local float C.local[4][4]\n"
            "    for i.inner in 0..4:\n"
            "      for j.inner in 0..4:\n"
            "        C.local[i.inner, j.inner] = 0.0\n"
            "    for k.outer in 0..2:\n"
            "      local float A.local[4][1]\n"
            "      for k.inner in 0..4:\n"
            "        for A.local.ax0 in 0..4 unrolled:\n"
            "          A.local[A.local.ax0, 0] = A[i.outer*4 + A.local.ax0, "
            "k.outer*4 + k.inner]\n"
            "        for i.inner in 0..4:\n"
            "          for j.inner in 0..4:\n"
            "            C.local[i.inner, j.inner] = C.local[i.inner, j.inner] "
            "+ A.local[i.inner, 0] * B[k.outer*4 + k.inner, j.outer*4 + "
            "j.inner]\n"
            "    for i.inner in 0..4:\n"
            "      for j.inner in 0..4:\n"
            "        C[i.outer*4 + i.inner, j.outer*4 + j.inner] = "
            "C.local[i.inner, j.inner]\n");
  assert_correct(s);
  ts_sched_free(s);
}

static void test_layout_vectorize_double_buffer(void **state) {
  (void)state;
  ts_loop *ko, *ki, *x, *v;
  ts_sched *s = tiled(&ko, &ki);
  ts_stage *as, *bs;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  assert_int_equal(ts_storage_transpose(s, as), TS_OK);
  assert_int_equal(ts_storage_pad(s, as, 4), TS_OK);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_split(s, ts_stage_axis(bs, ts_stage_contiguous(bs)), 4, &x, &v);
  assert_int_equal(ts_vectorize(s, v), TS_OK);
  assert_int_equal(ts_double_buffer(s, as), TS_OK);
  assert_int_equal(ts_double_buffer(s, bs), TS_OK);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "shared float A.shared[2][4][4] stored as [0, 2, "
                             "1] padded by 4\n"));
  assert_non_null(strstr(ir, "vec4(B.shared[0, "));
  assert_non_null(strstr(ir, "vec4(B[k.outer*4 + "));
  assert_non_null(strstr(ir, "if k.outer + 1 < 2:\n"));
  assert_int_equal(count(ir, "barrier"), 2); /* prologue, one per step */
  free(ir);
  char *cu = ts_cuda_source(s);
  assert_non_null(strstr(cu, "__shared__ __align__(16) float A_shared[2][4][8];"));
  assert_non_null(strstr(cu, "*reinterpret_cast<const float4 *>(&B["));
  assert_non_null(strstr(cu, "float B_shared_reg["));
  free(cu);
  assert_correct(s);
  /* The trace replays to the same kernel. */
  ts_sched *r = sched_of(8, 8, 8);
  assert_int_equal(ts_replay(s, r), TS_OK);
  char *x1 = ts_cuda_source(s), *x2 = ts_cuda_source(r);
  char *t = ts_print_trace(s);
  assert_non_null(strstr(t, "ts_double_buffer(s, A_shared);\n"));
  assert_non_null(strstr(t, "ts_storage_pad(s, A_shared, 4);\n"));
  assert_string_equal(strchr(x1, '\n'), strchr(x2, '\n'));
  free(t);
  free(x1);
  free(x2);
  ts_sched_free(r);
  ts_sched_free(s);
}

/* 16x16x16 in fp16 with an fp16 C: 8x8 block tiles, one thread per element,
 * k in steps of 8; shared copies of A and B whose rows of 8 halves are one
 * 16-byte access, and a register copy of A that holds fp32. */
static void test_fp16_caches_and_vectors(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(16, 16, 16);
  g.a_type = g.b_type = g.c_type = TS_F16;
  g.beta = 0.5f;
  ts_sched *s = ts_matmul(&g);
  ts_loop *ko, *ki;
  block_tiled(s, 8, 8, 8, &ko, &ki);
  ts_stage *as, *bs, *al;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_cache_read(s, "B", TS_SHARED, ko, &bs);
  ts_cache_read(s, "A.shared", TS_LOCAL, ki, &al);
  assert_int_equal(ts_vectorize(s, ts_stage_axis(as, ts_stage_contiguous(as))),
                   TS_OK);
  assert_int_equal(ts_vectorize(s, ts_stage_axis(bs, ts_stage_contiguous(bs))),
                   TS_OK);
  assert_int_equal(ts_sched_status(s), TS_OK);
  char *ir = ts_print_ir(s);
  assert_non_null(strstr(ir, "shared f16 A.shared[8][8]\n"));
  assert_non_null(strstr(ir, "local float A.shared.local[1][1]\n"));
  assert_non_null(strstr(ir, "vec8(B[k.outer*8 + "));
  assert_non_null(strstr(ir, "= float(A.shared["));
  assert_non_null(strstr(ir, "] = f16(acc[0, 0] + 0.5 * float(C[i.outer*8 + "
                             "i.inner, j.outer*8 + j.inner]))"));
  free(ir);
  char *cu = ts_cuda_source(s);
  assert_non_null(strstr(cu, "#include <cuda_fp16.h>\n"));
  assert_non_null(strstr(cu, "struct __align__(16) tessel_f16x8 { __half v[8]; };"));
  assert_non_null(strstr(cu, "(const __half *__restrict__ A, const __half "
                             "*__restrict__ B,\n    __half *__restrict__ C)"));
  assert_non_null(strstr(cu, "__shared__ __align__(16) __half B_shared[8][8];"));
  assert_non_null(strstr(cu, "*reinterpret_cast<const tessel_f16x8 *>(&B["));
  assert_non_null(strstr(cu, "= tessel_f16x8{{B_v0.v[0], B_v0.v[1], "));
  assert_non_null(strstr(cu, "float A_shared_local;"));
  assert_non_null(strstr(cu, "A_shared_local = __half2float(A_shared["));
  assert_non_null(strstr(cu, "= __float2half_rn(acc + 0.5f * __half2float(C["));
  free(cu);
  assert_correct(s);
  ts_sched_free(s);
}

/* ---- Errors ---------------------------------------------------------------- */

/* Lowering expands a vectorized loop into its lanes: the update's vector
 * load of B fills a temporary that four scalar stores read lane by lane;
 * the epilogue's load of C another, and one vector store writes the four
 * lane values.  The IR text shows the loops as scheduled. */
static void test_vector_lanes_expanded(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(2, 8, 2);
  g.beta = 0.5f;
  ts_sched *s = ts_matmul(&g);
  ts_loop *jo, *ji;
  ts_split(s, ts_get_loop(s, "j"), 4, &jo, &ji);
  ts_reorder(s, 2, (ts_loop *[]){ts_get_loop(s, "k"), ji});
  assert_int_equal(ts_vectorize(s, ji), TS_OK);
  assert_ir(s,
            "for i in 0..2:\n"
            "  for j.outer in 0..2:\n"
            "    local float acc[1][4]\n"
            "    for j.inner in 0..4 vectorized:\n"
            "      acc[0, j.inner] = 0.0\n"
            "    for k in 0..2:\n"
            "      for j.inner in 0..4 vectorized:\n"
            "        acc[0, j.inner] = acc[0, j.inner] + A[i, k] * "
            "vec4(B[k, j.outer*4 + j.inner])\n"
            "    for j.inner in 0..4 vectorized:\n"
            "      vec4(C[i, j.outer*4 + j.inner]) = acc[0, j.inner] + 0.5 * "
            "vec4(C[i, j.outer*4 + j.inner])\n");
  ts_program *p = ts_lower(s);
  assert_int_equal(p->status, TS_OK);
  ts_buf b;
  ts_buf_init(&b);
  ir_print_stmt_lanes(&b, p->k.body, 0);
  char *lanes = ts_buf_take(&b);
  assert_string_equal(
      lanes,
      "for i in 0..2:\n"
      "  for j.outer in 0..2:\n"
      "    local float acc[1][4]\n"
      "    lanes of j.inner in 0..4:\n"
      "      acc[0, 0] = 0.0\n"
      "      acc[0, 1] = 0.0\n"
      "      acc[0, 2] = 0.0\n"
      "      acc[0, 3] = 0.0\n"
      "    for k in 0..2:\n"
      "      lanes of j.inner in 0..4:\n"
      "        local float B.v0[4] = vec4(B[k, j.outer*4])\n"
      "        acc[0, 0] = acc[0, 0] + A[i, k] * B.v0[0]\n"
      "        acc[0, 1] = acc[0, 1] + A[i, k] * B.v0[1]\n"
      "        acc[0, 2] = acc[0, 2] + A[i, k] * B.v0[2]\n"
      "        acc[0, 3] = acc[0, 3] + A[i, k] * B.v0[3]\n"
      "    lanes of j.inner in 0..4:\n"
      "      local float C.v0[4] = vec4(C[i, j.outer*4])\n"
      "      vec4(C[i, j.outer*4]) = vec4(acc[0, 0] + 0.5 * C.v0[0], "
      "acc[0, 1] + 0.5 * C.v0[1], acc[0, 2] + 0.5 * C.v0[2], "
      "acc[0, 3] + 0.5 * C.v0[3])\n");
  free(lanes);
  /* Codegen prints the lanes one to one. */
  char *cu = ts_program_cuda(p);
  assert_non_null(strstr(
      cu, "        {\n"
          "          const float4 B_v0 = *reinterpret_cast<const float4 "
          "*>(&B[k*8 + j_outer*4]);\n"
          "          acc[0][0] += A[i*2 + k] * B_v0.x;\n"));
  assert_non_null(strstr(
      cu, "*reinterpret_cast<float4 *>(&C[i*8 + j_outer*4]) = "
          "make_float4(acc[0][0] + 0.5f * C_v0.x, acc[0][1] + 0.5f * "
          "C_v0.y, acc[0][2] + 0.5f * C_v0.z, acc[0][3] + 0.5f * C_v0.w);\n"));
  free(cu);
  ts_program_free(p);
  assert_correct(s);
  ts_sched_free(s);
}

/* 8 lanes are 16 bytes of fp16 or bf16; of floats they are not a vector. */
static void test_vector_width_follows_the_element_size(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(16, 16, 16);
  ts_sched *s = ts_matmul(&g);
  ts_loop *jo, *ji;
  ts_split(s, ts_get_loop(s, "j"), 8, &jo, &ji);
  EXPECT_FAIL(ts_vectorize(s, ji), TS_ERR_BAD_VECTOR,
              "ts_vectorize: loop \"j.inner\" has 8 iterations; a vector is "
              "1, 2 or 4 wide: split the loop by 4 (or 2)");
  ts_sched_free(s);
  g.a_type = g.b_type = TS_BF16;
  s = ts_matmul(&g);
  ts_split(s, ts_get_loop(s, "j"), 8, &jo, &ji);
  ts_reorder(s, 2, (ts_loop *[]){ts_get_loop(s, "k"), ji});
  assert_int_equal(ts_vectorize(s, ji), TS_OK);
  char *ir = ts_print_ir(s);
  /* B's 8 bf16 lanes are one access; C's 8 floats stay scalar. */
  assert_non_null(strstr(ir, "float(vec8(B[k, j.outer*8 + j.inner]))"));
  assert_null(strstr(ir, "vec8(C["));
  free(ir);
  assert_correct(s);
  ts_sched_free(s);
  s = ts_matmul(&g);
  ts_split(s, ts_get_loop(s, "j"), 3, &jo, &ji);
  EXPECT_FAIL(ts_vectorize(s, ji), TS_ERR_BAD_VECTOR,
              "ts_vectorize: loop \"j.inner\" has 3 iterations; a vector is "
              "1, 2 or 4 wide (8 for fp16 and bf16): split the loop by 8 "
              "(or 4, 2)");
  ts_sched_free(s);
}

static void test_cache_read_errors(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_stage *st;
  ts_sched *s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_read(s, NULL, TS_SHARED, ko, &st), TS_ERR_NULL_ARG,
              "ts_cache_read: argument 2 'buffer' is NULL");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_read(s, "A", (ts_scope)7, ko, &st), TS_ERR_BAD_SCOPE,
              "ts_cache_read: argument 3 'scope' must be TS_SHARED or TS_LOCAL "
              "(got 7)");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_read(s, "A", TS_SHARED, ko, NULL), TS_ERR_NULL_ARG,
              "ts_cache_read: argument 5 'stage' is NULL");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_read(s, "X", TS_SHARED, ko, &st), TS_ERR_UNKNOWN_BUFFER,
              "ts_cache_read: argument 2 'buffer': no buffer named \"X\"");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_read(s, "C", TS_SHARED, ko, &st), TS_ERR_BAD_ARG,
              "ts_cache_read: C is written, not read; use ts_cache_write");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &st);
  EXPECT_FAIL(ts_cache_read(s, "A", TS_LOCAL, ki, &st), TS_ERR_BAD_ARG,
              "ts_cache_read: the computation reads A through \"A.shared\"; "
              "cache \"A.shared\" instead");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &st);
  EXPECT_FAIL(ts_cache_read(s, "B", TS_SHARED, ts_stage_axis(st, 0), &st),
              TS_ERR_BAD_ATTACH, "ts_cache_read: loop \"A.shared.ax0\" does "
              "not enclose the computation");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_read(s, "A", TS_SHARED, ts_get_loop(s, "j.outer"), &st),
              TS_ERR_BAD_ATTACH, "ts_cache_read: loop \"j.outer\" lies outside "
              "thread loop \"i.inner\"");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ki, &st);
  EXPECT_FAIL(ts_cache_read(s, "A.shared", TS_LOCAL, ko, &st),
              TS_ERR_BAD_ATTACH, "ts_cache_read: \"A.shared\" is filled in "
              "loop \"k.inner\"; a cache of it is attached there or inside");
  ts_sched_free(s);
  /* 4096 x 16 floats of A in one block: 256 KiB, over any architecture's
   * 227 KiB. */
  ts_loop *io, *ii;
  s = sched_of(4096, 8, 16);
  ts_split(s, ts_get_loop(s, "i"), 4096, &io, &ii);
  EXPECT_FAIL(ts_cache_read(s, "A", TS_SHARED, io, &st),
              TS_ERR_SHARED_LIMIT, "ts_cache_read: a 4096 x 16 shared copy of "
              "A at loop \"i.outer\" takes 262144 bytes; with the shared caches "
              "before it, 262144 bytes, over the limit of 232448");
  ts_sched_free(s);
  s = sched_of(4096, 8, 8);
  ts_split(s, ts_get_loop(s, "i"), 4096, &io, &ii);
  EXPECT_FAIL(ts_cache_read(s, "A", TS_LOCAL, io, &st),
              TS_ERR_BAD_ATTACH, "ts_cache_read: a 4096 x 8 register copy of A");
  ts_sched_free(s);
}

static void test_cache_write_errors(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_stage *st;
  ts_sched *s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_write(s, "A", TS_LOCAL, ko, &st), TS_ERR_BAD_ARG,
              "ts_cache_write: argument 2 'buffer' must be \"C\"");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_write(s, "C", (ts_scope)7, ko, &st), TS_ERR_BAD_SCOPE,
              "ts_cache_write: argument 3 'scope' must be TS_SHARED or "
              "TS_LOCAL (got 7)");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_write(s, "C", TS_LOCAL, ki, &st), TS_ERR_BAD_ATTACH,
              "ts_cache_write: loop \"k.inner\" lies inside reduction loop "
              "\"k.outer\"");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_write(s, "C", TS_LOCAL, ts_get_loop(s, "j.inner"), &st);
  EXPECT_FAIL(ts_cache_write(s, "C", TS_LOCAL, ts_get_loop(s, "j.inner"), &st),
              TS_ERR_STAGE_USED, "ts_cache_write: C is already cached in "
              "local memory as \"C.local\"");
  ts_sched_free(s);
}

static void test_layout_vector_and_buffer_errors(void **state) {
  (void)state;
  ts_loop *ko, *ki, *x, *v;
  ts_stage *as, *ra, *cw;
  ts_sched *s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_storage_transpose(s, as);
  EXPECT_FAIL(ts_storage_transpose(s, as), TS_ERR_STAGE_USED,
              "ts_storage_transpose: \"A.shared\" is already stored transposed");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  EXPECT_FAIL(ts_storage_pad(s, as, 33), TS_ERR_BAD_PAD,
              "ts_storage_pad: argument 3 'pad' must be in 0..32 elements "
              "(got 33)");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_storage_pad(s, NULL, 1), TS_ERR_NULL_ARG,
              "ts_storage_pad: argument 2 'stage' is NULL");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_write(s, "C", TS_LOCAL, ts_get_loop(s, "j.inner"), &cw);
  EXPECT_FAIL(ts_storage_transpose(s, cw), TS_ERR_BAD_ARG,
              "ts_storage_transpose: \"C.local\" holds C's accumulators");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_LOCAL, ki, &ra);
  EXPECT_FAIL(ts_double_buffer(s, ra), TS_ERR_NOT_SHARED,
              "ts_double_buffer: \"A.local\" is in registers");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_double_buffer(s, as);
  EXPECT_FAIL(ts_double_buffer(s, as), TS_ERR_STAGE_USED,
              "ts_double_buffer: \"A.shared\" is already double-buffered");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_vectorize(s, ki), TS_ERR_BAD_ARG,
              "ts_vectorize: loop \"k.inner\" iterates the reduction axis k");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  EXPECT_FAIL(ts_vectorize(s, ts_stage_axis(as, 0)), TS_ERR_NOT_INNERMOST,
              "ts_vectorize: loop \"A.shared.ax0\" has loops inside");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  EXPECT_FAIL(ts_vectorize(s, ts_get_loop(s, "i")), TS_ERR_BAD_VECTOR,
              "ts_vectorize: loop \"i\" has 8 iterations; a vector is 1, 2 or "
              "4 wide: split the loop by 4 (or 2) and vectorize the inner "
              "loop");
  ts_sched_free(s);
  /* A loop split by 4 already: the lanes are in the inner loop. */
  s = sched_of(8, 12, 8);
  ts_split(s, ts_get_loop(s, "j"), 4, &x, &v);
  ts_reorder(s, 3, (ts_loop *[]){v, ts_get_loop(s, "k"), x});
  EXPECT_FAIL(ts_vectorize(s, x), TS_ERR_BAD_VECTOR,
              "ts_vectorize: loop \"j.outer\" has 3 iterations; it is the "
              "outer loop of a split by 4, whose inner loop \"j.inner\" "
              "holds the lanes: vectorize that one");
  ts_sched_free(s);
  s = sched_of(4, 8, 8);
  EXPECT_FAIL(ts_vectorize(s, ts_get_loop(s, "i")), TS_ERR_NOT_INNERMOST,
              "ts_vectorize: loop \"i\" has loops inside");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_vectorize(s, ts_get_loop(s, "i.inner")), TS_ERR_ALREADY_BOUND,
              "ts_vectorize: loop \"i.inner\" is already bound to threadIdx.y");
  ts_sched_free(s);
  s = sched_of(8, 8, 8);
  ts_split(s, ts_get_loop(s, "i"), 4, &x, &v);
  ts_cache_read(s, "A", TS_SHARED, ts_get_loop(s, "k"), &as);
  EXPECT_FAIL(ts_bind(s, v, TS_THREAD_X), TS_ERR_CACHE_REGION,
              "ts_bind: binding loop \"i.inner\" to threadIdx.x would change "
              "the region of shared cache \"A.shared\"");
  ts_sched_free(s);
}

/* Found by the schedule fuzzer: caches must live inside the launch loops,
 * and a cache of a cache is a register copy of a shared one. */
static void test_cache_scope_errors(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_stage *st, *local;
  ts_sched *s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_write(s, "C", TS_LOCAL, ts_get_loop(s, "i.outer"), &st),
              TS_ERR_BAD_ATTACH, "ts_cache_write: loop \"i.outer\" lies "
              "outside block loop \"j.outer\"; a register cache is attached "
              "inside the loops bound to blockIdx and threadIdx");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  EXPECT_FAIL(ts_cache_read(s, "A", TS_LOCAL, ts_get_loop(s, "i.inner"), &st),
              TS_ERR_BAD_ATTACH, "ts_cache_read: loop \"i.inner\" lies "
              "outside thread loop \"j.inner\"");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_LOCAL, ko, &local);
  EXPECT_FAIL(ts_cache_read(s, "A.local", TS_SHARED, ki, &st), TS_ERR_CACHE_ORDER,
              "ts_cache_read: \"A.local\" is in register memory; caches copy "
              "toward the registers");
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &st);
  EXPECT_FAIL(ts_cache_read(s, "A.shared", TS_SHARED, ko, &st),
              TS_ERR_CACHE_ORDER, "ts_cache_read: \"A.shared\" is in shared "
              "memory");
  ts_sched_free(s);
  /* Binding a loop inside a cache's attach loop would move the cache
   * outside a launch loop. */
  ts_loop *io, *ii;
  s = sched_of(8, 8, 8);
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_cache_write(s, "C", TS_LOCAL, io, &st);
  EXPECT_FAIL(ts_bind(s, ii, TS_THREAD_X), TS_ERR_CACHE_REGION,
              "ts_bind: loop \"i.inner\" lies inside loop \"i.outer\", where "
              "cache \"C.local\" is attached");
  ts_sched_free(s);
  /* So would a reorder that moves a bound loop inside one (fuzzer case
   * 0xd98e4c6a776d4933: lowering built a malformed kernel). */
  s = sched_of(8, 8, 8);
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_cache_write(s, "C", TS_LOCAL, io, &st);
  ts_reorder(s, 2, (ts_loop *[]){ii, io});
  ts_bind(s, ii, TS_BLOCK_X);
  EXPECT_FAIL(ts_reorder(s, 2, (ts_loop *[]){io, ii}), TS_ERR_CACHE_REGION,
              "ts_reorder: bound loop \"i.inner\" would lie inside loop "
              "\"i.outer\", where cache \"C.local\" is attached");
  ts_sched_free(s);
}

/* Found by the schedule fuzzer: caches attached at one loop in any order
 * (a shared cache after a register cache of another), and a register cache
 * at a double-buffered loop, read the right data with no race. */
static void test_caches_at_one_loop(void **state) {
  (void)state;
  ts_loop *ko, *ki, *kko, *kki;
  ts_stage *b, *bl, *a;
  ts_sched *s = tiled(&ko, &ki);
  ts_cache_read(s, "B", TS_SHARED, ko, &b);
  ts_cache_read(s, "B.shared", TS_LOCAL, ko, &bl);
  ts_split(s, ko, 1, &kko, &kki);
  ts_cache_read(s, "A", TS_SHARED, kki, &a);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_correct(s);
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  ts_cache_read(s, "B", TS_SHARED, ko, &b);
  ts_double_buffer(s, b);
  ts_cache_read(s, "B.shared", TS_LOCAL, ko, &bl);
  ts_storage_transpose(s, b);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_correct(s);
  ts_sched_free(s);
  /* A register cache of a shared one, at a loop split past the shared
   * copy's edge (33 = 11 x 3 rows of a 32-row copy). */
  ts_loop *ko2, *ki2, *kio, *kii;
  s = sched_of(11, 5, 33);
  ts_split(s, ts_get_loop(s, "k"), 32, &ko2, &ki2);
  ts_cache_read(s, "B", TS_SHARED, ko2, &b);
  ts_split(s, ki2, 3, &kio, &kii);
  ts_cache_read(s, "B.shared", TS_LOCAL, kii, &bl);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_correct(s);
  ts_sched_free(s);
  /* A register cache of a shared one made after a split guarded the
   * shared copy: it copies only where the shared copy did. */
  ts_gemm def = ts_gemm_make(30, 13, 5);
  def.layout = TS_TN;
  s = ts_matmul(&def);
  ts_loop *j = ts_get_loop(s, "j"), *jo, *ji, *jio, *jii;
  ts_cache_read(s, "A", TS_SHARED, j, &a);
  ts_split(s, j, 8, &jo, &ji);
  ts_cache_read(s, "A.shared", TS_LOCAL, ji, &bl);
  ts_split(s, ji, 3, &jio, &jii);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_correct(s);
  ts_sched_free(s);
  /* The accumulators at a loop whose body starts with a copy. */
  s = sched_of(9, 7, 5);
  ts_loop *i = ts_get_loop(s, "i");
  ts_cache_read(s, "B", TS_SHARED, i, &b);
  ts_cache_write(s, "C", TS_LOCAL, i, &a);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_correct(s);
  ts_sched_free(s);
}

/* Shared caches past 48 KiB: dynamic shared memory, each buffer a slot of
 * one extern array; compiled where the architecture allows that much. */
static void test_dynamic_shared_memory(void **state) {
  (void)state;
  ts_gemm def = ts_gemm_make(128, 128, 65);
  ts_sched *s = big_shared_schedule(&def);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_correct(s);
  ts_launch_geometry l;
  assert_int_equal(ts_launch_dims(s, &l), TS_OK);
  /* A (stored transposed) and B: 2 x 64 x 128 floats each. */
  assert_int_equal(l.dynamic_shared, 2 * 65536);
  char *cu = ts_cuda_source(s);
  assert_non_null(cu);
  assert_non_null(strstr(cu, "extern __shared__ __align__(1024) float "
                             "tessel_shared[];"));
  assert_non_null(strstr(cu, "float (&B_shared)[2][64][128] = "
                             "*reinterpret_cast<float (*)[2][64][128]>"
                             "(tessel_shared + 0);"));
  assert_non_null(strstr(cu, "float (&A_shared)[2][64][128] = "
                             "*reinterpret_cast<float (*)[2][64][128]>"
                             "(tessel_shared + 16384);"));
  assert_null(strstr(cu, "__shared__ __align__(16) float A_shared"));
  free(cu);
  for (int i = 0; i < 2; i++) {
    ts_kernel *k = ts_compile_sched(s, i ? "sm_80" : "sm_90");
    if (ts_kernel_status(k) != TS_OK)
      fail_msg("%s", ts_kernel_errmsg(k));
    assert_int_equal(ts_kernel_ptxas(k).shared_bytes, 0); /* none static */
    ts_kernel_free(k);
  }
  ts_kernel *k = ts_compile_sched(s, "sm_86");
  assert_int_equal(ts_kernel_status(k), TS_ERR_RESOURCES);
  assert_string_equal(ts_kernel_errmsg(k),
                      "ts_compile: the shared caches of \"big_shared\" take 131072 bytes per "
                      "block; sm_86 allows at most 101376 (over by 29696)");
  ts_kernel_free(k);
  ts_sched_free(s);
  /* 48 KiB and under stays static. */
  s = sched_of(64, 64, 64);
  ts_loop *ko, *ki;
  ts_stage *st;
  ts_split(s, ts_get_loop(s, "k"), 8, &ko, &ki);
  ts_cache_read(s, "A", TS_SHARED, ko, &st);
  assert_int_equal(ts_launch_dims(s, &l), TS_OK);
  assert_int_equal(l.dynamic_shared, 0);
  ts_sched_free(s);
}

/* A cache of a cache not made yet: the call that makes it and the buffers
 * there are, not a list that names it. */
static void test_cache_read_of_a_cache_not_made(void **state) {
  (void)state;
  ts_loop *ko, *ki;
  ts_stage *st;
  ts_sched *s = tiled(&ko, &ki);
  assert_int_equal(ts_cache_read(s, "A.shared", TS_LOCAL, ki, &st),
                   TS_ERR_UNKNOWN_BUFFER);
  assert_string_equal(errmsg_text(s),
                      "ts_cache_read: argument 2 'buffer': no buffer named "
                      "\"A.shared\" yet; ts_cache_read(s, \"A\", TS_SHARED, "
                      "...) makes it: call that first (buffers: A, B)");
  ts_sched_free(s);
  /* The caches made so far are listed, and a near name suggested. */
  s = tiled(&ko, &ki);
  assert_int_equal(ts_cache_read(s, "B", TS_SHARED, ko, &st), TS_OK);
  assert_int_equal(ts_cache_read(s, "B.shard", TS_LOCAL, ki, &st),
                   TS_ERR_UNKNOWN_BUFFER);
  assert_non_null(strstr(errmsg_text(s), "no buffer named \"B.shard\"; "
                         "did you mean \"B.shared\"? (buffers: A, B, "
                         "B.shared)"));
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  assert_int_equal(ts_cache_read(s, "A.shared.local", TS_LOCAL, ki, &st),
                   TS_ERR_UNKNOWN_BUFFER);
  assert_non_null(strstr(errmsg_text(s), "ts_cache_read(s, \"A.shared\", "
                         "TS_LOCAL, ...) makes it"));
  ts_sched_free(s);
  s = tiled(&ko, &ki);
  assert_int_equal(ts_cache_read(s, "a", TS_SHARED, ko, &st),
                   TS_ERR_UNKNOWN_BUFFER);
  assert_non_null(strstr(errmsg_text(s), "did you mean \"A\"?"));
  ts_sched_free(s);
  /* ts_pack's operand too. */
  s = sched_of(8, 8, 8);
  assert_int_equal(ts_pack(s, "b"), TS_ERR_UNKNOWN_BUFFER);
  assert_non_null(strstr(errmsg_text(s), "(got \"b\"; did you mean "
                         "\"B\"?)"));
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_read_of_a_cache_not_made),
      cmocka_unit_test(test_cache_scope_errors),
      cmocka_unit_test(test_dynamic_shared_memory),
      cmocka_unit_test(test_caches_at_one_loop),
      cmocka_unit_test(test_cache_read_shared),
      cmocka_unit_test(test_no_trailing_barrier_without_refill),
      cmocka_unit_test(test_register_cache_and_cache_write),
      cmocka_unit_test(test_layout_vectorize_double_buffer),
      cmocka_unit_test(test_fp16_caches_and_vectors),
      cmocka_unit_test(test_vector_lanes_expanded),
      cmocka_unit_test(test_vector_width_follows_the_element_size),
      cmocka_unit_test(test_cache_read_errors),
      cmocka_unit_test(test_cache_write_errors),
      cmocka_unit_test(test_layout_vector_and_buffer_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
