/*
 * tessel explain: the cost model on hand-made requests, schedules with a
 * known fault reported as such (a 32-way column walk of an unpadded 32x32
 * shared tile, a stride-2 float access, a vectorized loop whose rows are
 * not aligned, a misaligned float4), and the cross-check: for every
 * built-in, the sectors and wavefronts the executor's own accesses cost
 * (every warp of every block, as it runs the kernel) equal explain's.
 */
#include "helpers.h"

#include <math.h>

#include "explain/explain_impl.h"
#include "exec/executor.h"
#include "ir/program_ir.h"
#include "schedule/sched.h"

/* ---- The cost model -------------------------------------------------- */

static warp_req lanes_at(int64_t first, int64_t step, int width) {
  warp_req r = {.width = width};
  for (int l = 0; l < WARP; l++) {
    r.active[l] = true;
    r.addr[l] = first + step * l;
  }
  return r;
}

static void test_cost_of_global_requests(void **state) {
  (void)state;
  req_cost c;
  warp_req r = lanes_at(0, 4, 4); /* 128 contiguous bytes */
  cost_global(&r, &c);
  assert_true(c.sectors == 4 && c.ideal_sectors == 4 && !c.misaligned);
  r = lanes_at(0, 8, 4); /* stride 2 */
  cost_global(&r, &c);
  assert_true(c.sectors == 8 && c.ideal_sectors == 4 && c.stride == 8);
  r = lanes_at(0, 0, 4); /* one word */
  cost_global(&r, &c);
  assert_true(c.sectors == 1 && c.ideal_sectors == 1);
  r = lanes_at(4, 16, 16); /* float4s one float off their boundary */
  cost_global(&r, &c);
  assert_true(c.misaligned && c.sectors == 17 && c.ideal_sectors == 16);
}

static void test_cost_of_shared_requests(void **state) {
  (void)state;
  req_cost c;
  warp_req r = lanes_at(0, 128, 4); /* a column of a 32x32 float tile */
  cost_shared(&r, &c);
  assert_true(c.wavefronts == 32 && c.ideal_wavefronts == 1);
  r = lanes_at(0, 132, 4); /* padded by one */
  cost_shared(&r, &c);
  assert_true(c.wavefronts == 1);
  r = lanes_at(0, 0, 4); /* a broadcast */
  cost_shared(&r, &c);
  assert_true(c.wavefronts == 1);
  r = lanes_at(0, 16, 16); /* float4s in a row: 4 quarters, 1 each */
  cost_shared(&r, &c);
  assert_true(c.wavefronts == 4 && c.ideal_wavefronts == 4);
  r = lanes_at(0, 32, 16); /* 32 bytes apart: lanes l, l + 4 share banks */
  cost_shared(&r, &c);
  assert_true(c.wavefronts == 8 && c.ideal_wavefronts == 4);
  r = lanes_at(0, 128, 16); /* ldmatrix rows 128 bytes apart: 8-way */
  cost_ldmatrix(&r, 4, &c);
  assert_true(c.wavefronts == 32 && c.ideal_wavefronts == 4);
}

/* ---- Schedules with known faults ------------------------------------- */

static ts_explain *explain_sched(ts_sched *s, bool as_written) {
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  assert_int_equal(ts_program_status(p), TS_OK);
  ts_explain_opts o = {.as_written = as_written};
  ts_explain *e = ts_program_explain(p, &o);
  ts_program_free(p);
  assert_non_null(e);
  assert_int_equal(e->status, TS_OK);
  return e;
}

/* The first row of `kind` on `buffer` in the k loop (any phase: NULL). */
static const ts_access_report *row(const ts_explain *e, ts_access_kind kind,
                                   const char *buffer) {
  for (int i = 0; i < e->naccesses; i++)
    if (e->accesses[i].kind == kind &&
        strcmp(e->accesses[i].buffer, buffer) == 0)
      return &e->accesses[i];
  fail_msg("no %s of %s", ts_access_kind_name(kind), buffer);
  return NULL;
}

static bool has(const char *text, const char *part) {
  if (strstr(text, part))
    return true;
  print_error("'%s' lacks '%s'\n", text, part);
  return false;
}

