/*
 * tessel: a loop-transformation compiler for matrix multiplication.
 *
 * A user defines a GEMM, C = alpha * op(A) * op(B) + beta * C, rewrites its
 * i/j/k loop nest with schedule primitives, and gets a CUDA kernel:
 *
 *     ts_gemm def = ts_gemm_make(1024, 1024, 1024);
 *     ts_sched *s = ts_matmul(&def);
 *     ts_loop *io, *ii, *jo, *ji;
 *     ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
 *     ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
 *     ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
 *     ts_bind(s, io, TS_BLOCK_Y);  ts_bind(s, jo, TS_BLOCK_X);
 *     ts_bind(s, ii, TS_THREAD_Y); ts_bind(s, ji, TS_THREAD_X);
 *     char *cu = ts_cuda_source(s);
 *
 * Errors are sticky (as in cairo): the first failing primitive records a
 * status and a message on the schedule, leaves the loop nest as it was, and
 * every later primitive returns that status without doing anything.
 * Objects are never NULL on failure; each carries its own status.
 */
#ifndef TESSEL_H
#define TESSEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes ------------------------------------------------------ */

#define TS_STATUS_LIST(X)                                                     \
  X(TS_OK, "no error")                                                        \
  X(TS_ERR_NO_MEMORY, "out of memory")                                        \
  X(TS_ERR_NULL_ARG, "a required argument is NULL")                           \
  X(TS_ERR_BAD_SHAPE, "shape out of range")                                   \
  X(TS_ERR_BAD_LAYOUT, "layout must be NN, NT, TN or TT")                     \
  X(TS_ERR_BAD_FACTOR, "factor must be >= 1")                                 \
  X(TS_ERR_UNKNOWN_LOOP, "no loop of that name")                              \
  X(TS_ERR_FOREIGN_LOOP, "loop belongs to another schedule")                  \
  X(TS_ERR_LOOP_REPLACED, "loop was replaced by an earlier split or fuse")    \
  X(TS_ERR_NOT_PERFECT_NEST, "loops are not in one perfect nest")             \
  X(TS_ERR_NOT_ADJACENT, "loops are not directly nested")                     \
  X(TS_ERR_DUPLICATE_LOOP, "a loop is given twice")                           \
  X(TS_ERR_MIXED_AXES, "a reduction loop cannot be fused with a spatial loop") \
  X(TS_ERR_ALREADY_BOUND, "loop is already bound, unrolled or marked")        \
  X(TS_ERR_TAG_BOUND_TWICE, "that launch index is bound to another loop")     \
  X(TS_ERR_THREAD_OUTSIDE_BLOCK, "a thread loop lies outside a block loop")   \
  X(TS_ERR_TOO_MANY_THREADS, "more than 1024 threads per block")              \
  X(TS_ERR_LAUNCH_LIMIT, "extent over the launch dimension's limit")          \
  X(TS_ERR_BIND_REDUCTION, "a reduction loop cannot be bound")                \
  X(TS_ERR_BOUND_INSIDE_REDUCTION, "a bound loop lies inside a reduction loop") \
  X(TS_ERR_NOT_OUTERMOST_REDUCTION, "split-K needs the outermost reduction loop") \
  X(TS_ERR_BAD_TAG, "the loop cannot take that launch index")                \
  X(TS_ERR_BAD_NAME, "bad loop name")                                         \
  X(TS_ERR_NAME_TAKEN, "loop name already used")                              \
  X(TS_ERR_BAD_ARG, "invalid argument")                                       \
  X(TS_ERR_UNKNOWN_SCHEDULE, "no built-in schedule of that name")             \
  X(TS_ERR_EXEC_FAULT, "the reference executor found a fault")                \
  X(TS_ERR_MISMATCH, "result differs from the reference GEMM")                \
  X(TS_ERR_NO_GPU, "no CUDA driver or GPU")                                   \
  X(TS_ERR_CUDA, "a CUDA driver call failed")                                 \
  X(TS_ERR_NVRTC, "NVRTC failed")                                             \
  X(TS_ERR_BAD_ARCH, "architecture not supported by NVRTC")                   \
  X(TS_ERR_CUBLAS, "cuBLAS failed")                                           \
  X(TS_ERR_IO, "file input/output failed")                                   \
  X(TS_ERR_UNKNOWN_BUFFER, "no buffer of that name")                          \
  X(TS_ERR_BAD_SCOPE, "scope must be TS_SHARED or TS_LOCAL")                  \
  X(TS_ERR_BAD_ATTACH, "the cache cannot be attached at that loop")           \
  X(TS_ERR_CACHE_REGION, "the change would alter a cache's region")           \
  X(TS_ERR_SHARED_LIMIT, "shared memory over the limit")                      \
  X(TS_ERR_BAD_VECTOR, "vector width must be 1, 2 or 4 (8 for 2-byte types)")  \
  X(TS_ERR_NOT_INNERMOST, "vectorized or tensorized loops must be innermost")  \
  X(TS_ERR_NOT_SHARED, "the cache must be in shared memory")                 \
  X(TS_ERR_BAD_PAD, "padding must be in 0..32")                               \
  X(TS_ERR_STAGE_USED, "the cache was already transformed")                  \
  X(TS_ERR_RESOURCES, "the kernel needs more than the device has")           \
  X(TS_ERR_PRUNED, "the configuration breaks a constraint of its space")   \
  X(TS_ERR_BAD_KNOB, "the space declares a knob wrongly")                     \
  X(TS_ERR_BAD_TENSORIZE, "the loops do not form a tensor-core instruction") \
  X(TS_ERR_SCHEDULE_FAULT, "the schedule's code crashed, hung or called exit") \
  X(TS_ERR_TOO_SLOW, "the check would take longer than its budget")           \
  X(TS_ERR_INDEX_OVERFLOW, "an index would overflow the kernel's int")        \
  X(TS_ERR_TENSOR_TYPE, "no tensor-core instruction for the operand types")  \
  X(TS_ERR_CACHE_ORDER, "caches copy global -> shared -> registers")          \
  X(TS_ERR_STAGES_DIFFER, "caches at one loop are buffered differently")

