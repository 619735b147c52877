/*
 * The lowered kernel as tessel's one artifact: lowering reads the schedule
 * and never writes to it, the program it returns stands alone (the
 * schedule can be freed at once), and programs compile in parallel into
 * kernels that each carry their own status.  Needs NVRTC, not a GPU.
 */
#include "helpers.h"

#include "ir/program_ir.h"
#include "src/compile/kernel.h"
#include "schedule/sched.h"

/* What a schedule is: its status, tree, loops, trace and printed trace. */
typedef struct {
  ts_status status;
  const ir_stmt *root;
  int nloops, ntrace, next_var;
  size_t arena_used;
  char *trace;
} snapshot;

static snapshot snap(ts_sched *s) {
  return (snapshot){.status = ts_sched_status(s), .root = s->root,
                    .nloops = s->nloops, .ntrace = s->ntrace,
                    .next_var = s->next_var,
                    .arena_used = ts_arena_used(&s->arena),
                    .trace = ts_print_trace(s)};
}

static void assert_same(const snapshot *x, const snapshot *y) {
  assert_int_equal(x->status, y->status);
  assert_ptr_equal(x->root, y->root);
  assert_int_equal(x->nloops, y->nloops);
  assert_int_equal(x->ntrace, y->ntrace);
  assert_int_equal(x->next_var, y->next_var);
  assert_int_equal(x->arena_used, y->arena_used);
  assert_string_equal(x->trace, y->trace);
}

/* Every loop of the program is the program's own. */
static void assert_owned(const ts_program *p, const ir_stmt *s) {
  if (!s)
    return;
  switch (s->kind) {
  case S_FOR:
    assert_ptr_equal(s->for_.loop->owner, p);
    assert_true(s->for_.loop->var->id < p->k.nvars);
    assert_owned(p, s->for_.body);
    break;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      assert_owned(p, s->seq.items[i]);
    break;
  case S_IF:
    assert_owned(p, s->if_.then_);
    assert_owned(p, s->if_.else_);
    break;
  case S_ALLOC:
    assert_owned(p, s->alloc.body);
    break;
  default:
    break;
  }
}

/* Lowering every built-in leaves the schedule as it was, and the program
 * outlives it: printed, generated and checked after the schedule is gone,
 * the same as before (valgrind and ASan would see a dangling pointer). */
static void test_lowering_reads_only(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(37, 53, 29);
  g.layout = TS_TN;
  g.beta = 0.5f;
  for (int b = 0; b < ts_builtin_count(); b++) {
    ts_sched *s = builtin_at(b, g);
    snapshot before = snap(s);
    ts_program *p = ts_lower(s);
    snapshot after = snap(s);
    assert_same(&before, &after);
    assert_int_equal(ts_program_status(p), TS_OK);
    assert_string_equal(ts_program_errmsg(p), "");
    char *ir = ts_print_ir(s), *cu = ts_cuda_source(s);
    ts_sched_free(s);
    assert_owned(p, p->k.body);
    char *ir2 = ts_program_ir(p), *cu2 = ts_program_cuda(p);
    assert_string_equal(ir, ir2);
    assert_string_equal(cu, cu2);
    char msg[512];
    if (ts_program_check(p, 7, msg, sizeof(msg)) != TS_OK)
      fail_msg("%s: %s", ts_builtin_at(b)->name, msg);
    assert_string_equal(ts_program_name(p), ts_builtin_at(b)->name);
    char entry[64];
    snprintf(entry, sizeof(entry), "tessel_%s", ts_builtin_at(b)->name);
    assert_string_equal(ts_program_entry(p), entry);
    assert_int_equal(ts_program_gemm(p)->layout, TS_TN);
    free(ir), free(ir2), free(cu), free(cu2);
    free(before.trace), free(after.trace);
    ts_program_free(p);
  }
}

/* A schedule in error gives a program with its status and message; a
 * refusal of lowering's own leaves the schedule TS_OK. */
