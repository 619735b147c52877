/*
 * C's shared stage stored by the TMA in a persistent grid: the stage is a
 * ring of two 128-byte panels beside the pipeline's stages, allocated
 * around the tile loop, so that a tile's last stores read it while the
 * next tile's main loop runs.  The issuing thread waits for the stores
 * of a slot before it is written again (the tile's first barrier, and
 * each barrier after panel q's writes for panel q - 1's store) and once
 * at the kernel's end.  The executor checks it against a plain GEMM with
 * several tiles a block, and faults the waits left out or put after the
 * barrier; a ring that does not fit beside the stages is refused, and the
 * warpgroup space prunes it and C's transpose in more than two panels.
 */
#include "helpers.h"
#include "run_kernel.h"

#include "ir/ir.h"
#include "ir/program_ir.h"
#include "ir/visit.h"

/* The warpgroup space's persistent=1,store=1 (wgpers with C's stage) at
 * m x n x k in `type` with C of c_type. */
static ts_sched *ring_sched(int64_t m, int64_t n, int64_t k, ts_dtype type,
                            ts_dtype c_type, ts_layout layout) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.a_type = g.b_type = type;
  g.c_type = c_type;
  g.math = type == TS_F32 ? TS_MATH_TF32 : TS_MATH_F32;
  g.layout = layout;
  char err[256];
  ts_config *c = ts_config_parse("persistent=1,store=1", err, sizeof(err));
  assert_non_null(c);
  ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &g, c);
  ts_config_free(c);
  return s;
}

static ts_program *ring_program(int64_t m, int64_t n, ts_dtype c_type,
                                ts_sched **s) {
  *s = ring_sched(m, n, 512, TS_F16, c_type, TS_NT);
  assert_int_equal(ts_sched_status(*s), TS_OK);
  ts_program *p = ts_lower(*s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("%s", ts_program_errmsg(p));
  assert_true(p->k.tma_store);
  return p;
}

/* The allocation of the ring: the kernel's, around the persistent tile
 * loop (inside the pipeline's allocations), the drain its last statement. */
static const ir_stmt *ring_alloc(const ir_stmt *s) {
  while (s && s->kind == S_ALLOC && s->alloc.buf->scope == SCOPE_SHARED &&
         strcmp(s->alloc.buf->name, "C.shared"))
    s = s->alloc.body;
  return s && s->kind == S_ALLOC ? s : NULL;
}

static bool persistent_loop(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_FOR && s->for_.loop->persistent) {
    *(bool *)v->ctx = true;
    v->stop = true;
  }
  return true;
}

static void test_ring_beside_the_stages(void **state) {
  (void)state;
  ts_sched *s;
  ts_program *p = ring_program(128, 512, TS_F16, &s);
  /* 4 stages of 48 KiB and the ring: 2 panels of 128 rows of 128 bytes. */
  assert_int_equal(p->k.shared_bytes, 4 * 49152 + 2 * 128 * 128);
  const ir_stmt *ring = ring_alloc(p->k.body);
  assert_non_null(ring);
  const ir_buffer *b = ring->alloc.buf;
  assert_false(b->overlay);
  assert_int_equal(b->shape[0], 128);
  assert_int_equal(b->shape[1], 128);
  bool around = false;
  ir_visitor v = {.stmt = persistent_loop, .ctx = &around};
  ir_visit_stmt(&v, ring->alloc.body);
  assert_true(around);
  const ir_stmt *body = ring->alloc.body;
  assert_int_equal(body->kind, S_SEQ);
  const ir_stmt *drain = body->seq.items[body->seq.n - 1];
  assert_int_equal(drain->kind, S_IF);
  assert_int_equal(drain->if_.then_->kind, S_TMA_STORE_WAIT);
  /* Waits: the tile's first, one before each barrier after panels 1..3,
   * the drain; the stores: panels 0 and 2 from slot 0, 1 and 3 from 1. */
  char *src = ts_program_cuda(p);
  assert_non_null(src);
  assert_int_equal(count_in(src, "tessel_tma_store_wait();"), 1 + 3 + 1);
  assert_int_equal(count_in(src, "tessel_tma_store_2d(&tmap_C,"), 4);
  assert_int_equal(count_in(src, "&C_shared[(0) / 64][0][(0) % 64]);"), 2);
  assert_int_equal(count_in(src, "&C_shared[(64) / 64][0][(64) % 64]);"), 2);
  free(src);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Against a plain C GEMM: 300 x 520 is 9 tiles on the executor's 4
 * blocks, so each block's ring runs over two or three tiles; every
 * layout, a 16-bit and an fp32 C (8 panels of 32 floats), alpha and beta. */
static void test_ring_checks_at_odd_shapes(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{300, 520, 100}, {129, 264, 64}, {1, 8, 1}};
  const ts_dtype types[] = {TS_F16, TS_BF16, TS_F32};
  for (int i = 0; i < 3; i++)
    for (int t = 0; t < 3; t++)
      for (int l = TS_NN; l <= TS_TT; l++) {
        ts_dtype type = types[t];
        if (type == TS_F32 && l == TS_NN)
          continue; /* C's transpose: test_ring_past_the_limit */
        ts_dtype c_type = l % 2 ? (type == TS_F32 ? TS_F16 : type) : TS_F32;
        ts_sched *s = ring_sched(shapes[i][0], shapes[i][1], shapes[i][2],
                                 type, c_type, (ts_layout)l);
        ts_program *p = ts_lower(s);
        if (ts_program_status(p) != TS_OK)
          fail_msg("%s", ts_program_errmsg(p));
        assert_true(p->k.tma_store);
        assert_true(p->k.persistent);
        char msg[1024];
        if (ts_program_check(p, 11, msg, sizeof(msg)) != TS_OK)
          fail_msg("%lldx%lldx%lld layout %d type %d: %s",
                   (long long)shapes[i][0], (long long)shapes[i][1],
                   (long long)shapes[i][2], l, t, msg);
        ts_program_free(p);
        ts_sched_free(s);
      }
}

