/*
 * The IR printer: expressions with the fewest parentheses their precedence
 * needs, and statements as indented loop-nest pseudo-code:
 *
 *   for i.outer in 0..2 bound to blockIdx.y:
 *     if i.outer*32 + i.inner < 37:
 *       C[i, j] += A[i, k] * B[k, j]
 *
 * Both walks take a style, and the code generator prints CUDA through them
 * with a style of its own: the walks hold the structure (precedence and
 * parentheses; sequences, if/else, nesting, indentation), the styles the
 * words.
 */
#include "printer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../base/dtype.h"
#include "analysis.h"
#include "mma.h"

static int precedence(ir_expr_kind k) {
  switch (k) {
  case E_SELECT: return 0;
  case E_OR: return 1;
  case E_AND: return 2;
  case E_EQ: case E_NE: return 3;
  case E_LT: case E_LE: return 4;
  case E_ADD: case E_SUB: return 5;
  case E_MUL: case E_DIV: case E_MOD: return 6;
  case E_NOT: return 7;
  default: return 8; /* atoms, calls */
  }
}

static bool associative(ir_expr_kind k) {
  return k == E_ADD || k == E_MUL || k == E_AND || k == E_OR;
}

void ir_print_float(ts_buf *b, float v, bool cuda) {
  char text[48];
  snprintf(text, sizeof(text), "%.9g", (double)v);
  if (!strpbrk(text, ".en"))
    strcat(text, ".0");
  ts_buf_puts(b, text);
  if (cuda)
    ts_buf_puts(b, "f");
}

const char *ir_dtype_word(ts_dtype t) {
  return t == TS_F32 ? "float" : ts_dtype_name(t);
}

/* A conversion: "f16(x)" in the IR; in CUDA the headers' functions, through
 * float between the two narrow types. */
static void print_cast(ts_buf *b, const ir_expr *e, const ir_expr_style *st) {
  const dtype_info *to = dtype_info_of(e->dtype);
  const dtype_info *from = dtype_info_of(e->op.a->dtype);
  if (!st->cuda) {
    ts_buf_printf(b, "%s(", ir_dtype_word(e->dtype));
    ir_print_expr(b, e->op.a, st);
    ts_buf_puts(b, ")");
    return;
  }
  if (to->cuda_from_float)
    ts_buf_printf(b, "%s(", to->cuda_from_float);
  if (from->cuda_to_float)
    ts_buf_printf(b, "%s(", from->cuda_to_float);
  ir_print_expr(b, e->op.a, st);
  if (from->cuda_to_float)
    ts_buf_puts(b, ")");
  if (to->cuda_from_float)
    ts_buf_puts(b, ")");
}

static void print_operand(ts_buf *b, const ir_expr *child, int parent_prec,
                          bool right, ir_expr_kind parent,
                          const ir_expr_style *st) {
  int p = precedence(child->kind);
  bool parens = p < parent_prec ||
                (right && p == parent_prec &&
                 !(child->kind == parent && associative(parent)));
  if (parens)
    ts_buf_puts(b, "(");
  ir_print_expr(b, child, st);
  if (parens)
    ts_buf_puts(b, ")");
}

