/*
 * The fuzz case's calls of the primitives on buffers: the caches a
 * schedule reads and writes through (ts_cache_read, ts_cache_write), the
 * loops of their copies, their layout in memory, their pipelines and the
 * TMA that fills them, and ts_pack of an input.  Each call is made on the
 * schedule with its arguments drawn, written down as C and checked
 * (gen_check.c).
 */
#include "gen_impl.h"

#include <stdio.h>
#include <string.h>

/* ts_pack of an input, or (hostile) of C or NULL. */
void fz_op_pack(fz_case *c) {
  static const char *const buffers[] = {"A", "B", "C", NULL};
  const char *buffer = buffers[fz_pick(c->src, c->hostile ? 4 : 2)];
  ts_status st = ts_pack(c->s, buffer);
  if (buffer)
    ts_buf_printf(&c->prog, "  ts_pack(s, \"%s\");\n", buffer);
  else
    ts_buf_printf(&c->prog, "  ts_pack(s, NULL);\n");
  fz_after_call(c, st, "ts_pack");
}

static const char *scope_text(ts_scope scope) {
  return scope == TS_SHARED ? "TS_SHARED"
         : scope == TS_LOCAL ? "TS_LOCAL"
                             : "(ts_scope)3";
}

void fz_op_cache(fz_case *c, bool write) {
  static const char *const reads[] = {"A", "B", "A.shared", "B.shared",
                                      "A.local", "C", "Q", NULL};
  static const char *const writes[] = {"C", "C", "A", "C.local", NULL};
  const char *buffer = write ? writes[fz_pick(c->src, c->hostile ? 5 : 2)]
                             : reads[fz_pick(c->src, c->hostile ? 8 : 2)];
  if (!write && !c->hostile && c->nstages && c->stages[c->nstages - 1] &&
      fz_chance(c, 30))
    buffer = ts_stage_name(c->stages[c->nstages - 1]); /* a cache of a cache */
  uint32_t r = c->hostile ? fz_pick(c->src, 100) : 3 + fz_pick(c->src, 97);
  ts_scope scope = r < 3 ? (ts_scope)3 : (write ? r < 80 : r < 55)
                                            ? (write ? TS_LOCAL : TS_SHARED)
                                            : (write ? TS_SHARED : TS_LOCAL);
  char text[32], name[16] = "NULL", out[16] = "NULL";
  ts_loop *at = fz_loop_arg(c, text, sizeof(text));
  bool no_out = c->hostile && fz_chance(c, 3);
  int slot = no_out ? -1 : fz_new_stage_slot(c);
  ts_stage **stage = no_out ? NULL : &c->stages[slot];
  const char *fn = write ? "ts_cache_write" : "ts_cache_read";
  ts_status st = write ? ts_cache_write(c->s, buffer, scope, at, stage)
                       : ts_cache_read(c->s, buffer, scope, at, stage);
  if (buffer)
    snprintf(name, sizeof(name), "\"%s\"", buffer);
  if (!no_out)
    snprintf(out, sizeof(out), "&S[%d]", slot);
  ts_buf_printf(&c->prog, "  %s(s, %s, %s, %s, %s);\n", fn, name,
                scope_text(scope), text, out);
  fz_after_call(c, st, fn);
}

void fz_op_stage_axis(fz_case *c) {
  char text[32];
  ts_stage *stage = fz_stage_arg(c, text, sizeof(text));
  int d = c->hostile && fz_chance(c, 5) ? (fz_chance(c, 50) ? -1 : 2)
                                     : (int)fz_pick(c->src, 2);
  if (fz_chance(c, 50))
    d = ts_stage_contiguous(stage) >= 0 ? ts_stage_contiguous(stage) : d;
  int slot = fz_new_loop_slot(c);
  c->loops[slot] = ts_stage_axis(stage, d);
  ts_buf_printf(&c->prog, "  L[%d] = ts_stage_axis(%s, %d);\n", slot, text, d);
}

/* A copy loop split to a part the size of a block's side and bound to a
 * thread index, as a user lays out a shared copy by hand. */
void fz_op_bind_copy(fz_case *c) {
  static const int64_t sides[] = {1, 2, 4, 8, 16, 32};
  char text[32];
  fz_op_stage_axis(c);
  int slot = c->nloops - 1;
  if (fz_chance(c, 60)) {
    snprintf(text, sizeof(text), "L[%d]", slot);
    fz_op_split(c, c->loops[slot], text, slot, sides[fz_pick(c->src, 6)]);
    slot = c->nloops - 1 - (int)fz_pick(c->src, 2);
  }
  snprintf(text, sizeof(text), "L[%d]", slot);
  fz_op_bind_to(c, c->loops[slot], text, slot,
             (ts_loop_kind)(TS_THREAD_X + fz_pick(c->src, 3)));
}

