/*
 * The reference executor's state, shared by its files: exec_mem.c
 * (buffers, their shadows, asynchronous copies), exec_eval.c (expressions,
 * evaluated for every thread of a block at once), exec.c (statements,
 * blocks and kernels), exec_mma.c (a warp's tensor-core instructions) and
 * exec_wgmma.c (a warpgroup's, in flight until waited for).  Private to
 * them.
 *
 * A block's threads run in lockstep, so the executor evaluates each
 * expression node for all of them in one loop rather than walking the
 * tree once per thread: a value is a vector of one entry per thread, or a
 * single *uniform* entry when it cannot differ between threads (constants,
 * block indices, serial loop variables and arithmetic on them).  Index
 * arithmetic is mostly uniform, so it is done once per statement, and the
 * interpretive overhead of a node is paid once per block rather than once
 * per thread.
 *
 * A kernel with a thread-block cluster (ir_kernel.cluster) runs each
 * cluster's blocks together, as one lockstep *run* of ranks x T threads
 * (T a block's): thread t of the run is thread t % T of the block of rank
 * t / T, whose blockIdx.x is the first block's plus its rank.  A
 * cluster's blocks wait on each other's barriers and write into each
 * other's shared memory (a TMA pipeline's multicast and releases), which
 * only running them together can check.  So blockIdx.x varies between
 * threads there; shared buffers have a copy per block (mem.group), and
 * barriers, barrier epochs and TMA state are per block.  Without a
 * cluster a run is one block (ranks 1, T the run's threads) and the
 * uniform paths are as they were.
 */
#ifndef TS_EXEC_IMPL_H
#define TS_EXEC_IMPL_H

#include <stdint.h>

#include "executor.h"

/* Global memory's buffers are x->live[0 .. GLOBALS): A, B, C, split-K's
 * W, then ts_pack's copies of A and B (each NULL where a program has
 * none); shared and local buffers follow them as they are allocated. */
enum { GLOBAL_A, GLOBAL_B, GLOBAL_C, GLOBAL_W, GLOBAL_PACKED_A,
       GLOBAL_PACKED_B, GLOBALS };
/* A buffer parameter binds the slot of its buffer (exec_globals). */
_Static_assert((int)GLOBAL_A == (int)TS_PARAM_A &&
               (int)GLOBAL_B == (int)TS_PARAM_B &&
               (int)GLOBAL_C == (int)TS_PARAM_C &&
               (int)GLOBAL_W == (int)TS_PARAM_WORKSPACE,
               "the executor's slots follow ts_param_buffer");

enum { NONE = -1, MANY = -2, MAX_LIVE = 64,
       /* Blocks a cluster: the portable most, 8 (__cluster_dims__). */
       MAX_CLUSTER = 8,
       /* Of 128 threads in a run: a cluster of 2 blocks of 1024. */
       MAX_WARPGROUPS = 16 };

struct exec_space; /* a sampled run's sparse global memory (exec_sample.h) */

/* A block's TMA stores from a shared buffer (exec_tma_store.c): 1 + the
 * global id of the thread whose stores may still read its copy, 0: none;
 * how many since its last wait and where in global memory each writes
 * (allocated at the first); 1 + the global id of the thread whose wait
 * released the elements they read, and the block's barrier epoch then:
 * the others may write them only after a barrier. */
typedef struct tma_store_block {
  int32_t by;
  int stores;
  int64_t (*at)[2];
  int32_t released_by;
  uint64_t released_epoch;
} tma_store_block;

typedef struct mem {
  const ir_buffer *buf;
  float *data;
  size_t size;     /* elements per copy */
  /* The run's threads sharing a copy: 1 for a local buffer (a copy per
   * thread), T for a shared one in a cluster's run (a copy per block:
   * mem_slot), 0 for one copy (global memory; shared without a cluster).
   * Every per-element array below has size x copies entries. */
  int group;
  size_t copies;
  bool tracked;    /* shadow kept (C and shared buffers) */
  bool read_only;  /* A and B: defined everywhere, never written */
  uint8_t *defined;
  uint8_t *atomic; /* the last write was an atomic add (split-K) */
  int32_t *writer, *reader;
  uint64_t *wepoch, *repoch;
  int32_t *landed;  /* TMA-filled: the full barrier's phase (1-based) that
                     * landed the element, 0: none (exec_tma.c) */
  int32_t *pending; /* shared buffers: the thread whose asynchronous copy
                     * is in flight into the element, or NONE */
  /* TMA stores (exec_tma_store.c), each block's from its own copy: by
   * slot, which of its block's stores (1-based, 0: none) reads each
   * element (allocated at the first), and the elements they read until
   * the block's last wait (at the first wait). */
  uint8_t *store_reading;
  uint8_t *store_released;
  tma_store_block store[MAX_CLUSTER]; /* by rank */
  /* A sampled run's global matrix: elements live in the space's pages
   * (or, for A and B, are computed), not in the arrays above. */
  struct exec_space *space;
  int matrix; /* which of the space's matrices: its slot among GLOBALS */
  /* An operand (A, B, C) whose stored rows lie further apart than their
   * length (a leading dimension past packed): rows of `row` elements,
   * `pitch` apart; the elements between are the caller's, and touching
   * one is a fault.  0: no gap. */
  int64_t pitch, row;
} mem;

