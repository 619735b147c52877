/*
 * The generic traversal: the visitor reaches every kind of node, the
 * mutator returns the very node it was given when nothing below it changed,
 * rebuilds only the path to a change, and reports running out of memory.
 */
#include "helpers.h"

#include "ir/mma.h"
#include "ir/visit.h"

#define COUNT_KIND(k, s, form) +1
enum { NEXPR = 0 IR_EXPR_KINDS(COUNT_KIND) };
enum { NSTMT = 0 IR_STMT_KINDS(COUNT_KIND) };
#undef COUNT_KIND

enum { MAX_NODES = 160 };

typedef struct {
  ts_arena a;
  ir_var *x;
  ts_loop *l;
  ir_buffer *buf, *shared;
  ir_stmt *root; /* a tree holding every kind of node */
} fixture;

#define V() ir_varref(&f->a, f->x)
#define I(n) ir_int(&f->a, n)
#define BIN(k, x, y) ir_binary(&f->a, k, x, y)

/* Every arithmetic operator once. */
static ir_expr *arith(fixture *f) {
  ir_expr *e = BIN(E_ADD, V(), I(1));
  e = BIN(E_SUB, e, I(2));
  e = BIN(E_MUL, e, I(3));
  e = BIN(E_DIV, e, I(4));
  e = BIN(E_MOD, e, I(5));
  e = BIN(E_MIN, e, I(6));
  return BIN(E_MAX, e, I(7));
}

/* Every comparison and logical operator once. */
static ir_expr *cond(fixture *f) {
  return BIN(E_OR, BIN(E_AND, BIN(E_LT, V(), I(8)), BIN(E_LE, V(), I(9))),
             ir_not(&f->a, BIN(E_NE, BIN(E_EQ, V(), I(0)), I(1))));
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  ts_arena_init(&f->a);
  f->l = ir_new_loop(&f->a, 0, "x", 16, false, NULL);
  f->x = f->l->var;
  int64_t shape[2] = {16, 16};
  f->buf = ir_new_buffer(&f->a, "C", SCOPE_GLOBAL, TS_F32, 2, shape, NULL);
  f->shared = ir_new_buffer(&f->a, "S", SCOPE_SHARED, TS_F32, 2, shape, NULL);
  ir_expr *from[2] = {arith(f), V()}, *to[2] = {V(), I(0)};
  /* 1.5 rounded to fp16 and widened back (two casts), then to tf32, and
   * picked between neighbouring lanes. */
  ir_expr *value = ir_select(
      &f->a, cond(f), ir_load(&f->a, f->buf, from),
      ir_round_tf32(&f->a, ir_pair_pick(&f->a, cond(f),
                                        ir_cast(&f->a, TS_F16,
                                                ir_float(&f->a, 1.5f)),
                                        ir_float(&f->a, 0.5f))));
  ir_stmt *store = ir_new_store(&f->a, f->shared, to, value);
  ir_stmt *guarded = ir_new_if(&f->a, cond(f), store, ir_new_barrier(&f->a));
  ir_stmt *alloc = ir_new_alloc(&f->a, f->shared, guarded);
  ir_expr *lane = ir_float(&f->a, 2.5f);
  alloc->alloc.init = ir_vector(&f->a, &lane, 1);
  ir_stmt *loop = ir_new_for(&f->a, f->l, alloc);
  ir_stmt *compute = ir_new_compute(&f->a, V(), V(), V(), cond(f));
  compute = ir_compute_with_src(&f->a, compute, 0, f->shared, V(), I(0));
  ir_stmt *lanes = ir_new_lanes(&f->a, f->l, ir_new_barrier(&f->a),
                                ir_new_barrier(&f->a));
  ir_buffer *frag[3] = {f->buf, f->shared, f->shared};
  ir_expr *at0[2] = {V(), I(0)}, *at1[2] = {I(1), V()}, *at2[2] = {I(2), I(3)};
  ir_expr **at[3] = {at0, at1, at2};
  ir_expr *row[2] = {V(), I(8)};
  ir_stmt *ldsm = ir_new_ldmatrix(&f->a, f->shared, at1,
                                  ir_load(&f->a, f->shared, row), 4, true);
  ir_expr *values[2] = {ir_float(&f->a, 1.0f), ir_float(&f->a, 2.0f)};
  ir_stmt *stsm = ir_new_stmatrix(&f->a, ir_load(&f->a, f->shared, row),
                                  values, 1);
  ir_stmt *wgmma = ir_new_wgmma(&f->a, mma_instr_for_tile(TS_F16, 64, 8, 16),
                                f->buf, at0, ir_load(&f->a, f->shared, row),
                                ir_load(&f->a, f->shared, at2));
  /* A TMA pipeline: a box into the stage, then the wait for it. */
  ir_pipeline *pipe = ts_arena_alloc(&f->a, sizeof(*pipe));
  assert_non_null(pipe);
  *pipe = (ir_pipeline){.stages = 2, .bytes = 1024, .consumers = 1};
  ir_expr *corner[2] = {V(), I(0)};
  ir_stmt *fill[2] = {
      ir_new_tma(&f->a, pipe, I(0), ir_load(&f->a, f->shared, at2), f->buf,
                 corner, (int64_t[2]){16, 16}),
      ir_new_mbarrier(&f->a, pipe, MBAR_WAIT, MBAR_FULL, I(0), I(0))};
  ir_stmt *tma = ir_new_pipeline(&f->a, pipe, ir_new_seq(&f->a, fill, 2));
  /* And back: a box of the shared buffer stored by the TMA, its wait. */
  ir_stmt *store_back[2] = {
      ir_new_tma_store(&f->a, ir_load(&f->a, f->shared, at2), f->buf, corner,
                       (int64_t[2]){16, 16}),
      ir_new_tma_store_wait(&f->a)};
  ir_stmt *items[12] = {loop, compute, lanes, ir_new_async_commit(&f->a),
                        ir_new_async_wait(&f->a, 1), ir_new_mma(&f->a, frag, at),
                        ldsm, stsm, wgmma, ir_new_wgmma_sync(&f->a, 0, f->buf),
                        tma, ir_new_seq(&f->a, store_back, 2)};
  f->root = ir_new_seq(&f->a, items, 12);
  assert_non_null(f->root);
  assert_false(f->a.failed);
  *state = f;
  return 0;
}

