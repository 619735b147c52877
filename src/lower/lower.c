/*
 * The lowering pipeline, one straight list of passes:
 *
 *   reduction   place the accumulator, its initialization and the
 *               alpha/beta epilogue around the k loops
 *   stages      spread shared copies over the threads, add barriers,
 *               build double-buffered pipelines, allocate caches
 *   simplify    fold constants and cancel terms, drop guards proven true
 *   guards      hoist each guard out of the loops it does not depend on
 *   vectors     mark the accesses of vectorized loops that are contiguous
 *               and aligned
 *   launch      read grid and block dimensions off the bound loops
 *   verify      check the result is well formed
 *
 * TESSEL_DUMP=after-<pass> prints the IR after that pass to stderr.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/analysis.h"
#include "../ir/printer.h"

static void dump(const char *pass, const ir_stmt *s) {
  const char *want = getenv("TESSEL_DUMP");
  if (!want || strncmp(want, "after-", 6) != 0 || strcmp(want + 6, pass) != 0)
    return;
  ts_buf b;
  ts_buf_init(&b);
  ir_print_stmt(&b, s, 0, NULL);
  char *text = ts_buf_take(&b);
  fprintf(stderr, "// after %s\n%s", pass, text ? text : "(out of memory)\n");
  free(text);
}

ir_kernel *ts_lower(ts_sched *s) {
  if (!s || s->status != TS_OK)
    return NULL;
  if (s->lowered)
    return s->lowered;
  ts_arena *a = &s->arena;
  ir_kernel *k = ts_arena_alloc(a, sizeof(*k));
  if (!k) {
    sched_fail(s, TS_ERR_NO_MEMORY, NULL, "ts_lower: out of memory");
    return NULL;
  }
  ir_stmt *body = lower_reduction(s, s->root);
  if (!body)
    return NULL; /* the pass recorded why */
  dump("reduction", body);
  body = lower_stages(s, body);
  if (!body)
    return NULL; /* the pass recorded why */
  dump("stages", body);
  body = ir_simplify_stmt(a, body);
  if (body)
    dump("simplify", body);
  body = body ? lower_guards(a, body) : NULL;
  if (body)
    dump("guards", body);
  body = body ? lower_vectors(a, body) : NULL;
  if (!body || a->failed) {
    sched_fail(s, TS_ERR_NO_MEMORY, NULL, "ts_lower: out of memory");
    return NULL;
  }
  dump("vectors", body);
  k->body = body;
  k->A = s->A;
  k->B = s->B;
  k->C = s->C;
  lower_launch_dims(body, k);
  k->nvars = s->next_var;
  k->min_blocks = s->min_blocks;
  int64_t threads = k->block[0] * k->block[1] * k->block[2];
  if (k->min_blocks * threads > SCHED_MAX_THREADS_PER_SM) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL,
               "ts_lower: ts_min_blocks_per_sm asks for %d blocks of %lld "
               "threads on one multiprocessor, %lld threads; it holds at "
               "most %d", k->min_blocks, (long long)threads,
               (long long)(k->min_blocks * threads), SCHED_MAX_THREADS_PER_SM);
    return NULL;
  }
  const char *bad = lower_verify(a, k);
  if (bad) {
    sched_fail(s, TS_ERR_BAD_ARG, NULL, "ts_lower: malformed kernel: %s", bad);
    return NULL;
  }
  s->lowered = k;
  return k;
}

/* ---- Reading the lowered kernel --------------------------------------------- */

char *ts_print_ir(ts_sched *s) {
  ir_kernel *k = ts_lower(s);
  if (!k)
    return NULL;
  const ts_gemm *g = &s->def;
  ts_buf b;
  ts_buf_init(&b);
  ts_buf_printf(&b, "// schedule \"%s\": C[%lld, %lld] = ", s->name,
                (long long)g->m, (long long)g->n);
  if (g->alpha != 1.0f) {
    ir_print_float(&b, g->alpha, false);
    ts_buf_puts(&b, " * ");
  }
  ts_buf_printf(&b, "A[%lld, %lld] * B[%lld, %lld]", (long long)g->m,
                (long long)g->k, (long long)g->k, (long long)g->n);
  if (g->beta != 0.0f) {
    ts_buf_puts(&b, " + ");
    ir_print_float(&b, g->beta, false);
    ts_buf_puts(&b, " * C");
  }
  ts_buf_printf(&b, ", layout %s\n", ts_layout_name(g->layout));
  ts_buf_printf(&b, "// grid (%lld, %lld, %lld), block (%lld, %lld, %lld)\n",
                (long long)k->grid[0], (long long)k->grid[1],
                (long long)k->grid[2], (long long)k->block[0],
                (long long)k->block[1], (long long)k->block[2]);
  ir_print_stmt(&b, k->body, 0, NULL);
  return ts_buf_take(&b);
}

ts_status ts_launch_dims(ts_sched *s, ts_launch *out) {
  if (!s || !out)
    return TS_ERR_NULL_ARG;
  ir_kernel *k = ts_lower(s);
  if (!k)
    return s->status;
  for (int d = 0; d < 3; d++) {
    out->grid[d] = k->grid[d];
    out->block[d] = k->block[d];
  }
  out->dynamic_shared =
      k->shared_bytes > SCHED_STATIC_SHARED ? k->shared_bytes : 0;
  return TS_OK;
}