typedef enum {
#define TS_STATUS_ENUM(code, text) code,
  TS_STATUS_LIST(TS_STATUS_ENUM)
#undef TS_STATUS_ENUM
  TS_STATUS_COUNT
} ts_status;

/* Fixed text for a status code. */
const char *ts_strerror(ts_status status);

/* ---- The definition ---------------------------------------------------- */

/* op(A) is A (N) or A transposed (T).  NT: A row-major MxK, B stored as an
 * NxK row-major matrix (C = A * B^T, as seed 000 computes). */
typedef enum { TS_NN, TS_NT, TS_TN, TS_TT } ts_layout;

/* Element types of the matrices.  A and B may be fp16 or bf16 with an fp32
 * accumulator and an fp32, fp16 or bf16 C; fp32 everywhere is the default. */
typedef enum {
  TS_F32,  /* IEEE binary32 */
  TS_F16,  /* IEEE binary16 (CUDA's __half) */
  TS_BF16, /* bfloat16 (CUDA's __nv_bfloat16) */
} ts_dtype;

/* How fp32 A and B are multiplied: exactly (the default), or rounded to
 * tf32 (10 significand bits) first, as tensor cores do and as cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_TF32 allows.  Products are summed in fp32 either
 * way.  The command line's --dtype tf32 is fp32 A and B with TS_MATH_TF32. */
typedef enum { TS_MATH_F32, TS_MATH_TF32 } ts_math;

typedef struct ts_gemm {
  int64_t m, n, k;  /* C is m x n; op(A) is m x k; op(B) is k x n */
  ts_layout layout;
  float alpha;
  float beta; /* C is not read when beta == 0 */
  /* Storage types of A, B and C, and the accumulator's (TS_F32 only). */
  ts_dtype a_type, b_type, c_type, acc_type;
  ts_math math; /* fp32 A and B only */
} ts_gemm;

/* {m, n, k} with layout NN, alpha 1 and beta 0, as cuBLAS's GEMM defaults. */
ts_gemm ts_gemm_make(int64_t m, int64_t n, int64_t k);

const char *ts_layout_name(ts_layout layout);
/* "f32", "f16", "bf16"; ts_dtype_parse returns -1 for anything else. */
const char *ts_dtype_name(ts_dtype t);
int ts_dtype_parse(const char *text);
int ts_dtype_size(ts_dtype t); /* bytes: 4, 2, 2 */
/* How far a correct kernel's C may be from a reference's, as the largest
 * difference over the largest |C| (rounding of the sum in the accumulator's
 * type and of the store to C's): 1e-5 for fp32 up to K = 4096. */
double ts_gemm_tolerance(const ts_gemm *def);
/* Parses "NN", "NT", "TN", "TT"; returns -1 otherwise. */
int ts_layout_parse(const char *text);

/* ---- Schedules and loops ----------------------------------------------- */

typedef struct ts_sched ts_sched;
typedef struct ts_loop ts_loop;

typedef enum {
  TS_SERIAL,
  TS_UNROLLED,
  TS_BLOCK_X,
  TS_BLOCK_Y,
  TS_BLOCK_Z,
  TS_THREAD_X,
  TS_THREAD_Y,
  TS_THREAD_Z,
  TS_VECTORIZED,
  TS_TENSORIZED, /* one of the three loops of a tensor-core instruction */
} ts_loop_kind;

/* The naive loop nest: for i, for j, for k: C[i,j] += A[i,k] * B[k,j].
 * Never NULL; check ts_sched_status. */
ts_sched *ts_matmul(const ts_gemm *def);
/* As ts_matmul, with a name that appears in the trace and the .cu header. */
ts_sched *ts_matmul_named(const ts_gemm *def, const char *name);
void ts_sched_free(ts_sched *s); /* NULL is fine */

ts_status ts_sched_status(const ts_sched *s);
/* The first error: "ts_split: ..." then the loop nest with the loop marked.
 * Empty when the status is TS_OK. */
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
 * reduction loop. */
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
 * accumulators.  The instruction takes the 32 lanes of a warp: lowering
 * binds threadIdx.x to them, so the schedule binds no loop to threadIdx.x
 * and makes its warps with threadIdx.y and z.  Each lane holds the
 * accumulators and operand elements the PTX ISA assigns it
 * (docs/primitives.md, "Tensor cores").  Call it after every other
 * primitive on the three loops. */
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
 * operand whose rows are not 16-byte aligned (K or N odd in fp16): pack
 * it first (ts_pack) or keep cp.async (no ts_tma). */
ts_status ts_tma(ts_sched *s, ts_stage *stage);
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
 * packs its panels.  wgmma takes tf32 operands only so: k-major, and
 * already rounded (it reads fp32 as tf32 by dropping bits).  Call it
 * before any ts_cache_read of the buffer. */
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

/* ---- The lowered kernel -------------------------------------------------- */

/* Lowering turns a schedule into a program: one self-contained, immutable
 * kernel (its body, parameters, launch geometry, shared memory, occupancy
 * hint, entry point and the definition it computes) that owns all of its
 * memory.  The code generator, the reference executor, the compiler and the
 * GPU take only a program, never the schedule, which lowering does not
 * change: a schedule that lowering refuses keeps its TS_OK, and the
 * program carries the error.  Free the schedule whenever you like. */
typedef struct ts_program ts_program;

