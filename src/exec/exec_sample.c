/*
 * A sampled run of the reference executor: the blocks that write chosen
 * elements of C, with every check a full run makes, on a sparse global
 * memory (exec_space.c), so a shape whose matrices do not fit is checked.
 *
 * Which blocks write an element is found, not assumed: interval analysis
 * of each kernel's stores to C and W (the TMA's boxes among them), with the block indices ranging over
 * a part of the grid (thread and loop variables over their extents,
 * guards ignored), bounds what those blocks may write; a bisection of the
 * grid keeps the parts whose bound meets the elements wanted, down to
 * single blocks.  The bound is conservative, so every block that writes
 * an element is among those found (a swizzle, split-K's blockIdx.z and a
 * second kernel included).
 *
 * The sample: targets, elements of C in order of priority (the four
 * corners, a point on each edge, then random ones inside), each adding
 * the blocks of the schedule's kernel that may write it, as long as their
 * steps (exec.h), with the region's closure and the other kernels'
 * blocks, stay within the budget; where the first target's alone pass
 * it, nothing runs (over_budget).  The
 * region compared is the union of those blocks' bounds, closed so that
 * every block of that kernel which may write into it runs too; every
 * other kernel runs the blocks that may write into it.  A read of an
 * unwritten element outside the region is no fault (the block that would
 * write it was left out); inside it, every rule of a full run holds.
 * A kernel with a thread-block cluster runs whole clusters: a block found
 * brings its cluster's peers, with their bounds, into the sample, since
 * the executor runs a cluster's blocks together (exec.c).
 */
#include "exec_sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"
#include "tessel/exec.h"

typedef struct {
  int64_t lo, hi;
} ival;

/* What interval analysis needs while it walks a kernel's statements. */
typedef struct {
  const ir_kernel *k;
  int64_t m, n;
  int64_t blo[3], bhi[3]; /* the block indices' ranges */
  ival *vars;             /* by variable id */
  ir_box box;             /* hull of the C and W elements written */
  bool any;
} footprint;

static const ival UNBOUNDED = {INT64_MIN, INT64_MAX};

/* The grid the executor runs k with along d (a persistent one's blocks). */
static int64_t grid_of(const footprint *f, int d) {
  int64_t grid[3];
  ir_kernel_grid(f->k, TS_EXEC_MULTIPROCESSORS, grid);
  return grid[d];
}

static bool bounded(ival v) { return v.lo != INT64_MIN && v.hi != INT64_MAX; }

