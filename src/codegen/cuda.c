/*
 * CUDA C from a lowered kernel.  The text is deterministic and reads like a
 * kernel a person would write: one `extern "C"` entry point with constant
 * extents, __launch_bounds__ and __restrict__ parameters; bound loops become
 * `const int x = threadIdx.x;`, unrolled loops get `#pragma unroll`,
 * register tiles are arrays (a 1x1 tile a scalar), and global accesses are
 * flattened with the buffer's strides.  Index arithmetic is int, or long
 * long when a matrix has 2^31 elements or more.  Vectorized loops arrive
 * expanded into their lanes (src/lower/lanes.c): vector temporaries are
 * `const float4` registers, vector accesses reinterpret_casts.
 */
#include "codegen_impl.h"

#include "../base/launch_values.h"

#include <stdio.h>
#include <stdlib.h>

#include "../ir/analysis.h"
#include "../base/dtype.h"
#include "../ir/printer.h"
#include "../ir/visit.h"


const char *cuda_type(emitter *em, ts_dtype t) {
  em->uses[t] = true;
  return dtype_info_of(t)->cuda_type;
}

static void c_var(ts_buf *b, const ir_var *v, const ir_expr_style *st) {
  const emitter *em = st->ctx;
  if (v->kind == VAR_LAUNCH && v->tag == TS_THREAD_Z && em->team_uniform)
    ts_buf_puts(b, "tessel_team");
  else if (v->kind == VAR_LAUNCH)
    ts_buf_puts(b, ir_loop_kind_name(v->tag)); /* blockIdx.x */
  else if (v->kind == VAR_GRID)
    ts_buf_printf(b, "gridDim.%c", "xyz"[v->tag - TS_BLOCK_X]);
  else
    ts_buf_c_name(b, v->name);
}

static bool is_scalar(const ir_buffer *buf) {
  for (int d = 0; d < buf->ndim; d++)
    if (buf->shape[d] != 1)
      return false;
  return true;
}

/* Lane `lane` of a vector temporary: "t.z", or "t.v[2]" for the structs
 * of narrow elements. */
static void lane_suffix(ts_buf *b, const ir_buffer *buf, int64_t lane) {
  if (buf->dtype == TS_F32)
    ts_buf_printf(b, ".%c", "xyzw"[lane]);
  else
    ts_buf_printf(b, ".v[%lld]", (long long)lane);
}

void c_access(ts_buf *b, const ir_buffer *buf, ir_expr *const *idx,
                     const ir_expr_style *st) {
  emitter *em = st->ctx;
  ts_buf_c_name(b, buf->name);
  if (buf->vector) { /* the verifier keeps its lanes constant */
    lane_suffix(b, buf, idx[0]->ival);
    return;
  }
  if (buf->scope != SCOPE_GLOBAL) {
    if (is_scalar(buf))
      return;
    int64_t panel = ir_swizzle_panel(buf);
    const ir_expr *col = idx[buf->order[buf->ndim - 1]];
    for (int s = 0; s < buf->ndim; s++) { /* in storage order */
      if (panel && s == buf->ndim - 2) { /* the 128-byte panel */
        ts_buf_puts(b, "[(");
        ir_print_expr(b, col, st);
        ts_buf_printf(b, ") / %lld]", (long long)panel);
      }
      ts_buf_puts(b, "[");
      if (panel && s == buf->ndim - 1) {
        ts_buf_puts(b, "(");
        ir_print_expr(b, col, st);
        ts_buf_printf(b, ") %% %lld", (long long)panel);
      } else {
        ir_print_expr(b, idx[buf->order[s]], st);
      }
      if (buf->swizzle && s == buf->ndim - 1 && !em->unswizzled) {
        /* ir_swizzle_offset */
        ts_buf_puts(b, " ^ (");
        ir_print_expr(b, idx[buf->order[s - 1]], st);
        ts_buf_printf(b, ") / %lld %% %d * %lld",
                      (long long)ir_swizzle_rows(buf), buf->swizzle,
                      (long long)ir_swizzle_chunk(buf));
      }
      ts_buf_puts(b, "]");
    }
    return;
  }
  /* Global memory: one flat offset, each index times its stride. */
  ir_expr *off = NULL;
  for (int d = 0; d < buf->ndim; d++) {
    ir_expr *term = buf->strides[d] == 1 && !buf->stride_expr[d]
                        ? idx[d]
                        : ir_binary(em->a, E_MUL, idx[d],
                                    ir_buffer_stride(em->a, buf, d));
    off = off ? ir_binary(em->a, E_ADD, off, term) : term;
  }
  ts_buf_puts(b, "[");
  if (off)
    ir_print_expr(b, off, st);
  ts_buf_puts(b, "]");
}