typedef struct ts_launch {
  int64_t grid[3], block[3];
  /* Dynamic shared memory, in bytes: the shared caches when they pass the
   * 48 KiB a kernel may declare statically; 0 otherwise. */
  int64_t dynamic_shared;
} ts_launch;

/* Never NULL; check ts_program_status.  A schedule in error gives a
 * program with the schedule's status and message. */
ts_program *ts_lower(const ts_sched *s);
void ts_program_free(ts_program *p); /* NULL is fine */
ts_status ts_program_status(const ts_program *p);
const char *ts_program_errmsg(const ts_program *p); /* "" when TS_OK */
const ts_gemm *ts_program_gemm(const ts_program *p);
const char *ts_program_name(const ts_program *p);  /* the schedule's */
const char *ts_program_entry(const ts_program *p); /* "tessel_<name>" */
ts_status ts_program_launch(const ts_program *p, ts_launch *out);
/* The kernels a program launches, in order: ts_pack's (op(A)'s, then
 * op(B)'s) first, then the schedule's kernel, with split-K's second (the
 * workspace's reduction after it, or the scaling of C by beta before it).  ts_program_entry and ts_program_launch
 * are the schedule's kernel; these give kernel i (0 .. count - 1). */
int ts_program_kernel_count(const ts_program *p);
const char *ts_program_kernel_entry(const ts_program *p, int i);
ts_status ts_program_kernel_launch(const ts_program *p, int i, ts_launch *out);
/* Bytes of the workspace the kernels share (split-K's fp32 partial sums,
 * then ts_pack's copies of the operands), passed to each kernel as a
 * fourth parameter; 0: none. */
int64_t ts_program_workspace(const ts_program *p);
/* Blocks per multiprocessor asked for (__launch_bounds__); 0: any. */
int ts_program_min_blocks(const ts_program *p);
/* The oldest compute capability the kernel runs on, as 80 for sm_80 (which
 * cp.async needs); 0: any. */
int ts_program_min_arch(const ts_program *p);
/* Whether it uses instructions of one architecture only (wgmma: sm_90,
 * compiled for sm_90a), which ts_program_min_arch names. */
bool ts_program_arch_specific(const ts_program *p);
/* Malloc'd text the caller frees, or NULL when out of memory or the program
 * is in error: the loop nest, and the CUDA C (deterministic). */
char *ts_program_ir(const ts_program *p);
/* ts_program_ir with each loop and buffer followed by the primitive that
 * made it ("# ts_split, step 3"; "# lowering" for what lowering added). */
char *ts_program_ir_provenance(const ts_program *p);
char *ts_program_cuda(const ts_program *p);

/* Runs the program on the CPU with CUDA's semantics, on the given host
 * matrices (A and B in the definition's layouts, C row-major m x n,
 * updated in place).  The matrices are floats whatever the definition's
 * types: values of an fp16 or bf16 matrix are first rounded to it (A and B
 * in copies, C in place), and every store rounds to its buffer's type as
 * the GPU does.  Faults (out of bounds, races, a barrier in divergent
 * code, a read of memory nothing wrote) return TS_ERR_EXEC_FAULT with the
 * description in msg. */
ts_status ts_program_execute(const ts_program *p, const float *A,
                             const float *B, float *C, char *msg,
                             size_t msglen);
/* Runs the program on random data (rounded to the definition's types)
 * against a plain C GEMM (double accumulation of the rounded values).
 * TS_ERR_MISMATCH or TS_ERR_EXEC_FAULT with details in msg; a program in
 * error gives its status and message. */
ts_status ts_program_check(const ts_program *p, uint64_t seed, char *msg,
                           size_t msglen);

/* The same from a schedule, lowering it each time (the program is freed
 * before they return; lower once with ts_lower to do several things). */
char *ts_print_ir(const ts_sched *s);
char *ts_cuda_source(const ts_sched *s);
ts_status ts_launch_dims(const ts_sched *s, ts_launch *out);
ts_status ts_execute(const ts_sched *s, const float *A, const float *B,
                     float *C, char *msg, size_t msglen);
ts_status ts_check(const ts_sched *s, uint64_t seed, char *msg,
                   size_t msglen);
/* TS_OK where a check of def fits in the memory this machine has
 * available (ts_memory_available: the inputs, C and the executor's record
 * of every element, ts_check_bytes); else TS_ERR_NO_MEMORY with the
 * numbers in msg.  ts_check refuses such a shape so before it allocates
 * anything. */
ts_status ts_check_fits(const ts_gemm *def, char *msg, size_t msglen);
/* Bytes a full check of def holds at once: about 34 an element of A and
 * B, 42 of C. */
double ts_check_bytes(const ts_gemm *def);
/* Bytes of memory this machine has available now: /proc/meminfo's
 * MemAvailable, or less where a cgroup limits the process (memory.max),
 * else the physical memory; 0 when it cannot say. */
double ts_memory_available(void);

/* A sampled check (ts_program_check_sampled): the blocks of every kernel
 * that write chosen elements of C run on the reference executor with
 * every check a full run makes, on matrices never held whole (A and B are
 * computed from the seed and each element's index; C and the split-K
 * workspace live in pages made on first touch), and the elements they
 * write are compared with a double-precision GEMM of the same elements.
 * The chosen elements: C's four corners, a point on each edge, then
 * `random` points inside; each brings the blocks that may write it (found
 * by interval analysis of the kernels' stores, so a swizzle or split-K is
 * followed), as long as the estimated time stays within `budget_s`. */
typedef struct ts_sample {
  int random;      /* in: random points inside C, beyond corners and edges */
  double budget_s; /* in: seconds the blocks may take (estimated); 0: any */
  int points_run, points_wanted; /* out: the chosen elements run, of all */
  long long blocks_run, blocks_total; /* out: blocks of every kernel */
  long long elements;                 /* out: elements of C compared */
  double bytes;   /* out: memory the sparse matrices took (a plan: the
                     most it may hold at once, estimated) */
  double seconds; /* out: the estimate for the blocks chosen */
  double steps;   /* out: their steps (ts_check_steps' unit), estimated
                     by a plan, counted by a run */
} ts_sample;