static ival hull(ival a, ival b) {
  return (ival){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}

static int64_t floordiv64(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static ival launch_range(const footprint *f, ts_loop_kind kind) {
  switch (kind) {
  case TS_BLOCK_X: return (ival){f->blo[0], f->bhi[0]};
  case TS_BLOCK_Y: return (ival){f->blo[1], f->bhi[1]};
  case TS_BLOCK_Z: return (ival){f->blo[2], f->bhi[2]};
  case TS_THREAD_X: return (ival){0, f->k->block[0] - 1};
  case TS_THREAD_Y: return (ival){0, f->k->block[1] - 1};
  case TS_THREAD_Z: return (ival){0, f->k->block[2] - 1};
  default: return UNBOUNDED;
  }
}

static ival iv(const footprint *f, const ir_expr *e);

/* a * b over intervals: the hull of the corners' products. */
static ival iv_mul(ival a, ival b) {
  if (!bounded(a) || !bounded(b))
    return UNBOUNDED;
  int64_t p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  ival r = {p[0], p[0]};
  for (int i = 1; i < 4; i++)
    r = hull(r, (ival){p[i], p[i]});
  return r;
}

/* Floor division and modulo by a positive constant. */
static ival iv_divmod(ir_expr_kind kind, ival a, ival b) {
  if (!bounded(a) || b.lo != b.hi || b.lo <= 0)
    return UNBOUNDED;
  int64_t c = b.lo, qlo = floordiv64(a.lo, c), qhi = floordiv64(a.hi, c);
  if (kind == E_DIV)
    return (ival){qlo, qhi};
  if (qlo == qhi)
    return (ival){a.lo - qlo * c, a.hi - qlo * c};
  return (ival){0, c - 1};
}

static ival iv(const footprint *f, const ir_expr *e) {
  switch (e->kind) {
  case E_INT: return (ival){e->ival, e->ival};
  case E_VAR:
    if (e->var->kind == VAR_GRID)
      return (ival){grid_of(f, 0), grid_of(f, 0)};
    return e->var->kind == VAR_LAUNCH ? launch_range(f, e->var->tag)
                                      : f->vars[e->var->id];
  case E_SELECT: return hull(iv(f, e->op.a), iv(f, e->op.b));
  case E_LT: case E_LE: case E_EQ: case E_NE: case E_AND: case E_OR:
  case E_NOT: return (ival){0, 1};
  case E_ADD: case E_SUB: case E_MUL: case E_DIV: case E_MOD: case E_MIN:
  case E_MAX: break;
  default: return UNBOUNDED;
  }
  ival a = iv(f, e->op.a), b = iv(f, e->op.b);
  if (!bounded(a) || !bounded(b))
    return UNBOUNDED;
  switch (e->kind) {
  case E_ADD: return (ival){a.lo + b.lo, a.hi + b.hi};
  case E_SUB: return (ival){a.lo - b.hi, a.hi - b.lo};
  case E_MUL: return iv_mul(a, b);
  case E_MIN: return (ival){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
  case E_MAX: return (ival){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  default: return iv_divmod(e->kind, a, b);
  }
}

/* The elements rows x cols of C (or of W's last two dimensions), clipped
 * to C, into the hull of what the kernel writes. */
static void add_box(footprint *f, ival rows, ival cols) {
  int64_t ext[2] = {f->m, f->n};
  ival v[2] = {rows, cols};
  ir_box box;
  for (int d = 0; d < 2; d++) {
    box.lo[d] = bounded(v[d]) && v[d].lo > 0 ? v[d].lo : 0;
    box.hi[d] = bounded(v[d]) && v[d].hi < ext[d] - 1 ? v[d].hi : ext[d] - 1;
  }
  if (!f->any) {
    f->box = box;
  } else {
    for (int d = 0; d < 2; d++) {
      f->box.lo[d] = box.lo[d] < f->box.lo[d] ? box.lo[d] : f->box.lo[d];
      f->box.hi[d] = box.hi[d] > f->box.hi[d] ? box.hi[d] : f->box.hi[d];
    }
  }
  f->any = true;
}

/* A store to C or W: its elements' bound over C's rows and columns (W's
 * last two dimensions are C's), widened by its lanes.  A store to a packed
 * operand bounds the C elements that read it: op(A)'s rows (every column),
 * or op(B)'s columns (every row). */
static void add_store(footprint *f, const ir_stmt *s) {
  const ir_buffer *b = s->store.buf;
  int packed = b == f->k->packed[0] ? 0 : b == f->k->packed[1] ? 1 : -1;
  if (b != f->k->C && (!f->k->W || b != f->k->W) && packed < 0)
    return;
  ival v[2];
  for (int d = 0; d < 2; d++) {
    v[d] = packed < 0 ? iv(f, s->store.idx[b->ndim - 2 + d])
           : packed == d ? iv(f, s->store.idx[d])
                         : UNBOUNDED;
    if (d == 1 && bounded(v[d]) && s->store.lanes > 1)
      v[d].hi += s->store.lanes - 1;
  }
  add_box(f, v[0], v[1]);
}

/* A TMA store into C: its box at its coordinates (innermost first). */
static void add_tma_store(footprint *f, const ir_stmt *s) {
  if (s->pipe.src != f->k->C)
    return;
  ival v[2];
  for (int d = 0; d < 2; d++) {
    v[d] = iv(f, s->pipe.coord[1 - d]);
    if (bounded(v[d]))
      v[d].hi += s->pipe.box[1 - d] - 1;
  }
  add_box(f, v[0], v[1]);
}

static void walk(footprint *f, const ir_stmt *s) {
  switch (s->kind) {
  case S_FOR: {
    const ts_loop *l = s->for_.loop;
    ival r = (ival){0, l->extent - 1};
    if (l->persistent) /* the block's tiles: blockIdx.x + it * gridDim.x */
      r.hi = (l->extent - 1 - f->blo[0]) / grid_of(f, 0);
    if (ir_kind_is_launch(l->kind))
      r = s->for_.index ? iv(f, s->for_.index) : launch_range(f, l->kind);
    f->vars[l->var->id] = r;
    walk(f, s->for_.body);
    return;
  }
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      walk(f, s->seq.items[i]);
    return;
  case S_IF:
    walk(f, s->if_.then_);
    if (s->if_.else_)
      walk(f, s->if_.else_);
    return;
  case S_ALLOC: walk(f, s->alloc.body); return;
  case S_PIPELINE: walk(f, s->pipe.body); return; /* a persistent grid's */
  case S_LANES: walk(f, s->lanes.expanded); return;
  case S_STORE: add_store(f, s); return;
  case S_TMA_STORE: add_tma_store(f, s); return;
  default: return;
  }
}

static bool boxes_meet(const ir_box *a, const ir_box *b) {
  for (int d = 0; d < 2; d++)
    if (a->hi[d] < b->lo[d] || b->hi[d] < a->lo[d])
      return false;
  return true;
}

/* ---- Finding blocks ---------------------------------------------------- */

typedef struct {
  int64_t idx[3];
  ir_box box;
} block_ref;

typedef struct {
  block_ref *items;
  size_t n, cap;
} block_list;

static bool push_block(block_list *l, const int64_t idx[3], ir_box box) {
  for (size_t i = 0; i < l->n; i++)
    if (!memcmp(l->items[i].idx, idx, sizeof(int64_t) * 3))
      return true;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    block_ref *r = realloc(l->items, cap * sizeof(*r));
    if (!r)
      return false;
    l->items = r;
    l->cap = cap;
  }
  l->items[l->n++] = (block_ref){{idx[0], idx[1], idx[2]}, box};
  return true;
}

/* The bound of what block idx writes, into *box; false where it writes
 * nothing of C or W. */
static bool block_bound(footprint *f, const int64_t idx[3], ir_box *box) {
  memcpy(f->blo, idx, sizeof(f->blo));
  memcpy(f->bhi, idx, sizeof(f->bhi));
  f->any = false;
  walk(f, f->k->body);
  *box = f->box;
  return f->any;
}

/* Block idx, whose bound is box, and the rest of its cluster (each with
 * its own bound, or idx's where it writes nothing) into out; false when
 * out of memory. */
static bool push_cluster(footprint *f, const int64_t idx[3], ir_box box,
                         block_list *out) {
  int c = f->k->cluster > 1 ? f->k->cluster : 1;
  int64_t first = idx[0] - idx[0] % c;
  for (int64_t bx = first; bx < first + c; bx++) {
    int64_t peer[3] = {bx, idx[1], idx[2]};
    ir_box own = box;
    if (bx != idx[0] && !block_bound(f, peer, &own))
      own = box;
    if (!push_block(out, peer, own))
      return false;
  }
  return true;
}

/* Every block in [lo, hi] whose bound meets one of `want` (n of them),
 * with its cluster, into out; false when out of memory. */
static bool search(footprint *f, const int64_t lo[3], const int64_t hi[3],
                   const ir_box *want, int n, block_list *out) {
  memcpy(f->blo, lo, sizeof(f->blo));
  memcpy(f->bhi, hi, sizeof(f->bhi));
  f->any = false;
  walk(f, f->k->body);
  bool meets = false;
  for (int i = 0; f->any && i < n && !meets; i++)
    meets = boxes_meet(&f->box, &want[i]);
  if (!meets)
    return true;
  int d = 0;
  for (int i = 1; i < 3; i++)
    if (hi[i] - lo[i] > hi[d] - lo[d])
      d = i;
  if (hi[d] == lo[d])
    return push_cluster(f, lo, f->box, out);
  int64_t mid = lo[d] + (hi[d] - lo[d]) / 2;
  int64_t hi1[3] = {hi[0], hi[1], hi[2]}, lo2[3] = {lo[0], lo[1], lo[2]};
  hi1[d] = mid;
  lo2[d] = mid + 1;
  return search(f, lo, hi1, want, n, out) && search(f, lo2, hi, want, n, out);
}

static bool find_blocks(footprint *f, const ir_box *want, int n,
                        block_list *out) {
  int64_t lo[3] = {0, 0, 0};
  int64_t hi[3] = {grid_of(f, 0) - 1, grid_of(f, 1) - 1, grid_of(f, 2) - 1};
  return search(f, lo, hi, want, n, out);
}

static int by_launch_order(const void *a, const void *b) {
  const int64_t *x = ((const block_ref *)a)->idx, *y = ((const block_ref *)b)->idx;
  for (int d = 2; d >= 0; d--)
    if (x[d] != y[d])
      return x[d] < y[d] ? -1 : 1;
  return 0;
}

/* ---- The sample ------------------------------------------------------- */

static int64_t draw(uint64_t *rng, int64_t n) {
  *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
  return n > 0 ? (int64_t)((*rng >> 33) % (uint64_t)n) : 0;
}

/* The targets, most wanted first: corners, a point on each edge (the
 * last row and column lie in the partial blocks where the shape is not a
 * multiple of the tile), then random points; returns how many. */
static int make_targets(int64_t m, int64_t n, const ir_sample_opts *o,
                        ir_box *t) {
  uint64_t rng = o->seed ^ 0x5eed;
  int64_t pts[8][2] = {{0, 0}, {m - 1, n - 1}, {0, n - 1}, {m - 1, 0},
                       {0, draw(&rng, n)}, {m - 1, draw(&rng, n)},
                       {draw(&rng, m), 0}, {draw(&rng, m), n - 1}};
  int count = 0;
  for (int i = 0; i < 8 + o->random; i++) {
    int64_t r = i < 8 ? pts[i][0] : draw(&rng, m);
    int64_t c = i < 8 ? pts[i][1] : draw(&rng, n);
    t[count++] = (ir_box){{r, c}, {r, c}};
  }
  return count;
}

/* The boxes of a block list, each once (split-K's parts share one), as a
 * region of *n boxes. */
static ir_box *region_of(const block_list *l, int *n) {
  ir_box *r = malloc((l->n ? l->n : 1) * sizeof(*r));
  *n = 0;
  for (size_t i = 0; r && i < l->n; i++) {
    bool seen = false;
    for (int j = 0; j < *n && !seen; j++)
      seen = !memcmp(&r[j], &l->items[i].box, sizeof(*r));
    if (!seen)
      r[(*n)++] = l->items[i].box;
  }
  return r;
}

/* The schedule's kernel's blocks for the targets within the budget, then
 * every block of it that may write into their region. */
static bool choose_main(footprint *f, const ir_box *targets, int nt,
                        double per_block, const ir_sample_opts *o,
                        ir_sample *s, block_list *out) {
  s->targets_run = 0;
  for (int i = 0; i < nt; i++) {
    size_t before = out->n;
    if (!find_blocks(f, &targets[i], 1, out))
      return false;
    double cost = per_block * (double)out->n;
    if (i > 0 && o->budget > 0 && cost > o->budget) {
      out->n = before; /* over the budget: this target is left out */
      break;
    }
    s->targets_run = i + 1;
  }
  for (size_t before = 0; before != out->n;) {
    before = out->n;
    int nbox;
    ir_box *region = region_of(out, &nbox);
    bool ok = region && find_blocks(f, region, nbox, out);
    free(region);
    if (!ok)
      return false;
  }
  return true;
}

/* The blocks of every kernel for the first nt targets (within the budget
 * as far as the schedule's kernel goes) into lists, the region into
 * s->space.boxes and their steps into s->estimate; false when out of
 * memory. */
static bool choose(const ir_kernel *const *ks, int n, int main,
                   footprint *f, const ir_box *targets, int nt,
                   const ir_sample_opts *o, ir_sample *s,
                   block_list *lists) {
  for (int i = 0; i < n; i++)
    lists[i].n = 0;
  free(s->space.boxes);
  s->space.boxes = NULL;
  s->space.nboxes = 0;
  s->blocks_run = 0;
  f->k = ks[main];
  if (!choose_main(f, targets, nt, ir_block_steps(ks[main]), o, s,
                   &lists[main]))
    return false;
  s->space.boxes = region_of(&lists[main], &s->space.nboxes);
  if (!s->space.boxes)
    return false;
  s->estimate = 0;
  for (int i = 0; i < n; i++) {
    f->k = ks[i];
    if (i != main &&
        !find_blocks(f, s->space.boxes, s->space.nboxes, &lists[i]))
      return false;
    s->blocks_run += (int64_t)lists[i].n;
    s->estimate += ir_block_steps(ks[i]) * (double)lists[i].n;
  }
  return true;
}

/* The most targets whose blocks, with the region's closure and the other
 * kernels' blocks, stay within the budget (bisected: a target only adds
 * blocks), chosen into lists; a first target that alone passes it is
 * s->over_budget.  False when out of memory. */
static bool choose_within_budget(const ir_kernel *const *ks, int n, int main,
                                 footprint *f, const ir_box *targets,
                                 const ir_sample_opts *o, ir_sample *s,
                                 block_list *lists) {
  if (!choose(ks, n, main, f, targets, s->targets_wanted, o, s, lists))
    return false;
  if (o->budget <= 0 || s->estimate <= o->budget)
    return true;
  int lo = 1, hi = s->targets_run - 1; /* the answer lies in [lo, hi] */
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (!choose(ks, n, main, f, targets, mid, o, s, lists))
      return false;
    if (s->estimate <= o->budget)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (!choose(ks, n, main, f, targets, lo, o, s, lists))
    return false;
  s->over_budget = s->estimate > o->budget;
  return true;
}

/* The kernels' globals as the sampled space holds them. */
static void bind_space(exec *x, const ir_kernel *k, exec_space *sp) {
  const ir_buffer *bufs[GLOBALS];
  exec_globals(k, bufs);
  x->nlive = GLOBALS;
  for (int i = 0; i < GLOBALS; i++)
    x->live[i] = (mem){.buf = bufs[i], .copies = 1,
                       .size = bufs[i] ? (size_t)ir_buffer_size(bufs[i]) : 0,
                       .read_only = i < GLOBAL_C, .space = sp, .matrix = i};
  for (int i = GLOBAL_A; i <= GLOBAL_C; i++)
    mem_set_rows(&x->live[i]);
}

/* Whether the i-th block of a list in launch order is the first of its
 * cluster (of c blocks) there. */
static bool first_of_cluster(const block_list *l, size_t i, int64_t c) {
  const int64_t *a = l->items[i].idx, *b = i ? l->items[i - 1].idx : NULL;
  return !b || b[0] / c != a[0] / c || b[1] != a[1] || b[2] != a[2];
}

/* The blocks of l in launch order, each cluster once: exec_run_block runs
 * a cluster's blocks together (push_cluster put all of each in). */
static bool run_blocks(exec *x, const ir_kernel *k, block_list *l) {
  if (l->n) /* none: the sample found no writer (it then fails) */
    qsort(l->items, l->n, sizeof(*l->items), by_launch_order);
  if (!exec_begin_kernel(x, k))
    return false;
  int64_t c = k->cluster > 1 ? k->cluster : 1;
  for (size_t i = 0; i < l->n && !x->fault; i++)
    if (first_of_cluster(l, i, c))
      exec_run_block(x, l->items[i].idx[0], l->items[i].idx[1],
                     l->items[i].idx[2]);
  return !x->fault;
}

bool ir_execute_sampled(const ir_kernel *const *ks, int n, int main,
                        const ts_gemm *g, const ir_sample_opts *o,
                        ir_sample *s, char *msg, size_t msglen) {
  char scratch[1];
  memset(s, 0, sizeof(*s));
  s->space = (exec_space){.seed = o->seed, .c_defined = g->beta != 0.0f,
                          .type = {g->a_type, g->b_type, g->c_type},
                          .m = g->m, .n = g->n,
                          .ldc = ts_gemm_operand(g, TS_OPERAND_C).ld};
  exec x = {.k = ks[0], .msg = msglen ? msg : scratch,
            .msglen = msglen ? msglen : 1};
  x.msg[0] = 0;
  int nvars = 1;
  for (int i = 0; i < n; i++) {
    nvars = ks[i]->nvars > nvars ? ks[i]->nvars : nvars;
    int64_t grid[3];
    ir_kernel_grid(ks[i], TS_EXEC_MULTIPROCESSORS, grid);
    s->blocks_total += grid[0] * grid[1] * grid[2];
  }
  ir_box *targets = malloc(sizeof(ir_box) * (size_t)(8 + o->random));
  block_list *lists = calloc((size_t)n, sizeof(*lists));
  footprint f = {.k = ks[main], .m = g->m, .n = g->n,
                 .vars = calloc((size_t)nvars, sizeof(ival))};
  bool ok = targets && lists && f.vars;
  s->targets_wanted = targets ? make_targets(g->m, g->n, o, targets) : 0;
  ok = ok && choose_within_budget(ks, n, main, &f, targets, o, s, lists);
  if (!ok)
    snprintf(x.msg, x.msglen, "the executor ran out of memory choosing "
             "the sample's blocks");
  for (int i = 0; ok && !o->plan_only && !s->over_budget && i < n; i++) {
    bind_space(&x, ks[i], &s->space);
    ok = run_blocks(&x, ks[i], &lists[i]);
    if (!ok && n > 1)
      exec_name_kernel(&x, i, n);
    exec_finish(&x);
  }
  s->steps = x.steps;
  for (int i = 0; lists && i < n; i++)
    free(lists[i].items);
  free(lists);
  free(targets);
  free(f.vars);
  return ok;
}

float ir_sample_c(const ir_sample *s, int64_t i, int64_t j) {
  int64_t off = i * s->space.ldc + j;
  const space_page *p = space_page_find(&s->space, 2, off);
  return p && p->defined[off % SPACE_PAGE] ? p->data[off % SPACE_PAGE]
                                           : (float)NAN;
}

void ir_sample_free(ir_sample *s) {
  space_free(&s->space);
}