/* Floor division equals C's truncating one for non-negative numerators
 * (divisors are positive: constants, or sizes taken at launch); others
 * call a helper. */
static bool floor_call(const ir_expr *e, const ir_expr_style *st) {
  int64_t lo, hi;
  if (e->type == TY_INT && ir_bounds(e->op.a, &lo, &hi) && lo >= 0)
    return false;
  ((emitter *)st->ctx)->needs_floordiv = true;
  return true;
}

static void expr(emitter *em, const ir_expr *e) {
  ir_print_expr(em->b, e, &em->style);
}

static const char *index_type(const emitter *em) {
  return em->wide ? "long long" : "int";
}

static const char *launch_source(ts_loop_kind k) { return ir_loop_kind_name(k); }

/* ---- Vectors --------------------------------------------------------------- */

/* The type of a `lanes`-wide access to t elements: CUDA's float2 and
 * float4, or for fp16 and bf16 a struct of the elements aligned to its size
 * (so the access is one 4-, 8- or 16-byte load or store), defined at the
 * top of the file. */
static const char *vector_type(emitter *em, ts_dtype t, int lanes) {
  if (t == TS_F32)
    return ts_arena_printf(em->a, "float%d", lanes);
  em->uses[t] = true;
  em->vectors[t] |= 1u << lanes;
  return ts_arena_printf(em->a, "tessel_%sx%d", ts_dtype_name(t), lanes);
}

/* The `lanes` elements from buf[idx] on, as one access. */
static void vector_access(emitter *em, const ir_buffer *buf,
                          ir_expr *const *idx, int lanes, bool is_const) {
  ts_buf_printf(em->b, "*reinterpret_cast<%s%s *>(&", is_const ? "const " : "",
                vector_type(em, buf->dtype, lanes));
  c_access(em->b, buf, idx, &em->style);
  ts_buf_puts(em->b, ")");
}

/* A vector load, or a vector made of its lanes' values. */
static void c_vector(ts_buf *b, const ir_expr *e, const ir_expr_style *st) {
  emitter *em = st->ctx;
  if (e->kind == E_LOAD) {
    vector_access(em, e->load.buf, e->load.idx, e->load.lanes, true);
    return;
  }
  bool f32 = e->dtype == TS_F32;
  if (f32)
    ts_buf_printf(b, "make_float%d(", e->vector.n);
  else
    ts_buf_printf(b, "%s{{", vector_type(em, e->dtype, e->vector.n));
  for (int i = 0; i < e->vector.n; i++) {
    if (i)
      ts_buf_puts(b, ", ");
    ir_print_expr(b, e->vector.lane[i], st);
  }
  ts_buf_puts(b, f32 ? ")" : "}}");
}

/* A vector temporary: one register holding a vector load's lanes. */
static void emit_vector_temp(emitter *em, const ir_stmt *s) {
  const ir_buffer *buf = s->alloc.buf;
  ts_buf_printf(em->b, "const %s ",
                vector_type(em, buf->dtype, (int)buf->shape[0]));
  ts_buf_c_name(em->b, buf->name);
  ts_buf_puts(em->b, " = ");
  expr(em, s->alloc.init);
  ts_buf_puts(em->b, ";\n");
}

/* The lanes of a vectorized loop, as lowering expanded them; its vector
 * temporaries get a block of their own. */
static int c_lanes(ts_buf *b, const ir_stmt *s, int depth,
                   const ir_stmt_style *st) {
  (void)st;
  const ir_stmt *lanes = s->lanes.expanded;
  if (lanes->kind != S_ALLOC || !lanes->alloc.init)
    return depth;
  ts_buf_indent(b, depth);
  ts_buf_puts(b, "{\n");
  return depth + 1;
}