/* The reference executor's work is counted in steps: one statement of a
 * kernel run for one thread of its block.  The threads of a block run in
 * lockstep, so every thread of a block that runs a statement counts, those
 * a guard leaves out past C's edge too; a store of a vector counts its
 * lanes, a tensor-core instruction its registers and multiply-adds. */

/* The executor's speed, steps a second on one core: what the estimates of
 * ts_check_seconds and a sample's budget assume. */
double ts_check_rate(void);
/* The steps of a full check of p, estimated from its lowered kernels:
 * their blocks, each block's threads, every loop's trip count, every
 * statement (both branches of an `if`); 0 for a program in error. */
double ts_check_steps(const ts_program *p);
/* ts_check_steps in seconds, at ts_check_rate. */
double ts_check_seconds(const ts_program *p);
/* ts_program_check that also counts the steps the executor took into
 * *steps (may be NULL). */
ts_status ts_program_check_counted(const ts_program *p, uint64_t seed,
                                   double *steps, char *msg, size_t msglen);
/* A sampled check of p (see ts_sample; s's inputs set); TS_OK when every
 * compared element is right and no fault happened in the blocks run, else
 * TS_ERR_MISMATCH or TS_ERR_EXEC_FAULT with details in msg.  s's outputs
 * are filled either way.  Where the blocks of the first point alone would
 * take more than budget_s, nothing runs: TS_ERR_TOO_SLOW, as the plan. */
ts_status ts_program_check_sampled(const ts_program *p, uint64_t seed,
                                   ts_sample *s, char *msg, size_t msglen);
/* The sample ts_program_check_sampled would run, chosen and not run: s's
 * outputs, with `bytes` the most memory the run would hold at once (C's
 * and the workspace's pages, one box's rows of A and columns of B) and
 * `seconds` the executor's time, both estimated.  TS_ERR_NO_MEMORY, with
 * the numbers in msg, where that memory is more than this machine has
 * available; TS_ERR_TOO_SLOW where the blocks of the first point (a corner
 * of C) alone pass budget_s (a block walking a very long K):
 * ts_program_check_sampled refuses such samples so first. */
ts_status ts_program_sample_plan(const ts_program *p, uint64_t seed,
                                 ts_sample *s, char *msg, size_t msglen);

/* ---- Explaining a kernel (tessel explain) -------------------------------
 * What each memory access of a program's kernels costs, and what the
 * kernel asks of a multiprocessor, computed from the lowered IR on the CPU
 * before anything is compiled.  Every warp of one block (the grid's middle
 * one, whose guards are those of the steady state) is walked with each of
 * its lanes' indices evaluated: the k loop's first and last 8 steps and its
 * middle one (standing for the rest), every iteration of the other loops.
 * A global access is counted in 32-byte sectors per warp-wide request, a
 * shared one in wavefronts (32 banks of 4 bytes; a warp served whole for
 * 4-byte accesses, in halves for 8 and quarters for 16; lanes reading one
 * word share it), as Nsight Compute counts them.  docs/explain.md. */

typedef enum {
  TS_ACCESS_GLOBAL_LOAD,
  TS_ACCESS_GLOBAL_STORE,
  TS_ACCESS_GLOBAL_ATOMIC, /* split-K's atomic adds into C */
  TS_ACCESS_SHARED_LOAD,
  TS_ACCESS_SHARED_STORE,
  TS_ACCESS_CP_ASYNC, /* global to shared: sectors read, wavefronts stored */
  TS_ACCESS_LDMATRIX, /* a warp's fragment load from shared memory */
} ts_access_kind;

/* Where an access lies relative to the kernel's k loop (its outermost
 * serial reduction loop). */
typedef enum { TS_BEFORE_K, TS_IN_K, TS_AFTER_K, TS_NO_K } ts_access_phase;

typedef struct ts_access_report {
  int kernel; /* which of the program's kernels, 0 .. */
  ts_access_kind kind;
  ts_access_phase phase;
  const char *buffer; /* the memory side's buffer: "A", "B.shared" */
  const char *text;   /* the access as the IR prints it */
  int bytes;          /* a lane's bytes per access: the vector width, of
                       * the compiler's merged loads where it merges */
  /* A vectorized loop whose lanes run one by one (the rows not aligned
   * for vectors): each lane is an access of its own. */
  bool scalar_lanes;
  /* Warp-wide requests of one block: over the whole kernel, and in one
   * steady-state k step for accesses in the k loop; as compiled (a load
   * the compiler reuses or merges into a wider one counted once), and as
   * the IR makes them. */
  double requests, requests_per_step, ir_requests;
  double active_lanes; /* per request, on average */
  /* Global (and cp.async's global side): 32-byte sectors, and the fewest
   * the requested bytes could take. */
  double sectors, ideal_sectors;
  /* Shared (and cp.async's, ldmatrix's): wavefronts, and the fewest. */
  double wavefronts, ideal_wavefronts;
  bool misaligned;  /* a lane's address not a multiple of its width */
  int64_t stride;   /* bytes between lanes 0 and 1 (when all lanes agree) */
  bool uniform_stride;
  char verdict[320]; /* one line: "coalesced", "4-way bank conflict ..." */
} ts_access_report;

typedef struct ts_occupancy {
  const char *arch; /* "sm_80" */
  int blocks;       /* resident blocks per multiprocessor */
  int warps;        /* resident warps per multiprocessor */
  double fraction;  /* warps / the architecture's most */
  const char *limit; /* "registers", "shared memory", "threads", "blocks" */
} ts_occupancy;

