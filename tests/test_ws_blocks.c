/*
 * Warp specialization at several blocks a multiprocessor: the registers
 * setmaxnreg moves between the producer warpgroup and the consumers follow
 * the blocks the schedule asks (ts_min_blocks_per_sm, or ts_persistent's
 * blocks_per_sm where that is more), within the registers each block
 * holds from its launch, so that setmaxnreg.inc never waits for registers
 * that no warpgroup released.  At one block the counts stay 40 and 232.
 * Such a kernel checks right on the reference executor, compiles for
 * sm_90a without spills, explain says its split, and lowering refuses a
 * split that cannot fit.
 */
#include "helpers.h"
#include "tiles.h"

#include "base/limits.h"
#include "ir/ir.h"
#include "ir/program_ir.h"

/* The warpgroup space's configuration `knobs` (its other knobs at their
 * first values) at m x n x k in f16 and `layout`. */
static ts_sched *warpgroup(const char *knobs, int64_t m, int64_t n,
                           int64_t k, ts_layout layout) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = TS_F16;
  g.layout = layout;
  ts_sched *s = warpgroup_at(&g, knobs);
  if (ts_sched_status(s) != TS_OK)
    fail_msg("%s: %s", knobs, ts_sched_errmsg(s));
  return s;
}

/* tma_tiles of `warpgroups` consumer warpgroups of 64 x bn and a producer
 * warpgroup, at `blocks` blocks a multiprocessor: f16 at m x n x k, NN or
 * NT.  The space prunes some of these. */
static ts_sched *ws_tiles(int64_t warpgroups, int64_t bn, int stages,
                          int blocks, int64_t m, int64_t n, int64_t k,
                          ts_layout layout) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = TS_F16;
  g.layout = layout;
  ts_loop *ko;
  ts_sched *s = tma_tiles(&g, warpgroups, bn, stages, true, &ko);
  ts_min_blocks_per_sm(s, blocks);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

/* 128 x 128 tiles of 2 consumer warpgroups, 3 stages (96 KiB), at
 * `blocks` blocks a multiprocessor. */
static ts_sched *ws128(int blocks, int64_t m, int64_t n, int64_t k,
                       ts_layout layout) {
  return ws_tiles(2, 128, 3, blocks, m, n, k, layout);
}