void ir_print_expr(ts_buf *b, const ir_expr *e, const ir_expr_style *st) {
  switch (e->kind) {
  case E_INT:
    if (e->type == TY_BOOL)
      ts_buf_puts(b, e->ival ? "true" : "false");
    else
      ts_buf_printf(b, "%lld", (long long)e->ival);
    return;
  case E_FLOAT:
    ir_print_float(b, e->fval, st->cuda);
    return;
  case E_VAR:
    st->var(b, e->var, st);
    return;
  case E_LOAD:
    if (e->load.lanes > 1)
      st->vector(b, e, st);
    else
      st->access(b, e->load.buf, e->load.idx, st);
    return;
  case E_VECTOR:
    st->vector(b, e, st);
    return;
  case E_DIV: case E_MOD:
    if (st->floor_call && st->floor_call(e, st)) {
      ts_buf_puts(b, e->kind == E_DIV ? "floordiv(" : "floormod(");
      ir_print_expr(b, e->op.a, st);
      ts_buf_puts(b, ", ");
      ir_print_expr(b, e->op.b, st);
      ts_buf_puts(b, ")");
      return;
    }
    break;
  case E_MIN: case E_MAX:
    ts_buf_puts(b, e->kind == E_MIN ? "min(" : "max(");
    ir_print_expr(b, e->op.a, st);
    ts_buf_puts(b, ", ");
    ir_print_expr(b, e->op.b, st);
    ts_buf_puts(b, ")");
    return;
  case E_NOT:
    ts_buf_puts(b, "!");
    print_operand(b, e->op.a, precedence(E_NOT), false, E_NOT, st);
    return;
  case E_CAST:
    print_cast(b, e, st);
    return;
  case E_ROUND_TF32: /* a helper of the generated source, in CUDA */
    ts_buf_puts(b, st->cuda ? "tessel_round_tf32(" : "round_tf32(");
    ir_print_expr(b, e->op.a, st);
    ts_buf_puts(b, ")");
    return;
  case E_PAIR_PICK: /* a call, in CUDA: the shuffle runs in every lane */
    ts_buf_puts(b, st->cuda ? "tessel_pair_pick(" : "pair_pick(");
    ir_print_expr(b, e->op.c, st);
    ts_buf_puts(b, ", ");
    ir_print_expr(b, e->op.a, st);
    ts_buf_puts(b, ", ");
    ir_print_expr(b, e->op.b, st);
    ts_buf_puts(b, ")");
    return;
  case E_SELECT:
    print_operand(b, e->op.c, 1, false, E_SELECT, st);
    ts_buf_puts(b, " ? ");
    print_operand(b, e->op.a, 1, false, E_SELECT, st);
    ts_buf_puts(b, " : ");
    print_operand(b, e->op.b, 1, false, E_SELECT, st);
    return;
  default:
    break;
  }
  {
    int p = precedence(e->kind);
    print_operand(b, e->op.a, p, false, e->kind, st);
    bool tight = e->type == TY_INT &&
                 (e->kind == E_MUL || e->kind == E_DIV);
    ts_buf_puts(b, tight ? "" : " ");
    ts_buf_puts(b, ir_expr_kind_name(e->kind));
    ts_buf_puts(b, tight ? "" : " ");
    print_operand(b, e->op.b, p, true, e->kind, st);
  }
}

/* ---- Statements: the walk ------------------------------------------------------ */

/* A block's end, where the style closes blocks. */
static void close_block(ts_buf *b, int depth, const ir_stmt_style *st) {
  if (st->close) {
    ts_buf_indent(b, depth);
    ts_buf_puts(b, st->close);
  }
}

/* A loop, an expanded vectorized loop or an allocation: the hook has
 * written its opening; its body follows at `inner`, closed when deeper. */
static void print_block(ts_buf *b, const ir_stmt *body, int depth, int inner,
                        const ir_stmt_style *st) {
  ir_print_stmt_with(b, body, inner, st);
  if (inner > depth)
    close_block(b, depth, st);
}

static void print_if(ts_buf *b, const ir_stmt *s, int depth,
                     const ir_stmt_style *st) {
  ts_buf_indent(b, depth);
  ts_buf_puts(b, st->if_open);
  ir_print_expr(b, s->if_.cond, st->expr);
  ts_buf_puts(b, st->if_then);
  ir_print_stmt_with(b, s->if_.then_, depth + 1, st);
  if (s->if_.else_) {
    ts_buf_indent(b, depth);
    ts_buf_puts(b, st->else_line);
    ir_print_stmt_with(b, s->if_.else_, depth + 1, st);
  }
  close_block(b, depth, st);
}

/* A vectorized loop after lowering: as the style asks, the lanes that run
 * or the loop as scheduled. */
static void print_lanes(ts_buf *b, const ir_stmt *s, int depth,
                        const ir_stmt_style *st) {
  if (st->lanes)
    print_block(b, s->lanes.expanded, depth, st->lanes(b, s, depth, st), st);
  else
    print_block(b, s->lanes.body, depth,
                st->loop(b, s->lanes.loop, NULL, depth, st), st);
}