/* smem32 with i on threadIdx.x: a warp reads a column of the 32x32 A
 * tile, every lane in the same bank.  Compiled, the k loop of 32 is laid
 * out flat and each lane's 4 neighbouring words merged into a float4:
 * 8 lanes of a quarter warp still share 4 banks. */
static ts_sched *column_walk(void) {
  ts_sched *s = sched_of(256, 256, 256);
  ts_loop *io, *ii, *jo, *ji, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_split(s, ts_get_loop(s, "k"), 32, &ko, &ki);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ii, ji, ko, ki});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  ts_bind(s, ji, TS_THREAD_Y);
  ts_stage *as;
  ts_cache_read(s, "A", TS_SHARED, ko, &as);
  ts_bind(s, ts_stage_axis(as, 1), TS_THREAD_X);
  ts_bind(s, ts_stage_axis(as, 0), TS_THREAD_Y);
  assert_int_equal(ts_sched_status(s), TS_OK);
  return s;
}

static void test_column_walk_is_a_32_way_conflict(void **state) {
  (void)state;
  ts_explain *e = explain_sched(column_walk(), true);
  const ts_access_report *r = row(e, TS_ACCESS_SHARED_LOAD, "A.shared");
  assert_int_equal(r->phase, TS_IN_K);
  assert_int_equal(r->bytes, 4);
  assert_true(r->wavefronts / r->requests == 32);
  assert_true(has(r->verdict, "32-way bank conflict on A.shared"));
  assert_true(has(r->verdict, "pad its rows by 1 element"));
  /* Its copy: threadIdx.x along A's rows, coalesced. */
  assert_true(has(row(e, TS_ACCESS_GLOBAL_LOAD, "A")->verdict, "coalesced"));
  ts_explain_free(e);

  e = explain_sched(column_walk(), false);
  r = row(e, TS_ACCESS_SHARED_LOAD, "A.shared");
  assert_int_equal(r->bytes, 16);
  assert_true(r->requests * 4 == r->ir_requests);
  assert_true(r->wavefronts / r->requests == 32);
  assert_true(has(r->verdict, "8-way bank conflict on A.shared"));
  assert_true(has(r->verdict, "pad its rows by 4 elements"));
  ts_explain_free(e);
}

/* tvm_step2 reads A and B from global memory in its 8 x 4 x 32 unrolled
 * nest: compiled, each A[i, k] is loaded once for its 4 columns and each
 * B[k, j] once for its 8 rows, 12 loads a k where the IR has 64. */
static void test_compiler_reuses_repeated_loads(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  ts_explain *e = explain_sched(ts_builtin_schedule("tvm_step2", &g), false);
  const ts_access_report *a = row(e, TS_ACCESS_GLOBAL_LOAD, "A");
  const ts_access_report *b = row(e, TS_ACCESS_GLOBAL_LOAD, "B");
  assert_true(a->ir_requests == 4 * a->requests);
  assert_true(b->ir_requests == 8 * b->requests);
  assert_true(a->requests + b->requests == (a->ir_requests + b->ir_requests) *
                                               12 / 64);
  ts_explain_free(e);
}

/* j split by 2 with its outer part on threadIdx.x: lanes read every other
 * float of B and write every other float of C. */
static void test_stride_two_access(void **state) {
  (void)state;
  ts_sched *s = sched_of(64, 256, 64);
  ts_loop *io, *ii, *jo, *ji, *jio, *jii;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 64, &jo, &ji);
  ts_split(s, ji, 2, &jio, &jii);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ii, jio, jii, ts_get_loop(s, "k")});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, jio, TS_THREAD_X);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_explain *e = explain_sched(s, false);
  const ts_access_report *b = row(e, TS_ACCESS_GLOBAL_LOAD, "B");
  assert_true(b->sectors / b->requests == 8);
  assert_true(b->ideal_sectors / b->requests == 4);
  assert_true(has(b->verdict, "stride-2 access (8 bytes between lanes)"));
  assert_true(has(row(e, TS_ACCESS_GLOBAL_STORE, "C")->verdict, "stride-2"));
  ts_explain_free(e);
}

