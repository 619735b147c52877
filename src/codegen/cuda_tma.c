/*
 * CUDA C of a TMA pipeline (S_PIPELINE, S_TMA, S_MBARRIER): the stages'
 * mbarriers as static shared arrays tessel_full<id> and tessel_empty<id>,
 * initialized by the producer before a barrier; each copy a
 * cp.async.bulk.tensor of a box from the kernel's tensor map of its
 * operand (a __grid_constant__ parameter, tmap_A or tmap_B) completing on
 * the stage's full barrier; waits spin on try_wait.parity.  The helpers
 * are inline PTX, defined once when used.
 */
#include "codegen_impl.h"

static const char *const bars[2] = {"full", "empty"};

static void barrier_ref(ts_buf *b, emitter *em, const ir_stmt *s,
                        ir_mbar_which w) {
  ts_buf_printf(b, "&tessel_%s%d[", bars[w], s->pipe.pipe->id);
  ir_print_expr(b, s->pipe.stage, &em->style);
  ts_buf_puts(b, "]");
}

/* The barriers, initialized by the producer; the fence makes the
 * initialization visible to the copy engine (the async proxy), the
 * barrier to every thread. */
static void c_pipeline(ts_buf *b, emitter *em, const ir_stmt *s, int depth) {
  const ir_pipeline *p = s->pipe.pipe;
  (void)em;
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "__shared__ __align__(8) unsigned long long tessel_full%d"
                "[%d], tessel_empty%d[%d];\n", p->id, p->stages, p->id,
                p->stages);
  ts_buf_indent(b, depth);
  ts_buf_printf(b, "if (threadIdx.x + threadIdx.y + threadIdx.z == %d) {\n",
                p->producer);
  ts_buf_indent(b, depth + 1);
  ts_buf_printf(b, "for (int s = 0; s < %d; ++s) {\n", p->stages);
  ts_buf_indent(b, depth + 2);
  ts_buf_printf(b, "tessel_mbar_init(&tessel_full%d[s], 1);\n", p->id);
  ts_buf_indent(b, depth + 2);
  ts_buf_printf(b, "tessel_mbar_init(&tessel_empty%d[s], %d);\n", p->id,
                p->consumers);
  ts_buf_indent(b, depth + 1);
  ts_buf_puts(b, "}\n");
  ts_buf_indent(b, depth + 1);
  ts_buf_puts(b, "asm volatile(\"fence.mbarrier_init.release.cluster;\\n\" "
              "::: \"memory\");\n");
  ts_buf_indent(b, depth);
  ts_buf_puts(b, "}\n");
  ts_buf_indent(b, depth);
  ts_buf_puts(b, "__syncthreads();\n");
}

void c_pipe(ts_buf *b, const ir_stmt *s, int depth, const ir_stmt_style *st) {
  emitter *em = st->ctx;
  em->tma_used = true;
  if (s->kind == S_PIPELINE) {
    c_pipeline(b, em, s, depth);
    return;
  }
  ts_buf_indent(b, depth);
  if (s->kind == S_TMA) {
    const ir_expr *dst = s->pipe.dst;
    ts_buf_puts(b, "tessel_tma_2d(&");
    em->unswizzled = true; /* the box's first element: the TMA swizzles */
    c_access(b, dst->load.buf, dst->load.idx, &em->style);
    em->unswizzled = false;
    ts_buf_printf(b, ", &tmap_%s, (int)(", s->pipe.src->name);
    ir_print_expr(b, s->pipe.coord[0], &em->style);
    ts_buf_puts(b, "), (int)(");
    ir_print_expr(b, s->pipe.coord[1], &em->style);
    ts_buf_puts(b, "), ");
    barrier_ref(b, em, s, MBAR_FULL);
    ts_buf_puts(b, ");\n");
    return;
  }
  static const char *const fns[] = {"tessel_mbar_expect_tx",
                                    "tessel_mbar_arrive", "tessel_mbar_wait"};
  ts_buf_printf(b, "%s(", fns[s->pipe.op]);
  barrier_ref(b, em, s, s->pipe.bar);
  if (s->pipe.op == MBAR_EXPECT_TX)
    ts_buf_printf(b, ", %lldu", (long long)s->pipe.pipe->bytes);
  if (s->pipe.op == MBAR_WAIT) {
    ts_buf_puts(b, ", (unsigned)(");
    ir_print_expr(b, s->pipe.parity, &em->style);
    ts_buf_puts(b, ")");
  }
  ts_buf_puts(b, ");\n");
}

void tma_definitions(ts_buf *b, const emitter *em) {
  if (!em->tma_used)
    return;
  ts_buf_puts(b,
      "struct __align__(64) tessel_tensor_map { unsigned long long "
      "opaque[16]; };\n"
      "__device__ __forceinline__ unsigned tessel_smem(const void *p) {\n"
      "  return (unsigned)__cvta_generic_to_shared(p);\n}\n"
      "__device__ __forceinline__ void tessel_mbar_init(unsigned long long "
      "*bar, unsigned count) {\n"
      "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\" :: "
      "\"r\"(tessel_smem(bar)), \"r\"(count) : \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_mbar_expect_tx(unsigned long "
      "long *bar, unsigned bytes) {\n"
      "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], "
      "%1;\\n\" :: \"r\"(tessel_smem(bar)), \"r\"(bytes) : \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_mbar_arrive(unsigned long long "
      "*bar) {\n"
      "  asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\\n\" :: "
      "\"r\"(tessel_smem(bar)) : \"memory\");\n}\n"
      "__device__ __forceinline__ void tessel_mbar_wait(unsigned long long "
      "*bar, unsigned parity) {\n"
      "  unsigned done;\n"
      "  do {\n"
      "    asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity."
      "shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}\\n\" : "
      "\"=r\"(done) : \"r\"(tessel_smem(bar)), \"r\"(parity) : \"memory\");\n"
      "  } while (!done);\n}\n"
      "__device__ __forceinline__ void tessel_tma_2d(void *dst, const "
      "tessel_tensor_map *map, int x, int y, unsigned long long *bar) {\n"
      "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile."
      "mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\\n\" :: "
      "\"r\"(tessel_smem(dst)), \"l\"(map), \"r\"(x), \"r\"(y), "
      "\"r\"(tessel_smem(bar)) : \"memory\");\n}\n");
}