static void vector_struct_definitions(ts_buf *b, const emitter *em) {
  for (int t = 0; t < TS_DTYPE_COUNT; t++)
    for (int lanes = 2; lanes <= 8; lanes *= 2)
      if (em->vectors[t] & (1u << lanes)) {
        const dtype_info *info = dtype_info_of((ts_dtype)t);
        ts_buf_printf(b, "struct __align__(%d) tessel_%sx%d { %s v[%d]; };\n",
                      lanes * info->size, info->name, lanes, info->cuda_type,
                      lanes);
      }
}

/* ---- Statements ------------------------------------------------------------ */

/* A launch loop is its index, `const int x = threadIdx.x;`, and its body
 * follows at the same depth; other loops are C for loops. */
static int c_loop(ts_buf *b, const ts_loop *l, const ir_expr *index,
                  int depth, const ir_stmt_style *st) {
  const emitter *em = st->ctx;
  ts_buf_indent(b, depth);
  if (ir_kind_is_launch(l->kind)) {
    ts_buf_printf(b, "const %s ", index_type(em));
    ts_buf_c_name(b, l->name);
    ts_buf_puts(b, " = ");
    if (index)
      ir_print_expr(b, index, &em->style);
    else
      ts_buf_puts(b, launch_source(l->kind));
    if (l->size) { /* blocks that follow the launch's extents */
      ts_buf_puts(b, ";  // 0..");
      ir_print_expr(b, l->size, &em->style);
      ts_buf_puts(b, " - 1\n");
      return depth;
    }
    ts_buf_printf(b, ";  // 0..%lld%s\n", (long long)l->extent - 1,
                  !index ? "" : ir_expr_uses_grid(index) ? ", from the tile"
                                                         : ", blocks swizzled");
    return depth;
  }
  if (l->kind == TS_UNROLLED) {
    ts_buf_puts(b, "#pragma unroll\n");
    ts_buf_indent(b, depth);
  }
  /* A persistent grid's tile loop runs while the block's next tile,
   * blockIdx.x + var * gridDim.x, is one of C's. */
  ts_buf_printf(b, "for (%s ", index_type(em));
  ts_buf_c_name(b, l->name);
  ts_buf_puts(b, l->persistent ? " = 0; blockIdx.x + " : " = 0; ");
  ts_buf_c_name(b, l->name);
  ts_buf_printf(b, "%s < ", l->persistent ? " * gridDim.x" : "");
  if (l->size) /* a trip count chosen at launch */
    ir_print_expr(b, l->size, &em->style);
  else
    ts_buf_printf(b, "%lld", (long long)l->extent);
  ts_buf_puts(b, "; ++");
  ts_buf_c_name(b, l->name);
  ts_buf_puts(b, l->persistent ? ") {  // a persistent grid's tiles\n"
                               : ") {\n");
  return depth + 1;
}

/* x = x + y prints as x += y. */
static bool is_accumulate(const ir_stmt *s) {
  const ir_expr *v = s->store.value;
  if (v->kind != E_ADD || v->op.a->kind != E_LOAD || v->op.a->load.buf != s->store.buf)
    return false;
  for (int d = 0; d < s->store.buf->ndim; d++)
    if (!ir_expr_equal(v->op.a->load.idx[d], s->store.idx[d]))
      return false;
  return true;
}

/* ---- Asynchronous copies ------------------------------------------------------ */

/* cp.async of 4, 8 or 16 bytes (sm_80): global memory straight into shared
 * memory.  16 bytes take .cg, which leaves L1 alone (the tile is read once
 * from global memory); 4 and 8 only exist as .ca.  "memory" keeps the
 * compiler from moving shared accesses across the copies and waits. */
static void async_copy_definitions(ts_buf *b, const emitter *em) {
  if (!em->async_copies)
    return;
  ts_buf_puts(b, "// cp.async (sm_80): global -> shared memory without "
              "registers, in copy groups.\n");
  for (int bytes = 4; bytes <= 16; bytes *= 2)
    if (em->async_copies & (1u << bytes))
      ts_buf_printf(b,
                    "__device__ __forceinline__ void tessel_cp_async%d(void "
                    "*dst, const void *src) {\n"
                    "  asm volatile(\"cp.async.%s.shared.global [%%0], "
                    "[%%1], %d;\\n\" ::\n"
                    "               \"r\"((unsigned)__cvta_generic_to_shared"
                    "(dst)), \"l\"(src) : \"memory\");\n}\n",
                    bytes, bytes == 16 ? "cg" : "ca", bytes);
  ts_buf_puts(b, "\n");
}

