/*
 * Schedules and their primitives: the first stage (src/schedule/).
 * Part of tessel's public API; include <tessel.h> for all of it.
 */
#ifndef TESSEL_SCHEDULE_H
#define TESSEL_SCHEDULE_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Schedules and loops ----------------------------------------------- */

typedef struct ts_sched ts_sched;

/* The naive loop nest: for i, for j, for k: C[i,j] += A[i,k] * B[k,j].
 * Never NULL; check ts_sched_status. */
ts_sched *ts_matmul(const ts_gemm *def);
/* As ts_matmul, with a name that appears in the trace and the .cu header. */
ts_sched *ts_matmul_named(const ts_gemm *def, const char *name);
void ts_sched_free(ts_sched *s); /* NULL is fine */

ts_status ts_sched_status(const ts_sched *s);
/* The first error: "ts_split: ..." then the loop nest with the loop marked;
 * "FILE:LINE: error: " before it when the failing call's place is known
 * (ts_sched_error_location, below).  Empty when the status is TS_OK. */
const char *ts_sched_errmsg(const ts_sched *s);
const ts_gemm *ts_sched_gemm(const ts_sched *s);
const char *ts_sched_name(const ts_sched *s);
/* Records an error on s as a failing primitive does (the first error
 * stays; later primitives do nothing), with the message whole: for a
 * program that builds schedules its own way and finds one wrong (tessel
 * says so of a schedule file's function that crashed).  A code that is not
 * an error is taken as TS_ERR_BAD_ARG.  Returns s's status. */
ts_status ts_sched_fail(ts_sched *s, ts_status code, const char *message);

/* A live loop by name ("i", "j", "k", "i.outer", ...), or NULL with the
 * error recorded. */
ts_loop *ts_get_loop(ts_sched *s, const char *name);
const char *ts_loop_name(const ts_loop *loop);
int64_t ts_loop_extent(const ts_loop *loop);

/* Primitives.  Each returns the schedule's status after the call. */
/* loop = outer * factor + inner: ceil(extent / factor) and `factor`
 * iterations at every extent (TVM's split), guarded where the factor does
 * not divide the extent. */
ts_status ts_split(ts_sched *s, ts_loop *loop, int64_t factor, ts_loop **outer,
                   ts_loop **inner);
ts_status ts_fuse(ts_sched *s, ts_loop *outer, ts_loop *inner,
                  ts_loop **fused);
ts_status ts_reorder(ts_sched *s, int n, ts_loop *const loops[]);
ts_status ts_bind(ts_sched *s, ts_loop *loop, ts_loop_kind tag);
ts_status ts_unroll(ts_sched *s, ts_loop *loop);
/* Lowering splits the serial loop in two: a steady part, its first
 * iterations, where every guard in its body that holds on them is proven
 * and dropped, and a tail with the iterations left, guards kept.  For a k
 * loop when K is not a multiple of its tile, or a double-buffered k loop
 * (whose next-tile load is guarded): the steady loop loads without bounds
 * tests, in vectors where the rows allow.  Call it after every other
 * primitive on the loop. */
ts_status ts_partition(ts_sched *s, ts_loop *loop);
ts_status ts_rename(ts_sched *s, ts_loop *loop, const char *name);

/* ---- Split-K --------------------------------------------------------------- */

/* How the blocks of a split reduction combine their partial sums. */
typedef enum {
  TS_SPLIT_K_WORKSPACE, /* each block writes its partial sums to a workspace
                           (fp32, parts x m x n); a second kernel adds them in
                           a fixed order: C = alpha * sum + beta * C
                           (deterministic; the default) */
  TS_SPLIT_K_ATOMIC,    /* a first kernel scales C by beta (none when beta is
                           1); the blocks then atomicAdd alpha * partial sum
                           into C (fp32 C only; the order of the adds, and so
                           the rounding, varies from run to run) */
} ts_split_k_mode;