/* vectorized at K = 1003: A's rows are not 16-byte aligned, so the float4
 * copy of A runs lane by lane; at K = 1024 it is one vector. */
static void test_unaligned_rows_run_lane_by_lane(void **state) {
  (void)state;
  for (int aligned = 0; aligned < 2; aligned++) {
    ts_gemm g = ts_gemm_make(256, 256, aligned ? 1024 : 1003);
    ts_explain *e = explain_sched(ts_builtin_schedule("vectorized", &g),
                                  false);
    const ts_access_report *a = row(e, TS_ACCESS_GLOBAL_LOAD, "A");
    assert_int_equal(a->scalar_lanes, !aligned);
    assert_int_equal(a->bytes, aligned ? 16 : 4);
    if (!aligned)
      assert_true(has(a->verdict, "one access a lane"));
    ts_explain_free(e);
  }
}

/* A hand-made kernel: 32 lanes store float4s at C[0, 4 lane + 1]. */
static void test_misaligned_float4(void **state) {
  (void)state;
  ts_program p = {.status = TS_OK, .name = "misaligned", .nkernels = 1};
  ts_arena *a = &p.arena;
  ts_arena_init(a);
  p.def = ts_gemm_make(1, 256, 1);
  const ir_kernel *order[1] = {&p.k};
  p.order = order;
  int64_t shape[2] = {1, 256};
  p.k.C = ir_new_buffer(a, "C", SCOPE_GLOBAL, TS_F32, 2, shape, NULL);
  assert_true(ir_kernel_set_params(a, &p.k));
  ts_loop *tx = ir_new_loop(a, 0, "lane", 32, false, NULL);
  tx->kind = TS_THREAD_X;
  ir_expr *lane = ir_varref(a, tx->var);
  ir_expr *at[2] = {ir_int(a, 0),
                    ir_add(a, ir_mul(a, lane, ir_int(a, 4)), ir_int(a, 1))};
  ir_expr *zero = ir_float(a, 0), *four[4] = {zero, zero, zero, zero};
  ir_stmt *st = ir_new_store(a, p.k.C, at, ir_vector(a, four, 4));
  st->store.lanes = 4;
  p.k.body = ir_new_for(a, tx, st);
  for (int d = 0; d < 3; d++)
    p.k.grid[d] = p.k.block[d] = 1;
  p.k.block[0] = 32;
  p.k.nvars = 1;
  p.k.entry = "tessel_misaligned";
  ts_explain *e = ts_program_explain(&p, NULL);
  assert_int_equal(e->status, TS_OK);
  const ts_access_report *r = row(e, TS_ACCESS_GLOBAL_STORE, "C");
  assert_true(r->misaligned);
  assert_true(has(r->verdict, "misaligned: a lane's 16-byte access is not "
                              "on a 16-byte boundary"));
  ts_explain_free(e);
  ts_arena_release(a);
}

/* ---- The executor's cross-check -------------------------------------- */

/* Requests, sectors and wavefronts of one class of access. */
typedef struct {
  double requests, sectors, wavefronts;
} tally;

typedef struct {
  tally global_ld, global_st, shared_ld, shared_st;
} tallies;

/* Each warp of the block that the access reaches: one request. */
static void observe(void *ctx, const ir_observed *a) {
  tallies *t = ctx;
  bool global = a->buf->scope == SCOPE_GLOBAL;
  tally *to = global ? (a->store ? &t->global_st : &t->global_ld)
                     : (a->store ? &t->shared_st : &t->shared_ld);
  int size = ts_dtype_size(a->buf->dtype);
  for (int w0 = 0; w0 < a->nthreads; w0 += WARP) {
    warp_req r = {.width = a->matrices ? 16 : size * a->lanes};
    bool any = false;
    for (int l = 0; l < WARP; l++) {
      int t = w0 + l;
      r.active[l] = t < a->nthreads && a->mask[t];
      r.addr[l] = r.active[l] ? a->off[a->uniform ? 0 : t] * size : 0;
      any |= r.active[l];
    }
    if (!any)
      continue;
    req_cost c;
    if (a->matrices)
      cost_ldmatrix(&r, a->matrices, &c);
    else
      (global ? cost_global : cost_shared)(&r, &c);
    to->requests += 1;
    to->sectors += c.sectors;
    to->wavefronts += c.wavefronts;
  }
}