void ir_print_stmt_with(ts_buf *b, const ir_stmt *s, int depth,
                        const ir_stmt_style *st) {
  switch (s->kind) {
  case S_FOR:
    print_block(b, s->for_.body, depth,
                st->loop(b, s->for_.loop, s->for_.index, depth, st), st);
    return;
  case S_LANES:
    print_lanes(b, s, depth, st);
    return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      ir_print_stmt_with(b, s->seq.items[i], depth, st);
    return;
  case S_STORE:
    st->store(b, s, depth, st);
    return;
  case S_IF:
    print_if(b, s, depth, st);
    return;
  case S_ALLOC:
    st->alloc(b, s, depth, st);
    ir_print_stmt_with(b, s->alloc.body, depth, st);
    return;
  case S_BARRIER:
    if (s->barrier.threads) {
      st->named_barrier(b, s, depth, st);
      return;
    }
    ts_buf_indent(b, depth);
    ts_buf_puts(b, st->barrier);
    return;
  case S_COMPUTE:
    st->compute(b, s, depth, st);
    return;
  case S_ASYNC_COMMIT:
    ts_buf_indent(b, depth);
    ts_buf_puts(b, st->commit);
    return;
  case S_ASYNC_WAIT:
    st->wait(b, s, depth, st);
    return;
  case S_MMA:
    st->mma(b, s, depth, st);
    return;
  case S_LDMATRIX:
    st->ldmatrix(b, s, depth, st);
    return;
  case S_STMATRIX:
    st->stmatrix(b, s, depth, st);
    return;
  case S_WGMMA:
    st->wgmma(b, s, depth, st);
    return;
  case S_WGMMA_SYNC:
    st->wgmma_sync(b, s, depth, st);
    return;
  case S_PIPELINE:
    st->pipe(b, s, depth, st);
    if (!st->pipe_prints_roles || !s->pipe.pipe->producer_threads)
      ir_print_stmt_with(b, s->pipe.body, depth, st);
    return;
  case S_TMA:
  case S_MBARRIER:
  case S_TMA_STORE:
  case S_TMA_STORE_WAIT:
    st->pipe(b, s, depth, st);
    return;
  }
}

/* ---- The pseudo-code style ------------------------------------------------- */

static void pseudo_var(ts_buf *b, const ir_var *v, const ir_expr_style *st) {
  (void)st;
  ts_buf_puts(b, v->name);
}

static void pseudo_access(ts_buf *b, const ir_buffer *buf, ir_expr *const *idx,
                          const ir_expr_style *st) {
  ts_buf_printf(b, "%s[", buf->name);
  for (int d = 0; d < buf->ndim; d++) {
    if (d)
      ts_buf_puts(b, ", ");
    ir_print_expr(b, idx[d], st);
  }
  ts_buf_puts(b, "]");
}

/* "vec4(A[i, j])", a vector load; "vec4(x, y, z, w)", a vector of lanes. */
static void pseudo_vector(ts_buf *b, const ir_expr *e,
                          const ir_expr_style *st) {
  if (e->kind == E_LOAD) {
    ts_buf_printf(b, "vec%d(", e->load.lanes);
    st->access(b, e->load.buf, e->load.idx, st);
  } else {
    ts_buf_printf(b, "vec%d(", e->vector.n);
    for (int i = 0; i < e->vector.n; i++) {
      if (i)
        ts_buf_puts(b, ", ");
      ir_print_expr(b, e->vector.lane[i], st);
    }
  }
  ts_buf_puts(b, ")");
}

const ir_expr_style ir_pseudo_style = {.var = pseudo_var,
                                       .access = pseudo_access,
                                       .vector = pseudo_vector};

static const char *scope_name(ir_scope s) {
  return s == SCOPE_GLOBAL ? "global" : s == SCOPE_SHARED ? "shared" : "local";
}

/* A cache's storage, when it is not the logical row-major order. */
static void print_layout(ts_buf *b, const ir_buffer *buf) {
  bool permuted = false;
  for (int d = 0; d < buf->ndim; d++)
    permuted |= buf->order[d] != d;
  if (permuted) {
    ts_buf_puts(b, " stored as [");
    for (int d = 0; d < buf->ndim; d++)
      ts_buf_printf(b, "%s%d", d ? ", " : "", buf->order[d]);
    ts_buf_puts(b, "]");
  }
  if (buf->pad)
    ts_buf_printf(b, " padded by %lld", (long long)buf->pad);
  if (buf->swizzle)
    ts_buf_printf(b, " swizzled (16-byte chunk ^ row / %lld %% %d)",
                  (long long)ir_swizzle_rows(buf), buf->swizzle);
  if (ir_swizzle_panel(buf))
    ts_buf_puts(b, " in 128-byte panels");
}