/* tessel_cp_async16(&A_shared[..], &A[..]); */
static void c_async_copy(emitter *em, const ir_stmt *s) {
  const ir_expr *v = s->store.value;
  int lanes = s->store.lanes > 1 ? s->store.lanes : 1;
  int bytes = lanes * ts_dtype_size(s->store.buf->dtype);
  em->async_copies |= 1u << bytes;
  ts_buf_printf(em->b, "tessel_cp_async%d(&", bytes);
  c_access(em->b, s->store.buf, s->store.idx, &em->style);
  ts_buf_puts(em->b, ", &");
  c_access(em->b, v->load.buf, v->load.idx, &em->style);
  ts_buf_puts(em->b, ");\n");
}

static void c_wait(ts_buf *b, const ir_stmt *s, int depth,
                   const ir_stmt_style *st) {
  (void)st;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "asm volatile(\"cp.async.wait_group %d;\\n\" ::: "
                "\"memory\");\n", s->wait.pending);
}

static void c_store(ts_buf *b, const ir_stmt *s, int depth,
                    const ir_stmt_style *st) {
  emitter *em = st->ctx;
  ts_buf_indent(b, depth);
  if (s->store.atomic) { /* split-K's partial sums into C */
    ts_buf_puts(b, "atomicAdd(&");
    c_access(b, s->store.buf, s->store.idx, &em->style);
    ts_buf_puts(b, ", ");
    expr(em, s->store.value);
    ts_buf_puts(b, ");\n");
    return;
  }
  if (s->store.async) {
    c_async_copy(em, s);
    return;
  }
  if (s->store.lanes > 1)
    vector_access(em, s->store.buf, s->store.idx, s->store.lanes, false);
  else
    c_access(b, s->store.buf, s->store.idx, &em->style);
  if (is_accumulate(s)) {
    ts_buf_puts(b, " += ");
    expr(em, s->store.value->op.b);
  } else {
    ts_buf_puts(b, " = ");
    expr(em, s->store.value);
  }
  ts_buf_puts(b, ";\n");
}

/* Arrays are declared in storage order, the innermost stored dimension
 * padded; shared ones aligned for 16-byte vector accesses. */
static void array_dims(ts_buf *b, const ir_buffer *buf) {
  int64_t panel = ir_swizzle_panel(buf);
  for (int d = 0; d < buf->ndim; d++) {
    int64_t n = buf->shape[buf->order[d]];
    if (panel && d == buf->ndim - 2) /* rows in 128-byte panels */
      ts_buf_printf(b, "[%lld]",
                    (long long)(buf->shape[buf->order[d + 1]] / panel));
    if (panel && d == buf->ndim - 1)
      n = panel;
    ts_buf_printf(b, "[%lld]", (long long)(n + (d == buf->ndim - 1 ? buf->pad
                                                                : 0)));
  }
}

/* Over 48 KiB a block's shared memory must be dynamic: each buffer is then
 * a reference to its slot of the one extern array, indexed as before. */
static void emit_dynamic_shared(emitter *em, const ir_buffer *buf) {
  ts_buf *b = em->b;
  const char *type = cuda_type(em, buf->dtype);
  int64_t next = em->shared_offset;
  /* An overlay starts the memory over, and leaves the next slot alone. */
  em->shared_offset = buf->overlay ? 0 : ir_shared_slot_start(buf, next);
  ts_buf_printf(b, "%s (&", type);
  ts_buf_c_name(b, buf->name);
  ts_buf_puts(b, ")");
  array_dims(b, buf);
  ts_buf_printf(b, " = *reinterpret_cast<%s (*)", type);
  array_dims(b, buf);
  ts_buf_printf(b, ">(tessel_shared + %lld);\n",
                (long long)(em->shared_offset / 4));
  em->shared_offset = buf->overlay ? next
                                   : em->shared_offset +
                                         ir_shared_slot_bytes(buf);
}

static void c_alloc(ts_buf *b, const ir_stmt *s, int depth,
                    const ir_stmt_style *st) {
  emitter *em = st->ctx;
  const ir_buffer *buf = s->alloc.buf;
  ts_buf_indent(b, depth);
  if (s->alloc.init) {
    emit_vector_temp(em, s);
  } else if (buf->scope == SCOPE_SHARED && em->dynamic_shared) {
    emit_dynamic_shared(em, buf);
  } else {
    if (buf->scope == SCOPE_SHARED)
      ts_buf_printf(b, "__shared__ __align__(%d) ",
                    ir_shared_alignment(buf));
    ts_buf_printf(b, "%s ", cuda_type(em, buf->dtype));
    ts_buf_c_name(b, buf->name);
    if (!is_scalar(buf) || buf->scope == SCOPE_SHARED)
      array_dims(b, buf);
    ts_buf_puts(b, ";\n");
  }
}

