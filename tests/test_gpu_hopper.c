/*
 * The gpu suite's Hopper clusters and ping-pong consumers (the warpgroup
 * space's cluster=2 and pingpong=1) against cuBLAS on random data, at odd
 * shapes, in every layout and type, with alpha and beta.  Exits 77
 * (skipped, saying why) without a GPU.
 */
#include "helpers.h"

#include "gpu_check.h"
#include "ir/program_ir.h"

static ts_gpu *gpu;

/* shape in `type` (tf32 arithmetic for fp32) and `layout`: an fp32 C, or
 * in odd cases of a 16-bit type, C of that type with alpha 1.5 and beta
 * -0.5. */
static ts_gemm case_def(const int64_t shape[3], ts_dtype type,
                        ts_layout layout, int odd) {
  ts_gemm g = ts_gemm_make(shape[0], shape[1], shape[2]);
  g.layout = layout;
  g.a_type = g.b_type = type;
  g.math = type == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
  if (type != TS_F32 && odd % 2) {
    g.c_type = type;
    g.alpha = 1.5f;
    g.beta = -0.5f;
  }
  return g;
}

/* 2-block clusters (ts_cluster) multicasting the tile the pair shares:
 * B's in the swizzle's groups, one tile a block or persistent; A's in
 * launch order; with C stored by the TMA.  Odd shapes with an odd count
 * of block rows (37, 999 and 2049 rows: a block past C's edge that
 * computes its partner's tile and stores nothing), several tiles a block
 * (8192 x 1024 persistent), every layout and type, an fp32 C and one of
 * the operands' type with alpha and beta. */
static void test_clusters_match_cublas(void **state) {
  (void)state;
  const char *configs[] = {"cluster=2", "cluster=2,persistent=1",
                           "cluster=2,swizzle=0",
                           "cluster=2,persistent=1,store=1"};
  const int64_t shapes[][3] = {{999, 1001, 1003}, {37, 53, 29}, {1, 1, 1},
                               {2049, 1023, 777}, {8192, 1024, 777},
                               {384, 512, 128}};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int f = 0; f < 4; f++) {
    char err[128];
    ts_config *knobs = ts_config_parse(configs[f], err, sizeof(err));
    assert_non_null(knobs);
    for (int t = 0; t < 3; t++)
      /* launch order (f 2): the larger shapes, whose columns pair */
      for (int i = f == 2 ? 3 : 0; i < 6; i++)
        for (int l = TS_NN; l <= TS_TT; l++) {
          ts_gemm g = case_def(shapes[i], types[t], (ts_layout)l, i + l);
          ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &g,
                                          knobs);
          bool transpose = types[t] == TS_F32 && l == TS_NN;
          if (ts_sched_status(s) == TS_ERR_PRUNED &&
              ((f == 3 && strstr(ts_sched_errmsg(s), "16-byte aligned")) ||
               ((f == 2 || f == 3) && transpose))) {
            /* the store where C's rows are not 16-byte aligned, or on C's
             * transpose (tf32 NN: its ring passes the shared memory);
             * launch order on C's transpose, config 0's kernel */
            ts_sched_free(s);
            continue;
          }
          ts_program *p = ts_lower(s);
          if (ts_program_status(p) != TS_OK)
            fail_msg("%s: %s", configs[f], ts_program_errmsg(p));
          assert_int_equal(p->k.cluster, 2);
          ts_program_free(p);
          check_against_cublas(gpu, s, g);
          ts_sched_free(s);
        }
    ts_config_free(knobs);
  }
}

/* Ping-pong consumers (ts_pingpong) in the warpgroup space: 64 x 256,
 * 64 x 128 and 64 x 64 tiles, in groups and in launch order, 2 to 6
 * stages, wgmma batches in flight 0 to 2; one tile a block (1x1x1,
 * 37x53x29, and on 132 multiprocessors 999x1001x1003 and 384x512x128 in
 * 64 x 256 tiles), several (6400x1024x100: 400 to 1600 tiles, 3 to 13 a
 * block, whose tiles alternate between the teams; 2049x1023x777 in the
 * smaller tiles), every layout and type, an fp32 C and one of the
 * operands' type with alpha and beta. */
static void test_pingpong_matches_cublas(void **state) {
  (void)state;
  const char *configs[] = {
      "bm=64,persistent=1,pingpong=1",
      "bm=64,bn=128,persistent=1,pingpong=1,stages=2,swizzle=0,inflight=0",
      "bm=64,bn=64,persistent=1,pingpong=1,stages=6,inflight=2"};
  const int64_t shapes[][3] = {{999, 1001, 1003}, {37, 53, 29}, {1, 1, 1},
                               {2049, 1023, 777}, {384, 512, 128},
                               {6400, 1024, 100}};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int f = 0; f < 3; f++) {
    char err[128];
    ts_config *knobs = ts_config_parse(configs[f], err, sizeof(err));
    assert_non_null(knobs);
    for (int t = 0; t < 3; t++)
      for (int i = 0; i < 6; i++)
        for (int l = TS_NN; l <= TS_TT; l++) {
          ts_gemm g = case_def(shapes[i], types[t], (ts_layout)l, i + l);
          ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &g,
                                          knobs);
          if (ts_sched_status(s) == TS_ERR_PRUNED && types[t] == TS_F32 &&
              f > 0) {
            /* launch order on C's transpose, or batches in flight other
             * than 1 where wgmma takes a from registers: config 0's
             * kernel */
            ts_sched_free(s);
            continue;
          }
          ts_program *p = ts_lower(s);
          if (ts_program_status(p) != TS_OK)
            fail_msg("%s: %s", configs[f], ts_program_errmsg(p));
          assert_int_equal(p->k.block[2], 3);
          ts_program_free(p);
          check_against_cublas(gpu, s, g);
          ts_sched_free(s);
        }
    ts_config_free(knobs);
  }
}

int main(int argc, char **argv) {
  gpu = open_gpu_or_skip(argc, argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clusters_match_cublas),
      cmocka_unit_test(test_pingpong_matches_cublas),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ts_gpu_close(gpu);
  return rc;
}