/* ---- Visitor ------------------------------------------------------------- */

typedef struct {
  int pre_expr[NEXPR], post_expr[NEXPR];
  int pre_stmt[NSTMT], post_stmt[NSTMT];
  int skip_kind; /* statements of this kind are not entered; -1: none */
  int stop_after; /* end the walk at this many nodes; 0: never */
  int seen;
  const void *node[MAX_NODES]; /* in visiting order */
  bool is_stmt[MAX_NODES];
} tally;

static void record(ir_visitor *v, const void *node, bool is_stmt) {
  tally *t = v->ctx;
  if (t->seen < MAX_NODES) {
    t->node[t->seen] = node;
    t->is_stmt[t->seen] = is_stmt;
  }
  if (++t->seen == t->stop_after)
    v->stop = true;
}

static bool pre_expr(ir_visitor *v, const ir_expr *e) {
  ((tally *)v->ctx)->pre_expr[e->kind]++;
  record(v, e, false);
  return true;
}

static void post_expr(ir_visitor *v, const ir_expr *e) {
  ((tally *)v->ctx)->post_expr[e->kind]++;
}

static bool pre_stmt(ir_visitor *v, const ir_stmt *s) {
  tally *t = v->ctx;
  t->pre_stmt[s->kind]++;
  record(v, s, true);
  return (int)s->kind != t->skip_kind;
}

static void post_stmt(ir_visitor *v, const ir_stmt *s) {
  ((tally *)v->ctx)->post_stmt[s->kind]++;
}

static void walk(const ir_stmt *root, tally *t) {
  ir_visitor v = {.expr = pre_expr, .stmt = pre_stmt, .expr_post = post_expr,
                  .stmt_post = post_stmt, .ctx = t};
  ir_visit_stmt(&v, root);
}

static void test_visitor_reaches_every_kind(void **state) {
  fixture *f = *state;
  tally t = {.skip_kind = -1};
  walk(f->root, &t);
  for (int k = 0; k < NEXPR; k++) {
    assert_true(t.pre_expr[k] > 0);
    assert_int_equal(t.pre_expr[k], t.post_expr[k]);
  }
  for (int k = 0; k < NSTMT; k++) {
    assert_true(t.pre_stmt[k] > 0);
    assert_int_equal(t.pre_stmt[k], t.post_stmt[k]);
  }
  /* Parents before children, children in their form's order. */
  assert_ptr_equal(t.node[0], f->root);
  assert_ptr_equal(t.node[1], f->root->seq.items[0]);
  const ir_stmt *store = f->root->seq.items[0]->for_.body->alloc.body->if_.then_;
  const ir_expr *sel = store->store.value;
  int at = 0;
  while (t.node[at] != sel)
    at++;
  assert_ptr_equal(t.node[at + 1], sel->op.c);
  /* An allocation's initializer before its body; lanes: the body as
   * scheduled, then the expansion. */
  const ir_stmt *alloc = f->root->seq.items[0]->for_.body;
  assert_ptr_equal(t.node[3], alloc->alloc.init);
  const ir_stmt *lanes = f->root->seq.items[2];
  while (t.node[at] != lanes)
    at++;
  assert_ptr_equal(t.node[at + 1], lanes->lanes.body);
  assert_ptr_equal(t.node[at + 2], lanes->lanes.expanded);
}