static void test_errors_are_the_programs(void **state) {
  (void)state;
  ts_sched *s = sched_of(8, 8, 8);
  ts_loop *o, *i;
  ts_split(s, ts_get_loop(s, "i"), 0, &o, &i);
  ts_program *p = ts_lower(s);
  assert_int_equal(ts_program_status(p), TS_ERR_BAD_FACTOR);
  /* the schedule's message, which names the call's file and line */
  assert_non_null(strstr(ts_program_errmsg(p), "ts_lower: the schedule is in "
                         "error: "));
  assert_non_null(strstr(ts_program_errmsg(p), "test_program.c:"));
  assert_non_null(strstr(ts_program_errmsg(p), ": error: ts_split: argument "
                         "3 'factor'"));
  assert_null(ts_program_ir(p));
  assert_null(ts_program_cuda(p));
  ts_launch_geometry l;
  memset(&l, 0x5a, sizeof(l));
  assert_int_equal(ts_program_launch(p, &l), TS_ERR_BAD_FACTOR);
  assert_int_equal(l.grid[0] | l.block[2] | l.dynamic_shared, 0);
  ts_kernel *k = ts_compile(p, "sm_90");
  assert_int_equal(ts_kernel_status(k), TS_ERR_BAD_FACTOR);
  ts_kernel_free(k);
  ts_program_free(p);
  ts_sched_free(s);

  p = ts_lower(NULL);
  assert_int_equal(ts_program_status(p), TS_ERR_NULL_ARG);
  ts_program_free(p);
  ts_program_free(NULL);
  assert_int_equal(ts_program_status(NULL), TS_ERR_NULL_ARG);
  assert_int_equal(ts_program_min_arch(NULL), 0);
}

/* A schedule's message reaches the program, and explain's report of it,
 * whole however long (a refusal that prints the nest runs long). */
static void test_a_long_error_is_whole(void **state) {
  (void)state;
  char why[3001];
  for (int i = 0; i < 3000; i++)
    why[i] = i % 100 == 99 ? '\n' : 'a' + i % 26;
  why[3000] = 0;
  ts_sched *s = sched_of(8, 8, 8);
  ts_sched_fail(s, TS_ERR_BAD_ARG, why);
  ts_program *p = ts_lower(s);
  const char *msg = ts_program_errmsg(p);
  assert_true(strlen(msg) >= strlen(why));
  assert_string_equal(msg + strlen(msg) - strlen(why), why);
  ts_explain *e = ts_program_explain(p, NULL);
  assert_non_null(e);
  assert_non_null(strstr(e->errmsg, why));
  ts_explain_free(e);
  ts_program_free(p);
  ts_sched_free(s);
}

/* Programs compiled on threads give the kernels one thread gives, byte for
 * byte, and a program in error fails alone. */
