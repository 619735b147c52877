/*
 * CUDA C of a warpgroup's instructions (S_WGMMA): each call passes the
 * accumulators and a descriptor of each tile, built from the tile's first
 * element printed without the chunk swizzle (the hardware applies it), or
 * for an a in registers (tf32: one element a register) the lane's first
 * register of it; each form used (operand type, n, majorness or a's
 * registers) gets an inline-PTX helper.
 */
#include "codegen_impl.h"

#include "../base/dtype.h"
#include "../ir/mma.h"

/* Forms 0-3: a and b by descriptors, k- or mn-major (bits 0 and 1);
 * 4: a in registers (tf32 only, whose b is k-major). */
static int wgmma_form(const ir_stmt *s) {
  if (ir_wgmma_a_regs(s))
    return 4;
  return s->wgmma.mn_major[0] | s->wgmma.mn_major[1] << 1;
}

static const char *const majors[5] = {"kk", "mk", "kn", "mn", "rk"};

/* "f16", "bf16", or "tf32" for fp32 operands. */
static const char *operand_type(const mma_instr *in) {
  return in->tf32 ? "tf32" : dtype_info_of(in->ab)->name;
}

/* tessel_wgmma_m64n256k16_f16_kn(&acc[..], tessel_wgmma_desc(&A_shared[..],
 * lbo, sbo), ...): each descriptor from its tile's first element, printed
 * without the swizzle (the hardware applies it). */
void c_wgmma(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st) {
  emitter *em = st->ctx;
  const mma_instr *in = s->wgmma.in;
  em->wgmma_used[in->ab][in->n / 8 - 1][wgmma_form(s)] = true;
  cuda_type(em, in->ab);
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "tessel_wgmma_%s_%s_%s(&", in->name, operand_type(in),
                majors[wgmma_form(s)]);
  c_access(b, s->wgmma.acc, s->wgmma.idx, &em->style);
  int first = 0;
  if (ir_wgmma_a_regs(s)) {
    const ir_expr *src = s->wgmma.src[0];
    ts_buf_puts(b, ", &");
    c_access(b, src->load.buf, src->load.idx, &em->style);
    first = 1;
  }
  em->unswizzled = true;
  for (int w = first; w < 2; w++) {
    const ir_expr *src = s->wgmma.src[w];
    ts_buf_puts(b, ",\n");
    ts_buf_indent(b, depth + 2);
    ts_buf_puts(b, "tessel_wgmma_desc(&");
    c_access(b, src->load.buf, src->load.idx, &em->style);
    ts_buf_printf(b, ", %lld, %lld)", (long long)s->wgmma.lbo[w],
                  (long long)s->wgmma.sbo[w]);
  }
  em->unswizzled = false;
  ts_buf_puts(b, ");\n");
}

/* The fence before a batch, and its commit and wait after.  The empty asm
 * on each accumulator tells the compiler the instructions change them
 * asynchronously: no read of one moves across the wait (CUTLASS's
 * warpgroup_fence_operand). */
void c_wgmma_sync(ts_buf *b, const ir_stmt *s, int depth,
                         const ir_stmt_style *st) {
  (void)st;
  const ir_buffer *acc = s->wait.acc;
  if (s->wait.pending >= 0) {
    ts_buf_indent(b, depth);
    ts_buf_printf(b, "asm volatile(\"wgmma.commit_group.sync.aligned;\\n"
                  "wgmma.wait_group.sync.aligned %d;\\n\" ::: \"memory\");"
                  "\n", s->wait.pending);
  }
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "#pragma unroll\n");
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "for (int r = 0; r < %lld; ++r) asm volatile(\"\" : "
                "\"+f\"((&", (long long)ir_buffer_size(acc));
  ts_buf_c_name(b, acc->name);
  for (int d = 0; d < acc->ndim; d++)
    ts_buf_puts(b, "[0]");
  ts_buf_puts(b, ")[r]) :: \"memory\");\n");
  if (s->wait.pending < 0) {
    ts_buf_indent(b, depth);
    ts_buf_puts(b, "asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: "
                "\"memory\");\n");
  }
}

/* A helper's signature, a's parameter `a_param`, and its instruction up
 * to the accumulators' operand list. */