static void print_expr_line(ts_buf *b, const ir_expr *e) {
  ir_print_expr(b, e, &ir_pseudo_style);
}

/* x - origin, simplified: a cache's index is the loop's less the cached
 * tile's first element, most often the loop's inner part (i.inner, not
 * i.outer*32 + i.inner - (i.outer*32)).  The difference is built in an
 * arena of its own, freed once printed. */
static void print_cache_index(ts_buf *b, const ir_expr *x,
                              const ir_expr *origin) {
  ts_arena a;
  ts_arena_init(&a);
  ir_expr *d = ir_simplify_expr(&a, ir_sub(&a, (ir_expr *)x,
                                          (ir_expr *)origin));
  if (d && !a.failed) {
    print_expr_line(b, d);
  } else { /* out of memory: the difference as it stands */
    print_expr_line(b, x);
    ts_buf_puts(b, " - (");
    print_expr_line(b, origin);
    ts_buf_puts(b, ")");
  }
  ts_arena_release(&a);
}

/* An operand as the compute reads it: "A[i, k]", or from a cache
 * "A.shared[i - origin, k - origin]". */
static void print_operand_access(ts_buf *b, const ir_stmt *s, int w,
                                 const ir_expr *x, const ir_expr *y) {
  const ir_buffer *src = s->compute.src[w];
  ts_buf_puts(b, src ? src->name : w == 0 ? "A" : "B");
  ts_buf_puts(b, "[");
  if (src)
    print_cache_index(b, x, s->compute.origin[w][0]);
  else
    print_expr_line(b, x);
  ts_buf_puts(b, ", ");
  if (src)
    print_cache_index(b, y, s->compute.origin[w][1]);
  else
    print_expr_line(b, y);
  ts_buf_puts(b, "]");
}

static void pseudo_compute(ts_buf *b, const ir_stmt *s, int depth,
                           const ir_stmt_style *st) {
  (void)st;
  const ir_expr *i = s->compute.i, *j = s->compute.j, *k = s->compute.k;
  if (s->compute.pred) {
    ts_buf_indent(b, depth);
    ts_buf_puts(b, "if ");
    print_expr_line(b, s->compute.pred);
    ts_buf_puts(b, ":\n");
    depth++;
  }
  ts_buf_indent(b, depth);
  ts_buf_puts(b, "C[");
  print_expr_line(b, i);
  ts_buf_puts(b, ", ");
  print_expr_line(b, j);
  ts_buf_puts(b, "] += ");
  print_operand_access(b, s, 0, i, k);
  ts_buf_puts(b, " * ");
  print_operand_access(b, s, 1, k, j);
  ts_buf_puts(b, "\n");
}

/* "for i.outer in 0..2 bound to blockIdx.y:", the style's ctx the loop to
 * mark "<-- here". */
/* "   # ts_split, step 3" where the style asks; i, j, k and the inputs
 * are the definition's, the rest without a maker lowering's. */
static void print_maker(ts_buf *b, const char *made_by, bool defined,
                        const ir_stmt_style *st) {
  if (st->provenance)
    ts_buf_printf(b, "   # %s", made_by ? made_by
                                : defined ? "ts_matmul"
                                          : "lowering");
}

static int pseudo_loop(ts_buf *b, const ts_loop *l, const ir_expr *index,
                       int depth, const ir_stmt_style *st) {
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "for %s in 0..%lld", l->name, (long long)l->extent);
  if (index) {
    ts_buf_puts(b, ir_expr_uses_grid(index) ? " bound to tile(" :
                                              " bound to swizzle(");
    print_expr_line(b, index);
    ts_buf_puts(b, ")");
  } else if (l->persistent) {
    ts_buf_printf(b, " persistent, while blockIdx.x + %s*gridDim.x < %lld",
                  l->name, (long long)l->extent);
  } else if (ir_kind_is_launch(l->kind))
    ts_buf_printf(b, " bound to %s", ir_loop_kind_name(l->kind));
  else if (l->kind != TS_SERIAL)
    ts_buf_printf(b, " %s", ir_loop_kind_name(l->kind));
  if (l->partitioned)
    ts_buf_puts(b, " partitioned");
  ts_buf_puts(b, l == st->ctx ? ":   <-- here" : ":");
  print_maker(b, l->made_by,
              !l->made_by && (strcmp(l->name, "i") == 0 ||
                              strcmp(l->name, "j") == 0 ||
                              strcmp(l->name, "k") == 0),
              st);
  ts_buf_puts(b, "\n");
  return depth + 1;
}

