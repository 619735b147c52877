/*
 * Lowering: the schedule's loop tree becomes a kernel that codegen, the
 * reference executor and the runtime consume.  lower.c runs the passes in
 * order; each pass is one file exposing one function.  Lowering reads the
 * schedule and never writes to it: the passes build in a scratch arena of
 * their own, and the finished kernel is copied into the program's arena
 * (adopt.c), so the program outlives the schedule and shares nothing with
 * it.
 */
#ifndef TS_LOWER_H
#define TS_LOWER_H

#include "../ir/mma.h"
#include "../ir/program_ir.h"
#include "../schedule/sched.h"
#include "tessel/program.h"

/* What the passes share: the schedule they read, the arena they build in,
 * the next variable id, and the first error. */
typedef struct lower_ctx {
  const ts_sched *s;
  ts_arena *arena;
  int next_var; /* ids of variables lowering makes start at the schedule's */
  const ts_loop *split_k; /* ts_split_k's blockIdx.z loop, or NULL */
  ir_buffer *W;           /* split-K's workspace (its mode), or NULL */
  bool mma;               /* the kernel has tensor-core instructions */
  bool wgmma;             /* ... and they are a warpgroup's (sm_90a) */
  int pipelines;          /* TMA pipelines made: the next one's id */
  int64_t consumers;      /* a warp-specialized pipeline's consumer threads */
  int producer_threads;   /* ... and its producer's, added to the block */
  int producer_dim;       /* ... along this thread dimension (0: x) */
  /* ts_persistent: the tile loop lowering wraps the kernel in (its
   * variable counts the block's tiles, made before the passes so that a
   * pipeline can count its k tiles across the block's tiles), and a
   * warp-specialized pipeline's consumer test, `thread < consumers`,
   * with which the tile loop's statements outside the pipeline are made
   * the consumers' once the pipeline wraps the tile loop; NULL: none. */
  ts_loop *wave;
  ir_expr *consumer_test;
  /* ts_pingpong: the consumer warpgroups taking the tiles in turn (0:
   * none), along threadIdx.z (lower_add_producer), and the turn's test,
   * `threadIdx.z == wave % teams`, which the statements under the
   * consumers' test are under too. */
  int teams;
  ir_expr *turn_test;
  /* The tile loop's record: ts_persistent's, or where only clusters ask
   * for the loop, ts_cluster's loops with one tile a block
   * (blocks_per_sm 0: the grid is C's tiles). */
  sched_persistent tiles;
  /* ts_cluster (lower_cluster.c): blocks a cluster (0: none); the block
   * loop along which a cluster's tiles lie and its extent rounded up to
   * the cluster, C's tiles counted with it (the wave loop's extent); and
   * a tile's test that it lies inside C, false for a block past C's edge
   * that computes its partner's tile again and stores nothing (set by
   * the swizzle or the persistent pass; NULL: every tile is C's). */
  int cluster;
  const ts_loop *pair_loop;
  int64_t pair_extent;
  ir_expr *tile_valid;
  int multicasts; /* pipelines the stages pass made a cluster's */
  bool tma_store; /* C is stored by the TMA (lower_tma_store.c) */
  /* ... in a persistent grid: C's stage, a ring of panels of its own
   * beside the pipeline's stages, whose allocation the persistent pass
   * moves out around the tile loop, after which `drain` (the issuing
   * thread's wait for the last stores) ends the kernel; NULL: none. */
  ir_buffer *ring;
  ir_stmt *drain;
  ts_status status;
  char errmsg[1024];
} lower_ctx;

/* A warp-specialized pipeline's producer warpgroup added to k's block
 * after its consumers (launch.c), one block a multiprocessor. */
bool lower_add_producer(lower_ctx *cx, ir_kernel *k);