static void definition_head(ts_buf *b, const mma_instr *in, int form,
                            const char *a_param) {
  ts_buf_printf(b, "__device__ __forceinline__ void tessel_wgmma_%s_%s_%s("
                "float *d,\n    %s, unsigned long long b) "
                "{\n  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, "
                "0;\\nwgmma.mma_async.sync.aligned.%s%s {", in->name,
                operand_type(in), majors[form], a_param, in->name,
                in->ptx_types);
  for (int r = 0; r < in->frag[MMA_ACC].regs; r++)
    ts_buf_printf(b, "%s%%%d", r ? "," : "", r);
}

/* The accumulators as the asm's read-write outputs. */
static void accumulator_outputs(ts_buf *b, const mma_instr *in) {
  for (int r = 0; r < in->frag[MMA_ACC].regs; r++)
    ts_buf_printf(b, "%s \"+f\"(d[%d])", r ? "," : "", r);
}

/* The register form, tf32's: a lane's 4 registers of a, one element
 * each, in braces before b's descriptor, and no transpose operand (a
 * 16-bit a would pack two elements a register and take b's). */
static void wgmma_register_definition(ts_buf *b, const mma_instr *in,
                                      int form) {
  int n = in->frag[MMA_ACC].regs, na = in->frag[MMA_A].regs;
  definition_head(b, in, form, "const float *a");
  ts_buf_puts(b, "}, {");
  for (int r = 0; r < na; r++)
    ts_buf_printf(b, "%s%%%d", r ? ", " : "", n + r);
  ts_buf_printf(b, "}, %%%d, p, 1, 1;\\n}\\n\"\n      :", n + na);
  accumulator_outputs(b, in);
  ts_buf_puts(b, "\n      : ");
  for (int r = 0; r < na; r++)
    ts_buf_printf(b, "\"r\"(__float_as_uint(a[%d])), ", r);
  ts_buf_puts(b, "\"l\"(b));\n}\n");
}

static void wgmma_definition(ts_buf *b, const mma_instr *in, int form) {
  int n = in->frag[MMA_ACC].regs;
  if (form >= 4) {
    wgmma_register_definition(b, in, form);
    return;
  }
  definition_head(b, in, form, "unsigned long long a");
  if (in->tf32) /* no transpose operands: tf32 is k-major only */
    ts_buf_printf(b, "}, %%%d, %%%d, p, 1, 1;\\n}\\n\"\n      :", n, n + 1);
  else
    ts_buf_printf(b, "}, %%%d, %%%d, p, 1, 1, %d, %d;\\n}\\n\"\n      :",
                  n, n + 1, form & 1, form >> 1);
  accumulator_outputs(b, in);
  ts_buf_puts(b, "\n      : \"l\"(a), \"l\"(b));\n}\n");
}

void wgmma_definitions(ts_buf *b, const emitter *em) {
  bool any = false;
  for (int t = 0; t < TS_DTYPE_COUNT; t++)
    for (int n = 0; n < 32; n++)
      for (int f = 0; f < 5; f++)
        if (em->wgmma_used[t][n][f]) {
          if (!any)
            ts_buf_puts(b, "// wgmma (sm_90a): a warpgroup multiplies tiles "
                        "that it reads from shared\n// memory by descriptors "
                        "(start, leading and stride byte offsets, 128-byte\n"
                        "// swizzle) into fp32 accumulators, asynchronously.\n"
                        "__device__ __forceinline__ unsigned long long "
                        "tessel_wgmma_desc(const void *p,\n    unsigned lbo, "
                        "unsigned sbo) {\n  unsigned a = (unsigned)"
                        "__cvta_generic_to_shared(p);\n  return (unsigned long "
                        "long)(a >> 4 & 0x3FFF) |\n         (unsigned long long)"
                        "(lbo >> 4 & 0x3FFF) << 16 |\n         (unsigned long "
                        "long)(sbo >> 4 & 0x3FFF) << 32 | 1ull << 62;\n}\n");
          any = true;
          wgmma_definition(b, mma_instr_for_tile((ts_dtype)t, 64, 8 * (n + 1),
                                                 t == TS_F32 ? 8 : 16), f);
        }
  if (any)
    ts_buf_puts(b, "\n");
}
