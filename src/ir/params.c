/*
 * A kernel's parameter list, written last by lowering (ir_kernel_set_params):
 * the operands it takes, each with the alignment its widest access needs,
 * the workspace, and the tensor maps its TMA copies and stores read, each
 * with the dimensions, row pitch and box it is encoded with.
 */
#include "ir.h"
#include "visit.h"

/* The tensor maps a kernel's copies (S_TMA) read: one an operand, as
 * given or ts_pack's copy of it, the box of its first copy (the executor
 * checks every copy against it). */
typedef struct {
  const ir_buffer *operand[2]; /* op(A)'s, op(B)'s */
  const ir_stmt *first[2];
  const ir_stmt *store; /* the first of C's stores (S_TMA_STORE) */
} map_scan;

static bool scan_tma(ir_visitor *v, const ir_stmt *s) {
  map_scan *m = v->ctx;
  if (s->kind == S_TMA_STORE && !m->store)
    m->store = s;
  if (s->kind == S_TMA)
    for (int w = 0; w < 2; w++)
      if (!m->first[w] && s->pipe.src == m->operand[w])
        m->first[w] = s;
  return true;
}

/* 1 + the value a size chosen at launch is (a VAR_PARAM variable); 0
 * for a number.  (An operand's sizes are its values themselves.) */
static int value_from(const ir_expr *e) {
  return e && e->kind == E_VAR && e->var->kind == VAR_PARAM
             ? 1 + (int)e->var->value
             : 0;
}

/* The map of operand `which` as the copy reads it: the operand's own
 * buffer, or for a packed view the workspace at the view's offset.  Its
 * dimensions are the view's logical ones (K, not the padded row), so the
 * TMA fills zeros past K and never reads a row's padding, which the pack
 * does not write; its rows lie 16 bytes apart by construction.  C's map
 * (a store's) is C's own, whose edges clip the store. */
static ir_param tensor_map(const ir_stmt *s, ts_param_buffer which) {
  const ir_buffer *b = s->pipe.src;
  int inner = b->strides[1] == 1 ? 1 : 0, outer = 1 - inner;
  return (ir_param){
      .p = {.kind = TS_PARAM_TENSOR_MAP,
            .buffer = b->workspace_view ? TS_PARAM_WORKSPACE : which,
            .offset = b->workspace_view ? b->workspace_offset : 0,
            .dtype = b->dtype, .read_only = s->kind == S_TMA,
            .dims = {b->shape[inner], b->shape[outer]},
            .row_bytes = b->strides[outer] * ts_dtype_size(b->dtype),
            .box = {s->pipe.box[0], s->pipe.box[1]}, .swizzle = 128,
            .dim_from = {value_from(b->shape_expr[inner]),
                         value_from(b->shape_expr[outer])},
            .pitch_from = value_from(b->stride_expr[outer])},
      .buf = b};
}

void ir_param_remap(ir_param *p) {
  if (p->p.kind != TS_PARAM_TENSOR_MAP || !p->buf)
    return;
  const ir_buffer *b = p->buf;
  int inner = b->strides[1] == 1 ? 1 : 0, outer = 1 - inner;
  p->p.dims[0] = b->shape[inner];
  p->p.dims[1] = b->shape[outer];
  p->p.row_bytes = b->strides[outer] * ts_dtype_size(b->dtype);
  p->p.dim_from[0] = p->p.dim_from[1] = p->p.pitch_from = 0;
}


/* The widest access of each operand, in bytes. */
typedef struct {
  const ir_buffer *operand[3];
  int bytes[3];
} access_scan;

static void note_access(access_scan *a, const ir_buffer *b, int lanes) {
  int bytes = b ? lanes * ts_dtype_size(b->dtype) : 0;
  for (int i = 0; i < 3; i++)
    if (b && b == a->operand[i] && bytes > a->bytes[i])
      a->bytes[i] = bytes;
}

static bool scan_load(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_LOAD)
    note_access(v->ctx, e->load.buf, e->load.lanes);
  return true;
}

static bool scan_store(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_STORE)
    note_access(v->ctx, s->store.buf, s->store.lanes);
  return true;
}

/* What each operand's address must be a multiple of: its widest access
 * (lowering proved every access's offset a multiple of its width), at
 * least one element. */