/* The reduction split across blocks: k = outer * ceil(extent / parts) +
 * inner, the outer loop of `parts` iterations bound to blockIdx.z and moved
 * outermost, so each block sums its share of k; the inner loop is an
 * ordinary reduction loop (split, reorder, unroll, cache_read at it).  `k`
 * must be the outermost reduction loop, and split-K comes before any
 * cache.  parts == 1 changes nothing: *outer is NULL and *inner is k (a
 * tuning space may draw parts from {1, 2, 4, ...}). */
ts_status ts_split_k(ts_sched *s, ts_loop *k, int64_t parts,
                     ts_split_k_mode mode, ts_loop **outer, ts_loop **inner);

/* ---- The memory hierarchy ----------------------------------------------- */

typedef enum { TS_SHARED, TS_LOCAL } ts_scope;
typedef struct ts_stage ts_stage;

/* A copy of `buffer` ("A", "B", or the name of a cache such as "A.shared")
 * in shared or local memory, refilled at the start of each iteration of
 * `at`, which the computation then reads instead of `buffer`.  The copied
 * region is what the loops inside `at` read (and, for shared memory, the
 * loops bound to threadIdx: the block's threads share the copy).  Its copy
 * loops, one per dimension, can be split, fused, reordered, unrolled,
 * vectorized and, for a shared copy, bound to the block's thread indices;
 * lowering spreads a shared copy none of whose loops is bound over the
 * block's threads.  The cache is named "<buffer>.shared" or
 * "<buffer>.local". */
ts_status ts_cache_read(ts_sched *s, const char *buffer, ts_scope scope,
                        ts_loop *at, ts_stage **stage);
/* The accumulators of C ("C") in registers ("C.local"), for the part of C
 * the loops inside `at` write: initialized at the start of `at`'s body,
 * written back through alpha and beta at its end.  `at` must enclose every
 * reduction loop.  TS_SHARED: C's tile at `at`, the block's ("C.shared"),
 * written there by the epilogue on its way out and stored into C by the
 * TMA (call ts_tma on the stage; sm_90): its rows a multiple of 128 bytes,
 * 8 to 256 of them and a multiple of 8, laid out as the TMA's 128-byte
 * swizzle reads them,
 * over the block's other shared buffers; C's rows must be 16-byte
 * aligned; not with split-K or in a persistent grid. */
ts_status ts_cache_write(ts_sched *s, const char *buffer, ts_scope scope,
                         ts_loop *at, ts_stage **stage);
/* The copy loop over dimension d of a cache_read stage (0: rows of op(A)
 * or op(B), 1: columns), or NULL. */
ts_loop *ts_stage_axis(ts_stage *stage, int d);
/* The dimension (0 or 1) contiguous in the source's memory, which the copy
 * nest walks innermost: the one to vectorize.  -1 for a cache_write. */
int ts_stage_contiguous(const ts_stage *stage);
const char *ts_stage_name(const ts_stage *stage);
/* Storage layout of a cache: stored transposed (columns outermost), and
 * `pad` unused elements after each stored row, against bank conflicts. */
ts_status ts_storage_transpose(ts_sched *s, ts_stage *stage);
ts_status ts_storage_pad(ts_sched *s, ts_stage *stage, int64_t pad);
/* The other way against bank conflicts, without padding: the 16-byte
 * chunks of each stored row of a shared cache permuted by the row (chunk
 * XOR row, as CUTLASS and Triton lay out tiles for ldmatrix), so that 8
 * consecutive rows read or written at the same chunk (ldmatrix, cp.async)
 * fall in different banks.  Needs stored rows of 2, 4 or a multiple of 8
 * chunks, a multiple of 8 rows, and no padding. */
ts_status ts_storage_swizzle(ts_sched *s, ts_stage *stage);
/* The innermost loop's iterations become one 2- or 4-wide access wherever
 * the addresses are contiguous and aligned (scalar lanes elsewhere).  Split
 * a loop by 4 (or 2) and vectorize the inner loop. */