static int pseudo_lanes(ts_buf *b, const ir_stmt *s, int depth,
                        const ir_stmt_style *st) {
  (void)st;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "lanes of %s in 0..%lld:\n", s->lanes.loop->name,
                (long long)s->lanes.loop->extent);
  return depth + 1;
}

static void pseudo_alloc(ts_buf *b, const ir_stmt *s, int depth,
                         const ir_stmt_style *st) {
  (void)st;
  const ir_buffer *buf = s->alloc.buf;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "%s %s %s", scope_name(buf->scope),
                ir_dtype_word(buf->dtype), buf->name);
  for (int d = 0; d < buf->ndim; d++)
    ts_buf_printf(b, "[%lld]", (long long)buf->shape[d]);
  print_layout(b, buf);
  if (s->alloc.init) {
    ts_buf_puts(b, " = ");
    print_expr_line(b, s->alloc.init);
  }
  print_maker(b, buf->made_by, false, st);
  ts_buf_puts(b, "\n");
}

static void pseudo_store(ts_buf *b, const ir_stmt *s, int depth,
                         const ir_stmt_style *st) {
  (void)st;
  ts_buf_indent(b, depth);
  if (s->store.async)
    ts_buf_puts(b, "async ");
  if (s->store.lanes > 1)
    ts_buf_printf(b, "vec%d(", s->store.lanes);
  pseudo_access(b, s->store.buf, s->store.idx, &ir_pseudo_style);
  if (s->store.lanes > 1)
    ts_buf_puts(b, ")");
  ts_buf_puts(b, s->store.atomic ? " atomic+= " : " = ");
  print_expr_line(b, s->store.value);
  ts_buf_puts(b, "\n");
}

/* "cp.async.wait 1": all but the newest copy group have landed. */
static void pseudo_wait(ts_buf *b, const ir_stmt *s, int depth,
                        const ir_stmt_style *st) {
  (void)st;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "cp.async.wait %d\n", s->wait.pending);
}

/* One operand of an S_MMA: "acc[mi, nj, 0:+4]", a lane's registers from
 * the first on. */
static void pseudo_fragment(ts_buf *b, const ir_stmt *s, int w,
                            const mma_instr *in) {
  const ir_buffer *buf = s->mma.buf[w];
  ts_buf_printf(b, "%s[", buf->name);
  for (int d = 0; d < buf->ndim; d++) {
    if (d)
      ts_buf_puts(b, ", ");
    print_expr_line(b, s->mma.idx[w][d]);
  }
  ts_buf_printf(b, ":+%d]", in ? in->frag[w].regs : 0);
}

/* "mma.m16n8k16.f16 acc[..] += a[..] * b[..]" */
static void pseudo_mma(ts_buf *b, const ir_stmt *s, int depth,
                       const ir_stmt_style *st) {
  (void)st;
  const mma_instr *in = mma_instr_for(s->mma.buf[MMA_A]->dtype);
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "mma.%s.%s ", in ? in->name : "?",
                in && in->tf32 ? "tf32" : ir_dtype_word(s->mma.buf[MMA_A]->dtype));
  pseudo_fragment(b, s, MMA_ACC, in);
  ts_buf_puts(b, " += ");
  pseudo_fragment(b, s, MMA_A, in);
  ts_buf_puts(b, " * ");
  pseudo_fragment(b, s, MMA_B, in);
  ts_buf_puts(b, "\n");
}

/* "ldmatrix.x4.trans a_frag[0:+8] = &A.shared[..]": the registers it
 * fills, and the row this lane addresses. */