static ts_program *lowered(ts_sched *s) {
  ts_program *p = ts_lower(s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("%s", ts_program_errmsg(p));
  return p;
}

/* The split's arithmetic: with T = consumers + producers threads and B
 * blocks, launch = 65536 / (B T) rounded down to 8; the producer keeps
 * 24 at 2 blocks and more, and the consumers take what it released. */
static void test_split_counts(void **state) {
  (void)state;
  const struct {
    int64_t consumers;
    int blocks;
    int launch, producer, consumer;
  } cases[] = {
      {256, 1, 168, 40, 232}, /* today's: 40 x 128 + 232 x 256 = 168 x 384 */
      {128, 1, 232, 40, 232}, /* ptxas's: the largest count, under 255 */
      {256, 2, 80, 24, 104},  /* 80 + 56 x 128 / 256 = 108 -> 104 */
      {128, 2, 128, 24, 232}, /* 128 + 104: the pool exactly */
      {384, 2, 64, 24, 72},   /* 64 + 40 x 128 / 384 = 77 -> 72 */
      {256, 3, 56, 24, 72},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_register_split r;
    assert_true(ts_register_split_of(cases[i].consumers, 128,
                                     cases[i].blocks, &r));
    assert_int_equal(r.blocks, cases[i].blocks);
    assert_int_equal(r.launch, cases[i].launch);
    assert_int_equal(r.producer, cases[i].producer);
    assert_int_equal(r.consumer, cases[i].consumer);
  }
}

/* Whatever fits is within setmaxnreg's range and granule, gives the
 * consumers at least what they launched with, and asks no more than the
 * blocks' pool; what does not fit is 3 or more consumer warpgroups at one
 * block, or a launch count under the producer's. */
static void test_split_never_exceeds_the_pool(void **state) {
  (void)state;
  for (int64_t c = 128; c <= 1024; c += 128)
    for (int b = 1; b <= 8; b++) {
      ts_register_split r;
      bool fits = ts_register_split_of(c, 128, b, &r);
      int64_t threads = c + 128;
      if (!fits) {
        assert_true((b == 1 && c >= 384) || r.launch < r.producer);
        continue;
      }
      assert_true(r.producer >= TS_SETMAXNREG_MIN && r.producer % 8 == 0);
      assert_true(r.consumer <= TS_SETMAXNREG_MAX && r.consumer % 8 == 0);
      assert_true(r.producer <= r.launch);
      assert_true(b == 1 || r.consumer >= r.launch);
      assert_true(r.producer * 128 + r.consumer * c <= r.launch * threads);
      assert_true(r.launch * threads * b <= TS_REGISTERS_PER_BLOCK);
    }
}

/* The kernel's CUDA at 2 blocks: bounded to 2 blocks of 384 threads, the
 * producer down to 24 and the consumers up to 104 (80 at launch); at one
 * block, 40 and 232 as ever. */
static void test_cuda_at_two_blocks(void **state) {
  (void)state;
  const char *want[3][3] = {
      {NULL},
      {"__launch_bounds__(384, 1)", "setmaxnreg.dec.sync.aligned.u32 40;",
       "setmaxnreg.inc.sync.aligned.u32 232;"},
      {"__launch_bounds__(384, 2)", "setmaxnreg.dec.sync.aligned.u32 24;",
       "setmaxnreg.inc.sync.aligned.u32 104;"}};
  for (int b = 1; b <= 2; b++) {
    ts_sched *s = ws128(b, 1024, 1024, 1024, TS_NN);
    ts_program *p = lowered(s);
    assert_int_equal(p->k.min_blocks, b);
    assert_int_equal(p->k.consumer_threads, 256);
    char *src = ts_program_cuda(p);
    assert_non_null(src);
    for (int i = 0; i < 3; i++)
      if (!strstr(src, want[b][i]))
        fail_msg("%d block(s): no \"%s\" in the CUDA", b, want[b][i]);
    assert_true(strstr(src, want[b][1]) < strstr(src, want[b][2]));
    free(src);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* ts_persistent's blocks_per_sm asks for the blocks too: wgws made
 * persistent at 2 blocks a multiprocessor is lowered with the split of 2,
 * and ts_min_blocks_per_sm(1) beside it does not lower that (lowered
 * only: its m64n256 wgmma needs more registers at launch than 2 blocks
 * of 384 threads leave, which ptxas says when it compiles). */
static void test_persistent_blocks_ask_too(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(1024, 1024, 1024);
  g.a_type = g.b_type = TS_F16;
  for (int explicit_one = 0; explicit_one < 2; explicit_one++) {
    ts_sched *s = ts_builtin_schedule("wgws", &g);
    ts_persistent(s, ts_get_loop(s, "i.outer"), ts_get_loop(s, "j.outer"), 2);
    if (explicit_one)
      ts_min_blocks_per_sm(s, 1);
    assert_int_equal(ts_sched_status(s), TS_OK);
    ts_program *p = lowered(s);
    assert_int_equal(p->k.min_blocks, 2);
    assert_int_equal(p->k.persistent, 2);
    assert_int_equal(p->k.registers.producer, 24);
    assert_int_equal(p->k.registers.consumer, 104);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* At 2 blocks the reference executor gets the plain GEMM's C: the
 * 128 x 128 tiles warp-specialized where the TMA can copy (K, and N in NN,
 * multiples of 8 halves), C's edges partly outside the tiles; and the
 * warpgroup space at 2 blocks where the rows are not 16-byte aligned
 * (37x53x29, 999x1001x1003), whose TMA copies packed operands and whose
 * producer warpgroup issues them.  The large ones sampled. */
static void test_checks_at_odd_shapes(void **state) {
  (void)state;
  const struct {
    int64_t m, n, k;
    ts_layout layout;
    bool aligned; /* ws128's TMA copies them as they lie; else packed */
  } cases[] = {
      {37, 56, 40, TS_NN, true},         {37, 53, 40, TS_NT, true},
      {261, 264, 200, TS_NN, true},      {261, 263, 200, TS_NT, true},
      {999, 1000, 1000, TS_NN, true},    {999, 1001, 1000, TS_NT, true},
      {37, 53, 29, TS_NN, false},        {37, 53, 29, TS_NT, false},
      {999, 1001, 1003, TS_NN, false},   {999, 1001, 1003, TS_NT, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_sched *s =
        cases[i].aligned ? ws128(2, cases[i].m, cases[i].n, cases[i].k,
                            cases[i].layout)
                    : warpgroup("bm=128,bn=64,stages=4,tma=1,warpspec=1,"
                                "blocks=2", cases[i].m, cases[i].n,
                                cases[i].k, cases[i].layout);
    ts_program *p = lowered(s);
    assert_int_equal(p->k.min_blocks, 2);
    assert_int_not_equal(p->k.consumer_threads, 0);
    assert_int_equal(p->k.packed[0] != NULL, !cases[i].aligned);
    char msg[1024];
    ts_status st;
    if (cases[i].m < 900) {
      st = ts_program_check(p, 11, msg, sizeof(msg));
    } else {
      ts_sample sample = {.random = 2};
      st = ts_program_check_sampled(p, 11, &sample, msg, sizeof(msg));
    }
    if (st != TS_OK)
      fail_msg("%lldx%lldx%lld %s: %s", (long long)cases[i].m,
               (long long)cases[i].n, (long long)cases[i].k,
               ts_layout_name(cases[i].layout), msg);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* NVRTC's ptxas compiles 1 and 2 consumer warpgroups at 1 and 2 blocks a
 * multiprocessor without spills, with the registers a thread has at
 * launch that lowering and explain say: the largest setmaxnreg count
 * within 65536 / (blocks x threads) rounded down to 8, at most 255.  One
 * consumer warpgroup of 64 x 256 at one block launches with its
 * consumers' 232, under the 255 it could have; 2 of 64 x 256 with 168; 2
 * of 64 x 64 at 2 blocks with 80 (104 after setmaxnreg); 1 of 64 x 128
 * with 128 (then 232).  (2 of 64 x 128 at 2 blocks do not compile: ptxas
 * holds each wgmma to the registers at launch, and m64n128k16 needs 90.) */
static void test_ptxas_launches_with_the_split(void **state) {
  (void)state;
  const struct {
    const char *knobs;
    int launch;
  } cases[] = {
      {"bm=64,bn=256,stages=4,tma=1,warpspec=1,blocks=1", 232},
      {"bm=128,bn=256,stages=4,tma=1,warpspec=1,blocks=1", 168},
      {"bm=128,bn=64,stages=4,tma=1,warpspec=1,blocks=2", 80},
      {"bm=64,bn=128,stages=4,tma=1,warpspec=1,blocks=2", 128},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_sched *s = warpgroup(cases[i].knobs, 4096, 4096, 4096, TS_NT);
    ts_program *p = lowered(s);
    ts_explain_opts o = {0};
    ts_explain *e = ts_program_explain(p, &o);
    assert_non_null(e);
    if (p->k.registers.launch != cases[i].launch ||
        e->kernels[0].pipeline.launch_registers != cases[i].launch)
      fail_msg("%s: lowering says %d registers at launch, explain %d, not "
               "%d", cases[i].knobs, p->k.registers.launch,
               e->kernels[0].pipeline.launch_registers, cases[i].launch);
    ts_kernel *k = ts_compile(p, "sm_90");
    if (ts_kernel_status(k) != TS_OK)
      fail_msg("%s: %s", cases[i].knobs, ts_kernel_errmsg(k));
    assert_string_equal(ts_kernel_arch(k), "sm_90a");
    ts_ptxas_info info = ts_kernel_ptxas(k);
    assert_true(info.valid);
    if (info.registers != cases[i].launch ||
        info.spill_store_bytes + info.spill_load_bytes != 0)
      fail_msg("%s: ptxas uses %d registers (%d at launch modelled), "
               "spills %d bytes", cases[i].knobs, info.registers,
               cases[i].launch,
               info.spill_store_bytes + info.spill_load_bytes);
    ts_kernel_free(k);
    ts_explain_free(e);
    ts_program_free(p);
    ts_sched_free(s);
  }
}

/* tessel explain says the split where it describes the producer: 80 a
 * thread at launch, 2 blocks a multiprocessor, 24 and 104. */
static void test_explain_says_the_split(void **state) {
  (void)state;
  ts_sched *s = ws128(2, 1024, 1024, 1024, TS_NN);
  ts_program *prog = lowered(s);
  ts_explain_opts o = {0};
  ts_explain *e = ts_program_explain(prog, &o);
  assert_non_null(e);
  assert_int_equal(e->status, TS_OK);
  const ts_pipeline_report *p = &e->kernels[0].pipeline;
  assert_true(p->launch_registers == 80 && p->producer_registers == 24 &&
              p->consumer_registers == 104 && p->blocks == 2);
  char *text = ts_explain_text(e);
  assert_non_null(strstr(text, "  registers (setmaxnreg): 80 a thread at "
                               "launch (2 blocks a multiprocessor), then 24 "
                               "a producer thread and 104 a consumer's\n"));
  free(text);
  ts_explain_free(e);
  ts_program_free(prog);
  ts_sched_free(s);
}

/* The warpgroup space's knob `blocks`: 2 blocks' shared tiles must fit a
 * multiprocessor (228 KiB, 1 KiB of it reserved for each block), and a
 * warp-specialized block's threads must have at launch the registers its
 * wgmma needs (ptxas holds the instruction to them): 2 consumer
 * warpgroups of 64 x 128 and the producer at 2 blocks (80) do not. */
static void test_space_prunes_what_two_blocks_cannot_hold(void **state) {
  (void)state;
  const struct {
    const char *knobs;
    const char *pruned; /* NULL: kept */
  } cases[] = {
      {"bm=128,bn=128,stages=3,tma=1,warpspec=1,blocks=2",
       "2 consumer warpgroups of about 94 registers a thread beside a "
       "producer, 2 blocks a multiprocessor: fewer registers a thread at "
       "launch"},
      {"bm=128,bn=64,stages=5,tma=1,warpspec=1,blocks=2",
       "2 blocks of 120 KiB of shared memory a multiprocessor"},
      {"bm=128,bn=64,stages=5,tma=1,warpspec=1,blocks=1", NULL},
      {"bm=128,bn=64,stages=4,tma=1,warpspec=1,blocks=2", NULL},
      {"bm=64,bn=128,stages=4,tma=1,warpspec=1,blocks=2", NULL},
      {"bm=192,bn=64,stages=3,tma=1,warpspec=1,blocks=2", NULL},
      {"bm=192,bn=64,stages=3,tma=1,warpspec=1,blocks=1",
       "3 consumer warpgroups of about 62 registers a thread beside a "
       "producer, 1 block a multiprocessor: setmaxnreg's split does not "
       "fit"},
      {"bm=128,bn=256,stages=2,inflight=0,tma=0,warpspec=0,blocks=2",
       "2 blocks of 256 threads of about 158 registers"},
  };
  ts_gemm g = ts_gemm_make(1024, 1024, 1024);
  g.a_type = g.b_type = TS_F16;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ts_sched *s = warpgroup_at(&g, cases[i].knobs);
    if (!cases[i].pruned && ts_sched_status(s) != TS_OK)
      fail_msg("%s: %s", cases[i].knobs, ts_sched_errmsg(s));
    if (cases[i].pruned && (ts_sched_status(s) != TS_ERR_PRUNED ||
                            !strstr(ts_sched_errmsg(s), cases[i].pruned)))
      fail_msg("%s: %s", cases[i].knobs, ts_sched_errmsg(s));
    ts_sched_free(s);
  }
}

/* ws_tiles of `warpgroups` consumer warpgroups of 64 x 64, 2 stages, at
 * `blocks` blocks: lowering's status and message. */
static ts_status lower_ws(int64_t warpgroups, int blocks, char *msg,
                          size_t n) {
  ts_sched *s = ws_tiles(warpgroups, 64, 2, blocks, 1024, 1024, 1024, TS_NN);
  return lowering_says(s, msg, n);
}

/* Lowering refuses a split that does not fit, saying the counts and the
 * fix: 3 consumer warpgroups at one block (232 each and the producer's 40
 * pass the block's registers), and 2 at 8 blocks (3072 threads leave 16
 * registers a thread, under setmaxnreg's 24).  3 at 2 blocks fit: 72. */
static void test_refuses_a_split_that_does_not_fit(void **state) {
  (void)state;
  char msg[1024];
  assert_int_equal(lower_ws(3, 1, msg, sizeof(msg)), TS_ERR_RESOURCES);
  if (!strstr(msg, "ts_lower: ts_warp_specialize gives each of 384 consumer "
              "threads 232 registers and each of 128 producer threads 40: "
              "94208, over the 65536 the block holds (512 threads of 128 "
              "at launch); use at most 2 consumer warpgroups"))
    fail_msg("lowering says: %s", msg);
  assert_int_equal(lower_ws(2, 8, msg, sizeof(msg)), TS_ERR_RESOURCES);
  if (!strstr(msg, "ts_lower: ts_warp_specialize at 8 blocks a "
              "multiprocessor (ts_min_blocks_per_sm or ts_persistent's "
              "blocks_per_sm) of 384 threads leaves each thread 16 "
              "registers at launch, fewer than the 24 setmaxnreg.dec gives "
              "the producer; ask for fewer blocks a multiprocessor or fewer "
              "consumer warpgroups"))
    fail_msg("lowering says: %s", msg);
  assert_int_equal(lower_ws(3, 2, msg, sizeof(msg)), TS_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_counts),
      cmocka_unit_test(test_split_never_exceeds_the_pool),
      cmocka_unit_test(test_cuda_at_two_blocks),
      cmocka_unit_test(test_persistent_blocks_ask_too),
      cmocka_unit_test(test_checks_at_odd_shapes),
      cmocka_unit_test(test_ptxas_launches_with_the_split),
      cmocka_unit_test(test_explain_says_the_split),
      cmocka_unit_test(test_space_prunes_what_two_blocks_cannot_hold),
      cmocka_unit_test(test_refuses_a_split_that_does_not_fit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
