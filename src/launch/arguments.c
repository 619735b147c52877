/*
 * ts_launch's arguments against the kernel, checked before anything
 * touches the device, so that a launch the kernel cannot run is refused
 * with the argument named and nothing launched.  The extents, alpha,
 * beta and leading dimensions are compiled into tessel's kernels: a
 * launch must give the ones the kernel was compiled for.
 */
#include "launcher.h"

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

static const char *const extent_names[3] = {"m", "n", "k"};
static const char *const ld_names[TS_OPERAND_COUNT] = {"lda", "ldb", "ldc"};

static ts_status check_extents(const ts_kernel *k, const ts_launch_args *a,
                               char *msg, size_t len) {
  const int64_t given[3] = {a->m, a->n, a->k};
  const int64_t built[3] = {k->def.m, k->def.n, k->def.k};
  for (int d = 0; d < 3; d++)
    if (given[d] != built[d])
      return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                    "%lld, but kernel \"%s\" was compiled for %s = %lld and "
                    "takes no other (its extents are compiled in): compile "
                    "it for %s = %lld", extent_names[d], (long long)given[d],
                    k->label, extent_names[d], (long long)built[d],
                    extent_names[d], (long long)given[d]);
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
  const ts_operand want = ts_gemm_operand(&k->def, r);
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
  if (ld != want.ld)
    return refuse(msg, len, TS_ERR_BAD_SHAPE, "ts_launch: argument %s is "
                  "%lld, but kernel \"%s\" was compiled for %s = %lld (its "
                  "leading dimensions are compiled in): compile it with "
                  "%s = %lld", ld_names[r], (long long)ld, k->label,
                  ld_names[r], (long long)want.ld, ld_names[r],
                  (long long)ld);
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
  return st == TS_OK ? check_workspace(k, a, msg, len) : st;
}
