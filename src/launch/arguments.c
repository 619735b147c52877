/*
 * ts_launch's arguments against the kernel, checked before anything
 * touches the device, so that a launch the kernel cannot run is refused
 * with the argument named and nothing launched.  Alpha and beta are
 * compiled into tessel's kernels, and so are the extents and leading
 * dimensions that the definition does not take at launch (ts_gemm.runtime):
 * a launch must give the ones the kernel was compiled for.
 */
#include "launcher.h"

#include "../base/launch_values.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 4, 5))) static ts_status
refuse(char *msg, size_t len, ts_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, len, fmt, ap);
  va_end(ap);
  return code;
}

static const char *const ld_names[TS_OPERAND_COUNT] = {"lda", "ldb", "ldc"};

/* The kernel's definition at the launch's extents and leading
 * dimensions: what the operands are at this launch. */
static ts_gemm launch_gemm(const ts_kernel *k, const ts_launch_args *a) {
  ts_gemm g = k->def;
  g.m = a->m;
  g.n = a->n;
  g.k = a->k;
  g.lda = a->operand[TS_OPERAND_A].ld;
  g.ldb = a->operand[TS_OPERAND_B].ld;
  g.ldc = a->operand[TS_OPERAND_C].ld;
  return g;
}

int64_t launch_ld(const ts_kernel *k, const ts_launch_args *a,
                  ts_operand_role r) {
  ts_gemm g = launch_gemm(k, a);
  return ts_gemm_operand(&g, r).ld;
}

static ts_status check_extents(const ts_kernel *k, const ts_launch_args *a,
                               char *msg, size_t len) {
  const int64_t given[3] = {a->m, a->n, a->k};
  for (int d = 0; d < 3; d++) {
    int64_t built = launch_value_of(&k->def, d);
    int64_t multiple = launch_value_multiple(&k->def, d);
    const char *name = launch_value_name(d);
    if (!launch_value_taken(&k->def, d) && given[d] != built)
      return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                    "%lld, but kernel \"%s\" was compiled for %s = %lld and "
                    "takes no other (its extents are compiled in): compile "
                    "it for %s = %lld, or with %s chosen at launch "
                    "(def->runtime)", name, (long long)given[d], k->label,
                    name, (long long)built, name, (long long)given[d], name);
    if (launch_value_taken(&k->def, d) &&
        (given[d] < 1 || given[d] > LAUNCH_VALUE_MOST || given[d] % multiple))
      return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                    "%lld; kernel \"%s\" takes %s at launch in 1..%lld, a "
                    "multiple of %lld (def->runtime_multiple)", name,
                    (long long)given[d], k->label, name,
                    (long long)LAUNCH_VALUE_MOST, (long long)multiple);
  }
  return TS_OK;
}

/* The grid each entry point launches at these extents, within CUDA's
 * limits on its dimensions. */
static ts_status check_grid(const ts_kernel *k, const ts_launch_args *a,
                            char *msg, size_t len) {
  static const int64_t most[3] = {INT32_MAX, 65535, 65535};
  int64_t values[TS_VALUE_COUNT] = {[TS_VALUE_M] = a->m, [TS_VALUE_N] = a->n,
                                    [TS_VALUE_K] = a->k};
  for (int r = 0; r < TS_OPERAND_COUNT; r++)
    values[TS_VALUE_LDA + r] = launch_ld(k, a, (ts_operand_role)r);
  for (int i = 0; i < k->nentries; i++) {
    const kernel_entry *e = &k->entries[i];
    for (int d = 0; d < 3; d++) {
      int64_t blocks = e->launch.grid[d];
      if (e->grid_size[d].n &&
          !ts_formula_eval(&e->grid_size[d], values, &blocks))
        return refuse(msg, len, TS_ERR_BAD_ARG, "ts_launch: kernel \"%s\"'s "
                      "entry %s has a grid formula that does not evaluate: "
                      "the file is damaged; save it again", k->label,
                      e->name);
      if (blocks < 1 || blocks > most[d])
        return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: at m = %lld, "
                      "n = %lld, k = %lld kernel \"%s\"'s entry %s needs "
                      "%lld blocks along gridDim.%c, past CUDA's %lld",
                      (long long)a->m, (long long)a->n, (long long)a->k,
                      k->label, e->name, (long long)blocks, "xyz"[d],
                      (long long)most[d]);
    }
  }
  return TS_OK;
}