/* A thread's asynchronous copies in flight, oldest first. */
typedef struct {
  mem *m;
  size_t at;
  uint64_t group;
} copy_rec;

typedef struct {
  copy_rec *recs;
  size_t head, n, cap;       /* recs[head .. n) are in flight */
  uint64_t committed, done;  /* groups closed; groups below `done` landed */
  uint64_t waited;           /* groups closed at the last wait */
} copy_queue;

/* A TMA pipeline's state (exec_tma.c): each barrier's arrivals, its
 * transaction bytes outstanding, the phases it completed and the copies
 * that land when its phase does; each thread's view of each barrier. */
typedef struct {
  struct mem *m;
  size_t at;
  float value;
} landing;

/* In a cluster, a barrier also keeps where its block's peers reached it:
 * the arrivals of the phase in progress by the arriving thread's block;
 * by block, the first phase (1-based, 0: none) that completed with fewer
 * of that block's arrivals than its share (count / cluster: an empty
 * barrier's, the block's consumer warps) and how many it had; the latest
 * phase (1-based) a peer's arrival or multicast landing went into, which
 * peer, and whether a landing. */
typedef struct {
  int64_t count, arrivals, tx;
  uint64_t phases;
  landing *land;
  size_t nland, cap;
  int64_t from[MAX_CLUSTER];
  uint64_t first_short[MAX_CLUSTER];
  int64_t short_got[MAX_CLUSTER];
  uint64_t remote_phase;
  int remote_from;
  bool remote_landing;
} mbar_state;

typedef struct {
  const ir_pipeline *p;
  /* By block rank r: full[0 .. S), then empty[0 .. S), each block's own. */
  mbar_state *bars;
  int *seen;        /* [bar][stage][thread of the run]: phases its waits
                     * saw of its own block's barrier */
  int *fills;       /* arrive.expect_tx so far, [rank][stage] */
  /* Ping-pong consumers (ir_pipeline.pingpong): the order barriers, by
   * rank then team; the phases each thread's waits saw of them, [team]
   * [thread]; and whether a thread's team holds the ring's turn: its
   * wait on its order barrier returned since its warp last arrived on
   * the other's.  NULL without. */
  mbar_state *order;
  int *order_seen;
  bool *turn;
} tma_state;

/* A wgmma issued and not yet retired (exec_wgmma.c). */
typedef struct wg_flight wg_flight;

typedef struct exec {
  const ir_kernel *k;
  int nthreads;      /* of the run: ranks x block_threads */
  int block_threads; /* T: of a block */
  int ranks;         /* blocks of the run: the cluster's, or 1 */
  int64_t block_idx[3]; /* the run's first block (rank 0) */
  int64_t grid[3];  /* the grid run: a persistent grid's simulated blocks */
  int block_linear; /* the first block's number among those run */
  int blocks_run;
  /* Variables: a serial loop's (and a uniform launch index's) value in
   * uenv; a per-thread one's in env[var * nthreads + thread]. */
  int64_t *env, *uenv;
  uint8_t *varying;
  int nvars;
  bool *all; /* every thread of the block */
  /* The threads that run the kernel's body: all but a warp-specialized
   * pipeline's producer, which runs only inside its pipeline. */
  bool *start;
  /* Scratch for expression values: a stack, released in LIFO order. */
  char *stack;
  size_t top, cap;
  mem live[MAX_LIVE];
  int nlive;
  /* Each block's barrier epoch (by rank): the barriers so far of every
   * block numbered in order, a block's latest its current one.  Blocks
   * that pass a barrier together share the number. */
  uint64_t epoch[MAX_CLUSTER];
  uint64_t epochs;
  /* Writes so far into buffers an asynchronous instruction reads
   * (async_read: wgmma's a in registers), each element's last in its
   * wepoch, so that one between an instruction's issue and its
   * retirement is seen (exec_wgmma.c). */
  uint64_t async_writes;
  copy_queue *queues; /* per thread of the run */
  int nqueues;
  /* wgmma in flight, oldest first, and each warpgroup's batches
   * committed so far. */
  wg_flight *flight;
  size_t nflight, capflight;
  uint64_t wg_batches[MAX_WARPGROUPS];
  tma_state *tma; /* the TMA pipeline running, or NULL */
  /* Shared buffers' shadows as their last scope in the block left them
   * (mem_keep_shadow); nkept of them. */
  struct kept_shadow *kept;
  int nkept;
  const ir_observer *observer; /* accesses reported to it; NULL: none */
  double steps; /* the work done, in ir_stmt_steps's unit (exec.h) */
  bool fault;
  char *msg;
  size_t msglen;
} exec;