static void expect_equal(const char *what, const char *name, double exec,
                         double explained) {
  if (fabs(exec - explained) > 1e-9 * fabs(exec))
    fail_msg("%s: %s: the executor's accesses give %.0f, explain %.0f", name,
             what, exec, explained);
}

/* Explain's totals over the grid (cp.async as a global load and a shared
 * store) against the executor's accesses. */
static void compare_totals(const char *name, const tallies *t,
                           const ts_explain *e) {
  tallies x = {0};
  for (int i = 0; i < e->nkernels; i++) {
    const ts_kernel_report *k = &e->kernels[i];
    x.global_ld.requests += k->global_ld_requests + k->ldgsts_requests;
    x.global_ld.sectors += k->global_ld_sectors + k->ldgsts_sectors;
    x.global_st.requests += k->global_st_requests;
    x.global_st.sectors += k->global_st_sectors;
    x.shared_ld.requests += k->shared_ld_requests;
    x.shared_ld.wavefronts += k->shared_ld_wavefronts;
    x.shared_st.requests += k->shared_st_requests + k->ldgsts_requests;
    x.shared_st.wavefronts += k->shared_st_wavefronts + k->ldgsts_wavefronts;
  }
  expect_equal("global load requests", name, t->global_ld.requests,
               x.global_ld.requests);
  expect_equal("global load sectors", name, t->global_ld.sectors,
               x.global_ld.sectors);
  expect_equal("global store requests", name, t->global_st.requests,
               x.global_st.requests);
  expect_equal("global store sectors", name, t->global_st.sectors,
               x.global_st.sectors);
  expect_equal("shared load requests", name, t->shared_ld.requests,
               x.shared_ld.requests);
  expect_equal("shared load wavefronts", name, t->shared_ld.wavefronts,
               x.shared_ld.wavefronts);
  expect_equal("shared store requests", name, t->shared_st.requests,
               x.shared_st.requests);
  expect_equal("shared store wavefronts", name, t->shared_st.wavefronts,
               x.shared_st.wavefronts);
}

/* Runs p on the executor, telling each access to `t`. */
static void execute_observed(const ts_program *p, tallies *t) {
  const ir_kernel *k = p->order[0];
  size_t na = (size_t)ir_buffer_size(k->A), nb = (size_t)ir_buffer_size(k->B);
  size_t nc = (size_t)(p->def.m * p->def.n);
  float *A = calloc(na, sizeof(float)), *B = calloc(nb, sizeof(float));
  float *C = calloc(nc, sizeof(float));
  assert_non_null(A);
  assert_non_null(B);
  assert_non_null(C);
  ir_observer obs = {.access = observe, .ctx = t};
  char msg[512];
  bool ok = ir_execute_observed(p->order, p->nkernels, A, B, C, false, &obs,
                                msg, sizeof(msg));
  free(A);
  free(B);
  free(C);
  if (!ok)
    fail_msg("%s: %s", p->name, msg);
}

/* Every built-in at two shapes, one of whole tiles and one odd: every
 * block walked, the executor's costs and explain's the same. */
static void test_every_builtin_matches_the_executor(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{256, 256, 64}, {67, 45, 37}};
  for (int i = 0; i < ts_builtin_count(); i++) {
    const ts_builtin *b = ts_builtin_at(i);
    for (int sh = 0; sh < 2; sh++) {
      ts_gemm g = ts_gemm_make(shapes[sh][0], shapes[sh][1], shapes[sh][2]);
      if (b->tensor_cores)
        g.a_type = g.b_type = TS_F16;
      ts_sched *s = ts_builtin_schedule(b->name, &g);
      ts_program *p = ts_lower(s);
      ts_sched_free(s);
      assert_int_equal(ts_program_status(p), TS_OK);
      tallies t = {0};
      execute_observed(p, &t);
      ts_explain_opts o = {.every_block = true, .as_written = true};
      ts_explain *e = ts_program_explain(p, &o);
      assert_int_equal(e->status, TS_OK);
      char name[64];
      snprintf(name, sizeof(name), "%s at %lldx%lldx%lld", b->name,
               (long long)g.m, (long long)g.n, (long long)g.k);
      compare_totals(name, &t, e);
      ts_explain_free(e);
      ts_program_free(p);
    }
  }
}

