/*
 * The fuzz case's calls of the primitives on loops (get, split, fuse,
 * reorder, bind, unroll, vectorize, partition, rename, swizzle, split-K,
 * wgmma batches in flight) and on the kernel (its blocks a
 * multiprocessor), each with its arguments drawn, and the start most GPU
 * schedules make: i and j tiled over blocks and threads.  Each call is
 * made on the schedule, written down as C and checked (gen_check.c).
 */
#include "gen_impl.h"

#include <stdio.h>
#include <string.h>

/* The most iterations a case's nest may reach, so that the executor checks
 * it in well under a second: a split past a loop's extent keeps its factor,
 * and splits of the one outer iteration it leaves would multiply the
 * iterations without end. */
#define MAX_WORK (4.0 * 1024 * 1024)

static const int64_t factors[] = {2, 3, 4, 8, 16, 32, 1, 5, 7, 64, 0, -4,
                                  INT64_MAX};

static int64_t factor_arg(fz_case *c) {
  uint32_t r = c->hostile ? fz_pick(c->src, 100) : fz_pick(c->src, 95);
  int n = (int)(sizeof(factors) / sizeof(factors[0]));
  if (r < 70)
    return factors[fz_pick(c->src, 6)];
  if (r < 95)
    return factors[6 + fz_pick(c->src, 4)];
  return factors[10 + fz_pick(c->src, (uint32_t)(n - 10))];
}

/* ---- The primitives on loops ------------------------------------------- */

void fz_op_get_loop(fz_case *c, const char *name) {
  int slot = fz_new_loop_slot(c);
  c->loops[slot] = ts_get_loop(c->s, name);
  ts_buf_printf(&c->prog, "  L[%d] = ts_get_loop(s, \"%s\");\n", slot, name);
  fz_after_call(c, ts_sched_status(c->s), "ts_get_loop");
}

void fz_op_get_loop_random(fz_case *c) {
  static const char *const base[] = {"i", "j", "k", "i.outer", "nope"};
  if (c->nloops && fz_chance(c, 70)) {
    const char *name = ts_loop_name(c->loops[fz_pick(c->src, (uint32_t)c->nloops)]);
    if (name[0]) {
      char copy[128];
      snprintf(copy, sizeof(copy), "%s", name);
      fz_op_get_loop(c, copy);
      return;
    }
  }
  fz_op_get_loop(c, base[fz_pick(c->src, 5)]);
}

/* How many times a split of `loop` by `factor` multiplies the iterations
 * (1 for a split that fails). */
static double split_growth(const ts_loop *loop, int64_t factor) {
  int64_t e = ts_loop_extent(loop);
  if (e < 1 || factor < 1 || factor > INT32_MAX)
    return 1.0;
  return (double)((e + factor - 1) / factor * factor) / (double)e;
}

void fz_op_split(fz_case *c, ts_loop *loop, const char *text, int index,
                     int64_t factor) {
  if (c->work * split_growth(loop, factor) > MAX_WORK)
    factor = 1;
  double growth = split_growth(loop, factor);
  bool no_outer = c->hostile && fz_chance(c, 3);
  int o = no_outer ? -1 : fz_new_loop_slot(c);
  int i = fz_new_loop_slot(c);
  ts_status st = ts_split(c->s, loop, factor, no_outer ? NULL : &c->loops[o],
                          &c->loops[i]);
  char out[16] = "NULL";
  if (!no_outer)
    snprintf(out, sizeof(out), "&L[%d]", o);
  ts_buf_printf(&c->prog, "  ts_split(s, %s, %lld, %s, &L[%d]);\n", text,
                (long long)factor, out, i);
  fz_after_call(c, st, "ts_split");
  if (st == TS_OK)
    c->work *= growth;
  if (st == TS_OK && index >= 0)
    c->gone[index] = true;
}

void fz_op_split_random(fz_case *c) {
  char text[32];
  int index;
  ts_loop *loop = fz_loop_arg_at(c, text, sizeof(text), &index);
  fz_op_split(c, loop, text, index, factor_arg(c));
}