static void test_compile_all_in_parallel(void **state) {
  (void)state;
  setenv("TESSEL_NO_CACHE", "1", 1);
  ts_gemm g = ts_gemm_make(100, 75, 37);
  int n = ts_builtin_count() + 1;
  ts_program **p = calloc((size_t)n, sizeof(*p));
  ts_kernel **par = calloc((size_t)n, sizeof(*par));
  assert_true(p && par);
  for (int b = 0; b < n - 1; b++) {
    ts_sched *s = builtin_at(b, g);
    p[b] = ts_lower(s);
    ts_sched_free(s);
  }
  ts_sched *bad = ts_builtin_schedule("warptiled", &g);
  ts_min_blocks_per_sm(bad, 32);
  p[n - 1] = ts_lower(bad);
  ts_sched_free(bad);
  assert_int_equal(ts_compile_all(p, n, "sm_90", 4, par), TS_OK);
  for (int b = 0; b < n; b++) {
    ts_kernel *one = ts_compile(p[b], "sm_90");
    assert_int_equal(ts_kernel_status(par[b]), ts_kernel_status(one));
    assert_string_equal(ts_kernel_name(par[b]), ts_program_name(p[b]));
    if (b == n - 1) {
      assert_int_equal(ts_kernel_status(one), TS_ERR_RESOURCES);
      assert_non_null(strstr(ts_kernel_errmsg(par[b]),
                             "ts_min_blocks_per_sm asks for 32"));
    } else {
      assert_int_equal(ts_kernel_status(one), TS_OK);
      assert_int_equal(par[b]->cubin_size, one->cubin_size);
      assert_memory_equal(par[b]->cubin, one->cubin, one->cubin_size);
      ts_launch_geometry l;
      ts_program_launch(p[b], &l);
      assert_memory_equal(&par[b]->launch, &l, sizeof(l));
      assert_int_equal(ts_kernel_gemm(par[b])->m, 100);
    }
    ts_kernel_free(one);
    ts_kernel_free(par[b]);
    ts_program_free(p[b]);
  }
  assert_int_equal(ts_compile_all(NULL, 1, "sm_90", 0, par), TS_ERR_NULL_ARG);
  assert_int_equal(ts_compile_all(p, -1, "sm_90", 0, par), TS_ERR_BAD_ARG);
  assert_int_equal(ts_compile_all(p, 0, "sm_90", 0, par), TS_OK);
  free(p);
  free(par);
  unsetenv("TESSEL_NO_CACHE");
}

/* The compiled kernel keeps the CUDA C it came from and its cubin, and
 * each entry point with the parameter list lowering wrote (split-K's
 * kernels: A, B, C and the workspace W); PTX comes when asked. */
static void test_kernel_keeps_source_and_parameters(void **state) {
  (void)state;
  ts_gemm g = ts_gemm_make(64, 48, 256);
  ts_sched *s = ts_builtin_schedule("splitk", &g);
  ts_program *p = ts_lower(s);
  ts_kernel *k = ts_compile(p, "sm_80");
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("ts_compile: %s", ts_kernel_errmsg(k));
  char *cuda = ts_program_cuda(p);
  assert_string_equal(ts_kernel_source(k), cuda);
  size_t size = 0;
  assert_non_null(ts_kernel_cubin(k, &size));
  assert_true(size > 0);
  assert_true(p->nkernels >= 2);
  assert_int_equal(ts_kernel_count(k), p->nkernels);
  for (int i = 0; i < p->nkernels; i++) {
    const ir_kernel *ik = p->order[i];
    const kernel_entry *e = &k->entries[i];
    assert_string_equal(e->name, ik->entry);
    assert_int_equal(e->nparams, 4);
    assert_int_equal(e->nparams, ik->nparams);
    for (int j = 0; j < e->nparams; j++) {
      assert_int_equal(e->params[j].kind, TS_PARAM_BUFFER);
      assert_int_equal(e->params[j].buffer, j);
      assert_int_equal(e->params[j].dtype, ik->params[j].p.dtype);
      assert_int_equal(e->params[j].read_only, j < 2);
    }
  }
  assert_ptr_equal(p->order[k->main_entry], &p->k);
  char msg[256];
  char *ptx = ts_kernel_ptx(k, msg, sizeof(msg));
  if (!ptx)
    fail_msg("ts_kernel_ptx: %s", msg);
  assert_non_null(strstr(ptx, ".entry"));
  assert_non_null(strstr(ptx, ts_kernel_entry(k, 0)));
  free(ptx);
  assert_null(ts_kernel_ptx(NULL, msg, sizeof(msg)));
  assert_string_equal(msg, "ts_kernel_ptx: argument 1 'k' is NULL");
  free(cuda);
  ts_kernel_free(k);
  ts_program_free(p);
  ts_sched_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_long_error_is_whole),
      cmocka_unit_test(test_lowering_reads_only),
      cmocka_unit_test(test_errors_are_the_programs),
      cmocka_unit_test(test_compile_all_in_parallel),
      cmocka_unit_test(test_kernel_keeps_source_and_parameters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
