/*
 * The schedule object: the GEMM definition as a naive i/j/k loop nest, loop
 * handles and the rules for their names (which ts_rename, in loops.c,
 * applies too), stages, and the sticky error status every primitive checks
 * first (cairo's model: the first error stays, later calls do nothing, and
 * every error passes through sched_fail).
 */
#include "sched.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"
#include "../base/launch_values.h"
#include "../ir/printer.h"

/* A schedule that could not be allocated: every call on it is a no-op. */
static ts_sched nomem_sched = {.status = TS_ERR_NO_MEMORY,
                               .errmsg = (char *)"ts_matmul: out of memory"};

/* ---- Errors ------------------------------------------------------------------ */

ts_status sched_fail(ts_sched *s, ts_status code, const ts_loop *mark,
                     const char *fmt, ...) {
  if (s->status != TS_OK)
    return s->status;
  s->status = code;
  s->err_at = sched_keep_location(s, s->at);
  ts_buf b;
  ts_buf_init(&b);
  if (s->err_at.file)
    ts_buf_printf(&b, "%s:%d: error: ", s->err_at.file, s->err_at.line);
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  ts_buf_puts(&b, line);
  if (mark && s->root) {
    ts_buf_puts(&b, "\n");
    ir_print_stmt(&b, s->root, 1, mark);
  }
  s->errmsg = ts_buf_take(&b);
  return code;
}

ts_status ts_sched_fail(ts_sched *s, ts_status code, const char *message) {
  if (!s)
    return TS_ERR_NULL_ARG;
  if (s->status != TS_OK)
    return s->status;
  s->status = code > TS_OK && code < TS_STATUS_COUNT ? code : TS_ERR_BAD_ARG;
  s->errmsg = strdup(message ? message : ts_strerror(s->status));
  return s->status; /* without its message, ts_sched_errmsg gives the code's */
}

ts_location ts_sched_error_location(const ts_sched *s) {
  return s && s->status != TS_OK ? s->err_at : (ts_location){NULL, 0};
}

/* ---- The call being made ------------------------------------------------- */

void sched_enter(ts_sched *s, const char *file, int line) {
  if (s && s->status == TS_OK)
    s->at = (ts_location){file, file ? line : 0};
}

ts_status sched_leave(ts_sched *s, ts_status status) {
  if (s && s->at.file) /* never the shared out-of-memory schedule */
    s->at = (ts_location){NULL, 0};
  return status;
}

ts_location sched_keep_location(ts_sched *s, ts_location at) {
  if (!at.file)
    return at;
  for (int i = s->ntrace - 1; i >= 0 && i >= s->ntrace - 4; i--)
    if (s->trace[i].at.file && strcmp(s->trace[i].at.file, at.file) == 0)
      return (ts_location){s->trace[i].at.file, at.line};
  const char *copy = ts_arena_strdup(&s->arena, at.file);
  return (ts_location){copy, copy ? at.line : 0};
}

bool sched_check_loop(ts_sched *s, const char *fn, int pos,
                      const char *argname, const ts_loop *loop) {
  if (!loop) {
    sched_fail(s, TS_ERR_NULL_ARG, NULL, "%s: argument %d '%s' is NULL", fn,
               pos, argname);
    return false;
  }
  if (loop->owner != s) {
    sched_fail(s, TS_ERR_FOREIGN_LOOP, NULL,
               "%s: argument %d '%s' (loop \"%s\") belongs to another "
               "schedule",
               fn, pos, argname, loop->name);
    return false;
  }
  if (!loop->live) {
    sched_fail(s, TS_ERR_LOOP_REPLACED, NULL,
               "%s: argument %d '%s': loop \"%s\" was replaced by an earlier "
               "split or fuse; use the loops it returned",
               fn, pos, argname, loop->name);
    return false;
  }
  return true;
}

/* ---- Names ---------------------------------------------------------------------- */