void fz_op_fuse(fz_case *c) {
  char a[32], b[32];
  int ia, ib;
  ts_loop *outer = fz_loop_arg_at(c, a, sizeof(a), &ia);
  ts_loop *inner = fz_loop_arg_at(c, b, sizeof(b), &ib);
  int f = fz_new_loop_slot(c);
  ts_status st = ts_fuse(c->s, outer, inner, &c->loops[f]);
  ts_buf_printf(&c->prog, "  ts_fuse(s, %s, %s, &L[%d]);\n", a, b, f);
  fz_after_call(c, st, "ts_fuse");
  if (st == TS_OK && ia >= 0 && ib >= 0)
    c->gone[ia] = c->gone[ib] = true;
}

void fz_op_reorder_of(fz_case *c, int n, ts_loop *const loops[],
                          char text[][32]) {
  ts_status st = ts_reorder(c->s, n, loops);
  if (!loops) {
    ts_buf_printf(&c->prog, "  ts_reorder(s, %d, NULL);\n", n);
  } else {
    ts_buf_printf(&c->prog, "  ts_reorder(s, %d, (ts_loop *[]){", n);
    for (int i = 0; i < n; i++)
      ts_buf_printf(&c->prog, "%s%s", i ? ", " : "", text[i]);
    ts_buf_puts(&c->prog, "});\n");
  }
  fz_after_call(c, st, "ts_reorder");
}

void fz_op_reorder(fz_case *c) {
  ts_loop *loops[6];
  char text[6][32];
  int n = 2 + (int)fz_pick(c->src, 4);
  if (c->hostile && fz_chance(c, 3))
    n = (int)fz_pick(c->src, 2) - 1; /* 0 or -1 */
  for (int i = 0; i < n; i++) {
    loops[i] = fz_loop_arg(c, text[i], sizeof(text[i]));
    for (int j = 0; j < i && !c->hostile; j++)
      if (loops[j] == loops[i])
        n = i; /* plausible: distinct loops only */
  }
  fz_op_reorder_of(c, n, c->hostile && fz_chance(c, 3) ? NULL : loops, text);
}

static const char *const kind_names[] = {
    "TS_SERIAL",   "TS_UNROLLED", "TS_BLOCK_X",  "TS_BLOCK_Y",   "TS_BLOCK_Z",
    "TS_THREAD_X", "TS_THREAD_Y", "TS_THREAD_Z", "TS_VECTORIZED"};

void fz_op_bind_to(fz_case *c, ts_loop *loop, const char *text, int index,
                       ts_loop_kind kind) {
  ts_status st = ts_bind(c->s, loop, kind);
  if (st == TS_OK && index >= 0 && kind != TS_SERIAL)
    c->gone[index] = true;
  if (st == TS_OK && index >= 0 && kind >= TS_BLOCK_X && kind <= TS_BLOCK_Z &&
      c->nblock < 3)
    c->block[c->nblock++] = index;
  if ((unsigned)kind <= TS_VECTORIZED)
    ts_buf_printf(&c->prog, "  ts_bind(s, %s, %s);\n", text, kind_names[kind]);
  else
    ts_buf_printf(&c->prog, "  ts_bind(s, %s, (ts_loop_kind)%d);\n", text,
                  (int)kind);
  fz_after_call(c, st, "ts_bind");
}

void fz_op_bind(fz_case *c) {
  char text[32];
  int index;
  ts_loop *loop = fz_loop_arg_at(c, text, sizeof(text), &index);
  ts_loop_kind kind = !c->hostile ? (ts_loop_kind)(TS_BLOCK_X + fz_pick(c->src, 6))
                      : fz_chance(c, 3) ? (ts_loop_kind)42
                                     : (ts_loop_kind)fz_pick(c->src, 9);
  fz_op_bind_to(c, loop, text, index, kind);
}

/* unroll or vectorize */
void fz_op_mark(fz_case *c, bool vector) {
  char text[32];
  int index;
  ts_loop *loop = fz_loop_arg_at(c, text, sizeof(text), &index);
  ts_status st = vector ? ts_vectorize(c->s, loop) : ts_unroll(c->s, loop);
  const char *fn = vector ? "ts_vectorize" : "ts_unroll";
  ts_buf_printf(&c->prog, "  %s(s, %s);\n", fn, text);
  fz_after_call(c, st, fn);
  if (st == TS_OK && index >= 0)
    c->gone[index] = true;
}