__attribute__((format(printf, 3, 4))) void exec_fault(exec *x, int t,
                                                      const char *fmt, ...);
const char *exec_scope_word(ir_scope s);

/* ---- Kernels and blocks (exec.c) ---- */
/* Kernel k's global buffers in the slots of x->live (NULL: none). */
void exec_globals(const ir_kernel *k, const ir_buffer *out[GLOBALS]);
/* Sets up x to run blocks of k (its globals in x->live[0 .. GLOBALS) already);
 * false with x->msg set when out of memory, or for a cluster the executor
 * cannot run (more than MAX_CLUSTER blocks, or blocks not whole warps). */
bool exec_begin_kernel(exec *x, const ir_kernel *k);
/* Runs block (bx, by, bz) of the kernel begun, with its cluster's peers
 * (from the cluster's first block on, bx rounded down); false after a
 * fault. */
bool exec_run_block(exec *x, int64_t bx, int64_t by, int64_t bz);
/* "kernel 2 of 2 (tessel_x_reduce): " before x->msg. */
void exec_name_kernel(exec *x, int i, int n);
/* Frees the kernel's state (not the globals). */
void exec_finish(exec *x);

/* ---- Tensor cores (exec_mma.c) ---- */
/* An S_MMA for each warp with active lanes; a fault where a warp is not
 * all there. */
void exec_run_mma(exec *x, const ir_stmt *s, const bool *active);
void exec_run_ldmatrix(exec *x, const ir_stmt *s, const bool *active);
void exec_run_stmatrix(exec *x, const ir_stmt *s, const bool *active);
/* Faults unless every lane of the `lanes` (a warp's or a warpgroup's) at
 * w0 is there; false when none is (nothing to run). */
bool exec_whole_group(exec *x, int w0, int lanes, const bool *active,
                      const char *what);

/* ---- wgmma, asynchronous (exec_wgmma.c) ---- */
/* An S_WGMMA issued for each warpgroup with active lanes; a fault where
 * one is not all there or its lanes name different tiles. */
void exec_run_wgmma(exec *x, const ir_stmt *s, const bool *active);
/* S_WGMMA_SYNC: a commit and wait retires all batches but the newest
 * `pending` of each warpgroup; a fence does nothing. */
void exec_run_wgmma_sync(exec *x, const ir_stmt *s, const bool *active);
/* Faults where a wgmma in flight reads or writes m, whose scope ends. */
void exec_wgmma_scope_ends(exec *x, const mem *m);
/* Faults where a wgmma is in flight; clears the block's batches. */
void exec_wgmma_block_ends(exec *x);
/* Drops every wgmma in flight and the batch counts (no fault). */
void exec_wgmma_forget(exec *x);

/* ---- TMA pipelines (exec_tma.c) ---- */
bool exec_tma_begin(exec *x, const ir_stmt *s);
/* Frees ts; with `check`, a fault where copies are still in flight. */
void exec_tma_end(exec *x, tma_state *ts, bool check);
void exec_run_tma(exec *x, const ir_stmt *s, const bool *active);
/* The kernel's tensor map of global buffer b (a copy's source, a store's
 * destination), or NULL. */
const ts_param *exec_tma_map_of(const exec *x, const ir_buffer *b);
void exec_run_mbarrier(exec *x, const ir_stmt *s, const bool *active);
/* Whether thread t may read m's element (slot at, offset off): a TMA
 * copy's element only after its wait saw the phase that landed it. */
bool exec_tma_read_ok(exec *x, const struct mem *m, size_t at, int64_t off,
                      int t);

/* ---- TMA stores (exec_tma_store.c) ---- */

void exec_run_tma_store(exec *x, const ir_stmt *s, const bool *active);
void exec_run_tma_store_wait(exec *x, const bool *active);
/* A fault where o, an overlay (ir_buffer.overlay), begins while the
 * buffers it lies over are in use. */
void exec_overlay_begins(exec *x, const mem *o);
/* Whether thread t may write m's element at slot `at`: no TMA store
 * still reads it. */
bool exec_tma_store_write_ok(exec *x, const mem *m, size_t at, int t);
/* A fault where a TMA store still reads m, whose scope ends. */
void exec_tma_store_scope_ends(exec *x, const mem *m);