typedef struct ts_kernel_report {
  const char *entry;
  int64_t grid[3], block[3];
  int64_t blocks, threads; /* in the grid; a block's */
  int64_t k_steps;         /* iterations of its k loop; 0: none */
  int64_t shared_bytes;    /* a block's */
  /* 32-bit registers a thread's local buffers need (accumulators, register
   * caches, staging, fragments), and with a fixed allowance for indices
   * and addresses: ptxas decides the real count. */
  int tile_registers, registers;
  const char *register_detail; /* "acc 128, A.shared.local 8" */
  double flops;          /* a block's multiply-adds times two */
  double global_bytes;   /* a block's global bytes requested */
  double intensity;      /* flops / global_bytes */
  ts_occupancy occupancy[4];
  int noccupancy;
  /* Totals over the grid, as Nsight Compute sums them over a launch. */
  double global_ld_requests, global_ld_sectors;
  double global_st_requests, global_st_sectors;
  double ldgsts_requests, ldgsts_sectors, ldgsts_wavefronts, ldgsts_ideal;
  double shared_ld_requests, shared_ld_wavefronts, shared_ld_ideal;
  double shared_st_requests, shared_st_wavefronts, shared_st_ideal;
} ts_kernel_report;

typedef struct ts_explain {
  ts_status status;
  char *errmsg;       /* "" when TS_OK */
  ts_gemm def;
  const char *name;
  ts_kernel_report *kernels;
  int nkernels;
  ts_access_report *accesses; /* kernel by kernel, in program order */
  int naccesses;
  void *own_; /* holds the strings above; private */
} ts_explain;

typedef struct ts_explain_opts {
  /* "sm_80", "sm_86", "sm_89" or "sm_90": the occupancy of that one;
   * NULL: sm_80 and sm_90. */
  const char *arch;
  /* Walk every block of the grid rather than the middle one counted for
   * all: exact at edges, slow at large shapes (tests). */
  bool every_block;
  /* Every access of the IR a request, as the reference executor makes
   * them: no loads reused or merged as the compiler does (tests). */
  bool as_written;
} ts_explain_opts;

/* Never NULL except out of memory; status is the program's where it is in
 * error, TS_ERR_BAD_ARCH for an architecture not in the table. */
ts_explain *ts_program_explain(const ts_program *p,
                               const ts_explain_opts *opts);
void ts_explain_free(ts_explain *e); /* NULL is fine */
/* The report as text (tessel explain); free() it. */
char *ts_explain_text(const ts_explain *e);
/* "global load", "cp.async", ...; "before the k loop", ... */
const char *ts_access_kind_name(ts_access_kind k);
const char *ts_access_phase_name(ts_access_phase p);

/* ---- Built-in schedules ------------------------------------------------ */

typedef struct ts_builtin {
  const char *name;
  const char *summary;
  ts_status (*apply)(ts_sched *s); /* applies the schedule's primitives */
  /* It tensorizes: it needs f16 or bf16 A and B, or f32 with
   * TS_MATH_TF32, and refuses exact fp32. */
  bool tensor_cores;
  /* Its instruction (wgmma) is sm_90a's: it compiles for sm_90 alone. */
  bool sm90_only;
} ts_builtin;

int ts_builtin_count(void);
const ts_builtin *ts_builtin_at(int index);
const ts_builtin *ts_builtin_find(const char *name);
/* ts_matmul_named(def, name) with the built-in applied; never NULL. */
ts_sched *ts_builtin_schedule(const char *name, const ts_gemm *def);

/* ---- Tuning spaces -------------------------------------------------------
 *
 * A space is a schedule with knobs: where it would write a number (a tile, a
 * k step, a thread tile) or pick one of several ways (a loop order), it asks
 * its configuration, as AutoTVM's define_knob does:
 *
 *   ts_status my_space(ts_sched *s, ts_config *c) {
 *     int64_t bm = ts_knob(c, "bm", 3, (int64_t[]){32, 64, 128});
 *     int64_t tm = ts_knob(c, "tm", 2, (int64_t[]){4, 8});
 *     ts_knob_require(c, bm / tm <= 32, "%lld rows of threads", bm / tm);
 *     ... the primitives, with bm and tm ...
 *   }
 *
 * A configuration is one value per knob, written "bm=64,tm=8" and read back
 * by ts_config_parse; the schedule it gives prints as C (ts_print_trace), so
 * a result is reproduced without the tuner.  Enumerating a space runs it
 * once per configuration: knobs may depend on earlier ones (a knob declared
 * only for some values of another, or with values that depend on them); a
 * configuration is pruned, with the reason, where a constraint fails or a
 * primitive refuses it. */

typedef struct ts_config ts_config;

typedef struct ts_space {
  const char *name;
  const char *summary;
  ts_status (*apply)(ts_sched *s, ts_config *c);
  bool tensor_cores; /* as a ts_builtin's */
  bool sm90_only;    /* as a ts_builtin's */
} ts_space;

/* The configuration's value of the knob `name`, one of values[0..n).  When
 * c is NULL, or names no value for it, the first value.  A knob declared
 * wrongly (no name, no values, more than 32 knobs, fewer values than the
 * enumeration saw before) is the space's own error: TS_ERR_BAD_KNOB. */
int64_t ts_knob(ts_config *c, const char *name, int n, const int64_t values[]);
/* The same for a choice among names; returns its index. */
int ts_knob_choice(ts_config *c, const char *name, int n,
                   const char *const names[]);
/* Prunes the configuration unless ok, with the reason (printf format);
 * returns ok.  The schedule may go on: its result is not used. */
int ts_knob_require(ts_config *c, int ok, const char *why, ...)
    __attribute__((format(printf, 3, 4)));

/* "bm=64,tm=8,order=k_innermost": the values to use by name.  NULL with
 * the reason in err when the text is not of that form. */