static void operand_alignment(const ir_kernel *k, int out[3]) {
  access_scan scan = {.operand = {k->A, k->B, k->C}};
  for (int i = 0; i < 3; i++)
    scan.bytes[i] = scan.operand[i] ? ts_dtype_size(scan.operand[i]->dtype)
                                    : 1;
  ir_visitor v = {.expr = scan_load, .stmt = scan_store, .ctx = &scan};
  ir_visit_stmt(&v, k->body);
  for (int i = 0; i < 3; i++)
    out[i] = scan.bytes[i];
}

/* The values taken at launch (VAR_PARAM) that a kernel reads: in its
 * statements, its loops' trip counts, its global buffers' dimensions and
 * strides, and its grid. */
typedef struct {
  bool used[TS_VALUE_COUNT];
} value_scan;

static bool scan_value(ir_visitor *v, const ir_expr *e) {
  if (e->kind == E_VAR && e->var->kind == VAR_PARAM)
    ((value_scan *)v->ctx)->used[e->var->value] = true;
  return true;
}

static bool scan_loop_size(ir_visitor *v, const ir_stmt *s) {
  if (s->kind == S_FOR)
    ir_visit_expr(v, s->for_.loop->size);
  if (s->kind == S_LANES)
    ir_visit_expr(v, s->lanes.loop->size);
  return true;
}

static void scan_buffer(ir_visitor *v, const ir_buffer *b) {
  for (int d = 0; b && d < b->ndim; d++) {
    ir_visit_expr(v, b->shape_expr[d]);
    ir_visit_expr(v, b->stride_expr[d]);
  }
}

static void values_read(const ir_kernel *k, bool used[TS_VALUE_COUNT]) {
  value_scan scan = {{false}};
  ir_visitor v = {.expr = scan_value, .stmt = scan_loop_size, .ctx = &scan};
  ir_visit_stmt(&v, k->body);
  const ir_buffer *bufs[3] = {k->A, k->B, k->C};
  for (int i = 0; i < 3; i++)
    scan_buffer(&v, bufs[i]);
  for (int d = 0; d < 3; d++)
    ir_visit_expr(&v, k->grid_size[d]);
  for (int i = 0; i < TS_VALUE_COUNT; i++)
    used[i] = scan.used[i];
}

bool ir_kernel_set_params(ts_arena *a, ir_kernel *k) {
  const ir_buffer *operands[3] = {k->A, k->B, k->C};
  int align[3];
  operand_alignment(k, align);
  ir_param *ps = ts_arena_alloc(a, (7 + TS_VALUE_COUNT) * sizeof(*ps));
  if (!ps)
    return false;
  int n = 0;
  for (int i = 0; i < 3; i++)
    if (operands[i])
      ps[n++] = (ir_param){.p = {.kind = TS_PARAM_BUFFER,
                                 .buffer = (ts_param_buffer)i,
                                 .dtype = operands[i]->dtype,
                                 .read_only = i < 2, .align = align[i]},
                           .buf = operands[i]};
  /* Split-K's partial sums are fp32; a packed view is cast from it. */
  if (k->W || k->packed[0] || k->packed[1])
    ps[n++] = (ir_param){.p = {.kind = TS_PARAM_BUFFER,
                               .buffer = TS_PARAM_WORKSPACE, .dtype = TS_F32,
                               .align = 256},
                         .buf = k->W};
  /* The extents and leading dimensions it takes at launch, in their
   * order (M, N, K, lda, ldb, ldc). */
  bool used[TS_VALUE_COUNT];
  values_read(k, used);
  for (int i = 0; i < TS_VALUE_COUNT; i++)
    if (used[i])
      ps[n++] = (ir_param){.p = {.kind = TS_PARAM_INT,
                                 .value = (ts_param_value)i}};
  map_scan scan = {.operand = {k->packed[0] ? k->packed[0] : k->A,
                               k->packed[1] ? k->packed[1] : k->B}};
  ir_visitor v = {.stmt = scan_tma, .ctx = &scan};
  ir_visit_stmt(&v, k->body);
  for (int w = 0; w < 2; w++)
    if (scan.first[w])
      ps[n++] = tensor_map(scan.first[w], w ? TS_PARAM_B : TS_PARAM_A);
  if (scan.store)
    ps[n++] = tensor_map(scan.store, TS_PARAM_C);
  k->params = ps;
  k->nparams = n;
  return true;
}