/* ts_partition; a loop it takes accepts no further primitive that changes
 * it, so it leaves the pool as an unrolled one does. */
void fz_op_partition(fz_case *c) {
  char text[32];
  int index;
  ts_loop *loop = fz_loop_arg_at(c, text, sizeof(text), &index);
  ts_status st = ts_partition(c->s, loop);
  ts_buf_printf(&c->prog, "  ts_partition(s, %s);\n", text);
  fz_after_call(c, st, "ts_partition");
  if (st == TS_OK && index >= 0)
    c->gone[index] = true;
}

void fz_op_rename(fz_case *c) {
  static const char *const names[] = {"x", "tile", "i", "i.outer", "",
                                      "9a", "a b", NULL, "long"};
  char text[32], longname[201];
  ts_loop *loop = fz_loop_arg(c, text, sizeof(text));
  const char *name = names[fz_pick(c->src, c->hostile ? 9 : 2)];
  if (name && strcmp(name, "long") == 0) {
    memset(longname, 'a', 200);
    longname[200] = 0;
    name = longname;
  }
  ts_status st = ts_rename(c->s, loop, name);
  if (name)
    ts_buf_printf(&c->prog, "  ts_rename(s, %s, \"%s\");\n", text, name);
  else
    ts_buf_printf(&c->prog, "  ts_rename(s, %s, NULL);\n", text);
  fz_after_call(c, st, "ts_rename");
}

void fz_op_min_blocks(fz_case *c) {
  static const int counts[] = {1, 2, 3, 4, 8, 32, 0, 33};
  int n = counts[c->hostile && fz_chance(c, 20) ? 6 + fz_pick(c->src, 2)
                                             : fz_pick(c->src, 6)];
  ts_status st = ts_min_blocks_per_sm(c->s, n);
  ts_buf_printf(&c->prog, "  ts_min_blocks_per_sm(s, %d);\n", n);
  fz_after_call(c, st, "ts_min_blocks_per_sm");
}

/* Two of the loops bound to blockIdx in either order, or in a hostile
 * case any loops and groups below 1. */
void fz_op_swizzle(fz_case *c) {
  static const int64_t groups[] = {1, 2, 3, 4, 8, 64, 0, -3};
  char rows[32], cols[32];
  ts_loop *r, *k;
  if (c->nblock >= 2 && !(c->hostile && fz_chance(c, 30))) {
    int a = (int)fz_pick(c->src, (uint32_t)c->nblock), b = (int)fz_pick(c->src, 2);
    int ra = c->block[a], rb = c->block[(a + 1 + b) % c->nblock];
    r = c->loops[ra];
    k = c->loops[rb];
    snprintf(rows, sizeof(rows), "L[%d]", ra);
    snprintf(cols, sizeof(cols), "L[%d]", rb);
  } else {
    r = fz_loop_arg(c, rows, sizeof(rows));
    k = fz_loop_arg(c, cols, sizeof(cols));
  }
  int64_t g = groups[c->hostile && fz_chance(c, 20) ? 6 + fz_pick(c->src, 2)
                                                 : fz_pick(c->src, 6)];
  ts_status st = ts_swizzle(c->s, r, k, g);
  ts_buf_printf(&c->prog, "  ts_swizzle(s, %s, %s, %lld);\n", rows, cols,
                (long long)g);
  fz_after_call(c, st, "ts_swizzle");
}

/* The outermost reduction loop as most schedules name it, or -1. */
static int k_loop_index(const fz_case *c) {
  for (int i = 0; i < c->nloops; i++) {
    const char *name = ts_loop_name(c->loops[i]);
    if (!c->gone[i] && (!strcmp(name, "k") || !strcmp(name, "k.outer")))
      return i;
  }
  return -1;
}

/* The k loop, or in a hostile case (or where there is none) a loop
 * argument. */
static ts_loop *k_loop_arg(fz_case *c, char *text, size_t len, int *index) {
  *index = c->hostile ? -1 : k_loop_index(c);
  if (*index < 0)
    return fz_loop_arg_at(c, text, len, index);
  snprintf(text, len, "L[%d]", *index);
  return c->loops[*index];
}