static void c_compute(ts_buf *b, const ir_stmt *s, int depth,
                      const ir_stmt_style *st) {
  (void)s;
  (void)st;
  ts_buf_indent(b, depth);
  ts_buf_puts(b, "/* unlowered compute */\n");
}

/* A barrier of the block's first threads: barrier 1 (0 is
 * __syncthreads's), with the proxy fence where the block's barriers carry
 * it. */
static void c_named_barrier(ts_buf *b, const ir_stmt *s, int depth,
                            const ir_stmt_style *st) {
  const emitter *em = st->ctx;
  if (em->k->arch_specific || em->k->tma_store) {
    ts_buf_indent(b, depth);
    ts_buf_puts(b, "asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: "
                "\"memory\");\n");
  }
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "asm volatile(\"bar.sync 1, %lld;\\n\" ::: "
                "\"memory\");\n", (long long)s->barrier.threads);
}

/* The statements: the printer's walk, in C. */
static const ir_stmt_style c_stmt_style = {
    .if_open = "if (", .if_then = ") {\n", .else_line = "} else {\n",
    .close = "}\n", .barrier = "__syncthreads();\n",
    .commit = "asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n",
    .wait = c_wait, .loop = c_loop,
    .lanes = c_lanes, .alloc = c_alloc, .store = c_store,
    .compute = c_compute, .mma = c_mma, .ldmatrix = c_ldmatrix,
    .stmatrix = c_stmatrix,
    .wgmma = c_wgmma, .wgmma_sync = c_wgmma_sync, .pipe = c_pipe,
    .named_barrier = c_named_barrier, .pipe_prints_roles = true};

/* The headers of the element types used, and the vector structs. */
static void type_definitions(ts_buf *b, const emitter *em) {
  bool any = false;
  for (int t = 0; t < TS_DTYPE_COUNT; t++) {
    const dtype_info *info = dtype_info_of((ts_dtype)t);
    if (em->uses[t] && info->cuda_header) {
      ts_buf_printf(b, "#include <%s>\n", info->cuda_header);
      any = true;
    }
  }
  vector_struct_definitions(b, em);
  if (any)
    ts_buf_puts(b, "\n");
}

/* An operand whose elements, rows a leading dimension apart, pass int's
 * reach. */
static bool needs_wide_index(const ts_gemm *g) {
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand op = ts_gemm_operand(g, (ts_operand_role)r);
    if (ts_operand_elements(&op) >= (int64_t)1 << 31)
      return true;
  }
  return false;
}

/* ", rows 130 apart" where an operand's leading dimension is not its
 * packed row (nothing for a packed one: its text stays as it was), or
 * ", rows lda apart" where it is given at launch. */
static void leading_dimension(ts_buf *b, const ts_gemm *g,
                              ts_operand_role role) {
  ts_operand op = ts_gemm_operand(g, role);
  if (launch_value_taken(g, 3 + (int)role))
    ts_buf_printf(b, ", rows %s apart", launch_value_name(3 + (int)role));
  else if (op.ld != op.cols)
    ts_buf_printf(b, ", rows %lld apart", (long long)op.ld);
}

/* Extent i (m, n, k) as the header names it: the number compiled in, or
 * the parameter's name (M, N, K) where given at launch. */
static void value_text(const ts_gemm *g, int i, char *out, size_t len) {
  if (launch_value_taken(g, i))
    snprintf(out, len, "%c", "MNK"[i]);
  else
    snprintf(out, len, "%lld", (long long)launch_value_of(g, i));
}

/* The workspace's buffers (split-K's partial sums, ts_pack's copies, whose
 * padded rows may pass K) with elements past int's reach. */
static bool views_need_wide_index(const ts_program *p) {
  const ir_buffer *views[3] = {p->k.W, p->k.packed[0], p->k.packed[1]};
  for (int i = 0; i < 3; i++)
    if (views[i] && ir_buffer_size(views[i]) >= (int64_t)1 << 31)
      return true;
  return false;
}