/* Occupancy only on the architectures a kernel runs on: wg128 (sm_90a)
 * on sm_90 alone, refused for --arch sm_80; tc128 (sm_80) on both. */
static void test_occupancy_where_the_kernel_runs(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 256);
  g.a_type = g.b_type = TS_F16;
  const char *names[2] = {"wg128", "tc128"};
  for (int b = 0; b < 2; b++) {
    ts_sched *s = ts_builtin_schedule(names[b], &g);
    ts_program *p = ts_lower(s);
    ts_sched_free(s);
    ts_explain *e = ts_program_explain(p, NULL);
    assert_int_equal(e->status, TS_OK);
    const ts_kernel_report *k = &e->kernels[0];
    assert_int_equal(k->noccupancy, b == 0 ? 1 : 2);
    assert_string_equal(k->occupancy[0].arch, b == 0 ? "sm_90" : "sm_80");
    ts_explain_free(e);
    e = ts_program_explain(p, &(ts_explain_opts){.arch = "sm_80"});
    assert_int_equal(e->status, b == 0 ? TS_ERR_BAD_ARCH : TS_OK);
    if (b == 0)
      assert_true(has(e->errmsg, "wg128 needs sm_90a itself (wgmma); it "
                                 "does not run on sm_80"));
    ts_explain_free(e);
    ts_program_free(p);
  }
}

/* ---- Padding advice, followed ---------------------------------------- */

/* A built-in at 256x256x128 in `dtype` (TS_MATH_TF32 for tf32), with its
 * cache `stage` padded by `pad` elements where pad >= 0. */
static ts_sched *padded(const char *name, const char *dtype, const char *stage,
                        int64_t pad) {
  ts_gemm g = ts_gemm_make(256, 256, 128);
  bool tf32 = strcmp(dtype, "tf32") == 0, f16 = strcmp(dtype, "f16") == 0;
  g.a_type = g.b_type = f16 ? TS_F16 : TS_F32;
  g.math = tf32 ? TS_MATH_TF32 : TS_MATH_F32;
  ts_sched *s = ts_builtin_schedule(name, &g);
  if (pad >= 0)
    assert_int_equal(ts_storage_pad(s, sched_find_stage(s, stage), pad),
                     TS_OK);
  return s;
}

static bool conflicted(const ts_access_report *r) {
  return r->wavefronts > r->ideal_wavefronts * 1.001;
}

/* e's row that stands for r's access (the same text: padding changes no
 * index), or NULL. */
static const ts_access_report *same_access(const ts_explain *e,
                                           const ts_access_report *r) {
  for (int i = 0; i < e->naccesses; i++) {
    const ts_access_report *a = &e->accesses[i];
    if (a->kernel == r->kernel && a->kind == r->kind &&
        strcmp(a->buffer, r->buffer) == 0 && strcmp(a->text, r->text) == 0)
      return a;
  }
  return NULL;
}

/* The first conflict on `stage` whose advice is a padding, followed: with
 * the padding it names, that access has no conflict and no access of the
 * cache that had none has one.  `says` is in the advice. */
