/*
 * The generated CUDA of every built-in schedule, as one digest a line:
 *
 *   NAME SHAPE LAYOUT TYPES DIGEST
 *
 * at three shapes (1x1x1, 999x1001x1003, 4096x4096x4096), in the four
 * layouts and the types it takes (f32, f16, bf16 for a SIMT schedule; f16,
 * bf16 and tf32 for a tensor-core one; with an fp32 C, and an f16 C for
 * f16), a schedule or lowering refusal printed as its status instead of a
 * digest.  A change that is not meant to change what is generated (a
 * reorganisation) is checked by the digests before and after being the
 * same: tests/golden/cuda_digests.txt holds them, and the golden test
 * compares (rewrite it with `cuda_digest > tests/golden/cuda_digests.txt`
 * where generated code changes on purpose).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel.h"

/* FNV-1a over the text: enough to tell two texts apart here. */
static uint64_t digest(const char *text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)text; *p; p++)
    h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

typedef struct {
  const char *name;
  ts_dtype ab, c;
  ts_math math;
} types;

static const types simt_types[] = {
    {"f32", TS_F32, TS_F32, TS_MATH_F32},
    {"f16", TS_F16, TS_F32, TS_MATH_F32},
    {"f16-c16", TS_F16, TS_F16, TS_MATH_F32},
    {"bf16", TS_BF16, TS_F32, TS_MATH_F32},
};
static const types tensor_types[] = {
    {"f16", TS_F16, TS_F32, TS_MATH_F32},
    {"f16-c16", TS_F16, TS_F16, TS_MATH_F32},
    {"bf16", TS_BF16, TS_F32, TS_MATH_F32},
    {"tf32", TS_F32, TS_F32, TS_MATH_TF32},
};

static void print_one(const ts_builtin *b, int64_t m, int64_t n, int64_t k,
                      ts_layout layout, const types *t) {
  ts_gemm g = ts_gemm_make(m, n, k);
  g.layout = layout;
  g.a_type = g.b_type = t->ab;
  g.c_type = t->c;
  g.math = t->math;
  ts_sched *s = ts_builtin_schedule(b->name, &g);
  ts_program *p = ts_lower(s);
  ts_sched_free(s);
  printf("%s %" PRId64 "x%" PRId64 "x%" PRId64 " %s %s ", b->name, m, n, k,
         ts_layout_name(layout), t->name);
  char *cuda = ts_program_status(p) == TS_OK ? ts_program_cuda(p) : NULL;
  if (cuda)
    printf("%016" PRIx64 "\n", digest(cuda));
  else
    printf("refused: %s\n", ts_strerror(ts_program_status(p)));
  free(cuda);
  ts_program_free(p);
}

int main(void) {
  static const int64_t shapes[][3] = {
      {1, 1, 1}, {999, 1001, 1003}, {4096, 4096, 4096}};
  for (int i = 0; i < ts_builtin_count(); i++) {
    const ts_builtin *b = ts_builtin_at(i);
    const types *ts = b->tensor_cores ? tensor_types : simt_types;
    int nt = b->tensor_cores
                 ? (int)(sizeof(tensor_types) / sizeof(tensor_types[0]))
                 : (int)(sizeof(simt_types) / sizeof(simt_types[0]));
    for (int s = 0; s < 3; s++)
      for (int l = 0; l < 4; l++)
        for (int t = 0; t < nt; t++)
          print_one(b, shapes[s][0], shapes[s][1], shapes[s][2],
                    (ts_layout)l, &ts[t]);
  }
  return 0;
}
