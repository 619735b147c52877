/*
 * CUDA C of a warp's tensor-core instructions (S_MMA, S_LDMATRIX,
 * S_STMATRIX): each mma.sync a call of a helper that packs the operands'
 * fragments into the 32-bit registers the PTX instruction takes, each
 * ldmatrix and stmatrix a call of the helper of its form; the helpers are
 * inline PTX, defined once for the types and forms used.
 */
#include "codegen_impl.h"

#include "../ir/mma.h"

/* tessel_mma_m16n8k16_f16(&acc[..], &a[..], &b[..]): the helper takes
 * each operand's first register; its fragment is the elements after. */
void c_mma(ts_buf *b, const ir_stmt *s, int depth,
                  const ir_stmt_style *st) {
  emitter *em = st->ctx;
  ts_dtype ab = s->mma.buf[MMA_A]->dtype;
  const mma_instr *in = mma_instr_for(ab);
  em->mma_used[ab] = true;
  cuda_type(em, ab);
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "tessel_mma_%s_%s(", in->name,
                in->tf32 ? "tf32" : dtype_info_of(ab)->name);
  for (int w = 0; w < 3; w++) {
    ts_buf_puts(b, w ? ", &" : "&");
    c_access(b, s->mma.buf[w], s->mma.idx[w], &em->style);
  }
  ts_buf_puts(b, ");\n");
}

/* The helper of one instruction: the operands packed into the 32-bit
 * registers the PTX instruction takes (two halves each, low half first;
 * tf32 rounded by cvt.rna), accumulating in place.  Not volatile: it has
 * no effect beyond its outputs, and the compiler may schedule it. */
static void mma_definition(ts_buf *b, const mma_instr *in) {
  const char *type = dtype_info_of(in->ab)->cuda_type;
  const char *suffix = in->tf32 ? "tf32" : dtype_info_of(in->ab)->name;
  int na = in->frag[MMA_A].regs, nb = in->frag[MMA_B].regs;
  int per = in->tf32 ? 1 : 2; /* elements in a 32-bit register */
  ts_buf_printf(b, "__device__ __forceinline__ void tessel_mma_%s_%s(float "
                "*d, const %s *a, const %s *b) {\n  asm(\"mma.sync.aligned."
                "%s.row.col%s {%%0, %%1, %%2, %%3}, {", in->name, suffix, type,
                type, in->name, in->ptx_types);
  int reg = 4;
  for (int i = 0; i < na / per; i++)
    ts_buf_printf(b, "%s%%%d", i ? ", " : "", reg++);
  ts_buf_puts(b, "}, {");
  for (int i = 0; i < nb / per; i++)
    ts_buf_printf(b, "%s%%%d", i ? ", " : "", reg++);
  ts_buf_puts(b, "}, {%0, %1, %2, %3};\\n\"\n      : \"+f\"(d[0]), "
              "\"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n      :");
  for (int w = MMA_A; w <= MMA_B; w++) {
    int n = in->frag[w].regs;
    for (int i = 0; i < n; i += per) {
      ts_buf_printf(b, "%s \"r\"(", w == MMA_A && i == 0 ? "" : ",");
      if (in->tf32)
        ts_buf_printf(b, "tessel_tf32(%c[%d]))", "dab"[w], i);
      else
        ts_buf_printf(b, "tessel_pack_%s(%c[%d], %c[%d]))", suffix, "dab"[w],
                      i, "dab"[w], i + 1);
    }
  }
  ts_buf_puts(b, ");\n}\n");
}

static const unsigned LDSM_TRANS = 1u << 5;

/* tessel_ldmatrix_x4_trans((unsigned *)&frag[..], &A_shared[..][..]): the
 * registers from the first on, and the row this lane addresses. */
void c_ldmatrix(ts_buf *b, const ir_stmt *s, int depth,
                       const ir_stmt_style *st) {
  emitter *em = st->ctx;
  const ir_expr *src = s->ldsm.src;
  em->ldmatrix_used |= 1u << s->ldsm.matrices |
                       (s->ldsm.trans ? LDSM_TRANS << s->ldsm.matrices : 0);
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "tessel_ldmatrix_x%d%s((unsigned *)&", s->ldsm.matrices,
                s->ldsm.trans ? "_trans" : "");
  c_access(b, s->ldsm.frag, s->ldsm.idx, &em->style);
  ts_buf_puts(b, ", &");
  c_access(b, src->load.buf, src->load.idx, &em->style);
  ts_buf_puts(b, ");\n");
}

/* The helper of one ldmatrix form.  volatile, as CUTLASS's: the asm reads
 * shared memory the compiler does not see, so it must not be merged with
 * the same load before a barrier. */
static void ldmatrix_definition(ts_buf *b, int matrices, bool trans) {
  ts_buf_printf(b, "__device__ __forceinline__ void tessel_ldmatrix_x%d%s("
                "unsigned *d, const void *p) {\n  unsigned a = (unsigned)"
                "__cvta_generic_to_shared(p);\n  asm volatile(\"ldmatrix."
                "sync.aligned.m8n8.x%d%s.shared.b16 {", matrices,
                trans ? "_trans" : "", matrices, trans ? ".trans" : "");
  for (int r = 0; r < matrices; r++)
    ts_buf_printf(b, "%s%%%d", r ? ", " : "", r);
  ts_buf_printf(b, "}, [%%%d];\\n\"\n      :", matrices);
  for (int r = 0; r < matrices; r++)
    ts_buf_printf(b, "%s \"=r\"(d[%d])", r ? "," : "", r);
  ts_buf_puts(b, "\n      : \"r\"(a));\n}\n");
}