static void pseudo_ldmatrix(ts_buf *b, const ir_stmt *s, int depth,
                            const ir_stmt_style *st) {
  (void)st;
  const ir_buffer *frag = s->ldsm.frag;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "ldmatrix.x%d%s %s[", s->ldsm.matrices,
                s->ldsm.trans ? ".trans" : "", frag->name);
  for (int d = 0; d < frag->ndim; d++) {
    if (d)
      ts_buf_puts(b, ", ");
    print_expr_line(b, s->ldsm.idx[d]);
  }
  ts_buf_printf(b, ":+%d] = &", 2 * s->ldsm.matrices);
  print_expr_line(b, s->ldsm.src);
  ts_buf_puts(b, "\n");
}

/* "stmatrix.x4 &C.shared[..] = {v0, v1, ..}": the row this lane
 * addresses, and its values, two of each matrix. */
static void pseudo_stmatrix(ts_buf *b, const ir_stmt *s, int depth,
                            const ir_stmt_style *st) {
  (void)st;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "stmatrix.x%d &", s->stsm.matrices);
  print_expr_line(b, s->stsm.dst);
  ts_buf_puts(b, " = {");
  for (int v = 0; v < 2 * s->stsm.matrices; v++) {
    if (v)
      ts_buf_puts(b, ", ");
    print_expr_line(b, s->stsm.value[v]);
  }
  ts_buf_puts(b, "}\n");
}

/* "wgmma.m64n128k16.f16 acc[mi, 0, 0:+64] += &A.shared[..] * &B.shared[..]
 * (A k-major, B mn-major)": the tiles' first elements. */
static void pseudo_wgmma(ts_buf *b, const ir_stmt *s, int depth,
                         const ir_stmt_style *st) {
  (void)st;
  const mma_instr *in = s->wgmma.in;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "wgmma.%s.%s %s[", in->name,
                in->tf32 ? "tf32" : ir_dtype_word(in->ab), s->wgmma.acc->name);
  for (int d = 0; d < s->wgmma.acc->ndim; d++) {
    if (d)
      ts_buf_puts(b, ", ");
    print_expr_line(b, s->wgmma.idx[d]);
  }
  bool regs = ir_wgmma_a_regs(s);
  ts_buf_printf(b, ":+%d] += %s", in->frag[MMA_ACC].regs, regs ? "" : "&");
  print_expr_line(b, s->wgmma.src[0]);
  if (regs)
    ts_buf_printf(b, ":+%d", in->frag[MMA_A].regs);
  ts_buf_puts(b, " * &");
  print_expr_line(b, s->wgmma.src[1]);
  ts_buf_printf(b, " (a %s, b %s-major)\n",
                regs ? "in registers"
                     : s->wgmma.mn_major[0] ? "m-major" : "k-major",
                s->wgmma.mn_major[1] ? "n" : "k");
}

static void pseudo_wgmma_sync(ts_buf *b, const ir_stmt *s, int depth,
                              const ir_stmt_style *st) {
  (void)st;
  ts_buf_indent(b, depth);
  if (s->wait.pending < 0)
    ts_buf_puts(b, "wgmma.fence\n");
  else
    ts_buf_printf(b, "wgmma.commit; wgmma.wait %d\n", s->wait.pending);
}

static const char *const mbar_names[3] = {"full", "empty", "order"};

/* "pipeline 0: 4 stages of 49152 bytes ...", "tma A.shared[..] = A box
 * 64x128 at (x, y), full[s]", "mbarrier.wait full[s] parity p". */
/* "A box 64x128 at (x, y)": a TMA copy's or store's global side. */
static void print_box_at(ts_buf *b, const ir_stmt *s) {
  ts_buf_printf(b, "%s box %lldx%lld at (", s->pipe.src->name,
                (long long)s->pipe.box[0], (long long)s->pipe.box[1]);
  print_expr_line(b, s->pipe.coord[0]);
  ts_buf_puts(b, ", ");
  print_expr_line(b, s->pipe.coord[1]);
  ts_buf_puts(b, ")");
}