void sched_c_name(ts_buf *b, const char *name) {
  for (const char *p = name; *p; p++) {
    char c[2] = {*p == '.' ? '_' : *p, 0};
    ts_buf_puts(b, c);
  }
}

static bool same_c_name(const char *x, const char *y) {
  for (; *x && *y; x++, y++) {
    char cx = *x == '.' ? '_' : *x, cy = *y == '.' ? '_' : *y;
    if (cx != cy)
      return false;
  }
  return *x == *y;
}

/* Names the generated code uses for itself, or that C reserves. */
static const char *const reserved[] = {
    "A", "B", "C", "acc", "alpha", "beta", "int", "float", "for", "if",
    "else", "while", "do", "return", "const", "void", "long", "char",
    "short", "unsigned", "signed", "double", "struct", "union", "static",
    "extern", "switch", "case", "default", "break", "continue", "goto",
    "sizeof", "threadIdx", "blockIdx", "blockDim", "gridDim", "min", "max",
    "W", "A_packed", "B_packed", "P_tile", "M", "N", "K", "lda", "ldb",
    "ldc"};

bool sched_name_taken(const ts_sched *s, const char *name) {
  for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
    if (same_c_name(name, reserved[i]))
      return true;
  for (int i = 0; i < s->nloops; i++)
    if (same_c_name(s->loops[i]->name, name) ||
        same_c_name(s->loops[i]->birth, name))
      return true;
  for (int i = 0; i < s->nstages; i++)
    if (same_c_name(s->stages[i]->name, name))
      return true;
  return false;
}

bool sched_require_static(ts_sched *s, const char *fn, const ts_loop *loop) {
  if (!loop->size)
    return true;
  sched_fail(s, TS_ERR_BAD_ARG, loop, "%s: loop \"%s\" runs a number of "
             "times chosen at launch (def->runtime); %s needs it compiled "
             "in: leave that extent out of def->runtime", fn, loop->name,
             fn);
  return false;
}

ts_loop *sched_new_loop(ts_sched *s, const char *name, int64_t extent,
                        bool reduce, int slot) {
  const char *unique = name;
  for (int n = 2; sched_name_taken(s, unique); n++)
    unique = ts_arena_printf(&s->arena, "%s%d", name, n);
  return ir_new_loop(&s->arena, s->nloops + slot, unique, extent, reduce, s);
}

bool sched_register_loops(ts_sched *s, ts_loop *const *loops, int n) {
  if (s->nloops + n > s->loops_cap) {
    int cap = s->loops_cap ? s->loops_cap * 2 : 16;
    while (cap < s->nloops + n)
      cap *= 2;
    ts_loop **p = realloc(s->loops, sizeof(*p) * (size_t)cap);
    if (!p)
      return false;
    s->loops = p;
    s->loops_cap = cap;
  }
  for (int i = 0; i < n; i++)
    s->loops[s->nloops++] = loops[i];
  s->next_var = s->nloops;
  return true;
}

bool sched_trace(ts_sched *s, const trace_rec *rec) {
  if (s->ntrace == s->trace_cap) {
    int cap = s->trace_cap ? s->trace_cap * 2 : 16;
    trace_rec *p = realloc(s->trace, sizeof(*p) * (size_t)cap);
    if (!p)
      return false;
    s->trace = p;
    s->trace_cap = cap;
  }
  trace_rec *r = &s->trace[s->ntrace++];
  *r = *rec;
  r->at = sched_keep_location(s, s->at); /* every record keeps its call's */
  return true;
}

void sched_invalidate(ts_sched *s) { s->lowered = NULL; }

/* ---- Committing a rewrite ----------------------------------------------------- */

ts_status sched_oom(ts_sched *s, const char *fn) {
  return sched_fail(s, TS_ERR_NO_MEMORY, NULL, "%s: out of memory", fn);
}