static void follow_pad_advice(const char *name, const char *dtype,
                              const char *stage, int64_t pad,
                              const char *says) {
  ts_explain *before = explain_sched(padded(name, dtype, stage, pad), false);
  const ts_access_report *named = NULL;
  long long to = -1;
  char want[64]; /* "ts_storage_pad(s, A_shared, " */
  int at = snprintf(want, sizeof(want), "ts_storage_pad(s, %s, ", stage);
  for (int c = 0; c < at; c++)
    want[c] = want[c] == '.' ? '_' : want[c];
  for (int i = 0; i < before->naccesses && !named; i++) {
    const ts_access_report *r = &before->accesses[i];
    const char *advice = strstr(r->verdict, want);
    if (conflicted(r) && strcmp(r->buffer, stage) == 0 && advice &&
        sscanf(advice + strlen(want), "%lld", &to) == 1)
      named = r;
  }
  if (!named)
    fail_msg("%s %s: no padding advised for %s", name, dtype, stage);
  if (!has(named->verdict, says))
    fail_msg("\"%s\" does not say \"%s\"", named->verdict, says);
  ts_explain *after = explain_sched(padded(name, dtype, stage, to), false);
  const ts_access_report *now = same_access(after, named);
  assert_non_null(now);
  if (conflicted(now))
    fail_msg("%s %s padded by %lld: still \"%s\"", name, dtype, to,
             now->verdict);
  for (int i = 0; i < after->naccesses; i++) {
    const ts_access_report *a = &after->accesses[i];
    const ts_access_report *was = same_access(before, a);
    if (strcmp(a->buffer, stage) == 0 && conflicted(a) &&
        !(was && conflicted(was)))
      fail_msg("%s %s padded by %lld: a new conflict, %s: \"%s\"", name,
               dtype, to, a->text, a->verdict);
  }
  ts_explain_free(before);
  ts_explain_free(after);
}

/* SIMT copies and loads in f32 and f16: the padding keeps float4 and
 * 8-half vectors aligned (4 elements, 8 halves: 16 bytes). */
static void test_pad_advice_followed_simt(void **state) {
  (void)state;
  follow_pad_advice("vectorized", "f32", "A.shared", -1,
                    "pad its rows by 4 elements: "
                    "ts_storage_pad(s, A_shared, 4)");
  follow_pad_advice("vectorized", "f16", "A.shared", -1,
                    "pad its rows by 8 16-bit elements: "
                    "ts_storage_pad(s, A_shared, 8)");
}

/* Tensor-core kernels, whose caches are padded already: the advice is the
 * total, not more on top.  tc128's A tile in f16 padded by 16 (8 more
 * than it has, which the old advice said) puts a 2-way conflict on its
 * ldmatrix; the advice takes it back to 8. */
static void test_pad_advice_followed_tensor_cores(void **state) {
  (void)state;
  follow_pad_advice("tc128", "f16", "A.shared", 16,
                    "16-bit elements in all, not 16: "
                    "ts_storage_pad(s, A_shared, 8)");
  follow_pad_advice("tc128", "tf32", "B.shared", -1,
                    "pad its rows by 8 elements in all, not 4: "
                    "ts_storage_pad(s, B_shared, 8)");
}

/* A cache the user swizzled that still conflicts (vectorized's B tile,
 * its float4s' lanes 32 bytes apart): the advice is neither to swizzle it
 * nor to pad it, which ts_storage_pad refuses on a swizzled buffer. */
static void test_swizzled_cache_not_advised_a_swizzle(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(256, 256, 128);
  ts_sched *s = ts_builtin_schedule("vectorized", &g);
  assert_int_equal(ts_storage_swizzle(s, sched_find_stage(s, "B.shared")),
                   TS_OK);
  ts_explain *e = explain_sched(s, false);
  int conflicts = 0;
  for (int i = 0; i < e->naccesses; i++) {
    const ts_access_report *r = &e->accesses[i];
    if (strcmp(r->buffer, "B.shared") || !conflicted(r))
      continue;
    conflicts++;
    assert_true(has(r->verdict, "it is swizzled already (ts_storage_swizzle)"));
    assert_null(strstr(r->verdict, "swizzle it"));
    assert_null(strstr(r->verdict, "ts_storage_pad"));
  }
  assert_true(conflicts > 0);
  ts_explain_free(e);
}

/* Blocks of one thread: each global request is one lane's, which is not
 * "coalesced" however few its sectors. */
static void test_one_lane_is_not_coalesced(void **state) {
  (void)state;
  ts_sched *s = sched_of(64, 64, 64);
  ts_bind(s, ts_get_loop(s, "i"), TS_BLOCK_Y);
  ts_bind(s, ts_get_loop(s, "j"), TS_BLOCK_X);
  assert_int_equal(ts_sched_status(s), TS_OK);
  ts_explain *e = explain_sched(s, false);
  const ts_access_report *a = row(e, TS_ACCESS_GLOBAL_LOAD, "A");
  assert_true(a->active_lanes == 1);
  assert_true(has(a->verdict, "one lane a request, so not coalesced"));
  assert_true(strncmp(a->verdict, "coalesced", 9) != 0);
  ts_explain_free(e);
}

