/*
 * The GEMM definition's own vocabulary: a definition with cuBLAS's
 * defaults (ts_gemm_make) and the layouts' names.  Every stage reads
 * definitions, so they live below every stage.
 */
#include <string.h>

#include "tessel/types.h"

static const char *const layout_names[] = {"NN", "NT", "TN", "TT"};

const char *ts_layout_name(ts_layout layout) {
  return (unsigned)layout < 4 ? layout_names[layout] : "??";
}

int ts_layout_parse(const char *text) {
  for (int i = 0; text && i < 4; i++)
    if (strcmp(text, layout_names[i]) == 0)
      return i;
  return -1;
}

ts_gemm ts_gemm_make(int64_t m, int64_t n, int64_t k) {
  return (ts_gemm){.m = m, .n = n, .k = k, .layout = TS_NN, .alpha = 1.0f,
                   .beta = 0.0f};
}