ts_status sched_commit(ts_sched *s, const char *fn, ir_stmt *root,
                       ts_loop *const *made, int nmade, trace_rec *rec) {
  if (!root || s->arena.failed)
    return sched_oom(s, fn);
  int first = s->nloops;
  if (!sched_register_loops(s, made, nmade))
    return sched_oom(s, fn);
  const char *label =
      s->at.file ? ts_arena_printf(&s->arena, "%s:%d: %s, step %d",
                                   s->at.file, s->at.line, fn, s->ntrace + 1)
                 : ts_arena_printf(&s->arena, "%s, step %d", fn,
                                   s->ntrace + 1);
  for (int i = 0; i < nmade; i++) {
    rec->results[rec->nresults++] = first + i;
    made[i]->made_by = label;
  }
  rec->label = label;
  if (!sched_trace(s, rec)) {
    s->nloops = first;
    return sched_oom(s, fn);
  }
  s->root = root;
  sched_invalidate(s);
  return TS_OK;
}

bool sched_require_serial(ts_sched *s, const char *fn, const ts_loop *l) {
  if (l->kind == TS_SERIAL && l->wgmma_in_flight > 0) {
    sched_fail(s, TS_ERR_ALREADY_BOUND, l,
               "%s: loop \"%s\" keeps wgmma batches in flight; call "
               "ts_wgmma_in_flight after every other primitive on the loop",
               fn, l->name);
    return false;
  }
  if (l->kind == TS_SERIAL && !l->partitioned)
    return true;
  if (l->kind == TS_SERIAL) {
    sched_fail(s, TS_ERR_ALREADY_BOUND, l,
               "%s: loop \"%s\" is partitioned; call ts_partition after "
               "every other primitive on the loop", fn, l->name);
    return false;
  }
  sched_fail(s, TS_ERR_ALREADY_BOUND, l,
             "%s: loop \"%s\" is already %s%s; apply it before bind, unroll "
             "or vectorize", fn, l->name,
             ir_kind_is_launch(l->kind) ? "bound to " : "",
             ir_loop_kind_name(l->kind));
  return false;
}

/* ---- Stages --------------------------------------------------------------------- */

ts_stage *sched_find_stage(const ts_sched *s, const char *name) {
  for (int i = 0; i < s->nstages; i++)
    if (strcmp(s->stages[i]->name, name) == 0)
      return s->stages[i];
  return NULL;
}

bool sched_check_stage(ts_sched *s, const char *fn, int pos,
                       const ts_stage *stage) {
  if (!stage) {
    sched_fail(s, TS_ERR_NULL_ARG, NULL, "%s: argument %d 'stage' is NULL",
               fn, pos);
    return false;
  }
  if (stage->owner != s) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "%s: argument %d 'stage' (\"%s\") belongs to another schedule",
               fn, pos, stage->name);
    return false;
  }
  return true;
}

bool sched_check_read_stage(ts_sched *s, const char *fn, ts_stage *stage) {
  if (!sched_check_stage(s, fn, 2, stage))
    return false;
  if (stage->write) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "%s: \"%s\" holds C's accumulators in registers; only a "
               "cache_read stage has a storage layout", fn, stage->name);
    return false;
  }
  return true;
}

int sched_stage_copies(const ts_stage *st) {
  return st->pipeline          ? st->pipeline
         : st->double_buffered ? 2 * st->buffer_tiles
                               : 1;
}

int64_t sched_shared_bytes(const ts_sched *s) {
  int64_t bytes = 0;
  for (int i = 0; i < s->nstages; i++) {
    const ts_stage *st = s->stages[i];
    if (!st->write && st->buf->scope == SCOPE_SHARED) /* C.local has no buf */
      bytes = ir_shared_slot_start(st->buf, bytes) +
              ir_buffer_bytes(st->buf) * sched_stage_copies(st);
  }
  return bytes;
}

ts_loop *ts_stage_axis(ts_stage *stage, int d) {
  return stage && !stage->write && (d == 0 || d == 1) ? stage->axes[d] : NULL;
}

int ts_stage_contiguous(const ts_stage *stage) {
  return stage && !stage->write ? stage->inner : -1;
}

