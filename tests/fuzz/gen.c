/*
 * One fuzz case, run: a random definition (gen_definition.c), then a
 * random primitive sequence in the mix drawn here (the primitives' calls
 * are in gen_loops.c and gen_stages.c), or a space's knobs (fuzz_knobs.c),
 * or a Hopper warpgroup schedule (fuzz_hopper.c); each call made on a
 * schedule and written down as C, the case's program that this file
 * begins and ends, then the checks of gen.h (gen_check.c) and the report
 * of a failure.
 */
#include "gen_impl.h"

#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "fuzz_knobs.h"
#include "tessel.h"

static fz_case *running;

const char *fz_current_program(void) {
  return running && running->prog.data ? running->prog.data : "";
}

/* ---- The case as C -------------------------------------------------------- */

static const char *type_constant(ts_dtype t) {
  return t == TS_F16 ? "TS_F16" : t == TS_BF16 ? "TS_BF16" : "TS_F32";
}

/* The program up to the definition, which every case starts with. */
static void program_head(fz_case *c) {
  ts_buf_printf(&c->prog,
                "/* tessel schedule fuzzer case, seed 0x%016llx */\n"
                "#include <stdio.h>\n#include <stdlib.h>\n"
                "#include <tessel.h>\n\n"
                "int main(void) {\n"
                "  ts_gemm def = ts_gemm_make(%lld, %lld, %lld);\n"
                "  def.layout = TS_%s;\n  def.alpha = %#.6gf;\n  def.beta = %#.6gf;\n"
                "  def.a_type = %s;\n  def.b_type = %s;\n  def.c_type = %s;\n",
                (unsigned long long)c->seed, (long long)c->def.m,
                (long long)c->def.n, (long long)c->def.k,
                ts_layout_name(c->def.layout), (double)c->def.alpha,
                (double)c->def.beta, type_constant(c->def.a_type),
                type_constant(c->def.b_type), type_constant(c->def.c_type));
  if (c->def.math == TS_MATH_TF32)
    ts_buf_puts(&c->prog, "  def.math = TS_MATH_TF32;\n");
  const int64_t ld[3] = {c->def.lda, c->def.ldb, c->def.ldc};
  for (int r = 0; r < 3; r++)
    if (ld[r])
      ts_buf_printf(&c->prog, "  def.ld%c = %lld;\n", "abc"[r],
                    (long long)ld[r]);
  if (c->def.runtime)
    ts_buf_printf(&c->prog, "  def.runtime = TS_RUNTIME_SHAPE;\n"
                  "  def.runtime_ld_multiple = %lld;\n",
                  (long long)c->def.runtime_ld_multiple);
}

static void begin_program(fz_case *c) {
  program_head(c);
  ts_buf_printf(&c->prog,
                "  ts_sched *s = ts_matmul(&def), *other = ts_matmul(&def);\n"
                "  ts_loop *F = ts_get_loop(other, \"i\");\n"
                "  ts_loop *L[%d] = {0};\n  ts_stage *S[%d] = {0};\n",
                MAX_LOOPS, MAX_STAGES);
}

static void end_program(fz_case *c) {
  ts_buf_printf(&c->prog,
                "  char msg[4096];\n"
                "  ts_status st = ts_check(s, 0x%016llxull, msg, sizeof(msg));\n"
                "  printf(\"%%s\\n%%s\\n\", ts_strerror(st), msg);\n",
                (unsigned long long)c->seed);
  if (c->def.runtime) { /* and at another shape, as a launch runs it */
    ts_gemm at = fz_launch_shape(c);
    ts_buf_printf(&c->prog,
                  "  ts_gemm at = def;\n  at.m = %lld;\n  at.n = %lld;\n"
                  "  at.k = %lld;\n  at.lda = %lld;\n  at.ldb = %lld;\n"
                  "  at.ldc = %lld;\n  ts_program *p = ts_lower(s);\n"
                  "  if (st == TS_OK)\n"
                  "    st = ts_program_check_at(p, &at, 0x%016llxull, msg, "
                  "sizeof(msg));\n"
                  "  printf(\"at %%lldx%%lldx%%lld: %%s\\n%%s\\n\", "
                  "(long long)at.m, (long long)at.n, (long long)at.k, "
                  "ts_strerror(st), msg);\n  ts_program_free(p);\n",
                  (long long)at.m, (long long)at.n, (long long)at.k,
                  (long long)at.lda, (long long)at.ldb, (long long)at.ldc,
                  (unsigned long long)c->seed);
  }
  if (!c->knobs)
    ts_buf_puts(&c->prog, "  (void)L; (void)S; (void)F;\n"
                          "  ts_sched_free(other);\n");
  ts_buf_puts(&c->prog, "  ts_sched_free(s);\n  return st != TS_OK;\n}\n");
}

static char *make_report(fz_case *c) {
  ts_buf r;
  ts_buf_init(&r);
  ts_buf_printf(&r, "fuzz case 0x%016llx failed: %s\nschedule status: %s\n%s\n"
                "The case as C:\n%s", (unsigned long long)c->seed, c->why,
                c->s ? ts_strerror(ts_sched_status(c->s)) : "no schedule",
                c->s ? ts_sched_errmsg(c->s) : "",
                c->prog.data ? c->prog.data : "(out of memory)\n");
  return ts_buf_take(&r);
}

/* ---- The kinds of case ---------------------------------------------------- */