/* Whether ts_pack's kernel of operand w rounds it to tf32. */
static bool packs_tf32(const ts_program *p, int w) {
  return p->k.packed[w] && p->def.math == TS_MATH_TF32 &&
         p->k.packed[w]->dtype == TS_F32;
}

static void header(ts_buf *b, const ts_program *p) {
  const ts_gemm *g = &p->def;
  const ir_kernel *k = &p->k;
  bool ta = g->layout == TS_TN || g->layout == TS_TT;
  bool tb = g->layout == TS_NT || g->layout == TS_TT;
  ts_buf_printf(b, "// Generated by tessel %s from schedule \"%s\".\n",
                TESSEL_VERSION, p->name);
  char m[24], n[24], kk[24];
  value_text(g, 0, m, sizeof(m));
  value_text(g, 1, n, sizeof(n));
  value_text(g, 2, kk, sizeof(kk));
  ts_buf_printf(b, "// C[%s x %s] = ", m, n);
  if (g->alpha != 1.0f) {
    ir_print_float(b, g->alpha, false);
    ts_buf_puts(b, " * ");
  }
  ts_buf_printf(b, "op(A) * op(B)");
  if (g->beta != 0.0f) {
    ts_buf_puts(b, " + ");
    ir_print_float(b, g->beta, false);
    ts_buf_puts(b, " * C");
  }
  ts_buf_printf(b, ", %s %s, layout %s:\n", launch_value_taken(g, 2) ?
                "summed over" : "K =", kk, ts_layout_name(g->layout));
  ts_buf_printf(b, "//   A is %s (%s x %s, row-major",
                ta ? "stored transposed" : "op(A)", ta ? kk : m, ta ? m : kk);
  leading_dimension(b, g, TS_OPERAND_A);
  ts_buf_printf(b, "), B is %s (%s x %s, row-major",
                tb ? "stored transposed" : "op(B)", tb ? n : kk, tb ? kk : n);
  leading_dimension(b, g, TS_OPERAND_B);
  ts_buf_puts(b, "), C row-major");
  leading_dimension(b, g, TS_OPERAND_C);
  if (g->runtime)
    ts_buf_printf(b, ".\n// The names are the kernel's parameters, given at "
                  "launch: one kernel for every shape (nominally %lld x %lld "
                  "x %lld)", (long long)g->m, (long long)g->n, (long long)g->k);
  ts_buf_puts(b, ".\n");
  if (g->a_type != TS_F32 || g->b_type != TS_F32 || g->c_type != TS_F32 ||
      g->acc_type != TS_F32)
    ts_buf_printf(b, "// Elements: A %s, B %s, C %s; the products summed in "
                  "%s.\n", ts_dtype_name(g->a_type), ts_dtype_name(g->b_type),
                  ts_dtype_name(g->c_type), ts_dtype_name(g->acc_type));
  for (int i = 0; i < p->nkernels; i++) {
    k = p->order[i];
    if (p->nkernels > 1)
      ts_buf_printf(b, "// Kernel %d of %d, %s:\n", i + 1, p->nkernels,
                    k->entry);
    ts_buf_puts(b, "// Launch: grid (");
    for (int d = 0; d < 3; d++) { /* a formula where it follows the launch */
      ts_buf_puts(b, d ? ", " : "");
      if (k->grid_size[d])
        ir_print_expr(b, k->grid_size[d], &ir_pseudo_style);
      else
        ts_buf_printf(b, "%lld", (long long)k->grid[d]);
    }
    ts_buf_printf(b, "), block (%lld, %lld, %lld)", (long long)k->block[0],
                  (long long)k->block[1], (long long)k->block[2]);
    if (k->cluster > 1)
      ts_buf_printf(b, ", clusters of %d blocks along x", k->cluster);
    ts_buf_puts(b, ".\n");
  }
  if (p->workspace)
    ts_buf_printf(b, "// Workspace: W, %lld bytes.\n", (long long)p->workspace);
  if (p->k.W)
    ts_buf_printf(b, "//   Split-K's fp32 partial sums [%lld][%lld][%lld] "
                  "from byte 0.\n", (long long)p->k.W->shape[0],
                  (long long)g->m, (long long)g->n);
  for (int w = 0; w < 2; w++)
    if (p->k.packed[w])
      ts_buf_printf(b, "//   op(%c) packed k-major%s from byte %lld.\n",
                    "AB"[w], packs_tf32(p, w) ? ", rounded to tf32," : "",
                    (long long)p->k.packed[w]->workspace_offset);
  ts_buf_puts(b, "\n");
}

