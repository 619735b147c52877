/*
 * C's shared stage stored by the TMA (ts_cache_write(C, TS_SHARED),
 * ts_tma): wgstore's lowered program runs on the executor as lowered, and
 * each mutation of it that breaks the store's protocol is a fault naming
 * the stage: a store issued with no barrier after the threads' writes, a
 * stage taken over the pipeline's buffers with no barrier after their
 * last use, a block that leaves before its stores have read the stage, a
 * write into the stage while a store reads it, a tensor map whose box is
 * not a panel of the stage.  Its CUDA stores by cp.async.bulk.tensor from
 * shared memory under named barriers of the consumers; the schedule and
 * lowering refuse what the store cannot do, saying why.
 */
#include "helpers.h"
#include "run_kernel.h"
#include "tiles.h"

#include "exec/executor.h"
#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"
#include "schedule/sched.h"

/* wgstore at M x 256 x 512 in f16, NT (M 128 but where a test sets it):
 * one block, its 128 x 256 fp32 tile stored in 8 panels of 32 x 128. */
static int64_t rows = 128;

static ts_program *lowered(ts_sched **s) {
  ts_gemm g = ts_gemm_make(rows, 256, 512);
  g.a_type = g.b_type = TS_F16;
  g.layout = TS_NT;
  *s = ts_builtin_schedule("wgstore", &g);
  ts_program *p = ts_lower(*s);
  assert_int_equal(ts_program_status(p), TS_OK);
  return p;
}

typedef enum {
  DROP_FIRST_BARRIER,  /* the one before the stage's scope */
  DROP_STAGE_BARRIER,  /* the one between the writes and the stores */
  DROP_WAIT,           /* the issuing thread's wait */
  WRITE_BEFORE_WAIT,   /* a write into the stage between stores and wait */
  BARRIER_OF_128,      /* the consumers' barriers count one warpgroup */
  BARRIER_OF_384,      /* ... and the producer warpgroup, which has left */
  INSIDE_A_SCOPE,      /* the stage's scope inside one of A.shared */
} mutation;

static bool is_stage_alloc(const ir_stmt *s) {
  return s && s->kind == S_ALLOC && s->alloc.buf->overlay;
}

static ir_stmt *without(ts_arena *a, const ir_stmt *seq, int drop) {
  ir_stmt **items = ts_arena_alloc(a, sizeof(*items) * (size_t)seq->seq.n);
  int n = 0;
  for (int i = 0; i < seq->seq.n; i++)
    if (i != drop)
      items[n++] = seq->seq.items[i];
  return ir_new_seq(a, items, n);
}

static ir_buffer *stage;
static int64_t written[2]; /* the stage's element WRITE_BEFORE_WAIT writes */

/* The issuing thread's wait with a zero stored into the stage's element
 * `written` (a panel whose store is still reading) right before it. */
static ir_stmt *write_before_wait(ts_arena *a, ir_stmt *wait) {
  ir_expr *at[2] = {ir_int(a, written[0]), ir_int(a, written[1])};
  ir_stmt *items[2] = {ir_new_store(a, stage, at, ir_float(a, 0)), wait};
  return ir_new_seq(a, items, 2);
}

/* The shared buffer named `name` among s's allocations, or NULL. */
static ir_buffer *shared_named(const ir_stmt *s, const char *name) {
  if (!s)
    return NULL;
  if (s->kind == S_ALLOC && !strcmp(s->alloc.buf->name, name))
    return s->alloc.buf;
  switch (s->kind) {
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) {
      ir_buffer *b = shared_named(s->seq.items[i], name);
      if (b)
        return b;
    }
    return NULL;
  case S_FOR: return shared_named(s->for_.body, name);
  case S_ALLOC: return shared_named(s->alloc.body, name);
  case S_PIPELINE: return shared_named(s->pipe.body, name);
  default: return NULL;
  }
}

static ir_buffer *a_shared;