static void pseudo_pipe(ts_buf *b, const ir_stmt *s, int depth,
                        const ir_stmt_style *st) {
  (void)st;
  const ir_pipeline *p = s->pipe.pipe;
  ts_buf_indent(b, depth);
  if (s->kind == S_PIPELINE) {
    ts_buf_printf(b, "pipeline %d: %d stages of %lld bytes, mbarriers full "
                  "and empty, producer thread %d, %d consumer warps", p->id,
                  p->stages, (long long)p->bytes, p->producer, p->consumers);
    if (p->producer_threads)
      ts_buf_printf(b, ", warp-specialized: threads %d.. the producer's "
                    "%d", p->producer, p->producer_threads);
    if (p->cluster > 1)
      ts_buf_printf(b, ", shared by a cluster of %d blocks", p->cluster);
    if (p->pingpong)
      ts_buf_printf(b, ", ping-pong: %d consumer warpgroups (threadIdx.z) "
                    "take the tiles in turn, order barriers order[0..%d]",
                    p->pingpong, p->pingpong - 1);
    ts_buf_puts(b, "\n");
    return;
  }
  if (s->kind == S_TMA_STORE) {
    ts_buf_puts(b, "tma.store ");
    print_box_at(b, s);
    ts_buf_puts(b, " = &");
    print_expr_line(b, s->pipe.dst);
    ts_buf_puts(b, "\n");
    return;
  }
  if (s->kind == S_TMA_STORE_WAIT) {
    ts_buf_puts(b, "tma.store.wait (its reads of shared memory)\n");
    return;
  }
  if (s->kind == S_TMA) {
    ts_buf_puts(b, "tma &");
    print_expr_line(b, s->pipe.dst);
    ts_buf_puts(b, " = ");
    print_box_at(b, s);
    ts_buf_puts(b, " on full[");
    print_expr_line(b, s->pipe.stage);
    ts_buf_puts(b, s->pipe.multicast ? "], multicast to the cluster\n"
                                     : "]\n");
    return;
  }
  static const char *const ops[] = {"arrive.expect_tx", "arrive", "wait"};
  ts_buf_printf(b, "mbarrier.%s %s[", ops[s->pipe.op], mbar_names[s->pipe.bar]);
  print_expr_line(b, s->pipe.stage);
  ts_buf_puts(b, "]");
  if (s->pipe.op == MBAR_EXPECT_TX)
    ts_buf_printf(b, " %lld bytes", (long long)p->bytes);
  if (s->pipe.op == MBAR_WAIT) {
    ts_buf_puts(b, " parity ");
    print_expr_line(b, s->pipe.parity);
  }
  ts_buf_puts(b, s->pipe.multicast ? " in every block of the cluster\n"
                                   : "\n");
}

static void pseudo_named_barrier(ts_buf *b, const ir_stmt *s, int depth,
                                 const ir_stmt_style *st) {
  (void)st;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "barrier of threads 0..%lld\n",
                (long long)s->barrier.threads - 1);
}

static const ir_stmt_style pseudo_stmt_style = {
    .expr = &ir_pseudo_style, .if_open = "if ", .if_then = ":\n",
    .else_line = "else:\n", .barrier = "barrier\n",
    .commit = "cp.async.commit\n", .wait = pseudo_wait, .loop = pseudo_loop,
    .alloc = pseudo_alloc, .store = pseudo_store, .compute = pseudo_compute,
    .mma = pseudo_mma, .ldmatrix = pseudo_ldmatrix,
    .stmatrix = pseudo_stmatrix, .wgmma = pseudo_wgmma,
    .wgmma_sync = pseudo_wgmma_sync, .pipe = pseudo_pipe,
    .named_barrier = pseudo_named_barrier};

void ir_print_stmt(ts_buf *b, const ir_stmt *s, int depth,
                   const ts_loop *mark) {
  ir_stmt_style st = pseudo_stmt_style;
  st.ctx = (void *)mark;
  ir_print_stmt_with(b, s, depth, &st);
}

void ir_print_stmt_provenance(ts_buf *b, const ir_stmt *s, int depth) {
  ir_stmt_style st = pseudo_stmt_style;
  st.provenance = true;
  ir_print_stmt_with(b, s, depth, &st);
}

void ir_print_stmt_lanes(ts_buf *b, const ir_stmt *s, int depth) {
  ir_stmt_style st = pseudo_stmt_style;
  st.lanes = pseudo_lanes;
  ir_print_stmt_with(b, s, depth, &st);
}