const char *ts_stage_name(const ts_stage *stage) {
  return stage ? stage->name : "";
}

/* ---- The definition ------------------------------------------------------------- */

enum { MAX_DIM = 0x7fffffff }; /* each of m, n, k below 2^31 */
/* The most elements a matrix may span with its leading dimension, as
 * packed ones at the largest m, n and k do: offsets, and a float's bytes
 * from them, stay inside an int64_t. */
static const int64_t MAX_ELEMENTS = (int64_t)1 << 62;

/* Operand op's leading dimension as the definition gives it (0: packed):
 * at least the stored row, and short enough that the operand's elements
 * stay within MAX_ELEMENTS. */
static bool check_ld(ts_sched *s, const ts_gemm *def, ts_operand op) {
  static const char *const fields[TS_OPERAND_COUNT] = {"lda", "ldb", "ldc"};
  const int64_t given[TS_OPERAND_COUNT] = {def->lda, def->ldb, def->ldc};
  const char *field = fields[op.role], *name = ts_operand_name(op.role);
  int64_t ld = given[op.role];
  if (ld < 0)
    sched_fail(s, TS_ERR_BAD_SHAPE, NULL, "ts_matmul: def->%s is %lld, "
               "negative; give the elements from one stored row of %s to "
               "the next (>= %lld), or 0 for packed", field, (long long)ld,
               name, (long long)op.cols);
  else if (ld != 0 && ld < op.cols)
    sched_fail(s, TS_ERR_BAD_SHAPE, NULL, "ts_matmul: def->%s is %lld, "
               "smaller than %s's stored row of %lld elements (%s is %lld x "
               "%lld, layout %s); give %s >= %lld, or 0 for packed", field,
               (long long)ld, name, (long long)op.cols, name,
               (long long)op.rows, (long long)op.cols,
               ts_layout_name(def->layout), field, (long long)op.cols);
  else if (ld != 0 && op.rows > 1 &&
           op.ld > (MAX_ELEMENTS - op.cols) / (op.rows - 1))
    sched_fail(s, TS_ERR_BAD_SHAPE, NULL, "ts_matmul: def->%s is %lld: %s's "
               "%lld stored rows that far apart span more than 2^62 "
               "elements, past what an index may reach; give a smaller %s",
               field, (long long)ld, name, (long long)op.rows, field);
  else
    return true;
  return false;
}

/* The nominal values of those taken at launch are multiples of
 * def->runtime_multiple, as every launch's must be. */
static bool check_multiples(ts_sched *s, const ts_gemm *def) {
  for (int i = 0; i < LAUNCH_VALUES; i++) {
    int64_t v = launch_value_of(def, i), q = launch_value_multiple(def, i);
    const char *field = i < 3 ? "runtime_multiple" : "runtime_ld_multiple";
    if (launch_value_taken(def, i) && (v % q || v > LAUNCH_VALUE_MOST)) {
      sched_fail(s, TS_ERR_BAD_SHAPE, NULL, "ts_matmul: def->%s is %lld, "
                 "taken at launch as a multiple of def->%s (%lld) up to "
                 "%lld: give such a value, or a smaller def->%s",
                 launch_value_name(i), (long long)v, field, (long long)q,
                 (long long)LAUNCH_VALUE_MOST, field);
      return false;
    }
  }
  return true;
}