void fz_op_split_k(fz_case *c) {
  static const int64_t parts_list[] = {2, 4, 3, 8, 1, 0, 70000};
  int64_t parts = parts_list[c->hostile && fz_chance(c, 20) ? 5 + fz_pick(c->src, 2)
                                                         : fz_pick(c->src, 5)];
  bool atomic = fz_chance(c, 30);
  char text[32];
  int index;
  ts_loop *loop = k_loop_arg(c, text, sizeof(text), &index);
  double growth = 1.0;
  int64_t e = ts_loop_extent(loop);
  if (parts >= 1 && parts <= 65535 && e >= 1)
    growth = (double)(parts * ((e + parts - 1) / parts)) / (double)e + 1.0;
  if (c->work * growth > MAX_WORK)
    parts = 1;
  int o = fz_new_loop_slot(c), i = fz_new_loop_slot(c);
  ts_status st = ts_split_k(c->s, loop, parts,
                            atomic ? TS_SPLIT_K_ATOMIC : TS_SPLIT_K_WORKSPACE,
                            &c->loops[o], &c->loops[i]);
  ts_buf_printf(&c->prog, "  ts_split_k(s, %s, %lld, %s, &L[%d], &L[%d]);\n",
                text, (long long)parts,
                atomic ? "TS_SPLIT_K_ATOMIC" : "TS_SPLIT_K_WORKSPACE", o, i);
  fz_after_call(c, st, "ts_split_k");
  if (st == TS_OK && parts > 1) {
    c->work *= growth;
    c->gone[o] = true; /* bound */
    if (index >= 0)
      c->gone[index] = true;
  }
}

/* ts_wgmma_in_flight on the k loop, or in a hostile case any loop and
 * counts out of range; lowering refuses it wherever the loop has no wgmma
 * (the Hopper cases draw it where it has). */
void fz_op_in_flight(fz_case *c) {
  static const int counts[] = {1, 2, 0, 3, -1, 7};
  int n = counts[c->hostile && fz_chance(c, 20) ? 4 + fz_pick(c->src, 2)
                                                : fz_pick(c->src, 4)];
  char text[32];
  int index;
  ts_loop *loop = k_loop_arg(c, text, sizeof(text), &index);
  ts_status st = ts_wgmma_in_flight(c->s, loop, n);
  ts_buf_printf(&c->prog, "  ts_wgmma_in_flight(s, %s, %d);\n", text, n);
  fz_after_call(c, st, "ts_wgmma_in_flight");
}

/* A start as most GPU schedules begin: i and j tiled over blocks and
 * threads, k split, with random tile sizes. */
void fz_gpu_skeleton(fz_case *c) {
  static const int64_t threads[] = {1, 2, 4, 8, 16, 32};
  fz_op_get_loop(c, "i");
  fz_op_get_loop(c, "j");
  fz_op_get_loop(c, "k");
  fz_op_split(c, c->loops[0], "L[0]", 0, threads[fz_pick(c->src, 6)]); /* L3, L4 */
  fz_op_split(c, c->loops[1], "L[1]", 1, threads[fz_pick(c->src, 6)]); /* L5, L6 */
  if (c->nloops != 7)
    return;
  char text[4][32] = {"L[3]", "L[5]", "L[4]", "L[6]"};
  ts_loop *order[4] = {c->loops[3], c->loops[5], c->loops[4], c->loops[6]};
  fz_op_reorder_of(c, 4, order, text);
  const ts_loop_kind kinds[4] = {TS_BLOCK_Y, TS_BLOCK_X, TS_THREAD_Y,
                                 TS_THREAD_X};
  for (int i = 0; i < 4; i++)
    if (fz_chance(c, 90))
      fz_op_bind_to(c, order[i], text[i], (int[]){3, 5, 4, 6}[i], kinds[i]);
  fz_op_split(c, c->loops[2], "L[2]", 2, factors[fz_pick(c->src, 6)]);
  if (fz_chance(c, 15))
    fz_op_split_k(c);
}
