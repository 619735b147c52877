/*
 * What the files of the fuzzer's generator share (gen.c runs a case):
 * the arguments a call draws (gen_args.c), one random call of each
 * primitive (gen_loops.c, gen_stages.c), the definition (gen_definition.c)
 * and the checks of an accepted schedule (gen_check.c).  The case itself
 * and the helpers the Hopper cases use too are in case.h.
 */
#ifndef TS_FUZZ_GEN_IMPL_H
#define TS_FUZZ_GEN_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "case.h"
#include "fuzz_knobs.h"
#include "tessel.h"

/* gen_args.c: a loop argument, written `text` (its slot in `index`, or
 * -1): a plausible loop, or in a hostile case sometimes NULL, a loop of
 * the other schedule or any loop the case ever held. */
ts_loop *fz_loop_arg_at(fz_case *c, char *text, size_t len, int *index);
ts_loop *fz_loop_arg(fz_case *c, char *text, size_t len);
/* A stage the case holds, or NULL. */
ts_stage *fz_stage_arg(fz_case *c, char *text, size_t len);

/* gen_loops.c: the primitives on loops and the kernel, arguments drawn. */
void fz_op_get_loop_random(fz_case *c);
void fz_op_split_random(fz_case *c);
void fz_op_fuse(fz_case *c);
void fz_op_reorder(fz_case *c);
void fz_op_bind(fz_case *c);
void fz_op_mark(fz_case *c, bool vector); /* unroll or vectorize */
void fz_op_partition(fz_case *c);
void fz_op_rename(fz_case *c);
void fz_op_min_blocks(fz_case *c);
void fz_op_swizzle(fz_case *c);
void fz_op_split_k(fz_case *c);
void fz_op_in_flight(fz_case *c);
/* i and j tiled over blocks and threads, k split. */
void fz_gpu_skeleton(fz_case *c);

/* gen_stages.c: the primitives on buffers, arguments drawn. */
void fz_op_pack(fz_case *c);
void fz_op_cache(fz_case *c, bool write);
void fz_op_stage_axis(fz_case *c);
void fz_op_bind_copy(fz_case *c);
/* A cache's layout, double buffering, pipeline or TMA. */
void fz_op_layout(fz_case *c);

/* gen_definition.c: the case's definition, into c->def and c->work. */
void fz_random_definition(fz_case *c);
/* In a fifth of the cases, leading dimensions past packed for some of A,
 * B and C, drawn from a stream of the case's seed of their own (the
 * case's other draws stay what they were); `keep_alignment`: each row's
 * 16-byte alignment stays as packed has it (a space's or a Hopper
 * schedule's choices follow it). */
void fz_leading_dimensions(fz_case *c, bool keep_alignment);
/* In an eighth of the cases, the extents and leading dimensions taken at
 * launch (ts_gemm.runtime), from a stream of the seed of their own; the
 * leading dimensions promised multiples of 8 where they all are (the
 * TMA's rows). */
void fz_runtime_extents(fz_case *c);
/* A shape the case's program, taking its extents at launch, also runs at
 * (ts_program_check_at): small, odd or tiny, leading dimensions past the
 * rows as the definition's multiples allow. */
ts_gemm fz_launch_shape(const fz_case *c);

/* gen_check.c: the outcome of a schedule every call accepted (the
 * executor's verdict, its CUDA, its trace's replay). */
fz_outcome fz_check_accepted(fz_case *c);

#endif
