/*
 * Reading a compiled kernel, and freeing it: what a program that only
 * launches kernels needs of the compile stage, so nothing here calls NVRTC
 * (the launcher carries this file; tests/test_launcher_deps.sh checks).
 */
#include "kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

ts_kernel kernel_nomem = {.status = TS_ERR_NO_MEMORY,
                          .errmsg = "ts_compile: out of memory"};

ts_kernel *kernel_fail(ts_kernel *k, ts_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(k->errmsg, sizeof(k->errmsg), fmt, ap);
  va_end(ap);
  k->status = code;
  return k;
}

void ts_kernel_free(ts_kernel *k) {
  if (!k || k == &kernel_nomem)
    return;
  if (k->launch_state && k->release_launch)
    k->release_launch(k->launch_state);
  free(k->log);
  free(k->name);
  free(k->label);
  free(k->cubin);
  for (int i = 0; i < k->nimages; i++)
    free(k->images[i].cubin);
  free(k->images);
  free(k->source);
  for (int i = 0; k->entries && i < k->nentries; i++) {
    free(k->entries[i].name);
    free(k->entries[i].params);
  }
  free(k->entries);
  free(k);
}

ts_status ts_kernel_status(const ts_kernel *k) {
  return k ? k->status : TS_ERR_NULL_ARG;
}

const char *ts_kernel_errmsg(const ts_kernel *k) {
  return k ? k->errmsg : "kernel is NULL";
}

const char *ts_kernel_log(const ts_kernel *k) {
  return k && k->log ? k->log : "";
}

ts_ptxas_info ts_kernel_ptxas(const ts_kernel *k) {
  ts_ptxas_info none = {0};
  return k ? k->ptxas : none;
}

const char *ts_kernel_arch(const ts_kernel *k) { return k ? k->arch : ""; }

const char *ts_kernel_name(const ts_kernel *k) {
  return k && k->label ? k->label : "";
}

const ts_gemm *ts_kernel_gemm(const ts_kernel *k) { return k ? &k->def : NULL; }

int ts_kernel_from_cache(const ts_kernel *k) { return k && k->from_cache; }
uint64_t ts_kernel_source_hash(const ts_kernel *k) {
  return k ? k->source_hash : 0;
}

int ts_kernel_count(const ts_kernel *k) {
  return !k || k->status != TS_OK ? 0 : k->nentries;
}

const char *ts_kernel_entry(const ts_kernel *k, int i) {
  if (i < 0 || i >= ts_kernel_count(k))
    return "";
  return k->entries[i].name;
}

ts_status ts_kernel_launch(const ts_kernel *k, int i, ts_launch_geometry *out) {
  if (!out)
    return TS_ERR_NULL_ARG;
  *out = (ts_launch_geometry){0};
  if (!k)
    return TS_ERR_NULL_ARG;
  if (k->status != TS_OK)
    return k->status;
  if (i < 0 || i >= ts_kernel_count(k))
    return TS_ERR_BAD_ARG;
  *out = k->entries[i].launch;
  return TS_OK;
}

int64_t ts_kernel_workspace(const ts_kernel *k) {
  return k && k->status == TS_OK ? k->workspace : 0;
}

const char *ts_kernel_source(const ts_kernel *k) {
  return k && k->source ? k->source : "";
}

const void *ts_kernel_cubin(const ts_kernel *k, size_t *size) {
  bool have = k && k->status == TS_OK && k->cubin;
  if (size)
    *size = have ? k->cubin_size : 0;
  return have ? k->cubin : NULL;
}


int ts_kernel_image_count(const ts_kernel *k) {
  return k && k->status == TS_OK && k->cubin ? 1 + k->nimages : 0;
}

const void *ts_kernel_image(const ts_kernel *k, int i, const char **arch,
                            size_t *size) {
  bool have = i >= 0 && i < ts_kernel_image_count(k);
  const char *a = !have ? "" : i == 0 ? k->arch : k->images[i - 1].arch;
  const void *cubin = !have ? NULL : i == 0 ? k->cubin : k->images[i - 1].cubin;
  if (arch)
    *arch = a;
  if (size)
    *size = !have ? 0 : i == 0 ? k->cubin_size : k->images[i - 1].size;
  return cubin;
}