static void test_visitor_skips_and_stops(void **state) {
  fixture *f = *state;
  tally t = {.skip_kind = S_FOR};
  walk(f->root, &t);
  assert_int_equal(t.pre_stmt[S_FOR], 1);
  assert_int_equal(t.post_stmt[S_FOR], 0); /* its children were skipped */
  assert_int_equal(t.pre_stmt[S_ALLOC] + t.pre_stmt[S_STORE], 0);
  assert_int_equal(t.pre_stmt[S_COMPUTE], 1);
  /* The ldmatrix's and stmatrix's rows, wgmma's tiles, the TMA boxes'
   * first elements. */
  assert_int_equal(t.pre_expr[E_LOAD], 6);

  /* A hook ends the walk: no hook runs again, post hooks included. */
  tally some = {.skip_kind = -1, .stop_after = 5};
  walk(f->root, &some);
  assert_int_equal(some.seen, 5);
  assert_int_equal(some.post_stmt[S_SEQ], 0);

  /* Without expression hooks the walk stays among statements. */
  tally all = {.skip_kind = -1}, stmts = {.skip_kind = -1};
  walk(f->root, &all);
  ir_visitor stmts_only = {.stmt = pre_stmt, .ctx = &stmts};
  ir_visit_stmt(&stmts_only, f->root);
  int nstmts = 0;
  for (int k = 0; k < NSTMT; k++)
    nstmts += all.pre_stmt[k];
  assert_int_equal(stmts.seen, nstmts);
}

/* ---- Mutator ------------------------------------------------------------- */

/* Rewrites nothing, but walks every node through the hooks. */
static ir_expr *same_expr(ir_mutator *m, ir_expr *e) {
  return ir_mutate_expr_children(m, e);
}

static ir_stmt *same_stmt(ir_mutator *m, ir_stmt *s) {
  return ir_mutate_stmt_children(m, s);
}

static void test_mutator_keeps_unchanged_nodes(void **state) {
  fixture *f = *state;
  tally t = {.skip_kind = -1};
  walk(f->root, &t);
  assert_true(t.seen < MAX_NODES);
  ir_mutator with_hooks = {.a = &f->a, .expr = same_expr, .stmt = same_stmt};
  ir_mutator defaults = {.a = &f->a};
  for (int n = 0; n < t.seen; n++) {
    if (t.is_stmt[n]) {
      ir_stmt *s = (ir_stmt *)t.node[n];
      assert_ptr_equal(ir_mutate_stmt(&with_hooks, s), s);
      assert_ptr_equal(ir_mutate_stmt(&defaults, s), s);
    } else {
      ir_expr *e = (ir_expr *)t.node[n];
      assert_ptr_equal(ir_mutate_expr(&with_hooks, e), e);
      assert_ptr_equal(ir_mutate_expr(&defaults, e), e);
    }
  }
  assert_null(ir_mutate_stmt(&with_hooks, NULL));
  assert_null(ir_mutate_expr(&with_hooks, NULL));
}

typedef struct {
  const ir_expr *change; /* the node to replace... */
  ir_expr *with;         /* ...by this one */
  const void *fail;      /* where to run out of memory */
  ts_arena *a;
} replace_ctx;

static void *out_of_memory(replace_ctx *c) {
  c->a->failed = 1; /* what a constructor leaves when malloc fails */
  return NULL;
}

static ir_expr *replace_expr(ir_mutator *m, ir_expr *e) {
  replace_ctx *c = m->ctx;
  if (e == c->fail)
    return out_of_memory(c);
  return e == c->change ? c->with : ir_mutate_expr_children(m, e);
}