ts_status ts_vectorize(ts_sched *s, ts_loop *loop);
/* The three innermost loops, over i, j and k, become one warp's tensor-core
 * instruction, mma.sync: m16n8k16 for fp16 or bf16 A and B (extents 16, 8
 * and 16), m16n8k8 for fp32 A and B rounded to tf32 (16, 8 and 8), fp32
 * accumulators; or, on sm_90, a warpgroup's wgmma over 64 x n x 16 (8 in
 * tf32).  The instruction takes the 32 lanes of a warp (128 of a
 * warpgroup): lowering binds threadIdx.x to them, so the schedule binds no
 * loop to threadIdx.x and makes its warps with threadIdx.y and z.  Each
 * lane holds the accumulators and operand elements the PTX ISA assigns it
 * (docs/primitives.md, "Tensor cores").  wgmma may take its loops as (j,
 * i, k): the instruction's m on C's columns, computing C's transpose, its
 * a from op(B).  Call it after every other primitive on the three loops. */
ts_status ts_tensorize(ts_sched *s, ts_loop *i, ts_loop *j, ts_loop *k);
/* Two copies of a shared cache: the next tile is loaded from global memory
 * into registers while the current one is used, then stored to the other
 * copy; one barrier per iteration. */
ts_status ts_double_buffer(ts_sched *s, ts_stage *stage);
/* ts_double_buffer with `tiles` (1..8) k tiles in each of the two copies:
 * the block meets at one barrier every `tiles` tiles instead of every
 * tile.  Each tile's copy is staged in registers while the tile `tiles`
 * before it computes, and stored right after, so the registers hold one
 * tile as with ts_double_buffer; shared memory holds 2 x tiles.  The
 * double-buffered stages of one attach loop need the same count.
 * ts_double_buffer(s, st) is ts_double_buffer_tiles(s, st, 1). */
ts_status ts_double_buffer_tiles(ts_sched *s, ts_stage *stage, int tiles);
/* `stages` (2..8) copies of a shared cache filled by cp.async, global
 * memory straight to shared memory without registers: tiles ko + 1 ..
 * ko + stages - 1 are in flight while tile ko is used.  The stages of one
 * attach loop pipeline together and need the same count; not with
 * ts_double_buffer.  Kernels using it need sm_80 or newer. */
ts_status ts_pipeline(ts_sched *s, ts_stage *stage, int stages);
/* The pipelined shared cache's copies made by the tensor memory
 * accelerator (cp.async.bulk.tensor, sm_90): one thread copies each
 * stage's tile from a tensor map of the operand, built on the host and
 * passed __grid_constant__, the hardware filling zeros past the edges;
 * each stage has a full mbarrier (its bytes arrived, waited for by
 * parity) and an empty one (every warp released it, waited for by the
 * producer before it refills the stage), and the k loop has no
 * __syncthreads.  Requires ts_pipeline and ts_storage_swizzle on the
 * stage, its rows stored along the operand's contiguous dimension
 * (ts_storage_transpose where the operand is stored transposed); every
 * shared cache at its loop must be TMA-filled alike.  Lowering refuses an
 * operand whose rows are not 16-byte aligned (K or N not a multiple of 8 in
 * fp16): pack it first (ts_pack) or keep cp.async (no ts_tma).  On C's
 * shared stage (ts_cache_write(s, "C", TS_SHARED, ...)): the block's
 * first thread stores the tile with the TMA, a box a 128-byte panel,
 * each once the block's threads have written it (a barrier; a panel at a
 * time, each stored while the next is written, where the epilogue's loop
 * walks the panels), and waits for the stores to have read it before the
 * block leaves. */
ts_status ts_tma(ts_sched *s, ts_stage *stage);
/* Warp specialization of a TMA-filled stage's pipeline: `producer_warps`
 * warps (4, a warpgroup) are added to the block after the consumers; the
 * first of their threads issues every copy and waits on the empty
 * barriers (the others leave once they have given their registers away),
 * the consumers only wait on full barriers, compute and release stages.
 * The producer gives its registers to the consumers (setmaxnreg) for the
 * blocks a multiprocessor the schedule asks, B: the larger of
 * ts_min_blocks_per_sm's and ts_persistent's blocks_per_sm, 1 when neither
 * is called.  The kernel is bounded to B blocks (__launch_bounds__(T, B)
 * for the T threads of consumers and producer), which allows each thread
 * R = 65536 / (B x T) registers, rounded down to 8, at most 255: at B = 1
 * the producer keeps 40 and the consumers take 232; at more the producer
 * keeps 24 and the consumers take what it released, R + (R - 24) x 128 /
 * consumer threads rounded down to 8, at most 232 (B = 2 with 2 consumer
 * warpgroups: 80, then 24 and 104).  ptxas launches the kernel with the
 * largest of those counts within R, L (one consumer warpgroup at B = 1:
 * 232).  Lowering refuses a split that cannot fit (over 2 consumer
 * warpgroups at B = 1, R under 24).  ptxas holds each wgmma to L, not to
 * the consumers' count (m64n128k16 needs 90).  Requires
 * ts_tma on the stage; every TMA-filled stage at the loop must be
 * specialized alike. */