static ts_status check_scalars(const ts_kernel *k, const ts_launch_args *a,
                               char *msg, size_t len) {
  const float given[2] = {a->alpha, a->beta};
  const float built[2] = {k->def.alpha, k->def.beta};
  static const char *const names[2] = {"alpha", "beta"};
  for (int i = 0; i < 2; i++)
    if (memcmp(&given[i], &built[i], sizeof(float)) != 0)
      return refuse(msg, len, TS_ERR_BAD_ARG, "ts_launch: argument %s is "
                    "%g, but kernel \"%s\" was compiled with %s = %g (alpha "
                    "and beta are compiled in): compile it with %s = %g",
                    names[i], (double)given[i], k->label, names[i],
                    (double)built[i], names[i], (double)given[i]);
  return TS_OK;
}

/* The bytes operand r's address must be a multiple of: its element's,
 * each entry point's widest access of it (ts_param.align), and 16 where a
 * tensor map of it is a parameter (the TMA reads from a 16-byte aligned
 * address). */
static int64_t operand_alignment(const ts_kernel *k, ts_operand_role r,
                                 ts_dtype type, bool *by_tma) {
  int64_t align = ts_dtype_size(type);
  *by_tma = false;
  for (int i = 0; i < k->nentries; i++)
    for (int j = 0; j < k->entries[i].nparams; j++) {
      const ts_param *p = &k->entries[i].params[j];
      if ((int)p->buffer != (int)r)
        continue;
      int64_t need = p->kind == TS_PARAM_TENSOR_MAP ? 16
                     : p->kind == TS_PARAM_BUFFER   ? p->align
                                                    : 0;
      if (need > align) {
        align = need;
        *by_tma = p->kind == TS_PARAM_TENSOR_MAP;
      }
    }
  return align;
}