static ir_stmt *mutate(ir_mutator *mu, ir_stmt *s) {
  mutation m = *(mutation *)mu->ctx;
  if (s->kind == S_BARRIER && s->barrier.threads &&
      (m == BARRIER_OF_128 || m == BARRIER_OF_384))
    return ir_new_named_barrier(mu->a, m == BARRIER_OF_128 ? 128 : 384);
  if (m == INSIDE_A_SCOPE && is_stage_alloc(s))
    return ir_new_alloc(mu->a, a_shared, s);
  if (is_stage_alloc(s))
    stage = s->alloc.buf;
  if (s->kind == S_IF && s->if_.then_->kind == S_TMA_STORE_WAIT &&
      (m == DROP_WAIT || m == WRITE_BEFORE_WAIT))
    return m == DROP_WAIT ? ir_new_seq(mu->a, NULL, 0)
                          : ir_new_if(mu->a, s->if_.cond,
                                      write_before_wait(mu->a, s->if_.then_),
                                      NULL);
  if (s->kind != S_SEQ)
    return ir_mutate_stmt_children(mu, s);
  for (int i = 0; i < s->seq.n; i++) {
    const ir_stmt *it = s->seq.items[i];
    if (m == DROP_FIRST_BARRIER && it->kind == S_BARRIER &&
        i + 1 < s->seq.n && is_stage_alloc(s->seq.items[i + 1]))
      return without(mu->a, s, i);
    if (m == DROP_STAGE_BARRIER && it->kind == S_BARRIER && i > 0 &&
        i + 1 < s->seq.n && s->seq.items[i + 1]->kind == S_IF)
      return without(mu->a, s, i);
  }
  return ir_mutate_stmt_children(mu, s);
}