/* A primitive taking a stage and a count (ts_pipeline,
 * ts_double_buffer_tiles) on one stage, or (as a user would, since the
 * shared stages of one loop pipeline together) on every shared stage with
 * one count.  ts_tma, which takes no count, comes as tma_call (n < 0). */
static void on_stages(fz_case *c, ts_stage *stage, const char *text,
                      const char *fn,
                      ts_status (*call)(ts_sched *, ts_stage *, int), int n) {
  bool all = stage && fz_chance(c, c->hostile ? 50 : 90);
  char count[16] = "";
  if (n >= 0)
    snprintf(count, sizeof(count), ", %d", n);
  for (int i = 0; i < (all ? c->nstages : 1); i++) {
    const char *name = all ? ts_stage_name(c->stages[i]) : "";
    if (all && !strstr(name, ".shared"))
      continue;
    ts_status st = call(c->s, all ? c->stages[i] : stage, n);
    if (all)
      ts_buf_printf(&c->prog, "  %s(s, S[%d]%s);\n", fn, i, count);
    else
      ts_buf_printf(&c->prog, "  %s(s, %s%s);\n", fn, text, count);
    fz_after_call(c, st, fn);
  }
}

static ts_status tma_call(ts_sched *s, ts_stage *stage, int unused) {
  (void)unused;
  return ts_tma(s, stage);
}

static void op_pipeline(fz_case *c, ts_stage *stage, const char *text) {
  static const int counts[] = {2, 3, 4, 8, 1, 9};
  int n = counts[c->hostile && fz_chance(c, 10) ? 4 + fz_pick(c->src, 2)
                                             : fz_pick(c->src, 4)];
  on_stages(c, stage, text, "ts_pipeline", ts_pipeline, n);
}

/* k tiles a copy: 1 is plain double buffering; 0 and 9 are refused. */
static void op_double_buffer_tiles(fz_case *c, ts_stage *stage,
                                   const char *text) {
  static const int counts[] = {2, 3, 4, 1, 8, 0, 9};
  int n = counts[c->hostile && fz_chance(c, 10) ? 5 + fz_pick(c->src, 2)
                                             : fz_pick(c->src, 5)];
  on_stages(c, stage, text, "ts_double_buffer_tiles", ts_double_buffer_tiles,
            n);
}

/* ts_tma, and in half the calls ts_warp_specialize after it (of 2 or 8
 * warps in some hostile ones), on one stage or every shared one; on a
 * random schedule mostly refused, by the primitive or at lowering. */
static void op_tma(fz_case *c, ts_stage *stage, const char *text) {
  static const int warps[] = {4, 4, 2, 8};
  int n = warps[fz_pick(c->src, c->hostile ? 4 : 2)];
  on_stages(c, stage, text, "ts_tma", tma_call, -1);
  if (fz_chance(c, 50))
    on_stages(c, stage, text, "ts_warp_specialize", ts_warp_specialize, n);
}

void fz_op_layout(fz_case *c) {
  static const int64_t pads[] = {1, 4, 0, 2, 8, 32, -1, 33};
  char text[32];
  ts_stage *stage = fz_stage_arg(c, text, sizeof(text));
  ts_status st;
  const char *fn;
  switch (fz_pick(c->src, 6)) {
  case 3: case 4: /* twice the weight: pipelines need more to lower */
    op_pipeline(c, stage, text);
    return;
  case 5:
    op_tma(c, stage, text);
    return;
  case 0:
    fn = "ts_storage_transpose";
    st = ts_storage_transpose(c->s, stage);
    ts_buf_printf(&c->prog, "  %s(s, %s);\n", fn, text);
    break;
  case 1: {
    int64_t pad = pads[c->hostile && fz_chance(c, 10) ? 6 + fz_pick(c->src, 2)
                                                   : fz_pick(c->src, 6)];
    fn = "ts_storage_pad";
    st = ts_storage_pad(c->s, stage, pad);
    ts_buf_printf(&c->prog, "  %s(s, %s, %lld);\n", fn, text, (long long)pad);
    break;
  }
  default:
    if (fz_chance(c, 50)) {
      op_double_buffer_tiles(c, stage, text);
      return;
    }
    fn = "ts_double_buffer";
    st = ts_double_buffer(c->s, stage);
    ts_buf_printf(&c->prog, "  %s(s, %s);\n", fn, text);
    break;
  }
  fz_after_call(c, st, fn);
}