/* The grid against an H100's 132 multiprocessors at sm_90's occupancy
 * (warptiled: 2 blocks each, 264 at once): 4 blocks leave 128 idle, a
 * line of its own; 1024 are 3 full waves and a last of 232. */
static void test_grid_fill(void **state) {
  (void)state;
  ts_gemm small = ts_gemm_make(256, 256, 4096);
  ts_explain *e = explain_sched(ts_builtin_schedule("warptiled", &small),
                                false);
  const ts_grid_fill_report *f = &e->kernels[0].fill;
  assert_int_equal(f->blocks, 4);
  assert_int_equal(f->blocks_per_sm, 2);
  assert_int_equal(f->idle, 128);
  char *text = ts_explain_text(e);
  assert_true(has(text, "\ngrid fill: 4 blocks on an H100 SXM's 132 "
                        "multiprocessors, 2 at once on each (sm_90's "
                        "occupancy): 128 of the multiprocessors idle"));
  free(text);
  ts_explain_free(e);
  ts_gemm big = ts_gemm_make(4096, 4096, 256);
  e = explain_sched(ts_builtin_schedule("warptiled", &big), false);
  f = &e->kernels[0].fill;
  assert_int_equal(f->slots, 264);
  assert_int_equal(f->full_waves, 3);
  assert_int_equal(f->last_wave, 232);
  assert_int_equal(f->idle, 0);
  ts_explain_free(e);
}

/* A TMA pipeline's node as explain reports it: wgws in NN f16 fills a
 * stage with one 64 x 128 box of A and four 64 x 64 panels of B, from a
 * producer warpgroup; wgtma in NT one box of B, 64 x 256, from thread 0;
 * wg128 has no pipeline node. */
static ts_explain *explain_builtin(const char *name, ts_layout layout) {
  ts_gemm g = ts_gemm_make(512, 512, 512);
  g.a_type = g.b_type = TS_F16;
  g.layout = layout;
  return explain_sched(ts_builtin_schedule(name, &g), false);
}

static void test_tma_pipeline_reported(void **state) {
  (void)state;
  ts_explain *e = explain_builtin("wgws", TS_NN);
  const ts_pipeline_report *p = &e->kernels[0].pipeline;
  assert_int_equal(p->stages, 4);
  assert_int_equal(p->stage_bytes, 49152);
  assert_int_equal(p->consumer_warps, 8);
  assert_int_equal(p->producer_thread, 256);
  assert_int_equal(p->producer_threads, 128);
  assert_true(p->launch_registers == 168 && p->producer_registers == 40 &&
              p->consumer_registers == 232 && p->blocks == 1);
  assert_int_equal(p->ntma, 2);
  const ts_tma_report *a = &p->tma[0], *b = &p->tma[1];
  assert_string_equal(a->src, "A");
  assert_string_equal(a->dst, "A.shared");
  assert_true(a->box[0] == 64 && a->box[1] == 128 && a->bytes == 16384 &&
              a->l2_sectors == 512 && a->swizzle == 128 && a->per_stage == 1);
  assert_string_equal(b->src, "B");
  assert_true(b->box[0] == 64 && b->box[1] == 64 && b->bytes == 8192 &&
              b->per_stage == 4);
  char *text = ts_explain_text(e);
  assert_non_null(strstr(text, "4 x tma B -> B.shared a stage: box 64x64 "
                               "elements, 8192 bytes, 256 L2 sectors, "
                               "128-byte swizzle"));
  assert_non_null(strstr(text, "(thread 256 issues)\n  registers "
                               "(setmaxnreg): 168 a thread at launch (1 "
                               "block a multiprocessor), then 40 a producer "
                               "thread and 232 a consumer's\n"));
  free(text);
  ts_explain_free(e);
  e = explain_builtin("wgtma", TS_NT);
  p = &e->kernels[0].pipeline;
  assert_true(p->producer_thread == 0 && p->producer_threads == 0 &&
              p->consumer_registers == 0 && p->ntma == 2 && p->tma[1].box[1] == 256 &&
              p->tma[1].per_stage == 1);
  ts_explain_free(e);
  e = explain_builtin("wg128", TS_NN);
  assert_int_equal(e->kernels[0].pipeline.stages, 0);
  ts_explain_free(e);
}