static bool check_gemm(ts_sched *s, const ts_gemm *def) {
  if (!def) {
    sched_fail(s, TS_ERR_NULL_ARG, NULL, "ts_matmul: argument 1 'def' is NULL");
    return false;
  }
  const int64_t dims[3] = {def->m, def->n, def->k};
  const char *names[3] = {"m", "n", "k"};
  for (int d = 0; d < 3; d++) {
    if (dims[d] < 1 || dims[d] > MAX_DIM) {
      sched_fail(s, TS_ERR_BAD_SHAPE, NULL,
                 "ts_matmul: def->%s must be in 1..%d (got %lld)", names[d],
                 MAX_DIM, (long long)dims[d]);
      return false;
    }
  }
  if ((unsigned)def->layout > TS_TT) {
    sched_fail(s, TS_ERR_BAD_LAYOUT,
               NULL, "ts_matmul: def->layout must be TS_NN, TS_NT, TS_TN or "
               "TS_TT (got %d)", (int)def->layout);
    return false;
  }
  const ts_dtype types[3] = {def->a_type, def->b_type, def->c_type};
  static const char *const type_names[3] = {"a_type", "b_type", "c_type"};
  for (int t = 0; t < 3; t++)
    if (!dtype_info_of(types[t])) {
      sched_fail(s, TS_ERR_BAD_ARG, NULL, "ts_matmul: def->%s must be TS_F32, "
                 "TS_F16 or TS_BF16 (got %d)", type_names[t], (int)types[t]);
      return false;
    }
  if (def->acc_type != TS_F32) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL, "ts_matmul: def->acc_type must be "
               "TS_F32: products are summed in fp32 (got %d)",
               (int)def->acc_type);
    return false;
  }
  if ((unsigned)def->math > TS_MATH_TF32 ||
      (def->math == TS_MATH_TF32 &&
       (def->a_type != TS_F32 || def->b_type != TS_F32))) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL, "ts_matmul: def->math must be "
               "TS_MATH_F32, or TS_MATH_TF32 with f32 A and B (got %d with "
               "A %s and B %s)", (int)def->math, ts_dtype_name(def->a_type),
               ts_dtype_name(def->b_type));
    return false;
  }
  if (!isfinite(def->alpha) || !isfinite(def->beta)) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "ts_matmul: alpha and beta must be finite (got %g, %g)",
               (double)def->alpha, (double)def->beta);
    return false;
  }
  for (int r = 0; r < TS_OPERAND_COUNT; r++)
    if (!check_ld(s, def, ts_gemm_operand(def, (ts_operand_role)r)))
      return false;
  if (def->runtime > TS_RUNTIME_SHAPE || def->runtime_multiple < 0 ||
      def->runtime_multiple > 64 || def->runtime_ld_multiple < 0 ||
      def->runtime_ld_multiple > 64) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL, "ts_matmul: def->runtime must be "
               "TS_RUNTIME_M, _N, _K and _LD or'ed (got %u), and "
               "def->runtime_multiple and runtime_ld_multiple in 0..64 (got "
               "%lld and %lld)", def->runtime,
               (long long)def->runtime_multiple,
               (long long)def->runtime_ld_multiple);
    return false;
  }
  return check_multiples(s, def);
}

/* The values taken at launch, as variables of the kernel's parameters. */
static void make_params(ts_sched *s) {
  static const char *const names[TS_VALUE_COUNT] = {
      [TS_VALUE_M] = "M", [TS_VALUE_N] = "N", [TS_VALUE_K] = "K",
      [TS_VALUE_LDA] = "lda", [TS_VALUE_LDB] = "ldb", [TS_VALUE_LDC] = "ldc"};
  static const struct { unsigned bit; ts_param_value v; } given[] = {
      {TS_RUNTIME_M, TS_VALUE_M}, {TS_RUNTIME_N, TS_VALUE_N},
      {TS_RUNTIME_K, TS_VALUE_K}, {TS_RUNTIME_LD, TS_VALUE_LDA},
      {TS_RUNTIME_LD, TS_VALUE_LDB}, {TS_RUNTIME_LD, TS_VALUE_LDC}};
  for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
    if (!(s->def.runtime & given[i].bit))
      continue;
    ir_var *v = ir_new_var(&s->arena, -1, names[given[i].v], VAR_PARAM,
                           LAUNCH_VALUE_MOST + 1);
    if (v) {
      v->value = given[i].v;
      v->divisor = launch_value_multiple(&s->def, (int)i);
    }
    s->param[given[i].v] = v;
  }
}