static ts_status check_operand(const ts_kernel *k, const ts_launch_args *a,
                               ts_operand_role r, char *msg, size_t len) {
  const ts_launch_operand *o = &a->operand[r];
  const ts_gemm at = launch_gemm(k, a);
  const ts_operand want = ts_gemm_operand(&at, r);
  const ts_operand built = ts_gemm_operand(&k->def, r);
  const char *name = ts_operand_name(r);
  if (o->type != want.type)
    return refuse(msg, len, TS_ERR_BAD_ARG, "ts_launch: argument %s holds "
                  "%s elements, but kernel \"%s\" takes %s in %s",
                  name, ts_dtype_name(o->type), k->label, name,
                  ts_dtype_name(want.type));
  if (!o->ptr)
    return refuse(msg, len, TS_ERR_NULL_ARG, "ts_launch: argument %s is a "
                  "null device pointer", name);
  bool by_tma;
  int64_t align = operand_alignment(k, r, want.type, &by_tma);
  if (o->ptr % (uint64_t)align)
    return refuse(msg, len, TS_ERR_BAD_ARG, "ts_launch: argument %s "
                  "(0x%llx) is not a multiple of %lld bytes, as kernel "
                  "\"%s\" accesses it (%s): pass an address aligned so",
                  name, (unsigned long long)o->ptr, (long long)align,
                  k->label, by_tma ? "the TMA's copies"
                                   : "its widest vector access");
  int64_t ld = o->ld ? o->ld : want.cols;
  if (ld < want.cols)
    return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                  "%lld, smaller than %s's stored row of %lld elements (%s "
                  "is %lld x %lld as stored, row-major): give %s >= %lld, or "
                  "0 for packed", ld_names[r], (long long)o->ld, name,
                  (long long)want.cols, name, (long long)want.rows,
                  (long long)want.cols, ld_names[r], (long long)want.cols);
  const int64_t compiled[TS_OPERAND_COUNT] = {k->def.lda, k->def.ldb,
                                              k->def.ldc};
  bool runtime = k->def.runtime & TS_RUNTIME_LD;
  /* Compiled in: the one given, or packed (which follows the extents). */
  int64_t fixed = compiled[r] ? compiled[r] : want.cols;
  if (!runtime && ld != fixed)
    return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                  "%lld, but kernel \"%s\" was compiled for %s = %lld (its "
                  "leading dimensions are compiled in): compile it with "
                  "%s = %lld, or with them chosen at launch (def->runtime)",
                  ld_names[r], (long long)ld, k->label, ld_names[r],
                  (long long)fixed, ld_names[r], (long long)ld);
  int64_t multiple = launch_value_multiple(&k->def, 3 + (int)r);
  if (runtime && ld > LAUNCH_VALUE_MOST)
    return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                  "%lld; kernel \"%s\" takes leading dimensions up to %lld",
                  ld_names[r], (long long)ld, k->label,
                  (long long)LAUNCH_VALUE_MOST);
  if (runtime && ld % multiple)
    return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                  "%lld; kernel \"%s\" takes leading dimensions that are "
                  "multiples of %lld (def->runtime_ld_multiple)", ld_names[r],
                  (long long)ld, k->label, (long long)multiple);
  /* A kernel compiled for other extents indexes in int where its own
   * operands fit one. */
  if (k->def.runtime && ts_operand_elements(&want) > INT32_MAX &&
      ts_operand_elements(&built) <= INT32_MAX)
    return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: %s spans %lld "
                  "elements at this launch (%lld rows %lld apart), past the "
                  "2^31 kernel \"%s\" indexes in int; compile it at a "
                  "nominal shape that large", name,
                  (long long)ts_operand_elements(&want), (long long)want.rows,
                  (long long)ld, k->label);
  return TS_OK;
}

static ts_status check_workspace(const ts_kernel *k, const ts_launch_args *a,
                                 char *msg, size_t len) {
  if (k->workspace <= 0 || !a->workspace)
    return TS_OK;
  if (a->workspace_bytes < k->workspace)
    return refuse(msg, len, TS_ERR_BAD_ARG, "ts_launch: the workspace given "
                  "is %lld bytes; kernel \"%s\" needs %lld "
                  "(ts_kernel_workspace)", (long long)a->workspace_bytes,
                  k->label, (long long)k->workspace);
  if (a->workspace % 256)
    return refuse(msg, len, TS_ERR_BAD_ARG, "ts_launch: the workspace "
                  "(0x%llx) is not 256-byte aligned, as kernel \"%s\" "
                  "lays out its parts", (unsigned long long)a->workspace,
                  k->label);
  return TS_OK;
}

ts_status launch_check(const ts_kernel *k, const ts_launch_args *a,
                       char *msg, size_t len) {
  if (!k || !a)
    return refuse(msg, len, TS_ERR_NULL_ARG, "ts_launch: the %s is NULL",
                  k ? "arguments" : "kernel");
  if (k->status != TS_OK)
    return refuse(msg, len, k->status, "ts_launch: kernel \"%s\" did not "
                  "compile: %s", k->label ? k->label : "", k->errmsg);
  if (k->hand_written)
    return refuse(msg, len, TS_ERR_BAD_ARG, "ts_launch: kernel \"%s\" is "
                  "hand-written (ts_compile_cuda), whose geometry only "
                  "ts_bench reads; ts_launch runs tessel's kernels",
                  k->label);
  ts_status st = check_extents(k, a, msg, len);
  if (st == TS_OK)
    st = check_scalars(k, a, msg, len);
  for (int r = 0; r < TS_OPERAND_COUNT && st == TS_OK; r++)
    st = check_operand(k, a, (ts_operand_role)r, msg, len);
  if (st == TS_OK)
    st = check_grid(k, a, msg, len);
  return st == TS_OK ? check_workspace(k, a, msg, len) : st;
}