ts_status ts_warp_specialize(ts_sched *s, ts_stage *stage, int producer_warps);
/* Ping-pong consumers (CUTLASS's KernelTmaWarpSpecializedPingpong) of a
 * producer warpgroup's pipeline in a persistent grid (ts_persistent):
 * the block gets a second consumer warpgroup, on threadIdx.z, and the
 * two take the block's tiles in turn, each computing a whole tile (the
 * schedule's block of one warpgroup, 128 threads), so that one's
 * epilogue runs beside the other's main loop.  The producer fills one
 * ring of stages for both, tile after tile; an order barrier pair hands
 * the ring over, a consumer waiting on its own before its tile's first
 * stage and arriving on the other's once its main loop is done.  Every
 * TMA-filled stage at the loop must be marked alike.  Lowering refuses
 * it without ts_persistent, with ts_cluster or C stored by the TMA, and
 * for a block of other than 128 threads or with threadIdx.z bound. */
ts_status ts_pingpong(ts_sched *s, ts_stage *stage);
/* wgmma batches left running across iterations of `loop`, the k loop
 * whose caches are pipelined: with `batches` 1, iteration ko's batch of
 * wgmma is waited for in iteration ko + 1, after that iteration's batch is
 * issued, so the tensor cores never wait for the warpgroup to issue.  The
 * tile a batch reads stays untouched while it runs, so the pipeline issues
 * each copy `batches` tiles later: ts_pipeline's stages must be at least
 * batches + 2.  0 (the default) waits for each batch in its own
 * iteration.  Call it after every other primitive on the loop (neither
 * it nor ts_partition follows the other).  Lowering refuses it on a loop
 * whose body has no wgmma or whose caches are not pipelined at it. */
ts_status ts_wgmma_in_flight(ts_sched *s, ts_loop *loop, int batches);
/* Packs `buffer` ("A" or "B"): a first kernel of the program copies op(A)
 * or op(B) into the workspace k-major (op(A) as M rows of K, op(B) as N
 * rows of K, each row padded to 16 bytes) and rounded as the math rounds
 * (to tf32 under TS_MATH_TF32), and the schedule reads that copy, as BLIS
 * packs its panels.  wgmma takes tf32 operands k-major only, and reads
 * fp32 as tf32 by dropping the low 13 bits: a packed operand is read
 * rounded to nearest, as TS_MATH_TF32 says, one read as it lies (k-major
 * already) truncated.  Call it before any ts_cache_read of the buffer. */
ts_status ts_pack(ts_sched *s, const char *buffer);

/* ---- Occupancy ----------------------------------------------------------- */

/* At least `blocks` (1..32) of the kernel's blocks on one multiprocessor at
 * once: __launch_bounds__(threads, blocks), so ptxas holds each thread to
 * 65536 / (blocks * threads) registers.  Lowering refuses more than 2048
 * threads per multiprocessor. */
ts_status ts_min_blocks_per_sm(ts_sched *s, int blocks);

/* ---- Block order --------------------------------------------------------- */

/* The blocks visit C's tiles in groups of `group` block rows, down each
 * column of a group before the next column (Triton's GROUP_M), so that the
 * blocks running at once share tiles of A and B in L2.  `rows` and `cols`
 * are the loops bound to the blockIdx of the tile's row and column; the
 * last group has the rows that are left. */