static ir_stmt *replace_stmt(ir_mutator *m, ir_stmt *s) {
  replace_ctx *c = m->ctx;
  return s == c->fail ? out_of_memory(c) : ir_mutate_stmt_children(m, s);
}

static void test_mutator_rebuilds_only_the_path(void **state) {
  fixture *f = *state;
  ir_stmt *loop = f->root->seq.items[0];
  ir_stmt *alloc = loop->for_.body;
  ir_stmt *guard = alloc->alloc.body;
  ir_stmt *store = guard->if_.then_;
  store->store.lanes = 4; /* a field the rewrite does not know of */
  ir_expr *sel = store->store.value;
  ir_expr *load = sel->op.a;
  /* The load's second index, a variable. */
  replace_ctx c = {.change = load->load.idx[1], .with = I(3), .a = &f->a};
  ir_mutator m = {.a = &f->a, .expr = replace_expr, .ctx = &c};
  ir_stmt *root = ir_mutate_stmt(&m, f->root);

  assert_non_null(root);
  assert_ptr_not_equal(root, f->root);
  assert_ptr_equal(root->seq.items[1], f->root->seq.items[1]); /* compute */
  ir_stmt *loop2 = root->seq.items[0];
  assert_ptr_not_equal(loop2, loop);
  assert_ptr_equal(loop2->for_.loop, f->l);
  ir_stmt *alloc2 = loop2->for_.body;
  assert_ptr_not_equal(alloc2, alloc);
  assert_ptr_equal(alloc2->alloc.buf, f->shared);
  ir_stmt *guard2 = alloc2->alloc.body;
  assert_ptr_not_equal(guard2, guard);
  assert_ptr_equal(guard2->if_.cond, guard->if_.cond);
  assert_ptr_equal(guard2->if_.else_, guard->if_.else_);
  ir_stmt *store2 = guard2->if_.then_;
  assert_ptr_not_equal(store2, store);
  assert_ptr_equal(store2->store.idx, store->store.idx); /* no index changed */
  assert_int_equal(store2->store.lanes, 4);
  ir_expr *sel2 = store2->store.value;
  assert_ptr_not_equal(sel2, sel);
  assert_ptr_equal(sel2->op.c, sel->op.c);
  assert_ptr_equal(sel2->op.b, sel->op.b);
  ir_expr *load2 = sel2->op.a;
  assert_ptr_not_equal(load2, load);
  assert_ptr_not_equal(load2->load.idx, load->load.idx);
  assert_ptr_equal(load2->load.idx[0], load->load.idx[0]);
  assert_ptr_equal(load2->load.idx[1], c.with);
  /* The old tree is as it was. */
  assert_int_equal(load->load.idx[1]->kind, E_VAR);
  assert_ptr_equal(f->root->seq.items[0], loop);
  assert_false(f->a.failed);
}

static void test_mutator_reports_out_of_memory(void **state) {
  fixture *f = *state;
  tally t = {.skip_kind = -1};
  walk(f->root, &t);
  assert_true(t.seen < MAX_NODES);
  /* The store's first index changes; then memory runs out at each
   * node in turn, before or after that change (with an index array or a
   * sequence's items already copied).  The rewrite returns NULL, never a
   * tree with a child missing (an if without its else, a compute without
   * its guard), and the arena says why. */
  ir_stmt *store = f->root->seq.items[0]->for_.body->alloc.body->if_.then_;
  for (int n = 0; n < t.seen; n++) {
    f->a.failed = 0;
    replace_ctx c = {.change = store->store.idx[0], .with = I(3),
                     .fail = t.node[n], .a = &f->a};
    ir_mutator m = {.a = &f->a, .expr = replace_expr, .stmt = replace_stmt,
                    .ctx = &c};
    assert_null(ir_mutate_stmt(&m, f->root));
    assert_true(f->a.failed);
  }
  /* And nothing failed when nothing ran out. */
  f->a.failed = 0;
  replace_ctx c = {.change = store->store.idx[0], .with = I(3), .a = &f->a};
  ir_mutator m = {.a = &f->a, .expr = replace_expr, .stmt = replace_stmt,
                  .ctx = &c};
  assert_non_null(ir_mutate_stmt(&m, f->root));
  assert_false(f->a.failed);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, free_arena_fixture)
  const struct CMUnitTest tests[] = {
      T(test_visitor_reaches_every_kind),
      T(test_visitor_skips_and_stops),
      T(test_mutator_keeps_unchanged_nodes),
      T(test_mutator_rebuilds_only_the_path),
      T(test_mutator_reports_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