/* wgws in tf32 at K and N odd (no row of A or B 16-byte aligned) copies
 * ts_pack's copies: the third kernel's pipeline fills a stage with a 32 x
 * 128 box of A.packed and a 32 x 256 box of B.packed, 48 KiB, as it fills
 * f16 tiles from A and B.  At aligned rows it reads B as it lies
 * (n-major, C's transpose): 4 boxes of 32 columns by 32 k a stage, beside
 * a 32 x 256 box of A (256 rows of C). */
static void test_tma_pipeline_of_packed_operands_reported(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(512, 512, 512);
  g.math = TS_MATH_TF32;
  ts_explain *e = explain_sched(ts_builtin_schedule("wgws", &g), false);
  assert_int_equal(e->nkernels, 1);
  const ts_pipeline_report *t = &e->kernels[0].pipeline;
  assert_true(t->stages == 4 && t->stage_bytes == 49152 && t->ntma == 2);
  assert_true(t->tma[0].box[0] == 32 && t->tma[0].box[1] == 256 &&
              t->tma[0].per_stage == 1);
  assert_true(t->tma[1].box[0] == 32 && t->tma[1].box[1] == 32 &&
              t->tma[1].per_stage == 4);
  ts_explain_free(e);
  g = ts_gemm_make(512, 510, 511);
  g.math = TS_MATH_TF32;
  e = explain_sched(ts_builtin_schedule("wgws", &g), false);
  assert_int_equal(e->nkernels, 3);
  assert_int_equal(e->kernels[0].pipeline.stages, 0); /* the packs */
  const ts_pipeline_report *p = &e->kernels[2].pipeline;
  assert_true(p->stages == 4 && p->stage_bytes == 49152 &&
              p->producer_threads == 128 && p->ntma == 2);
  const ts_tma_report *a = &p->tma[0], *b = &p->tma[1];
  assert_string_equal(a->src, "A.packed");
  assert_string_equal(a->dst, "A.shared");
  assert_true(a->box[0] == 32 && a->box[1] == 128 && a->bytes == 16384 &&
              a->swizzle == 128 && a->per_stage == 1);
  assert_string_equal(b->src, "B.packed");
  assert_true(b->box[0] == 32 && b->box[1] == 256 && b->bytes == 32768 &&
              b->per_stage == 1);
  char *text = ts_explain_text(e);
  assert_non_null(strstr(text, "1 x tma B.packed -> B.shared a stage: box "
                               "32x256 elements, 32768 bytes, 1024 L2 "
                               "sectors, 128-byte swizzle"));
  free(text);
  ts_explain_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cost_of_global_requests),
      cmocka_unit_test(test_pad_advice_followed_simt),
      cmocka_unit_test(test_pad_advice_followed_tensor_cores),
      cmocka_unit_test(test_cost_of_shared_requests),
      cmocka_unit_test(test_column_walk_is_a_32_way_conflict),
      cmocka_unit_test(test_compiler_reuses_repeated_loads),
      cmocka_unit_test(test_stride_two_access),
      cmocka_unit_test(test_unaligned_rows_run_lane_by_lane),
      cmocka_unit_test(test_misaligned_float4),
      cmocka_unit_test(test_every_builtin_matches_the_executor),
      cmocka_unit_test(test_occupancy_where_the_kernel_runs),
      cmocka_unit_test(test_swizzled_cache_not_advised_a_swizzle),
      cmocka_unit_test(test_one_lane_is_not_coalesced),
      cmocka_unit_test(test_grid_fill),
      cmocka_unit_test(test_tma_pipeline_reported),
      cmocka_unit_test(test_tma_pipeline_of_packed_operands_reported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