static void assert_fault(mutation m, const char *const says[2]) {
  ts_sched *s;
  ts_program *p = lowered(&s);
  a_shared = shared_named(p->k.body, "A.shared");
  assert_non_null(a_shared);
  ir_kernel k = p->k;
  ir_mutator mu = {.a = &p->arena, .stmt = mutate, .ctx = &m};
  k.body = ir_mutate_stmt(&mu, p->k.body);
  assert_kernel_faults(p, &k, says, 2);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_store_without_the_barrier_races(void **state) {
  (void)state;
  assert_fault(DROP_STAGE_BARRIER, (const char *[]){
      "race: read of shared C.shared", "without a barrier between"});
}

static void test_stage_over_buffers_still_in_use(void **state) {
  (void)state;
  assert_fault(DROP_FIRST_BARRIER, (const char *[]){
      "shared C.shared lies over shared", "a barrier must come between "
      "its last use and C.shared's scope"});
}

static void test_block_leaving_before_the_wait(void **state) {
  (void)state;
  assert_fault(DROP_WAIT, (const char *[]){
      "the block leaves the scope of shared C.shared while the TMA store "
      "that thread (0, 0, 0) issued", "cp.async.bulk.wait_group.read"});
}

/* Each panel's store reads its own elements until the wait: a write
 * into the first panel, a middle one or the last names that panel's
 * store; so does one into rows past M, which the store reads though it
 * writes nothing of them. */
static void test_write_while_a_store_reads(void **state) {
  (void)state;
  const struct {
    int64_t m, row, col;
    const char *says;
  } cases[] = {{128, 0, 0, "into C at (0, 0)"},
               {128, 0, 32, "into C at (32, 0)"},
               {128, 5, 224, "into C at (224, 0)"},
               {5, 100, 0, "into C at (0, 0)"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    rows = cases[i].m;
    written[0] = cases[i].row;
    written[1] = cases[i].col;
    assert_fault(WRITE_BEFORE_WAIT, (const char *[]){
        "write into shared C.shared while the TMA store", cases[i].says});
  }
  rows = 128;
  written[0] = written[1] = 0;
}

/* The consumers' barriers count the 256 consumer threads: 128 leave the
 * other warpgroup out, 384 count the producer warpgroup, which has left
 * (on the GPU: a race, and a barrier waiting for ever). */
static void test_named_barrier_counting_other_threads(void **state) {
  (void)state;
  assert_fault(BARRIER_OF_128, (const char *[]){
      "reaches a barrier of threads 0..127, which does not count it", NULL});
  assert_fault(BARRIER_OF_384, (const char *[]){
      "barrier in divergent code", "(it has left the kernel)"});
}

static void test_stage_inside_a_live_buffers_scope(void **state) {
  (void)state;
  assert_fault(INSIDE_A_SCOPE, (const char *[]){
      "shared C.shared lies over shared A.shared, whose scope encloses it",
      NULL});
}

static void test_tensor_map_box_not_a_panel(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = lowered(&s);
  ir_param params[8];
  assert_true(p->k.nparams <= 8);
  memcpy(params, p->k.params, sizeof(ir_param) * (size_t)p->k.nparams);
  int maps = 0;
  for (int i = 0; i < p->k.nparams; i++)
    if (params[i].p.kind == TS_PARAM_TENSOR_MAP &&
        params[i].p.buffer == TS_PARAM_C) {
      assert_false(params[i].p.read_only);
      assert_int_equal(params[i].p.box[0], 32);
      assert_int_equal(params[i].p.box[1], 128);
      params[i].p.box[1] = 64;
      maps++;
    }
  assert_int_equal(maps, 1);
  ir_kernel k = p->k;
  k.params = params;
  char *msg = run_kernel(&k, &p->def);
  assert_non_null(msg);
  if (!strstr(msg, "TMA store from shared C.shared into C: the tensor map "
              "moves a box of 32x64 elements, the store 32x128"))
    fail_msg("the executor says: %s", msg);
  free(msg);
  ts_program_free(p);
  ts_sched_free(s);
}

/* The stage lies over the pipeline's stages: the block's shared memory
 * is theirs, 4 stages of 48 KiB, and the stage starts at its byte 0. */
static void test_cuda_stores_from_shared_memory(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = lowered(&s);
  assert_true(p->k.tma_store);
  assert_int_equal(p->k.shared_bytes, 4 * 49152);
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  const char *has[] = {
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
      "cp.async.bulk.wait_group.read 0",
      "asm volatile(\"bar.sync 1, 256;\\n\" ::: \"memory\");",
      "const __grid_constant__ tessel_tensor_map tmap_C",
      "float (&C_shared)[8][128][32] = *reinterpret_cast<float (*)[8][128]"
      "[32]>(tessel_shared + 0);",
      "tessel_tma_store_2d(&tmap_C, (int)(j_outer*256 + 224), "
      "(int)(i_outer*128), &C_shared[(224) / 32][0][(224) % 32]);"};
  for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); i++)
    if (!strstr(src, has[i]))
      fail_msg("no \"%s\" in:\n%s", has[i], src);
  /* The fence before each barrier, so the TMA sees the threads' writes. */
  assert_non_null(strstr(src, "fence.proxy.async.shared::cta;\\n\" ::: "
                              "\"memory\");\n  asm volatile(\"bar.sync 1"));
  /* A panel at a time: one barrier before the stage, then one a panel,
   * each panel's store issued before the next panel's writes. */
  int barriers = 0;
  for (const char *at = src; (at = strstr(at, "bar.sync 1, 256")); at++)
    barriers++;
  assert_int_equal(barriers, 1 + 8);
  const char *store0 = strstr(src, "tessel_tma_store_2d(&tmap_C, "
                                   "(int)(j_outer*256), ");
  const char *store1 = strstr(src, "(int)(j_outer*256 + 32)");
  assert_non_null(store0);
  assert_non_null(store1);
  assert_non_null(strstr(store0, "make_float2"));
  assert_true(strstr(store0, "make_float2") < store1);
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* The barriers of `name`'s kernel at 128 x 256 x 512 in `type`, C of
 * `c_type`, layout NN. */
static int barriers_of(const char *name, ts_dtype type, ts_dtype c_type) {
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = type;
  g.c_type = c_type;
  g.math = type == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
  ts_sched *s = ts_builtin_schedule(name, &g);
  char *src = ts_cuda_source(s);
  assert_non_null(src);
  int n = 0;
  for (const char *at = src; (at = strstr(at, "bar.sync 1, 256")); at++)
    n++;
  free(src);
  ts_sched_free(s);
  return n;
}

/* A panel at a time where the accumulators' loop walks the panels: 8 of
 * 32 floats, 4 of 64 halves; tf32 in NN computes C's transpose, whose
 * registers run along the rows, so its tile is written whole first. */
static void test_panels_where_the_loop_walks_them(void **state) {
  (void)state;
  assert_int_equal(barriers_of("wgstore", TS_F16, TS_F32), 1 + 8);
  assert_int_equal(barriers_of("wgstore", TS_F16, TS_F16), 1 + 4);
  assert_int_equal(barriers_of("wgstore", TS_BF16, TS_BF16), 1 + 4);
  assert_int_equal(barriers_of("wgstore", TS_F32, TS_F32), 1 + 1);
}

/* Without a producer warpgroup the block is all consumers: the barriers
 * are __syncthreads. */
static void test_without_a_producer_the_barriers_are_the_blocks(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(128, 256, 512);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule("wgtma", &g);
  ts_stage *cs;
  assert_int_equal(ts_cache_write(s, "C", TS_SHARED,
                                  ts_get_loop(s, "j.outer"), &cs), TS_OK);
  assert_int_equal(ts_tma(s, cs), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_null(run_kernel(&p->k, &p->def));
  char *src = ts_program_cuda(p);
  assert_non_null(strstr(src, "cp.async.bulk.wait_group.read 0"));
  assert_null(strstr(src, "bar.sync 1"));
  free(src);
  char msg[1024];
  assert_int_equal(ts_program_check(p, 7, msg, sizeof(msg)), TS_OK);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Against a plain C GEMM at odd M and K (C's rows, N, 16-byte aligned),
 * in every layout and type, with an fp32 and a 16-bit C, alpha and beta:
 * the stores clipped at C's edges. */
static void test_checks_at_odd_shapes(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{5, 264, 7}, {129, 520, 100}, {1, 8, 1}};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int i = 0; i < 3; i++)
    for (int t = 0; t < 3; t++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_gemm g = ts_gemm_make(shapes[i][0], shapes[i][1], shapes[i][2]);
        g.layout = (ts_layout)l;
        g.a_type = g.b_type = types[t];
        g.math = types[t] == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
        if (l % 2) {
          g.c_type = types[t];
          g.alpha = 1.5f;
          g.beta = -0.5f;
        }
        ts_sched *s = ts_builtin_schedule("wgstore", &g);
        ts_program *p = ts_lower(s);
        assert_int_equal(ts_program_status(p), TS_OK);
        assert_true(p->k.tma_store);
        char msg[1024];
        if (ts_program_check(p, 3, msg, sizeof(msg)) != TS_OK)
          fail_msg("%lldx%lldx%lld layout %d type %d: %s",
                   (long long)g.m, (long long)g.n, (long long)g.k, l, t, msg);
        ts_program_free(p);
        ts_sched_free(s);
      }
}

/* Where C's rows are not 16-byte aligned wgstore is wgws: no stage. */
static void test_unaligned_rows_keep_the_threads_stores(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 1001, 64);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule("wgstore", &g);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  assert_false(p->k.tma_store);
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_explain_reports_the_stores(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = lowered(&s);
  ts_explain *e = ts_program_explain(p, NULL);
  assert_int_equal(e->status, TS_OK);
  const ts_tma_store_report *r = &e->kernels[0].stores;
  assert_int_equal(r->count, 8);
  assert_string_equal(r->src, "C.shared");
  assert_string_equal(r->dst, "C");
  assert_int_equal(r->box[0], 32);
  assert_int_equal(r->box[1], 128);
  assert_int_equal(r->bytes, 16384);
  assert_int_equal(r->l2_sectors, 512);
  assert_int_equal(r->swizzle, 128);
  /* The block's global bytes: C's tile, which the stores write, and the
   * pipeline's fills, 8 k steps of 128 x 64 of A and 256 x 64 of B. */
  assert_true(e->kernels[0].global_bytes ==
              128.0 * 256 * 4 + 8.0 * (128 + 256) * 64 * 2);
  ts_explain_free(e);
  ts_program_free(p);
  ts_sched_free(s);
}

/* ---- What the schedule and lowering refuse ----------------------------- */

static ts_sched *wg(const char *name, int64_t m, int64_t n, int64_t k) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = TS_F16;
  ts_sched *s = ts_builtin_schedule(name, &g);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

static void test_schedule_refuses_a_stage_it_cannot_store(void **state) {
  (void)state;
  ts_stage *cs;
  /* A loop with a block loop inside it. */
  ts_sched *s = wg("wgws", 256, 512, 64);
  EXPECT_FAIL(ts_cache_write(s, "C", TS_SHARED, ts_get_loop(s, "i.outer"),
                             &cs),
              TS_ERR_BAD_ATTACH, "ts_cache_write: block loop \"j.outer\" "
              "lies inside loop \"i.outer\"");
  ts_sched_free(s);
  /* Rows of 20 bytes. */
  s = sched_of(64, 64, 64);
  ts_loop *jo, *ji;
  ts_split(s, ts_get_loop(s, "j"), 5, &jo, &ji);
  EXPECT_FAIL(ts_cache_write(s, "C", TS_SHARED, jo, &cs), TS_ERR_BAD_ATTACH,
              "ts_cache_write: C's tile at loop \"j.outer\" is 1 x 5 "
              "elements; its shared stage needs rows of a multiple of 128 "
              "bytes");
  ts_sched_free(s);
  /* Twice. */
  s = wg("wgws", 256, 512, 64);
  ts_loop *at = ts_get_loop(s, "j.outer");
  assert_int_equal(ts_cache_write(s, "C", TS_SHARED, at, &cs), TS_OK);
  EXPECT_FAIL(ts_cache_write(s, "C", TS_SHARED, at, &cs), TS_ERR_STAGE_USED,
              "ts_cache_write: C is already cached in shared memory as "
              "\"C.shared\"");
  ts_sched_free(s);
  s = wg("wgws", 256, 512, 64);
  ts_cache_write(s, "C", TS_SHARED, ts_get_loop(s, "j.outer"), &cs);
  assert_int_equal(ts_tma(s, cs), TS_OK);
  EXPECT_FAIL(ts_tma(s, cs), TS_ERR_STAGE_USED,
              "ts_tma: \"C.shared\" is already stored by the TMA");
  ts_sched_free(s);
}

/* Lowering's refusal of s, whose message starts with `says`. */
static void assert_lowering_refuses(ts_sched *s, const char *says) {
  ts_program *p = ts_lower(s);
  assert_int_not_equal(ts_program_status(p), TS_OK);
  if (strncmp(ts_program_errmsg(p), says, strlen(says)))
    fail_msg("lowering says: %s", ts_program_errmsg(p));
  ts_program_free(p);
  ts_sched_free(s);
}

static void test_lowering_refuses_what_the_store_cannot_do(void **state) {
  (void)state;
  ts_stage *cs;
  /* No ts_tma. */
  ts_sched *s = wg("wgws", 128, 256, 64);
  ts_cache_write(s, "C", TS_SHARED, ts_get_loop(s, "j.outer"), &cs);
  assert_lowering_refuses(s, "ts_lower: \"C.shared\", C's shared stage, is "
                          "stored by the TMA: call ts_tma on it");
  /* C's rows of 1000 halves with a 16-bit C would be; of 1001 floats
   * they are not 16-byte aligned. */
  s = wg("wgws", 128, 1001, 64);
  ts_cache_write(s, "C", TS_SHARED, ts_get_loop(s, "j.outer"), &cs);
  ts_tma(s, cs);
  assert_lowering_refuses(s, "ts_lower: \"C.shared\" is stored by the TMA, "
                          "which needs C's rows 16-byte aligned; they are "
                          "1001 elements of 4 bytes");
  /* Split-K: each block adds a part of the tile. */
  s = sched_of(128, 128, 256);
  ts_loop *io, *ii, *jo, *ji, *kz, *kr;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_reorder(s, 5, (ts_loop *[]){io, jo, ii, ji, ts_get_loop(s, "k")});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  ts_split_k(s, ts_get_loop(s, "k"), 2, TS_SPLIT_K_WORKSPACE, &kz, &kr);
  assert_int_equal(ts_cache_write(s, "C", TS_SHARED, jo, &cs), TS_OK);
  ts_tma(s, cs);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_lowering_refuses(s, "ts_lower: \"C.shared\" stores C's tile, but "
                          "with split-K");
}

/* 64 x 128 x 16, blocks of 8 x 64 over threads (ii, jt) and a serial
 * loop jm of 2 between jt and k: each thread's 2 elements of C. */
static ts_sched *serial_inside(ts_loop **jo, ts_loop **jm, ts_loop **jt) {
  ts_sched *s = sched_of(64, 128, 16);
  ts_loop *io, *ii, *jr;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 64, jo, &jr);
  ts_split(s, jr, 32, jm, jt);
  ts_reorder(s, 6, (ts_loop *[]){io, *jo, ii, *jt, *jm, ts_get_loop(s, "k")});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, *jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, *jt, TS_THREAD_X);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

/* The epilogue must run once a tile, and the stage lie over buffers that
 * are done with: a serial loop between the stage's loop and the
 * accumulators would store a half-written stage; a stage inside the
 * accumulators' loop is a part of a tile; a stage inside a shared
 * cache's scope would be read over. */
static void test_lowering_refuses_a_stage_that_is_not_the_tiles_last_use(
    void **state) {
  (void)state;
  ts_loop *jo, *jm, *jt;
  ts_stage *cs, *as, *cl;
  ts_sched *s = serial_inside(&jo, &jm, &jt);
  ts_cache_write(s, "C", TS_SHARED, jo, &cs);
  ts_tma(s, cs);
  assert_lowering_refuses(s, "ts_lower: \"C.shared\" is attached at loop "
                          "\"j.outer\", but loop \"j.inner.outer\" inside "
                          "it repeats the epilogue");
  s = serial_inside(&jo, &jm, &jt);
  ts_cache_write(s, "C", TS_LOCAL, jt, &cl);
  ts_cache_write(s, "C", TS_SHARED, jm, &cs);
  ts_tma(s, cs);
  assert_lowering_refuses(s, "ts_lower: \"C.shared\" is attached at loop "
                          "\"j.inner.outer\", inside the accumulators' "
                          "tile");
  s = serial_inside(&jo, &jm, &jt);
  ts_cache_read(s, "A", TS_SHARED, jt, &as);
  ts_cache_write(s, "C", TS_SHARED, jm, &cs);
  ts_tma(s, cs);
  assert_int_equal(ts_sched_status(s), TS_OK);
  assert_lowering_refuses(s, "ts_lower: \"C.shared\" would lie over "
                          "shared \"A.shared\", whose scope encloses it");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_store_without_the_barrier_races),
      cmocka_unit_test(test_stage_over_buffers_still_in_use),
      cmocka_unit_test(test_block_leaving_before_the_wait),
      cmocka_unit_test(test_write_while_a_store_reads),
      cmocka_unit_test(test_named_barrier_counting_other_threads),
      cmocka_unit_test(test_stage_inside_a_live_buffers_scope),
      cmocka_unit_test(test_tensor_map_box_not_a_panel),
      cmocka_unit_test(test_cuda_stores_from_shared_memory),
      cmocka_unit_test(test_panels_where_the_loop_walks_them),
      cmocka_unit_test(test_without_a_producer_the_barriers_are_the_blocks),
      cmocka_unit_test(test_checks_at_odd_shapes),
      cmocka_unit_test(test_unaligned_rows_keep_the_threads_stores),
      cmocka_unit_test(test_explain_reports_the_stores),
      cmocka_unit_test(test_schedule_refuses_a_stage_it_cannot_store),
      cmocka_unit_test(test_lowering_refuses_what_the_store_cannot_do),
      cmocka_unit_test(
          test_lowering_refuses_a_stage_that_is_not_the_tiles_last_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