/* tessel_stmatrix_x4(&C_shared[..][..], tessel_pack_f16(v0, v1), ..): the
 * row this lane addresses, and its values packed two a register. */
void c_stmatrix(ts_buf *b, const ir_stmt *s, int depth,
                const ir_stmt_style *st) {
  emitter *em = st->ctx;
  const ir_expr *dst = s->stsm.dst;
  ts_dtype t = dst->load.buf->dtype;
  em->stmatrix_used |= 1u << s->stsm.matrices;
  em->packs_used[t] = true;
  cuda_type(em, t);
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "tessel_stmatrix_x%d(&", s->stsm.matrices);
  c_access(b, dst->load.buf, dst->load.idx, &em->style);
  for (int m = 0; m < s->stsm.matrices; m++) {
    ts_buf_puts(b, ",\n");
    ts_buf_indent(b, depth + 2);
    ts_buf_printf(b, "tessel_pack_%s(", dtype_info_of(t)->name);
    ir_print_expr(b, s->stsm.value[2 * m], &em->style);
    ts_buf_puts(b, ", ");
    ir_print_expr(b, s->stsm.value[2 * m + 1], &em->style);
    ts_buf_puts(b, ")");
  }
  ts_buf_puts(b, ");\n");
}

/* The helper of one stmatrix form: volatile and clobbering memory, as it
 * writes shared memory the compiler does not see. */
static void stmatrix_definition(ts_buf *b, int matrices) {
  ts_buf_printf(b, "__device__ __forceinline__ void tessel_stmatrix_x%d("
                "void *p", matrices);
  for (int r = 0; r < matrices; r++)
    ts_buf_printf(b, ", unsigned r%d", r);
  ts_buf_printf(b, ") {\n  unsigned a = (unsigned)__cvta_generic_to_shared"
                "(p);\n  asm volatile(\"stmatrix.sync.aligned.m8n8.x%d.shared"
                ".b16 [%%0], {", matrices);
  for (int r = 0; r < matrices; r++)
    ts_buf_printf(b, "%s%%%d", r ? ", " : "", r + 1);
  ts_buf_puts(b, "};\\n\"\n      :: \"r\"(a)");
  for (int r = 0; r < matrices; r++)
    ts_buf_printf(b, ", \"r\"(r%d)", r);
  ts_buf_puts(b, " : \"memory\");\n}\n");
}

static void ldmatrix_definitions(ts_buf *b, const emitter *em) {
  for (int m = 1; m <= 4; m *= 2)
    for (int trans = 0; trans < 2; trans++)
      if (em->ldmatrix_used & (trans ? LDSM_TRANS << m : 1u << m))
        ldmatrix_definition(b, m, trans);
}

void mma_definitions(ts_buf *b, const emitter *em) {
  bool any = false;
  for (int t = 0; t < TS_DTYPE_COUNT; t++)
    any |= em->mma_used[t];
  if (!any && !em->rounds_tf32 && !em->stmatrix_used)
    return;
  if (any)
    ts_buf_puts(b, "// mma.sync (sm_80): one warp multiplies a tile of A by a "
              "tile of B into\n// fp32 accumulators; each lane holds the "
              "elements the PTX ISA's fragment\n// layouts give it.\n");
  if (em->mma_used[TS_F16] || em->packs_used[TS_F16])
    ts_buf_puts(b, "__device__ __forceinline__ unsigned tessel_pack_f16(__half"
                " lo, __half hi) {\n  return (unsigned)__half_as_ushort(lo) | "
                "(unsigned)__half_as_ushort(hi) << 16;\n}\n");
  if (em->mma_used[TS_BF16] || em->packs_used[TS_BF16])
    ts_buf_puts(b, "__device__ __forceinline__ unsigned tessel_pack_bf16("
                "__nv_bfloat16 lo, __nv_bfloat16 hi) {\n  return (unsigned)"
                "__bfloat16_as_ushort(lo) | (unsigned)__bfloat16_as_ushort(hi)"
                " << 16;\n}\n");
  if (em->mma_used[TS_F32] || em->rounds_tf32)
    ts_buf_puts(b, "__device__ __forceinline__ unsigned tessel_tf32(float x) "
                "{\n  unsigned r;\n  asm(\"cvt.rna.tf32.f32 %0, %1;\\n\" : "
                "\"=r\"(r) : \"f\"(x));\n  return r;\n}\n");
  if (em->rounds_tf32) /* ts_pack's rounding, as a float */
    ts_buf_puts(b, "__device__ __forceinline__ float tessel_round_tf32(float "
                "x) {\n  return __uint_as_float(tessel_tf32(x));\n}\n");
  for (int t = 0; t < TS_DTYPE_COUNT; t++)
    if (em->mma_used[t])
      mma_definition(b, mma_instr_for((ts_dtype)t));
  ldmatrix_definitions(b, em);
  for (int m = 1; m <= 4; m *= 2)
    if (em->stmatrix_used & 1u << m)
      stmatrix_definition(b, m);
  ts_buf_puts(b, "\n");
}