ir_expr *sched_value(ts_sched *s, ts_param_value v) {
  if (s->param[v])
    return ir_varref(&s->arena, s->param[v]);
  ts_operand a = ts_gemm_operand(&s->def, TS_OPERAND_A),
             b = ts_gemm_operand(&s->def, TS_OPERAND_B),
             c = ts_gemm_operand(&s->def, TS_OPERAND_C);
  int64_t n = v == TS_VALUE_M   ? s->def.m
              : v == TS_VALUE_N ? s->def.n
              : v == TS_VALUE_K ? s->def.k
              : v == TS_VALUE_LDA ? a.ld
              : v == TS_VALUE_LDB ? b.ld
                                  : c.ld;
  return ir_int(&s->arena, n);
}

/* The row length of an operand as stored: a packed one's leading
 * dimension, which follows the extents where they are taken at launch. */
static ir_expr *stored_row(ts_sched *s, ts_operand_role role) {
  static const ts_param_value ld[TS_OPERAND_COUNT] = {
      TS_VALUE_LDA, TS_VALUE_LDB, TS_VALUE_LDC};
  if (s->param[ld[role]])
    return ir_varref(&s->arena, s->param[ld[role]]);
  const int64_t given[TS_OPERAND_COUNT] = {s->def.lda, s->def.ldb, s->def.ldc};
  if (given[role])
    return ir_int(&s->arena, given[role]);
  /* A as stored is m x k (k x m transposed); B k x n (n x k); C m x n. */
  bool t = ts_gemm_operand(&s->def, role).transposed;
  ts_param_value cols = role == TS_OPERAND_A   ? (t ? TS_VALUE_M : TS_VALUE_K)
                        : role == TS_OPERAND_B ? (t ? TS_VALUE_K : TS_VALUE_N)
                                               : TS_VALUE_N;
  return sched_value(s, cols);
}

/* Operand `role` as a global buffer of op()'s shape (A m x k, B k x n,
 * C m x n), indexed as the computation reads it, its strides those of
 * its storage: its rows the leading dimension apart. */
static ir_buffer *operand_buffer(ts_sched *s, ts_operand_role role) {
  ts_operand op = ts_gemm_operand(&s->def, role);
  int64_t shape[2] = {op.transposed ? op.cols : op.rows,
                      op.transposed ? op.rows : op.cols};
  int64_t strides[2] = {op.transposed ? 1 : op.ld, op.transposed ? op.ld : 1};
  ir_buffer *b = ir_new_buffer(&s->arena, ts_operand_name(role), SCOPE_GLOBAL,
                               op.type, 2, shape, strides);
  if (!b || !s->def.runtime)
    return b;
  /* op()'s shape: A m x k, B k x n, C m x n. */
  static const ts_param_value dims[TS_OPERAND_COUNT][2] = {
      {TS_VALUE_M, TS_VALUE_K}, {TS_VALUE_K, TS_VALUE_N},
      {TS_VALUE_M, TS_VALUE_N}};
  for (int d = 0; d < 2; d++)
    if (s->param[dims[role][d]])
      b->shape_expr[d] = sched_value(s, dims[role][d]);
  ir_expr *row = stored_row(s, role);
  if (row->kind != E_INT)
    b->stride_expr[op.transposed ? 1 : 0] = row;
  return b;
}

static void make_buffers(ts_sched *s) {
  s->A = operand_buffer(s, TS_OPERAND_A);
  s->B = operand_buffer(s, TS_OPERAND_B);
  s->C = operand_buffer(s, TS_OPERAND_C);
  s->input[0] = s->A;
  s->input[1] = s->B;
}

