/*
 * Reading a program: its status, name, entry point, definition and launch,
 * its loop nest as text.  They sit here, beside the program's data
 * (program_ir.h), so that every stage that takes a program reads it
 * without calling lowering, which makes and frees it (src/lower/lower.c);
 * the conveniences that lower a schedule and use the program once are in
 * src/facade.c.
 */
#include <stdlib.h>

#include "printer.h"
#include "program_ir.h"
#include "tessel/program_read.h"

ts_status ts_program_status(const ts_program *p) {
  return p ? p->status : TS_ERR_NULL_ARG;
}

const char *ts_program_errmsg(const ts_program *p) {
  return p ? p->errmsg : "program is NULL";
}

const ts_gemm *ts_program_gemm(const ts_program *p) { return p ? &p->def : NULL; }
const char *ts_program_name(const ts_program *p) {
  return p && p->name ? p->name : "";
}
const char *ts_program_entry(const ts_program *p) {
  return p && p->entry ? p->entry : "";
}
int ts_program_min_blocks(const ts_program *p) { return p ? p->k.min_blocks : 0; }
/* The newest any kernel needs: a packing kernel that rounds to tf32 needs
 * sm_80 (cvt.rna.tf32) under a schedule's kernel that may not. */
int ts_program_min_arch(const ts_program *p) {
  int arch = 0;
  for (int i = 0; p && i < ts_program_kernel_count(p); i++)
    arch = p->order[i]->min_arch > arch ? p->order[i]->min_arch : arch;
  return p ? (arch > p->k.min_arch ? arch : p->k.min_arch) : 0;
}
bool ts_program_arch_specific(const ts_program *p) {
  return p && p->k.arch_specific;
}

ts_status ts_program_launch(const ts_program *p, ts_launch_geometry *out) {
  if (out)
    *out = (ts_launch_geometry){0}; /* zeros, not stale values,
            after a failure */
  if (!p || !out)
    return TS_ERR_NULL_ARG;
  if (p->status != TS_OK)
    return p->status;
  for (int d = 0; d < 3; d++) {
    out->grid[d] = p->k.grid[d];
    out->block[d] = p->k.block[d];
  }
  out->dynamic_shared = p->dynamic_shared;
  out->persistent = p->k.persistent;
  out->cluster = p->k.cluster;
  return TS_OK;
}

int ts_program_kernel_count(const ts_program *p) {
  return p && p->status == TS_OK ? p->nkernels : 0;
}

/* Kernel i in launch order, or NULL. */
static const ir_kernel *kernel_at(const ts_program *p, int i) {
  return i >= 0 && i < ts_program_kernel_count(p) ? p->order[i] : NULL;
}

const char *ts_program_kernel_entry(const ts_program *p, int i) {
  const ir_kernel *k = kernel_at(p, i);
  return k ? k->entry : "";
}

ts_status ts_program_kernel_launch(const ts_program *p, int i,
                                   ts_launch_geometry *out) {
  ts_status st = ts_program_launch(p, out);
  const ir_kernel *k = kernel_at(p, i);
  if (!out)
    return TS_ERR_NULL_ARG;
  if (st != TS_OK || !k) {
    *out = (ts_launch_geometry){0};
    return st != TS_OK ? st : TS_ERR_BAD_ARG;
  }
  for (int d = 0; d < 3; d++) {
    out->grid[d] = k->grid[d];
    out->block[d] = k->block[d];
  }
  out->dynamic_shared = k == &p->k ? p->dynamic_shared : 0;
  out->persistent = k->persistent;
  out->cluster = k->cluster;
  return TS_OK;
}

int64_t ts_program_workspace(const ts_program *p) {
  return p && p->status == TS_OK ? p->workspace : 0;
}

/* ---- Reading the lowered kernel --------------------------------------------- */

static void print_definition(ts_buf *b, const ts_program *p) {
  const ts_gemm *g = &p->def;
  ts_buf_printf(b, "// schedule \"%s\": C[%lld, %lld] = ", p->name,
                (long long)g->m, (long long)g->n);
  if (g->alpha != 1.0f) {
    ir_print_float(b, g->alpha, false);
    ts_buf_puts(b, " * ");
  }
  ts_buf_printf(b, "A[%lld, %lld] * B[%lld, %lld]", (long long)g->m,
                (long long)g->k, (long long)g->k, (long long)g->n);
  if (g->beta != 0.0f) {
    ts_buf_puts(b, " + ");
    ir_print_float(b, g->beta, false);
    ts_buf_puts(b, " * C");
  }
  ts_buf_printf(b, ", layout %s", ts_layout_name(g->layout));
  /* Leading dimensions past packed only: a packed text stays as it was. */
  for (int r = 0; r < TS_OPERAND_COUNT; r++) {
    ts_operand op = ts_gemm_operand(g, (ts_operand_role)r);
    if (op.ld != op.cols)
      ts_buf_printf(b, ", ld%c %lld", "abc"[r], (long long)op.ld);
  }
  ts_buf_puts(b, "\n");
}

/* The kernels' nests, each loop and buffer annotated with its maker
 * where `provenance`. */
static char *program_ir(const ts_program *p, bool provenance) {
  if (!p || p->status != TS_OK)
    return NULL;
  ts_buf b;
  ts_buf_init(&b);
  print_definition(&b, p);
  if (p->k.W)
    ts_buf_printf(&b, "// workspace W[%lld, %lld, %lld] (fp32, %lld bytes)\n",
                  (long long)p->k.W->shape[0], (long long)p->def.m,
                  (long long)p->def.n, (long long)ir_buffer_bytes(p->k.W));
  for (int w = 0; w < 2; w++)
    if (p->k.packed[w])
      ts_buf_printf(&b, "// workspace %s[%lld, %lld] (%s, k-major rows of "
                    "%lld, %lld bytes at byte %lld)\n", p->k.packed[w]->name,
                    (long long)p->k.packed[w]->shape[0],
                    (long long)p->k.packed[w]->shape[1],
                    ts_dtype_name(p->k.packed[w]->dtype),
                    (long long)p->k.packed[w]->strides[w == 0 ? 0 : 1],
                    (long long)ir_buffer_bytes(p->k.packed[w]),
                    (long long)p->k.packed[w]->workspace_offset);
  for (int i = 0; i < p->nkernels; i++) {
    const ir_kernel *k = p->order[i];
    if (p->nkernels > 1)
      ts_buf_printf(&b, "%s// kernel %d of %d: %s\n", i ? "\n" : "", i + 1,
                    p->nkernels, k->entry);
    ts_buf_printf(&b, "// grid (%lld, %lld, %lld), block (%lld, %lld, %lld)",
                  (long long)k->grid[0], (long long)k->grid[1],
                  (long long)k->grid[2], (long long)k->block[0],
                  (long long)k->block[1], (long long)k->block[2]);
    if (k->persistent)
      ts_buf_printf(&b, "; persistent: min(%lld, multiprocessors x %d) "
                    "blocks", (long long)k->grid[0], k->persistent);
    if (k->cluster > 1)
      ts_buf_printf(&b, "; clusters of %d blocks along x", k->cluster);
    ts_buf_puts(&b, "\n");
    if (provenance)
      ir_print_stmt_provenance(&b, k->body, 0);
    else
      ir_print_stmt(&b, k->body, 0, NULL);
  }
  return ts_buf_take(&b);
}

char *ts_program_ir(const ts_program *p) { return program_ir(p, false); }

char *ts_program_ir_provenance(const ts_program *p) {
  return program_ir(p, true);
}