/* ts_pack's views of the workspace the kernel reads or writes, as
 * pointers into W. */
static void workspace_views(ts_buf *b, emitter *em, const ir_kernel *k) {
  for (int w = 0; w < 2; w++) {
    const ir_buffer *v = k->packed[w];
    if (!v)
      continue;
    const char *type = cuda_type(em, v->dtype);
    ts_buf_printf(b, "  // op(%c), packed k-major (ts_pack): rows of %lld "
                  "elements.\n  %s *__restrict__ ", "AB"[w],
                  (long long)v->strides[w == 0 ? 0 : 1], type);
    ts_buf_c_name(b, v->name);
    ts_buf_printf(b, " = (%s *)((char *)W + %lld);\n", type,
                  (long long)v->workspace_offset);
  }
}

/* One kernel's body, printed in C with the emitter's style. */
static char *kernel_body(emitter *em, const ts_program *p, const ir_kernel *k) {
  ts_buf body;
  ts_buf_init(&body);
  em->b = &body;
  em->k = k;
  workspace_views(&body, em, k);
  em->dynamic_shared = k == &p->k && p->dynamic_shared > 0;
  bool over = k->shared_bytes + k->barrier_bytes > TS_STATIC_SHARED;
  if (em->dynamic_shared)
    ts_buf_printf(&body, "  // %lld bytes of shared memory: %s, so\n  // "
                  "dynamic%s.\n  extern __shared__ __align__(1024) float "
                  "tessel_shared[];\n", (long long)k->shared_bytes,
                  over ? "over the 48 KiB a kernel may declare"
                       : "C's stage lies over the other buffers",
                  over ? ", with the opt-in (cuFuncSetAttribute) at launch"
                       : "");
  ir_stmt_style stmts = c_stmt_style;
  stmts.expr = &em->style;
  stmts.ctx = em;
  /* wgmma and the TMA's stores read shared memory through the async
   * proxy: the writes (cp.async, zero fills, C's stage) are ordered before
   * them by a proxy fence in each writer ahead of the barrier that
   * publishes them (PTX ISA, wgmma.fence and the async proxy). */
  if (k->arch_specific || k->tma_store)
    stmts.barrier = "asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: "
                    "\"memory\"); __syncthreads();\n";
  ir_print_stmt_with(&body, k->body, 1, &stmts);
  return ts_buf_take(&body);
}

/* The parameter list, two to a line: "(const float *__restrict__ A, ...)". */
static void print_params(ts_buf *out, emitter *em, const ir_kernel *k) {
  static const char *const values[TS_VALUE_COUNT] = {
      "M", "N", "K", "alpha", "beta", "lda", "ldb", "ldc"};
  ts_buf_puts(out, "(");
  for (int i = 0; i < k->nparams; i++) {
    const ts_param *p = &k->params[i].p;
    if (i)
      ts_buf_puts(out, i % 2 ? ", " : ",\n    ");
    switch (p->kind) {
    case TS_PARAM_BUFFER:
      ts_buf_printf(out, "%s%s *__restrict__ %s", p->read_only ? "const " : "",
                    cuda_type(em, p->dtype), ts_param_buffer_name(p->buffer));
      break;
    case TS_PARAM_INT:
      ts_buf_printf(out, "int %s", values[p->value]);
      break;
    case TS_PARAM_FLOAT:
      ts_buf_printf(out, "float %s", values[p->value]);
      break;
    case TS_PARAM_TENSOR_MAP:
      /* Named after the buffer it maps: a packed view's lies in W. */
      ts_buf_puts(out, "const __grid_constant__ tessel_tensor_map tmap_");
      ts_buf_c_name(out, k->params[i].buf->name);
      break;
    }
  }
  ts_buf_puts(out, ")");
}

/* ---- Neighbouring lanes' exchanges --------------------------------------------- */

static bool find_pair_pick(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_PAIR_PICK)
    *(bool *)v->ctx = v->stop = true;
  return true;
}

/* tessel_pair_pick, a call: its arguments are evaluated in every lane
 * before the shuffle, which the whole warp runs, whatever `keep`. */