/* The case's schedule and the other one its hostile calls pass loops of. */
static void begin_schedule(fz_case *c) {
  begin_program(c);
  c->s = ts_matmul(&c->def);
  c->other = ts_matmul(&c->def);
  c->foreign = ts_get_loop(c->other, "i");
}

/* One primitive, drawn by its weight in the mix. */
static void random_op(fz_case *c) {
  uint32_t r = fz_pick(c->src, 100);
  if (r < 20) fz_op_split_random(c);
  else if (r < 27) fz_op_fuse(c);
  else if (r < 37) fz_op_reorder(c);
  else if (r < 49) fz_op_bind(c);
  else if (r < 55) fz_op_mark(c, false);
  else if (r < 58) fz_op_rename(c);
  else if (r < 72) fz_op_cache(c, false);
  else if (r < 78) fz_op_cache(c, true);
  else if (r < 90 && c->nstages == 0 && !c->hostile) fz_op_cache(c, false);
  else if (r < 82) fz_op_stage_axis(c);
  else if (r < 84) fz_op_bind_copy(c);
  else if (r < 90) fz_op_layout(c);
  else if (r < 94) fz_op_mark(c, true);
  else if (r < 95 && fz_chance(c, 50)) fz_op_min_blocks(c);
  else if (r < 95) fz_op_in_flight(c);
  else if (r < 96) fz_op_swizzle(c);
  else if (r < 98) fz_op_split_k(c);
  else if (r < 99) fz_op_partition(c);
  else if (fz_chance(c, 50)) fz_op_pack(c);
  else fz_op_get_loop_random(c);
}

/* A random sequence of primitives, plausible or hostile. */
static void primitive_case(fz_case *c) {
  fz_leading_dimensions(c, false);
  fz_runtime_extents(c);
  begin_schedule(c);
  c->hostile = fz_chance(c, 40);
  if (fz_chance(c, 60))
    fz_gpu_skeleton(c);
  int nops = 1 + (int)fz_pick(c->src, c->hostile ? MAX_OPS : MAX_OPS / 2);
  for (int i = 0; i < nops && !c->why[0]; i++)
    random_op(c);
}

/* A space's schedule in a drawn configuration (fuzz_knobs.c), perhaps at a
 * larger definition; no schedule when its text does not parse. */
static void knob_case(fz_case *c) {
  c->knobs = true;
  fz_knob_definition(c->src, &c->def);
  fz_leading_dimensions(c, true);
  fz_runtime_extents(c);
  program_head(c);
  c->s = fz_knob_schedule(c->src, &c->def, &c->prog, c->why, sizeof(c->why));
  /* Without a schedule the parser refused the text: a refusal too. */
  c->status = c->s ? ts_sched_status(c->s) : TS_ERR_BAD_ARG;
}

/* A warpgroup schedule with the Hopper primitives (fuzz_hopper.c). */
static void hopper_case(fz_case *c) {
  c->hopper = true;
  fz_hopper_definition(c);
  fz_leading_dimensions(c, true);
  fz_runtime_extents(c);
  begin_schedule(c);
  fz_hopper_case(c);
}

/* What the case's schedule calls, from its trace. */
static void note_calls(const fz_case *c, fz_result *res) {
  char *trace = c->s ? ts_print_trace(c->s) : NULL;
  res->tensorized = trace && strstr(trace, "ts_tensorize(");
  res->tma = trace && strstr(trace, "ts_tma(");
  res->warpspec = trace && strstr(trace, "ts_warp_specialize(");
  res->in_flight = trace && strstr(trace, "ts_wgmma_in_flight(");
  res->persistent = trace && strstr(trace, "ts_persistent(");
  res->tma_store = trace && strstr(trace, "\"C\", TS_SHARED");
  res->cluster = trace && strstr(trace, "ts_cluster(");
  res->pingpong = trace && strstr(trace, "ts_pingpong(");
  res->runtime = c->def.runtime != 0;
  free(trace);
  res->layout = c->def.layout;
  res->a_type = c->def.a_type;
  res->c_type = c->def.c_type;
}

/* The case's first draws: its definition, then whether it takes a space's
 * knobs. */
static bool draw_kind(fz_case *c) {
  fz_random_definition(c);
  return fz_chance(c, FZ_KNOB_PERCENT);
}

bool fz_draws_knobs(fz_source src) {
  fz_case c = {.src = &src};
  return draw_kind(&c);
}

fz_result fz_run_case(fz_source *src, uint64_t seed) {
  fz_case c = {.src = src, .seed = seed};
  ts_buf_init(&c.prog);
  running = &c;
  if (draw_kind(&c))
    knob_case(&c);
  else if (fz_chance(&c, FZ_HOPPER_PERCENT))
    hopper_case(&c);
  else
    primitive_case(&c);
  fz_result res = {.outcome = c.why[0]          ? FZ_FAIL
                               : c.status != TS_OK ? FZ_PASS_ERROR
                                                   : fz_check_accepted(&c),
                   .knobs = c.knobs, .hopper = c.hopper,
                   .transposed = c.transposed,
                   .store_refused = c.store_refused};
  res.status = c.s ? (int)ts_sched_status(c.s) : -1;
  note_calls(&c, &res);
  end_program(&c);
  if (res.outcome == FZ_FAIL)
    res.report = make_report(&c);
  running = NULL;
  ts_buf_free(&c.prog);
  ts_sched_free(c.other);
  ts_sched_free(c.s);
  return res;
}