/* ---- The waits, left out --------------------------------------------------- */

typedef enum { NO_WAIT_IN_TILES, NO_DRAIN, WAIT_AFTER_BARRIER } mutation;

typedef struct {
  mutation m;
  bool in_tiles;
  int dropped;
} dropping;

static bool is_wait(const ir_stmt *s) {
  return s->kind == S_IF && s->if_.then_->kind == S_TMA_STORE_WAIT;
}

/* In a sequence, each wait swapped with the barrier after it. */
static ir_stmt *waits_after_barriers(ir_mutator *mu, ir_stmt *s,
                                     dropping *d) {
  ir_stmt *n = ir_mutate_stmt_children(mu, s);
  if (!n || n->kind != S_SEQ)
    return n;
  ir_stmt **items = ts_arena_alloc(mu->a, sizeof(*items) * (size_t)n->seq.n);
  memcpy(items, n->seq.items, sizeof(*items) * (size_t)n->seq.n);
  for (int i = 0; i + 1 < n->seq.n; i++)
    if (is_wait(items[i]) && items[i + 1]->kind == S_BARRIER) {
      ir_stmt *w = items[i];
      items[i] = items[i + 1];
      items[++i] = w;
      d->dropped++;
    }
  return ir_new_seq(mu->a, items, n->seq.n);
}

static ir_stmt *drop_waits(ir_mutator *mu, ir_stmt *s) {
  dropping *d = mu->ctx;
  if (d->m == WAIT_AFTER_BARRIER)
    return waits_after_barriers(mu, s, d);
  if (s->kind == S_FOR && s->for_.loop->persistent) {
    d->in_tiles = true;
    ir_stmt *n = ir_mutate_stmt_children(mu, s);
    d->in_tiles = false;
    return n;
  }
  if (is_wait(s) && d->in_tiles == (d->m == NO_WAIT_IN_TILES)) {
    d->dropped++;
    return ir_new_seq(mu->a, NULL, 0);
  }
  return ir_mutate_stmt_children(mu, s);
}