ts_config *ts_config_parse(const char *text, char *err, size_t errlen);
void ts_config_free(ts_config *c);
/* The knobs a run of the space declared, as ts_config_parse reads them
 * ("" before any); malloc'd, NULL when out of memory. */
char *ts_config_text(const ts_config *c);
/* Why the configuration was pruned, or NULL. */
const char *ts_config_pruned(const ts_config *c);
int ts_config_knob_count(const ts_config *c);
const char *ts_config_knob_name(const ts_config *c, int i);
/* Knob i's value as text ("64", "k_innermost"), NULL past the end. */
const char *ts_config_knob_value(const ts_config *c, int i);

/* The space's schedule for def in configuration c (NULL: every knob's
 * first value); never NULL.  A pruned configuration gives a schedule in
 * error (TS_ERR_PRUNED) naming the reason; a knob the space declares
 * wrongly, TS_ERR_BAD_KNOB (the configuration is pruned too). */
ts_sched *ts_space_schedule(const ts_space *space, const ts_gemm *def,
                            ts_config *c);
/* Every configuration of the space for def, in order, pruned ones
 * included (ts_config_pruned says which and why).  *out is a malloc'd array
 * of n configurations that ts_space_free_configs frees; returns n, or -1
 * when out of memory or the space declares more than `limit` (0: 100000). */
int ts_space_enumerate(const ts_space *space, const ts_gemm *def, int limit,
                       ts_config ***out);
void ts_space_free_configs(ts_config **configs, int n);

/* The built-in spaces (`tessel tune --list`). */
int ts_space_count(void);
const ts_space *ts_space_at(int index);
const ts_space *ts_space_find(const char *name);

/* ---- Schedule files ------------------------------------------------------
 *
 * A C file of schedules and spaces that the command line takes as
 * FILE.c[:NAME]:
 *
 *   #include <tessel.h>
 *   TS_SCHEDULE(my64, "64x64 tiles, 4x4 per thread") {
 *     ts_loop *io, *ii;
 *     ts_split(s, ts_get_loop(s, "i"), 64, &io, &ii);
 *     ...
 *     return ts_sched_status(s);
 *   }
 *   TS_SPACE(mytiles, "my64's tiles as knobs") {
 *     int64_t bm = ts_knob(c, "bm", 3, (int64_t[]){32, 64, 128});
 *     ts_knob_require(c, bm <= ts_sched_gemm(s)->m, "bm over M");
 *     ...
 *     return ts_sched_status(s);
 *   }
 *
 * The registration points at a static function of the file, so a name
 * that some library also defines (pipe, sync) still means the schedule.
 * Each TS_SCHEDULE defines a function ts_status NAME(ts_sched *s) that
 * applies the schedule's primitives to s (a fresh ts_matmul named NAME),
 * each TS_SPACE a function ts_status NAME(ts_sched *s, ts_config *c) as a
 * built-in space's apply is written, and registers it when tessel loads
 * the file.  Linked into a program of your own, the function is an
 * ordinary one to call (a space's with ts_space_schedule). */