static void pair_pick_definition(ts_buf *b, const ts_program *p) {
  bool used = false;
  ir_visitor v = {.expr = find_pair_pick, .ctx = &used};
  for (int i = 0; i < p->nkernels && !used; i++)
    ir_visit_stmt(&v, p->order[i]->body);
  if (used)
    ts_buf_puts(b, "// Neighbouring lanes exchanging values: keep ? own : "
                "the neighbour's\n// (lane ^ 1) `theirs`, every lane of "
                "the warp shuffling.\n"
                "__device__ __forceinline__ float tessel_pair_pick(bool keep, "
                "float own, float theirs) {\n"
                "  const float got = __shfl_xor_sync(0xffffffffu, theirs, 1);\n"
                "  return keep ? own : got;\n}\n\n");
}

/* The entry point: launch bounds, name, parameters, and the body. */
static void kernel_definition(ts_buf *out, emitter *em, const ir_kernel *k,
                              const char *body) {
  int64_t threads = k->block[0] * k->block[1] * k->block[2];
  ts_buf_printf(out, "extern \"C\" __global__ void __launch_bounds__(%lld",
                (long long)threads);
  if (k->min_blocks > 0)
    ts_buf_printf(out, ", %d", k->min_blocks);
  ts_buf_puts(out, ")");
  /* A cluster's blocks on neighbouring multiprocessors, launched together
   * (the grid's x a multiple of it: ir_kernel_grid). */
  if (k->cluster > 1)
    ts_buf_printf(out, " __cluster_dims__(%d, 1, 1)", k->cluster);
  ts_buf_puts(out, "\n");
  ts_buf_puts(out, k->entry);
  print_params(out, em, k);
  ts_buf_puts(out, "\n{\n");
  if (body)
    ts_buf_puts(out, body);
  else
    out->failed = true;
  ts_buf_puts(out, "}\n");
}

char *ts_program_cuda(const ts_program *p) {
  if (!p || p->status != TS_OK)
    return NULL;
  ts_arena scratch;
  ts_arena_init(&scratch);
  /* Split-K's workspace has parts times C's elements to index. */
  emitter em = {.a = &scratch, .wide = needs_wide_index(&p->def) ||
                                       views_need_wide_index(p)};
  em.style = (ir_expr_style){.var = c_var, .access = c_access,
                             .vector = c_vector, .cuda = true, .ctx = &em,
                             .floor_call = floor_call};
  em.rounds_tf32 = packs_tf32(p, 0) || packs_tf32(p, 1);
  /* The bodies first: what they use decides the headers and helpers. */
  char **bodies = calloc((size_t)p->nkernels, sizeof(*bodies));
  if (!bodies) {
    ts_arena_release(&scratch);
    return NULL;
  }
  for (int i = 0; i < p->nkernels; i++)
    bodies[i] = kernel_body(&em, p, p->order[i]);
  for (int i = 0; i < p->nkernels; i++) /* the parameters' types */
    for (int j = 0; j < p->order[i]->nparams; j++)
      if (p->order[i]->params[j].p.kind == TS_PARAM_BUFFER)
        cuda_type(&em, p->order[i]->params[j].p.dtype);
  ts_buf out;
  ts_buf_init(&out);
  header(&out, p);
  type_definitions(&out, &em);
  async_copy_definitions(&out, &em);
  mma_definitions(&out, &em);
  wgmma_definitions(&out, &em);
  tma_definitions(&out, &em);
  pair_pick_definition(&out, p);
  if (em.needs_floordiv)
    ts_buf_printf(&out,
                  "// Floor division and modulo, for numerators that may be "
                  "negative.\n"
                  "__device__ __forceinline__ %s floordiv(%s a, %s b) {\n"
                  "  return a / b - (a %% b != 0 && (a < 0) != (b < 0));\n}\n"
                  "__device__ __forceinline__ %s floormod(%s a, %s b) {\n"
                  "  return a - floordiv(a, b) * b;\n}\n\n",
                  index_type(&em), index_type(&em), index_type(&em),
                  index_type(&em), index_type(&em), index_type(&em));
  for (int i = 0; i < p->nkernels; i++) {
    if (i)
      ts_buf_puts(&out, "\n");
    kernel_definition(&out, &em, p->order[i], bodies[i]);
    free(bodies[i]);
  }
  free(bodies);
  ts_arena_release(&scratch);
  return ts_buf_take(&out);
}