/* Records the first error of lowering ("ts_lower: ..."); returns false. */
bool lower_fail(lower_ctx *cx, ts_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "lda", "ldb" or "ldc" where b is that operand's own buffer and the
 * definition gives its leading dimension (not 0, packed); else NULL: a
 * refusal for its rows' alignment then names the field to change. */
const char *lower_ld_field(const lower_ctx *cx, const ir_buffer *b);

/* A loop lowering makes (not one of the schedule's): fresh variable id, the
 * given kind, never live for primitives. */
ts_loop *lower_new_loop(lower_ctx *cx, const char *name, int64_t extent,
                        ts_loop_kind kind);

/* A TMA-filled cache's tile (lower_tma.c): the operand, the cache's
 * dimensions its stored rows and columns run along, the box, the boxes a
 * tile (128-byte panels), the tile's origin in the operand (innermost
 * first, an expression of the attach loop's variable) and its bytes. */
typedef struct tma_tile {
  ir_buffer *src;
  int inner, outer;
  int64_t box[2], panels, bytes;
  ir_expr *origin[2];
} tma_tile;

/* Rows of global buffer b lie 16 bytes apart at every launch, where its
 * stride along `outer` is chosen at launch (its divisor says so); else
 * false, naming the stage, what the TMA does to it (`verb`: "filled",
 * "stored") and the multiple to ask for. */
bool lower_rows_aligned(lower_ctx *cx, const char *stage, const char *verb,
                        const ir_buffer *b, int outer);
/* Reads cache st's copy nest (before it is spread over threads) into t;
 * false, recorded in cx, where the TMA cannot copy it. */
bool lower_tma_tile(lower_ctx *cx, const struct ts_stage *st,
                    const ir_stmt *copy, tma_tile *t);
/* The copies of tile `tile` (of loop f) into stage `stage` of staged. */
ir_stmt *lower_tma_issue(ts_arena *a, const ir_pipeline *p,
                         const tma_tile *t, ir_buffer *staged,
                         const ts_loop *f, ir_expr *tile, ir_expr *stage);

/* C's shared stage (lower_tma_store.c): the schedule's stage, the buffer
 * lowering makes of it (C's tile, swizzled, over the other shared
 * buffers; in a persistent grid `slots` 128-byte panels of it, a ring
 * beside them), the tile's origin in C, the threads its barriers hold (0:
 * the block; a warp-specialized kernel's consumers) and C. */
struct lower_mma;
typedef struct tma_store_plan {
  const struct ts_stage *st;
  ir_buffer *buf, *C;
  ir_expr *origin[2];
  int64_t threads;
  int64_t dims[3]; /* the block's threads along x, y and z, as bound */
  const ir_var *lane; /* a tensor-core instruction's lane; NULL: none */
  int64_t cols;       /* the tile's columns */
  int64_t slots;      /* the ring's panels; 0: the whole tile, overlaid */
} tma_store_plan;

/* The schedule's shared stage of C (cache_write(C, TS_SHARED)), or NULL. */
const struct ts_stage *lower_shared_c_stage(const ts_sched *s);
/* The plan for the nest on path (root to the computation), whose
 * accumulators wrap path node `wrap`; st NULL where the schedule has no
 * such stage; false, recorded in cx, where it cannot be built. */
bool lower_tma_store_plan(lower_ctx *cx, const nest_path *path, int wrap,
                          const struct lower_mma *t, tma_store_plan *out);
/* After the stages pass: false, recorded in cx, where C's stage would lie
 * over a shared buffer whose scope encloses it (read again after it). */
bool lower_tma_store_check(lower_ctx *cx, const ir_stmt *root);
/* The epilogue's store of value at C[c_idx], into the stage instead. */
ir_stmt *lower_tma_store_target(ts_arena *a, const tma_store_plan *p,
                                ir_expr *const c_idx[2], ir_expr *value);
/* A chunk of the epilogue's stores into a 16-bit stage (a loop over
 * register pairs) as stmatrix, a warp's 8 x 8 matrices
 * (lower_stmatrix.c); NULL where it does not fit. */
ir_stmt *lower_stmatrix(lower_ctx *cx, const tma_store_plan *p,
                        const ir_stmt *chunk);
/* The epilogue (its stores into the stage) in the stage's scope, between
 * the barriers, followed by the first thread's stores of the TMA. */
ir_stmt *lower_tma_store_epilogue(lower_ctx *cx, const tma_store_plan *p,
                                  ir_stmt *epilogue);

/* C = alpha * acc + beta * c_old, alpha and beta folded (reduction.c). */
ir_expr *lower_epilogue_value(ts_arena *a, const ts_gemm *g, ir_expr *acc,
                              ir_expr *c_old);

/* Split-K (splitk.c): the schedule's blockIdx.z reduction loop or NULL;
 * the workspace (parts x M x N, fp32); whether the program has a second
 * kernel and whether it runs first; that kernel. */
const ts_loop *lower_split_k_loop(const ts_sched *s);
ir_buffer *lower_workspace(lower_ctx *cx);
bool lower_split_k_has_aux(const lower_ctx *cx);
bool lower_split_k_aux_first(const lower_ctx *cx);
bool lower_split_k_aux(lower_ctx *cx, ir_kernel *k);

/* ts_pack (pack.c): the schedule's packed view of operand w (0: op(A),
 * 1: op(B)), or NULL; the kernel that fills it, launched first. */
ir_buffer *lower_packed(const ts_sched *s, int w);
bool lower_pack_kernel(lower_ctx *cx, int w, ir_kernel *k);

/* Tensorized nests (tensorize.c), for the reduction pass.  The plan: the
 * instruction, the schedule's tensorized loops over i, j and k, the lane
 * loop (threadIdx.x) and a placeholder loop over a lane's accumulator
 * registers; depth: the path index of the outermost tensorized loop. */
typedef struct lower_mma {
  const mma_instr *in; /* NULL: the nest is not tensorized */
  const ts_loop *loop[3];
  ts_loop *lane, *reg;
  int depth;
  /* The instruction's m on loop[1], C's columns (ts_tensorize(s, j, i,
   * k)): it computes C's transpose, its a from op(B), its b from op(A). */
  bool transposed;
} lower_mma;

/* Finds the tensorized loops on path (root to the compute statement) and
 * checks they are still the three innermost; t->in NULL when there are
 * none.  False with cx's error. */
bool lower_mma_plan(lower_ctx *cx, const nest_path *path, lower_mma *t);
/* The instruction's tile along C's rows (d = 0) or columns (d = 1). */
int64_t lower_mma_tile(const lower_mma *t, int d);
/* The accumulators' index for the element (ai, aj) of the 2-D tile:
 * [tile row, tile column, t->reg]. */
bool lower_mma_acc_index(lower_ctx *cx, const lower_mma *t, ir_expr *ai,
                         ir_expr *aj, ir_expr *idx[3]);
/* wgmma's epilogue with neighbouring lanes' registers exchanged, 4
 * elements a store (lower_exchange.c); NULL where it does not apply. */
ir_stmt *lower_exchanged_registers(lower_ctx *cx, const lower_mma *t,
                                   ir_stmt *body);
/* body (over t->reg and the i and j tile loops) once for each register of
 * a lane's accumulators, at the element of C that register holds. */
ir_stmt *lower_mma_registers(lower_ctx *cx, const lower_mma *t,
                             ir_stmt *body);
/* The replacement of path->node[*at..]: for mma.sync (*at: the outermost
 * of the unrolled spatial loops right above the tensorized ones, not
 * above `top`, or the tensorized loops' own), fragment fills from the
 * operands' loads, zero where pred fails, hoisted out of those loops as
 * far as each operand allows, then the S_MMA under them; for wgmma,
 * lower_wgmma_update's. */
ir_stmt *lower_mma_update(lower_ctx *cx, const lower_mma *t,
                          const nest_path *path, int top,
                          ir_expr *const operand[2], ir_expr *pred,
                          ir_buffer *acc, ir_expr *const acc_idx[3],
                          int *at);
/* s with the lane loop just inside its launch loops. */
ir_stmt *lower_mma_lanes(lower_ctx *cx, const lower_mma *t, ir_stmt *s);
/* The tensorized loop over the instruction's m (0), n (1) or k (2). */
const ts_loop *lower_mma_loop(const lower_mma *t, int axis);
/* frag[prefix.., r] = operand at register r's element of operand w
 * (MMA_A or MMA_B), or 0 where `guard` fails there: one ldmatrix where it
 * applies (mma.sync), else a load a register. */
ir_stmt *lower_mma_fill(lower_ctx *cx, const lower_mma *t, int w,
                        ir_buffer *frag, ir_expr *const *prefix,
                        ir_expr *operand, ir_expr *guard);
/* Whether path node d is an unrolled loop directly around node d + 1. */
bool lower_unrolled_around(const nest_path *p, int d);
/* lower_wgmma_operands.c: lower_mma_update's for a warpgroup's
 * instruction: the S_WGMMA, its operands' tiles read by descriptors, or
 * its a from registers (a local a_frag filled in place, *at moved out to
 * the unrolled loops around it). */
ir_stmt *lower_wgmma_update(lower_ctx *cx, const lower_mma *t,
                            const nest_path *path, int top,
                            ir_expr *const operand[2], ir_expr *pred,
                            ir_buffer *acc, ir_expr *const acc_idx[3],
                            int *at);
/* lower_wgmma.c: each largest statement holding wgmma instructions and
 * no barrier or wait, opened by a wgmma.fence and closed by a commit and
 * a wait: for the whole batch, or inside a loop of ts_wgmma_in_flight for
 * all but its count; a fence also between a fill of an instruction's
 * register operand and the instruction.  NULL with cx's error where a
 * marked loop has no wgmma or no pipeline, or a loop in a batch refills
 * a register operand; root itself where it has no wgmma. */
ir_stmt *lower_wgmma_batches(lower_ctx *cx, ir_stmt *root);

/* Passes. */
ir_stmt *lower_reduction(lower_ctx *cx, ir_stmt *root); /* reduction.c */
ir_stmt *lower_stages(lower_ctx *cx, ir_stmt *root);    /* stages.c */
ir_stmt *lower_guards(ts_arena *a, ir_stmt *root);      /* guards.c */
ir_stmt *lower_partition(lower_ctx *cx, ir_stmt *root); /* partition.c */
ir_stmt *lower_vectors(ts_arena *a, ir_stmt *root);     /* vectors.c */
ir_stmt *lower_lanes(ts_arena *a, ir_stmt *root);       /* lanes.c */
ir_stmt *lower_swizzle(lower_ctx *cx, ir_stmt *root);   /* swizzle.c */
/* persistent.c: the kernel wrapped in the tile loop of a persistent grid,
 * the block loops' values derived from the tile (through the swizzle's
 * order when it has one); the tile of cx->wave's iteration for the
 * swizzle; and the kernel's grid made the tiles. */
ir_stmt *lower_persistent(lower_ctx *cx, ir_stmt *root);
ir_expr *lower_persistent_tile(lower_ctx *cx);
/* blockIdx.x (below the tiles) or gridDim.x (1..tiles) of the tile loop's
 * grid, a variable of its own each call. */
ir_expr *lower_grid_ref(lower_ctx *cx, ir_var_kind kind);
void lower_persistent_launch(const lower_ctx *cx, ir_kernel *k);
/* cluster.c: the tile loop's record and ts_cluster's pairing, before the
 * passes (false, recorded in cx, where the schedule cannot have them);
 * the index of the pair's loop from its padded value (the tile's test
 * that it lies in C set in cx); a block's rank in its cluster; a fill's
 * boxes of the multicast cache issued by the rank whose turn k tile
 * `ktile` is, each box multicast; whether a TMA tile is the one the
 * pair shares; and the producer's wait, in a block's last tile, for
 * each stage's last release of the n k tiles from `base` on. */
bool lower_cluster_plan(lower_ctx *cx);
ir_expr *lower_cluster_clamp(lower_ctx *cx, ir_expr *padded);
ir_expr *lower_cluster_rank(lower_ctx *cx);
ir_stmt *lower_cluster_multicast(lower_ctx *cx, ir_stmt *issue,
                                 ir_expr *ktile);
bool lower_cluster_shared(lower_ctx *cx, const struct ts_stage *st,
                          const tma_tile *t);
ir_stmt *lower_cluster_last_releases(lower_ctx *cx, const ir_pipeline *p,
                                     ir_expr *base, int64_t n);
/* async.c: stores into pipelined caches made cp.async copies; *min_arch
 * gets 80 where the kernel has asynchronous copies, else 0. */
ir_stmt *lower_async(ts_arena *a, ir_stmt *root, int *min_arch);
void lower_launch_dims(const ir_stmt *root, ir_kernel *k); /* launch.c */
/* verify.c: a message describing the first malformed node, or NULL. */
const char *lower_verify(ts_arena *a, const ir_kernel *k);

/* adopt.c: the kernel k (built in a scratch arena, referring to the
 * schedule's loops and buffers) copied into p's arena with loops, variables
 * and buffers of its own, variables numbered 0..nvars-1.  False when out of
 * memory. */
bool lower_adopt(ts_program *p, const ir_kernel *k);
/* The same for split-K's second kernel (p->aux), with buffers and
 * variables of its own. */
bool lower_adopt_aux(ts_program *p, const ir_kernel *k);
/* The same for ts_pack's kernel of operand w (p->pack[w]). */
bool lower_adopt_pack(ts_program *p, int w, const ir_kernel *k);

#endif