static void assert_fault(mutation m, const char *const says[2]) {
  ts_sched *s;
  ts_program *p = ring_program(300, 520, TS_F16, &s);
  ir_kernel k = p->k;
  dropping d = {.m = m};
  ir_mutator mu = {.a = &p->arena, .stmt = drop_waits, .ctx = &d};
  k.body = ir_mutate_stmt(&mu, p->k.body);
  assert_int_equal(d.dropped, m == NO_DRAIN ? 1 : m == NO_WAIT_IN_TILES ? 1 + 3
                                                                      : 3);
  assert_kernel_faults(p, &k, says, 2);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Panel 2 goes into panel 0's slot: without the waits its writes meet
 * panel 0's store still reading. */
static void test_a_slot_rewritten_before_its_store_read_it(void **state) {
  (void)state;
  assert_fault(NO_WAIT_IN_TILES, (const char *[]){
      "write into shared C.shared while the TMA store", NULL});
}

static void test_the_kernel_ending_before_the_last_stores(void **state) {
  (void)state;
  assert_fault(NO_DRAIN, (const char *[]){
      "the block leaves the scope of shared C.shared while the TMA store",
      "cp.async.bulk.wait_group.read"});
}

/* The wait after the barrier instead of before it: the issuing thread
 * knows panel q - 1's store is done, the others, writing panel q + 1
 * into its slot, cannot (a race on the GPU). */
static void test_a_wait_the_others_are_not_told_of(void **state) {
  (void)state;
  assert_fault(WAIT_AFTER_BARRIER, (const char *[]){
      "which a TMA store read until thread (0, 0, 0)'s wait",
      "with no barrier between that wait and this write"});
}

/* ---- Where the ring does not fit -------------------------------------------- */

/* tf32 in NN computes C's transpose in tiles of 256 rows: a ring of two
 * of its panels is 64 KiB, beside 192 KiB of stages. */
static void test_ring_past_the_limit(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(512, 512, 128);
  g.a_type = g.b_type = TS_F32;
  g.math = TS_MATH_TF32;
  ts_sched *s = ts_builtin_schedule("wgpers", &g);
  ts_stage *cs;
  assert_int_equal(ts_cache_write(s, "C", TS_SHARED,
                                  ts_get_loop(s, "j.outer"), &cs), TS_OK);
  assert_int_equal(ts_tma(s, cs), TS_OK);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_SHARED_LIMIT);
  const char *says = "ts_lower: \"C.shared\" in a persistent grid is a ring "
                     "of 2 panels of its own, 65536 bytes beside the 196608 "
                     "of the shared caches";
  if (strncmp(ts_program_errmsg(p), says, strlen(says)))
    fail_msg("lowering says: %s", ts_program_errmsg(p));
  ts_program_free(p);
  ts_sched_free(s);
  /* The space prunes it, saying why: at 4 stages the ring does not fit,
   * at 3 the tile's 4 panels are not written a panel at a time. */
  s = ring_sched(512, 512, 128, TS_F32, TS_F32, TS_NN);
  assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
  assert_non_null(strstr(ts_sched_errmsg(s), "KiB of shared memory a block"));
  ts_sched_free(s);
  ts_gemm g3 = g;
  g3.layout = TS_NN;
  char err[256];
  ts_config *c = ts_config_parse("persistent=1,store=1,stages=3", err,
                                 sizeof(err));
  s = ts_space_schedule(ts_space_find("warpgroup"), &g3, c);
  ts_config_free(c);
  assert_int_equal(ts_sched_status(s), TS_ERR_PRUNED);
  assert_non_null(strstr(ts_sched_errmsg(s), "on C's transpose (tf32 NN) of "
                         "4 panels a tile"));
  ts_sched_free(s);
}

/* tf32 NN with 64-column tiles (bm=64): 2 fp32 panels, which the ring
 * holds whole, written before the stores. */
static void test_a_tile_the_ring_holds_whole(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(300, 520, 100);
  g.a_type = g.b_type = TS_F32;
  g.math = TS_MATH_TF32;
  char err[256];
  ts_config *c = ts_config_parse("bm=64,persistent=1,store=1", err,
                                 sizeof(err));
  ts_sched *s = ts_space_schedule(ts_space_find("warpgroup"), &g, c);
  ts_config_free(c);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_program *p = ts_lower(s);
  if (ts_program_status(p) != TS_OK)
    fail_msg("%s", ts_program_errmsg(p));
  char *src = ts_program_cuda(p);
  assert_int_equal(count_in(src, "tessel_tma_store_2d(&tmap_C,"), 2);
  free(src);
  char msg[1024];
  if (ts_program_check(p, 5, msg, sizeof(msg)) != TS_OK)
    fail_msg("%s", msg);
  ts_program_free(p);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring_beside_the_stages),
      cmocka_unit_test(test_ring_checks_at_odd_shapes),
      cmocka_unit_test(test_a_slot_rewritten_before_its_store_read_it),
      cmocka_unit_test(test_the_kernel_ending_before_the_last_stores),
      cmocka_unit_test(test_a_wait_the_others_are_not_told_of),
      cmocka_unit_test(test_ring_past_the_limit),
      cmocka_unit_test(test_a_tile_the_ring_holds_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