/* ---- Memory (exec_mem.c) ---- */
/* `copies` copies of b, each for `group` threads of the run (mem.group). */
bool mem_init(mem *m, const ir_buffer *b, float *data, size_t copies,
              int group, bool tracked);
void mem_free(mem *m, bool owns_data);
/* m, an operand's memory, knows its rows (mem.pitch, mem.row). */
void mem_set_rows(mem *m);
/* A use of a shared buffer's element since the last barrier, by `who` (a
 * thread's global id, or MANY). */
typedef struct shared_use {
  const ir_buffer *buf;
  size_t elem;
  int32_t who;
} shared_use;
/* The first use since the last barrier that the block's kept shadows
 * (mem_keep_shadow) of buffers other than `except` record. */
bool mem_kept_use(const exec *x, const ir_buffer *except, shared_use *u);

/* A shared buffer lies at one place for its block's life: a scope of it
 * entered again (a persistent grid's next tile, an outer loop's next
 * iteration) touches what the last scope left, so its last writers and
 * readers carry over, and an access racing one of them without a barrier
 * between is a race as within one scope.  mem_keep_shadow saves m's
 * shadow at its scope's end; mem_restore_shadow gives a new scope of the
 * buffer in the same block the shadow saved; mem_forget_shadows frees
 * them (false: out of memory, recorded as a fault). */
bool mem_keep_shadow(exec *x, const mem *m);
void mem_restore_shadow(exec *x, mem *m);
void mem_forget_shadows(exec *x);
mem *find_mem(exec *x, const ir_buffer *b);
bool vector_fits(exec *x, const mem *m, int64_t off, int lanes, int t);
float read_at(exec *x, mem *m, int64_t off, int t);
bool write_at(exec *x, mem *m, int64_t off, int t, float value, bool atomic);
bool atomic_sum(exec *x, mem *m, int64_t off, int t, float *v);
bool issue_copy(exec *x, mem *m, size_t at, int t);
void run_commit(exec *x, const bool *active);
void run_wait(exec *x, const ir_stmt *s, const bool *active);
void check_landed(exec *x, const mem *m);
void reset_queues(exec *x);
void forget_accesses(mem *m);

/* Where thread t's element `off` of m is held: its own copy's, or its
 * block's in a cluster's run (the division only there). */
static inline size_t mem_slot(const mem *m, int64_t off, int t) {
  if (m->group == 0)
    return (size_t)off;
  if (m->group == 1)
    return (size_t)off + (size_t)t * m->size;
  return (size_t)off + (size_t)(t / m->group) * m->size;
}

/* ---- A cluster's run (exec.c) ---- */
/* Thread t's block in the run (its rank) and its number in that block. */
static inline int exec_rank(const exec *x, int t) {
  return x->ranks > 1 ? t / x->block_threads : 0;
}
static inline int exec_in_block(const exec *x, int t) {
  return x->ranks > 1 ? t % x->block_threads : t;
}
/* Thread t's global id: unique among every block's threads. */
static inline int32_t exec_gid(const exec *x, int t) {
  return x->block_linear * x->block_threads + t;
}
/* The barrier epoch of thread t's block. */
static inline uint64_t exec_epoch(const exec *x, int t) {
  return x->epoch[exec_rank(x, t)];
}
/* Thread t as "(x, y, z)", and in a cluster's run "(x, y, z) of block
 * (bx, by, bz)". */
void exec_thread_name(const exec *x, int t, char *out, size_t n);
/* Block `rank` of the run as "(bx, by, bz)". */
void exec_block_name(const exec *x, int rank, char *out, size_t n);

/* ---- Expressions (exec_eval.c) ---- */
/* An access of a global or shared buffer, told to x->observer if any. */
void exec_observe(exec *x, const ir_observed *a);
/* n bytes of scratch, 16-byte aligned; NULL after a fault. */
void *exec_push(exec *x, size_t n);
int exec_first_active(const exec *x, const bool *mask);
/* e for the threads of mask into out; true when the value is uniform
 * (out[0] holds it), false when out[t] holds thread t's. */
bool eval_int(exec *x, const ir_expr *e, const bool *mask, int64_t *out);
bool eval_float(exec *x, const ir_expr *e, const bool *mask, float *out);
/* The element of b that idx names for each thread of mask (in off, one
 * entry when uniform, as above); false after an out-of-bounds fault. */
bool eval_offsets(exec *x, const ir_buffer *b, ir_expr *const *idx,
                  const bool *mask, const char *verb, int64_t *off,
                  bool *uniform);
/* A vector load's lanes for each thread of mask: lane l of thread t into
 * out[l * lane_step + t * thread_step]; false after a fault. */
bool eval_vector_load(exec *x, const ir_expr *e, const bool *mask,
                      float *out, size_t lane_step, size_t thread_step);

#endif