static void make_nest(ts_sched *s) {
  ts_arena *a = &s->arena;
  ts_loop *l[3] = {
      ir_loop_sized(ir_new_loop(a, 0, "i", s->def.m, false, s),
                    sched_value(s, TS_VALUE_M)),
      ir_loop_sized(ir_new_loop(a, 1, "j", s->def.n, false, s),
                    sched_value(s, TS_VALUE_N)),
      ir_loop_sized(ir_new_loop(a, 2, "k", s->def.k, true, s),
                    sched_value(s, TS_VALUE_K)),
  };
  if (!l[0] || !l[1] || !l[2] || !sched_register_loops(s, l, 3))
    return;
  ir_stmt *body = ir_new_compute(a, ir_varref(a, l[0]->var),
                                 ir_varref(a, l[1]->var),
                                 ir_varref(a, l[2]->var), NULL);
  for (int d = 2; d >= 0; d--)
    body = ir_new_for(a, l[d], body);
  s->root = body;
}

ts_sched *ts_matmul_named(const ts_gemm *def, const char *name) {
  ts_sched *s = calloc(1, sizeof(*s));
  if (!s)
    return &nomem_sched;
  ts_arena_init(&s->arena);
  s->name = ts_arena_strdup(&s->arena, name ? name : "custom");
  if (def)
    s->def = *def;
  if (!check_gemm(s, def))
    return s;
  make_params(s);
  make_buffers(s);
  make_nest(s);
  if (s->arena.failed || !s->root)
    sched_fail(s, TS_ERR_NO_MEMORY, NULL, "ts_matmul: out of memory");
  return s;
}

ts_sched *ts_matmul(const ts_gemm *def) { return ts_matmul_named(def, NULL); }

void ts_sched_free(ts_sched *s) {
  if (!s || s == &nomem_sched)
    return;
  ts_arena_release(&s->arena);
  free(s->loops);
  free(s->trace);
  free(s->errmsg);
  free(s);
}

ts_status ts_sched_status(const ts_sched *s) {
  return s ? s->status : TS_ERR_NULL_ARG;
}

const char *ts_sched_errmsg(const ts_sched *s) {
  if (!s)
    return "schedule is NULL";
  if (s->status == TS_OK)
    return "";
  return s->errmsg ? s->errmsg : ts_strerror(s->status);
}

const ts_gemm *ts_sched_gemm(const ts_sched *s) { return s ? &s->def : NULL; }

const char *ts_sched_name(const ts_sched *s) {
  return s && s->name ? s->name : "";
}

/* ---- Loops by name -------------------------------------------------------------- */

/* No loop of that name: the loops there are, and the nearest. */
static void fail_unknown_loop(ts_sched *s, const char *name) {
  const char **names = malloc(sizeof(*names) * (size_t)(s->nloops + 1));
  if (!names) {
    sched_oom(s, "ts_get_loop");
    return;
  }
  int n = sched_loop_names(s, names, s->nloops + 1);
  ts_buf b;
  ts_buf_init(&b);
  sched_list_names(&b, name, names, n, "loops");
  char *list = ts_buf_take(&b);
  free(names);
  if (!list) {
    sched_oom(s, "ts_get_loop");
    return;
  }
  sched_fail(s, TS_ERR_UNKNOWN_LOOP, NULL,
             "ts_get_loop: no loop named \"%s\" in schedule \"%s\"%s", name,
             s->name, list);
  free(list);
}

ts_loop *(ts_get_loop)(ts_sched *s, const char *name) {
  if (!s || s->status != TS_OK)
    return NULL;
  if (!name) {
    sched_fail(s, TS_ERR_NULL_ARG, NULL, "ts_get_loop: argument 2 'name' is NULL");
    return NULL;
  }
  bool replaced = false;
  for (int i = 0; i < s->nloops; i++) {
    if (strcmp(s->loops[i]->name, name) == 0) {
      if (s->loops[i]->live)
        return s->loops[i];
      replaced = true;
    }
  }
  if (replaced)
    sched_fail(s, TS_ERR_LOOP_REPLACED, NULL,
               "ts_get_loop: loop \"%s\" was replaced by an earlier split or "
               "fuse", name);
  else
    fail_unknown_loop(s, name);
  return NULL;
}

const char *ts_loop_name(const ts_loop *loop) { return loop ? loop->name : ""; }

int64_t ts_loop_extent(const ts_loop *loop) { return loop ? loop->extent : 0; }