ts_status ts_swizzle(ts_sched *s, ts_loop *rows, ts_loop *cols,
                     int64_t group);
/* A persistent grid (CUTLASS's persistent tile scheduler, Triton's
 * persistent matmul): the launch has min(tiles, multiprocessors x
 * `blocks_per_sm`) blocks on blockIdx.x, where tiles is the extent of
 * `rows` times that of `cols`, and each block loops over C's tiles,
 *
 *   for (tile = blockIdx.x; tile < tiles; tile += gridDim.x)
 *
 * its body what one block of the plain grid did for the tile's row and
 * column: rows and cols (the loops bound to the blockIdx of the tile's
 * row and column, as ts_swizzle takes them) get their values from `tile`,
 * in ts_swizzle's grouped order when the schedule swizzles them too, else
 * row by row (the loop on the lower blockIdx varying fastest).  The
 * multiprocessors are the device's, counted at launch; the reference
 * executor simulates TS_EXEC_MULTIPROCESSORS of them (exec.h).  Between
 * one tile and the next the block meets at a barrier, its shared caches
 * refilled; a warp-specialized TMA pipeline (ts_warp_specialize) instead
 * runs on across tiles, its stages and mbarrier phases counted over the
 * whole loop, so that the producer loads the next tile while the
 * consumers write the last one's C.  A TMA pipeline that is not
 * warp-specialized is refused at lowering, as is ts_split_k.
 * blocks_per_sm is 1..32. */
ts_status ts_persistent(ts_sched *s, ts_loop *rows, ts_loop *cols,
                        int blocks_per_sm);
/* Thread-block clusters (sm_90; CUTLASS's ClusterShape 2x1, or 1x2 where
 * the pair is two block columns): the grid's
 * blocks go in clusters of `blocks` (2), two consecutive tiles of C in
 * the blocks' order, and `stage`, the TMA-filled cache of the operand
 * the two tiles share, is multicast: each k tile's box is copied once,
 * by the block whose rank in the cluster is the k tile's number modulo 2,
 * into the stage of both blocks, so that L2 serves it once for the pair;
 * each consumer warp releases a stage in both blocks, and the producer
 * waits for each stage's last release before its block leaves.  `rows`
 * and `cols` are the loops bound to the blockIdx of the tile's row and
 * column, as ts_swizzle and ts_persistent take them.  With ts_swizzle's
 * groups the two tiles are neighbouring block rows of a column, sharing
 * B's tile: multicast B's cache (the group must be even); without it,
 * neighbours along the loop on the lower blockIdx (it varies fastest),
 * sharing the other operand.  The blocks take C's tiles as a persistent
 * grid's do (one tile a block unless ts_persistent sets how many blocks
 * a multiprocessor), the grid's blocks a multiple of 2; where the tiles
 * along the pair's direction are odd, the block past C's edge computes
 * its partner's tile again and stores nothing.  Requires ts_tma and
 * ts_warp_specialize on the stage, and the TMA on the other operand's
 * cache (lowering refuses a cache that is not shared by the pair). */
ts_status ts_cluster(ts_sched *s, ts_loop *rows, ts_loop *cols,
                     ts_stage *stage, int blocks);

/* C that replays the schedule: a malloc'd string the caller frees, or NULL
 * when out of memory or the schedule is in error. */
char *ts_print_trace(ts_sched *s);
/* The loop nest of ts_matmul_named, then after each primitive of the trace
 * the primitive's call as C and the nest's lines it removed ("- ") and
 * added ("+ "), with a line of context (tessel show --steps).  NULL for a
 * schedule in error; free() it. */
char *ts_print_steps(ts_sched *s);

/* Replays the trace of `from` onto `onto` (a fresh ts_matmul). */
ts_status ts_replay(const ts_sched *from, ts_sched *onto);

/* The schedule as text another process reads back: its definition, each
 * primitive of its trace, its status and message.  Writes at most cap bytes
 * of it to buf (NUL-terminated when cap > 0) and returns the length of the
 * whole text, as snprintf does.  It allocates nothing and calls no stdio,
 * so a signal handler may save a schedule that no primitive is changing at
 * that moment (the trace of a schedule whose code crashed). */