void ts_schedule_file_add(const ts_builtin *def);     /* TS_SCHEDULE's */
void ts_schedule_file_add_space(const ts_space *def); /* TS_SPACE's */
#define TS_SCHEDULE(NAME, SUMMARY)                                           \
  static ts_status ts_schedule_body_##NAME(ts_sched *s);                     \
  ts_status NAME(ts_sched *s);                                               \
  ts_status NAME(ts_sched *s) { return ts_schedule_body_##NAME(s); }         \
  static const ts_builtin ts_schedule_def_##NAME = {                         \
      .name = #NAME, .summary = SUMMARY, .apply = ts_schedule_body_##NAME};  \
  __attribute__((constructor)) static void ts_schedule_add_##NAME(void) {    \
    ts_schedule_file_add(&ts_schedule_def_##NAME);                           \
  }                                                                          \
  static ts_status ts_schedule_body_##NAME(ts_sched *s)
#define TS_SPACE(NAME, SUMMARY)                                              \
  static ts_status ts_space_body_##NAME(ts_sched *s, ts_config *c);          \
  ts_status NAME(ts_sched *s, ts_config *c);                                 \
  ts_status NAME(ts_sched *s, ts_config *c) {                                \
    return ts_space_body_##NAME(s, c);                                       \
  }                                                                          \
  static const ts_space ts_space_def_##NAME = {                             \
      .name = #NAME, .summary = SUMMARY, .apply = ts_space_body_##NAME};     \
  __attribute__((constructor)) static void ts_space_add_##NAME(void) {       \
    ts_schedule_file_add_space(&ts_space_def_##NAME);                        \
  }                                                                          \
  static ts_status ts_space_body_##NAME(ts_sched *s, ts_config *c)

/* Compiles the file with the system C compiler ($CC, else cc) against this
 * header into a shared object, cached by the file's content in the cache
 * directory, and loads it.  Never NULL but when out of memory; check the
 * status: a file that does not compile gives the compiler's diagnostics in
 * the message; one that defines neither schedule nor space, or a space
 * named as a built-in schedule or space is, says so. */
typedef struct ts_schedule_file ts_schedule_file;
ts_schedule_file *ts_schedule_file_open(const char *path);
ts_status ts_schedule_file_status(const ts_schedule_file *f);
const char *ts_schedule_file_errmsg(const ts_schedule_file *f);
int ts_schedule_file_count(const ts_schedule_file *f);
const ts_builtin *ts_schedule_file_at(const ts_schedule_file *f, int index);
const ts_builtin *ts_schedule_file_find(const ts_schedule_file *f,
                                        const char *name);
/* The file's spaces, in the order it defines them. */
int ts_schedule_file_space_count(const ts_schedule_file *f);
const ts_space *ts_schedule_file_space_at(const ts_schedule_file *f,
                                          int index);
const ts_space *ts_schedule_file_space_find(const ts_schedule_file *f,
                                            const char *name);
/* A hash of the file's text as it was read, 16 hex digits ("" when the
 * file could not be read): what tuning records of its spaces are keyed by
 * beside the space's name, so that an edited file does not reuse them. */
const char *ts_schedule_file_hash(const ts_schedule_file *f);
/* Unloads it: its schedules' and spaces' functions go with it. */
void ts_schedule_file_close(ts_schedule_file *f);

/* ---- Compiling (NVRTC; needs no GPU) ------------------------------------ */

typedef struct ts_kernel ts_kernel;

typedef struct ts_ptxas_info {
  int registers;
  int shared_bytes;
  int spill_store_bytes;
  int spill_load_bytes;
  int stack_bytes;
  int valid; /* nonzero when known: from ptxas's report, or after a load on
                the GPU from the driver, where spills are -1 (unknown) if the
                function uses local memory */
} ts_ptxas_info;

/* Compiles the program's kernel for `arch` ("sm_90"; NULL: sm_90).  Never
 * NULL; check ts_kernel_status.  The kernel carries what launching it needs
 * (entry point, launch geometry, dynamic shared memory, the definition) and
 * nothing of the program, which may be freed at once.  A program in error
 * gives a kernel with its status and message. */
ts_kernel *ts_compile(const ts_program *p, const char *arch);
/* ts_lower then ts_compile. */
ts_kernel *ts_compile_sched(const ts_sched *s, const char *arch);
/* Compiles n programs on `threads` threads (0: one per processor), each
 * into kernels[i] with its own status: one that fails does not stop the
 * others.  Returns TS_OK, or TS_ERR_NULL_ARG / TS_ERR_BAD_ARG for the
 * arguments themselves. */
ts_status ts_compile_all(ts_program *const programs[], int n,
                         const char *arch, int threads, ts_kernel *kernels[]);
void ts_kernel_free(ts_kernel *k);
ts_status ts_kernel_status(const ts_kernel *k);
const char *ts_kernel_errmsg(const ts_kernel *k);
/* The program's name, or a hand-written kernel's. */
const char *ts_kernel_name(const ts_kernel *k);
const ts_gemm *ts_kernel_gemm(const ts_kernel *k);
const char *ts_kernel_log(const ts_kernel *k); /* NVRTC's log, verbatim */
ts_ptxas_info ts_kernel_ptxas(const ts_kernel *k);
const char *ts_kernel_arch(const ts_kernel *k);
/* FNV-1a (64 bits) of the CUDA C the kernel was compiled from, so that a
 * record of a run names the exact source each row timed; 0 when no source
 * reached NVRTC (an error before it). */
uint64_t ts_kernel_source_hash(const ts_kernel *k);
/* Nonzero when the kernel came from the kernel cache (the directory
 * $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else ~/.cache/tessel;
 * TESSEL_NO_CACHE=1 turns it off) instead of NVRTC. */
int ts_kernel_from_cache(const ts_kernel *k);
/* The entry points the cubin holds, launched in order (the program's
 * kernels: 1, or more with split-K and ts_pack), each one's geometry, and
 * the workspace they share in bytes (0: none). */
int ts_kernel_count(const ts_kernel *k);
const char *ts_kernel_entry(const ts_kernel *k, int i);
ts_status ts_kernel_launch(const ts_kernel *k, int i, ts_launch *out);
int64_t ts_kernel_workspace(const ts_kernel *k);
/* The CUDA C the kernel was compiled from (its hash is
 * ts_kernel_source_hash); "" when none reached NVRTC. */
const char *ts_kernel_source(const ts_kernel *k);
/* The cubin and its size in bytes; NULL and 0 for a kernel in error. */
const void *ts_kernel_cubin(const ts_kernel *k, size_t *size);
/* The PTX of the kernel's source for its architecture (compute_90 for
 * sm_90), compiled by NVRTC when asked: malloc'd text the caller frees,
 * or NULL with the reason in msg. */
char *ts_kernel_ptx(const ts_kernel *k, char *msg, size_t msglen);

/* ---- The GPU: running and timing --------------------------------------- */

typedef struct ts_gpu ts_gpu;

/* Loads the driver and cuBLAS at run time and opens device 0.  Never NULL;
 * TS_ERR_NO_GPU where there is no driver or device. */
ts_gpu *ts_gpu_open(void);
void ts_gpu_close(ts_gpu *g);
ts_status ts_gpu_status(const ts_gpu *g);
const char *ts_gpu_errmsg(const ts_gpu *g);
const char *ts_gpu_name(const ts_gpu *g);
/* The driver's CUDA version, as cuDriverGetVersion gives it (13000). */
int ts_gpu_driver_version(const ts_gpu *g);
const char *ts_gpu_arch(const ts_gpu *g); /* "sm_90" */
int ts_gpu_sm_count(const ts_gpu *g); /* multiprocessors */
/* The device's rated SM and memory clocks in kHz, as the driver reports
 * them (CU_DEVICE_ATTRIBUTE_CLOCK_RATE and MEMORY_CLOCK_RATE); 0 when
 * unknown. */
int ts_gpu_clock_khz(const ts_gpu *g);
/* What the GPU's sensors read now, through NVML: the SM and memory clocks
 * it runs at (not the rated ones), its temperature and power draw.  valid
 * is false, with the reason in why, where NVML is not there. */
typedef struct ts_gpu_sensors {
  bool valid;
  int sm_mhz, memory_mhz, temperature_c;
  double power_w;
  char why[200];
} ts_gpu_sensors;
ts_gpu_sensors ts_gpu_read_sensors(ts_gpu *g);
int ts_gpu_memory_clock_khz(const ts_gpu *g);
/* NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0), the form
 * of cuDriverGetVersion; 0 when NVRTC cannot be loaded.  Needs no GPU. */
int ts_nvrtc_version(void);

/* Runs the compiled kernel once on host data (C updated in place). */
ts_status ts_gpu_run(ts_gpu *g, const ts_kernel *k, const float *A,
                     const float *B, float *C);
/* cuBLAS on the same data, for reference; TS_ERR_CUBLAS, saying so, for
 * element types it has no GEMM of (see ts_cublas_baseline). */
ts_status ts_gpu_cublas(ts_gpu *g, const ts_gemm *def, const float *A,
                        const float *B, float *C);
/* The definition ts_bench times cuBLAS at, and checks results against, for
 * def: def itself where cublasGemmEx takes its element types, else the
 * nearest it takes, an fp32 C (fp32 A and B with an fp16 or bf16 C; fp16
 * A and B with a bf16 C, bf16 with fp16).  TS_ERR_BAD_ARG when there is
 * none (A and B of two types). */
ts_status ts_cublas_baseline(const ts_gemm *def, ts_gemm *baseline);

typedef struct ts_bench_opts {
  int warmup;  /* default 5 */
  int repeats; /* default 50 */
  uint64_t seed;
  /* Optional: (n + 1) * repeats doubles that receive every timed launch in
   * ms, in the order they ran: cuBLAS's at [0, repeats), kernel i's at
   * [(i + 1) * repeats, (i + 2) * repeats).  A kernel that was not timed
   * (and everything, when the run failed) gets NaN. */
  double *times;
} ts_bench_opts;

typedef struct ts_bench_result {
  /* TS_OK when timed; otherwise why not, in message: the kernel's own error
   * (lowering, NVRTC), the device's refusal (resources, a module that does
   * not load), or a hand-written kernel that cannot take the shape
   * (skipped). */
  ts_status status;
  int skipped;
  char message[1024];
  double median_ms;
  double min_ms, max_ms; /* the fastest and slowest of the repeats */
  double tflops;
  double ratio_to_cublas; /* cuBLAS time / this time: 1.0 is cuBLAS's speed */
  double max_rel_err;     /* against cuBLAS, over all elements */
  ts_ptxas_info ptxas;
} ts_bench_result;

/* A hand-written CUDA kernel, timed beside schedules as a baseline.  The
 * source defines the entry point
 *
 *   extern "C" __global__ void gemm(const float *A, const float *B, float *C,
 *                                   int M, int N, int K, float alpha,
 *                                   float beta);
 *
 * computing C = alpha op(A) op(B) + beta C with A, B and C stored as a
 * schedule of the same definition sees them, and its launch geometry as
 * __device__ or __constant__ ints with C linkage:
 *
 *   tessel_block[3]     threads per block, x y z
 *   tessel_tile[2]      rows and columns of C one block computes: the grid
 *                       is ceil(N / columns) x ceil(M / rows)
 *   tessel_multiple[3]  optional: M, N and K must be multiples of these
 *
 * At a shape that is not a multiple the kernel is skipped, with the reason
 * in its result, and the others are timed. */
typedef struct ts_cuda_kernel {
  const char *name;   /* its label in the results */
  const char *source; /* CUDA C */
} ts_cuda_kernel;

/* Compiles a hand-written kernel for the definition `def` (the shape, alpha
 * and beta it is launched with).  Never NULL; check ts_kernel_status.  Its
 * geometry is read when it is loaded on the GPU. */
ts_kernel *ts_compile_cuda(const ts_cuda_kernel *src, const ts_gemm *def,
                           const char *arch);

/* Times each compiled kernel and cuBLAS in one run on the same random
 * inputs: results[i] for kernels[i], *cublas for cuBLAS.  Every kernel must
 * be of one definition (kernels[0]'s).  Each kernel has its own result: one
 * that failed to compile, is of another definition, cannot be loaded or
 * does not fit the device is reported in its row, and the rest are timed.
 * Returns TS_OK when every kernel was timed, the first row's error
 * otherwise, or the GPU's error when nothing could be timed. */
ts_status ts_bench(ts_gpu *g, ts_kernel *const kernels[], int n,
                   const ts_bench_opts *opts, ts_bench_result results[],
                   ts_bench_result *cublas);

/* ---- Tuning records -----------------------------------------------------
 *
 * tessel tune keeps the best configuration of each space and definition in
 * the cache directory (beside the kernel cache), keyed by the GPU's name and
 * driver version, tessel's version, the space and the whole definition
 * (shape, layout, alpha, beta, element types). */

/* Records config (ts_config_text's form) with its speed; TS_ERR_NULL_ARG,
 * or TS_ERR_BAD_ARG when the cache is off (TESSEL_NO_CACHE) or cannot be
 * written. */
ts_status ts_tune_record_save(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *config,
                              double tflops);
/* The recorded configuration (malloc'd) and its speed, or NULL when there
 * is none for this GPU, space and definition. */
char *ts_tune_record_load(const ts_gpu *g, const char *space,
                          const ts_gemm *def, double *tflops);

/* The journal of a tuning run in progress for this GPU, space and
 * definition: lines appended as configurations are timed (one line, no
 * newline in it; TS_ERR_IO when the cache is off or not writable), read
 * back by a later run to resume (the lines, malloc'd, or NULL when there
 * is no journal), and removed when the run is finished. */
ts_status ts_tune_journal_add(const ts_gpu *g, const char *space,
                              const ts_gemm *def, const char *line);
char *ts_tune_journal_load(const ts_gpu *g, const char *space,
                           const ts_gemm *def);
void ts_tune_journal_remove(const ts_gpu *g, const char *space,
                            const ts_gemm *def);

#ifdef __cplusplus
}
#endif
#endif