size_t ts_trace_save(const ts_sched *s, char *buf, size_t cap);
/* Replays text of ts_trace_save onto `onto`, a fresh ts_matmul_named
 * schedule of the same definition, then sets the status and message saved:
 * the schedule is the one saved (its loop nest, trace and error).  Text cut
 * short (its writer died) replays the whole records it has; *complete
 * (may be NULL) says whether the text was whole.  Returns onto's status;
 * text that is not a trace of that definition is an error on onto. */
ts_status ts_trace_load(ts_sched *onto, const char *text, size_t len,
                        bool *complete);

/* ---- Where each primitive is called ------------------------------------- */

/* A place in a source file: its name as the compiler was given it and a
 * line (1 is the first); file NULL when unknown. */
typedef struct ts_location {
  const char *file;
  int line;
} ts_location;

/* Where the call that put s in error was made, or {NULL, 0}: an error of
 * no primitive, or of a primitive called as a plain function. */
ts_location ts_sched_error_location(const ts_sched *s);

/* Each primitive (and ts_get_loop) is also a macro that passes the file
 * and line of the call to its _at form, which the trace records (tessel
 * show --steps prints it) and an error names, as a compiler's diagnostic
 * does: "hop.c:27: error: ts_tma: ...".  The functions stay functions:
 * (ts_split)(s, ...) or a pointer to ts_split calls it with no location.
 * Define TS_NO_CALL_LOCATIONS before including tessel.h for no macros. */
ts_loop *ts_get_loop_at(const char *file, int line, ts_sched *s,
                        const char *name);
ts_status ts_split_at(const char *file, int line, ts_sched *s, ts_loop *loop,
                      int64_t factor, ts_loop **outer, ts_loop **inner);
ts_status ts_fuse_at(const char *file, int line, ts_sched *s, ts_loop *outer,
                     ts_loop *inner, ts_loop **fused);
ts_status ts_reorder_at(const char *file, int line, ts_sched *s, int n,
                        ts_loop *const loops[]);
ts_status ts_bind_at(const char *file, int line, ts_sched *s, ts_loop *loop,
                     ts_loop_kind tag);
ts_status ts_unroll_at(const char *file, int line, ts_sched *s, ts_loop *loop);
ts_status ts_partition_at(const char *file, int line, ts_sched *s,
                          ts_loop *loop);
ts_status ts_rename_at(const char *file, int line, ts_sched *s, ts_loop *loop,
                       const char *name);
ts_status ts_split_k_at(const char *file, int line, ts_sched *s, ts_loop *k,
                        int64_t parts, ts_split_k_mode mode, ts_loop **outer,
                        ts_loop **inner);
ts_status ts_cache_read_at(const char *file, int line, ts_sched *s,
                           const char *buffer, ts_scope scope, ts_loop *at,
                           ts_stage **stage);
ts_status ts_cache_write_at(const char *file, int line, ts_sched *s,
                            const char *buffer, ts_scope scope, ts_loop *at,
                            ts_stage **stage);
ts_status ts_storage_transpose_at(const char *file, int line, ts_sched *s,
                                  ts_stage *stage);
ts_status ts_storage_pad_at(const char *file, int line, ts_sched *s,
                            ts_stage *stage, int64_t pad);
ts_status ts_storage_swizzle_at(const char *file, int line, ts_sched *s,
                                ts_stage *stage);
ts_status ts_vectorize_at(const char *file, int line, ts_sched *s,
                          ts_loop *loop);
ts_status ts_tensorize_at(const char *file, int line, ts_sched *s, ts_loop *i,
                          ts_loop *j, ts_loop *k);
ts_status ts_double_buffer_at(const char *file, int line, ts_sched *s,
                              ts_stage *stage);
ts_status ts_double_buffer_tiles_at(const char *file, int line, ts_sched *s,
                                    ts_stage *stage, int tiles);
ts_status ts_pipeline_at(const char *file, int line, ts_sched *s,
                         ts_stage *stage, int stages);
ts_status ts_tma_at(const char *file, int line, ts_sched *s, ts_stage *stage);
ts_status ts_warp_specialize_at(const char *file, int line, ts_sched *s,
                                ts_stage *stage, int producer_warps);
ts_status ts_pingpong_at(const char *file, int line, ts_sched *s,
                         ts_stage *stage);
ts_status ts_wgmma_in_flight_at(const char *file, int line, ts_sched *s,
                                ts_loop *loop, int batches);
ts_status ts_pack_at(const char *file, int line, ts_sched *s,
                     const char *buffer);
ts_status ts_min_blocks_per_sm_at(const char *file, int line, ts_sched *s,
                                  int blocks);
ts_status ts_swizzle_at(const char *file, int line, ts_sched *s, ts_loop *rows,
                        ts_loop *cols, int64_t group);
ts_status ts_persistent_at(const char *file, int line, ts_sched *s,
                           ts_loop *rows, ts_loop *cols, int blocks_per_sm);
ts_status ts_cluster_at(const char *file, int line, ts_sched *s, ts_loop *rows,
                        ts_loop *cols, ts_stage *stage, int blocks);

#ifndef TS_NO_CALL_LOCATIONS
#define TS_HERE __FILE__, __LINE__
#define ts_get_loop(...) ts_get_loop_at(TS_HERE, __VA_ARGS__)
#define ts_split(...) ts_split_at(TS_HERE, __VA_ARGS__)
#define ts_fuse(...) ts_fuse_at(TS_HERE, __VA_ARGS__)
#define ts_reorder(...) ts_reorder_at(TS_HERE, __VA_ARGS__)
#define ts_bind(...) ts_bind_at(TS_HERE, __VA_ARGS__)
#define ts_unroll(...) ts_unroll_at(TS_HERE, __VA_ARGS__)
#define ts_partition(...) ts_partition_at(TS_HERE, __VA_ARGS__)
#define ts_rename(...) ts_rename_at(TS_HERE, __VA_ARGS__)
#define ts_split_k(...) ts_split_k_at(TS_HERE, __VA_ARGS__)
#define ts_cache_read(...) ts_cache_read_at(TS_HERE, __VA_ARGS__)
#define ts_cache_write(...) ts_cache_write_at(TS_HERE, __VA_ARGS__)
#define ts_storage_transpose(...) ts_storage_transpose_at(TS_HERE, __VA_ARGS__)
#define ts_storage_pad(...) ts_storage_pad_at(TS_HERE, __VA_ARGS__)
#define ts_storage_swizzle(...) ts_storage_swizzle_at(TS_HERE, __VA_ARGS__)
#define ts_vectorize(...) ts_vectorize_at(TS_HERE, __VA_ARGS__)
#define ts_tensorize(...) ts_tensorize_at(TS_HERE, __VA_ARGS__)
#define ts_double_buffer(...) ts_double_buffer_at(TS_HERE, __VA_ARGS__)
#define ts_double_buffer_tiles(...)                                           \
  ts_double_buffer_tiles_at(TS_HERE, __VA_ARGS__)
#define ts_pipeline(...) ts_pipeline_at(TS_HERE, __VA_ARGS__)
#define ts_tma(...) ts_tma_at(TS_HERE, __VA_ARGS__)
#define ts_warp_specialize(...) ts_warp_specialize_at(TS_HERE, __VA_ARGS__)
#define ts_pingpong(...) ts_pingpong_at(TS_HERE, __VA_ARGS__)
#define ts_wgmma_in_flight(...) ts_wgmma_in_flight_at(TS_HERE, __VA_ARGS__)
#define ts_pack(...) ts_pack_at(TS_HERE, __VA_ARGS__)
#define ts_min_blocks_per_sm(...) ts_min_blocks_per_sm_at(TS_HERE, __VA_ARGS__)
#define ts_swizzle(...) ts_swizzle_at(TS_HERE, __VA_ARGS__)
#define ts_persistent(...) ts_persistent_at(TS_HERE, __VA_ARGS__)
#define ts_cluster(...) ts_cluster_at(TS_HERE, __VA_ARGS__)
#endif

#ifdef __cplusplus
}
#endif
#endif
