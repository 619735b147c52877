/*
 * The schedule object, shared by the primitives, the trace and lowering.
 *
 * A schedule owns an arena with its IR, the loops ever created (a loop's id
 * is its index), the trace of primitive calls and a sticky status.  The
 * schedule IR is a tree of For nodes over one S_COMPUTE node; primitives
 * build a new tree and swap it in only when every check has passed.
 */
#ifndef TS_SCHED_H
#define TS_SCHED_H

#include "../ir/ir.h"
#include "../base/limits.h"
#include "../base/strbuf.h"
#include "tessel/schedule.h"

typedef enum {
  TR_SPLIT,
  TR_FUSE,
  TR_REORDER,
  TR_BIND,
  TR_UNROLL,
  TR_RENAME,
  TR_CACHE_READ,
  TR_CACHE_WRITE,
  TR_TRANSPOSE,
  TR_PAD,
  TR_VECTORIZE,
  TR_DOUBLE_BUFFER,
  TR_MIN_BLOCKS,
  TR_SWIZZLE,
  TR_SPLIT_K,
  TR_PIPELINE,
  TR_PARTITION,
  TR_TENSORIZE,
  TR_SWIZZLE_STORAGE,
  TR_WGMMA_IN_FLIGHT,
  TR_PACK,
  TR_TMA,
  TR_WARP_SPECIALIZE,
  TR_PERSISTENT,
  TR_CLUSTER,
  TR_PINGPONG,
} trace_op;

enum { TRACE_MAX_LOOPS = 16 };

typedef struct trace_rec {
  trace_op op;
  int loops[TRACE_MAX_LOOPS]; /* argument loop ids */
  int nloops;
  int results[2];             /* created loop ids */
  int nresults;
  int64_t factor;
  ts_loop_kind tag;
  const char *name;           /* rename's new name, a cache's source (arena) */
  ts_scope scope;
  int stage;                  /* the stage made or changed */
  ts_split_k_mode split_k;    /* ts_split_k's mode */
  const char *label;          /* "ts_split, step 3": what it made is by it */
  ts_location at;             /* where the call was made; file NULL when
                               * unknown (the schedule's arena) */
} trace_rec;

/* A cache: a copy of an input in shared or local memory (read), or C's
 * accumulators in registers (write). */
struct ts_stage {
  int id;
  bool write;
  const char *name; /* "A.shared": the buffer's name */
  ir_buffer *buf;
  ir_buffer *src;   /* read: what it copies (A, B or another cache's buf) */
  int operand;      /* read: 0 for op(A), 1 for op(B) */
  ts_loop *at;      /* the loop it was attached at */
  ts_loop *axes[2]; /* read: the copy loops over dimension 0 and 1 */
  int inner;        /* read: the dimension the copy walks innermost */
  bool transposed;
  bool double_buffered;
  int buffer_tiles; /* k tiles a copy when double_buffered (1 for
                     * ts_double_buffer); 0 before */
  int pipeline; /* ts_pipeline: copies of the cache, cp.async; 0: none */
  bool tma;     /* ts_tma: the copies are the TMA's, on an mbarrier pipeline;
                 * of C's shared stage, its store is */
  bool shared;  /* write: C's tile in shared memory on its way out, which
                 * lowering makes (a 128-byte swizzled buffer) */
  int producer_warps; /* ts_warp_specialize: warps of their own issue the
                       * TMA's copies; 0: a consumer thread does */
  bool pingpong; /* ts_pingpong: the pipeline's consumers are two
                  * warpgroups taking the block's tiles in turn */
  bool multicast; /* ts_cluster: the operand the cluster's blocks share,
                   * each box multicast to all of them */
  const void *owner;
};

/* ts_swizzle's record: the loops of the block rows and columns and the
 * rows per group; group 0 when the blocks are not swizzled. */
typedef struct sched_swizzle {
  ts_loop *rows, *cols;
  int64_t group;
} sched_swizzle;

/* ts_persistent's record: the loops of the block rows and columns and the
 * blocks a multiprocessor; blocks_per_sm 0 when the grid is not
 * persistent. */
typedef struct sched_persistent {
  ts_loop *rows, *cols;
  int blocks_per_sm;
} sched_persistent;

/* ts_cluster's record: the block loops, the cache multicast and the blocks
 * a cluster; blocks 0 when the grid has no clusters. */
typedef struct sched_cluster {
  ts_loop *rows, *cols;
  ts_stage *stage;
  int blocks;
} sched_cluster;

struct ts_sched {
  ts_arena arena;
  ts_gemm def;
  const char *name;
  /* The operands the computation reads (ts_pack's views of the workspace
   * once packed) and C; input: A and B as given, the kernels' parameters. */
  ir_buffer *A, *B, *C;
  ir_buffer *input[2];
  /* The values taken at launch (def.runtime), by ts_param_value: M, N,
   * K and the leading dimensions as VAR_PARAM variables; NULL where
   * compiled in. */
  ir_var *param[TS_VALUE_COUNT];
  ir_stmt *root;
  ts_loop **loops; /* by id; malloc'd */
  int nloops, loops_cap;
  ts_stage *stages[8]; /* by id */
  int nstages;
  int next_var; /* ids of variables made by lowering start here */
  trace_rec *trace; /* malloc'd */
  int ntrace, trace_cap;
  int min_blocks;     /* ts_min_blocks_per_sm; 0: unset */
  sched_swizzle swizzle;
  sched_persistent persistent;
  sched_cluster cluster;
  ts_split_k_mode split_k; /* how ts_split_k's blocks combine, if called */
  ir_kernel *lowered; /* cached; dropped by every primitive */
  ts_status status;
  char *errmsg; /* malloc'd */
  ts_location at;     /* the primitive being called's call, for its error
                       * and record (sched_enter); file NULL between calls */
  ts_location err_at; /* the error's call: the arena's copy of at's file */
};

/* A primitive called from `file` and `line` (its _at form) starts here;
 * nothing on a schedule in error.  sched_leave ends the call and passes
 * its status through. */
void sched_enter(ts_sched *s, const char *file, int line);
ts_status sched_leave(ts_sched *s, ts_status status);
/* `at`'s file copied into s's arena, or the copy an earlier record made
 * (a trace names one or two files); {NULL, 0} when unknown or out of
 * memory. */
ts_location sched_keep_location(ts_sched *s, ts_location at);

/* Records the first error: "<fn>: <reason>", then the loop nest with `mark`
 * flagged; "FILE:LINE: error: " before it inside a call made at a known
 * location.  The one place every schedule error passes through. */
ts_status sched_fail(ts_sched *s, ts_status code, const ts_loop *mark,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks argument `pos` of `fn`: not NULL, of this schedule, not replaced. */
bool sched_check_loop(ts_sched *s, const char *fn, int pos,
                      const char *argname, const ts_loop *loop);

/* A new loop (not yet registered) named `name`, or a unique variant of it. */
ts_loop *sched_new_loop(ts_sched *s, const char *name, int64_t extent,
                        bool reduce, int slot);
/* Registers loops made by a primitive that is about to commit. */
bool sched_register_loops(ts_sched *s, ts_loop *const *loops, int n);
bool sched_name_taken(const ts_sched *s, const char *name);
/* Refuses, for primitive `fn`, a loop whose trip count is chosen at
 * launch (ts_gemm.runtime) where fn needs it compiled in. */
bool sched_require_static(ts_sched *s, const char *fn, const ts_loop *loop);
/* Value v of the definition as an expression: its VAR_PARAM variable
 * where taken at launch, else the number. */
ir_expr *sched_value(ts_sched *s, ts_param_value v);
void sched_c_name(ts_buf *b, const char *name); /* "i.outer" -> "i_outer" */

/* Appends rec to the trace, with the location of the call being made. */
bool sched_trace(ts_sched *s, const trace_rec *rec);
/* One record of a trace as the C call that makes it (trace.c). */
void sched_print_record(ts_buf *b, const ts_sched *s, const trace_rec *r);
/* One record applied to `onto`, a schedule that has replayed the records
 * before it (trace.c). */
ts_status sched_replay_record(ts_sched *onto, const trace_rec *r);
/* The last step of every rewriting primitive: registers the loops it made,
 * records it in the trace and takes the new tree. */
ts_status sched_commit(ts_sched *s, const char *fn, ir_stmt *root,
                       ts_loop *const *made, int nmade, trace_rec *rec);
ts_status sched_oom(ts_sched *s, const char *fn);
/* Fails unless l is a plain serial loop. */
bool sched_require_serial(ts_sched *s, const char *fn, const ts_loop *l);

/* Every primitive starts here, after setting its output pointers to NULL:
 * a call on a schedule in error gives NULL loops and stages too. */
#define CHECK_SCHED(s)                                                        \
  do {                                                                        \
    if (!(s))                                                                 \
      return TS_ERR_NULL_ARG;                                                 \
    if ((s)->status != TS_OK)                                                 \
      return (s)->status;                                                     \
  } while (0)
void sched_invalidate(ts_sched *s);
/* The stage named `name`, or NULL. */
ts_stage *sched_find_stage(const ts_sched *s, const char *name);
/* Checks argument `pos` of `fn` is a stage of this schedule. */
bool sched_check_stage(ts_sched *s, const char *fn, int pos,
                       const ts_stage *stage);
/* Checks argument 2 of `fn` is a cache_read stage of this schedule. */
bool sched_check_read_stage(ts_sched *s, const char *fn, ts_stage *stage);
/* Copies a cache has: 2 double-buffered, ts_pipeline's count, else 1. */
int sched_stage_copies(const ts_stage *st);
/* The bytes of shared memory the schedule's caches take. */
int64_t sched_shared_bytes(const ts_sched *s);

/* Shared caches up to the largest block any architecture allows (sm_90's
 * 227 KiB, with the opt-in); ts_compile checks the target's own limit.
 * The limits are src/base/limits.h's table. */
enum { SCHED_MAX_STAGES = 8, SCHED_SHARED_LIMIT = TS_SHARED_BLOCK_MAX };
/* Shared memory a kernel may declare statically; above it the code
 * generator makes it dynamic, and the launch opts in. */
enum { SCHED_STATIC_SHARED = TS_STATIC_SHARED };
/* What one multiprocessor holds on every architecture tessel targets
 * (sm_80 and sm_90): blocks and threads. */
enum { SCHED_MAX_BLOCKS_PER_SM = TS_BLOCKS_PER_SM,
       SCHED_MAX_THREADS_PER_SM = TS_THREADS_PER_SM };

/* ---- Names (names.c) ------------------------------------------------------- */

/* Appends `; did you mean "i.outer"? (loops: i.outer, i.inner, j, k)`,
 * the question only where a name is near, `what` naming the list. */
void sched_list_names(ts_buf *b, const char *name, const char *const *names,
                      int n, const char *what);
/* The names of the loops in the nest, outermost first (at most cap). */
int sched_loop_names(const ts_sched *s, const char **names, int cap);
/* Whether `name` is A, B, C or a cache made so far. */
bool sched_buffer_exists(const ts_sched *s, const char *name);
/* The buffers a cache can copy: A, B and the read caches made so far. */
int sched_buffer_names(const ts_sched *s, const char **names, int cap);

/* ---- Loop nest navigation (nest.c) ---------------------------------------- */

enum { NEST_MAX_DEPTH = 64 };

typedef struct nest_path {
  ir_stmt *node[NEST_MAX_DEPTH]; /* root first; the last is the loop's For */
  int depth;
} nest_path;

bool nest_find(ir_stmt *root, const ts_loop *loop, nest_path *path);
/* The path to the compute statement (the last node). */
bool nest_find_compute(ir_stmt *root, nest_path *path);
/* Whether loop's For node is on the path; its index there, or -1. */
bool nest_path_has(const nest_path *path, const ts_loop *loop);
int nest_path_index(const nest_path *path, const ts_loop *loop);
/* A cache's region for ir_region: the variables of the loops inside the
 * attach loop (path index `at`), and with `threads` the thread loops
 * above it, which the block's threads share a shared cache over. */
typedef struct nest_region {
  const nest_path *path;
  int at;
  bool threads;
} nest_region;
bool nest_inside_attach(const ir_var *v, void *ctx);
/* A loop of the region's inside whose variable e reads and whose trip
 * count is chosen at launch (ts_gemm.runtime): a cache over it would be
 * as large as the most it may run.  NULL where there is none. */
const ts_loop *nest_sized_inside(const nest_region *r, const ir_expr *e);
/* The stage whose copy nest s is (a copy loop's For), or NULL. */
ts_stage *nest_copy_stage(const ir_stmt *s);
/* The tree with path's last node replaced by `with`, ancestors rebuilt. */
ir_stmt *nest_replace(ts_arena *a, const nest_path *path, ir_stmt *with);
/* ANDs `cond` into the predicate of every compute node under s, and guards
 * every copy statement with it. */
ir_stmt *nest_add_guard(ts_arena *a, ir_stmt *s, ir_expr *cond);
/* Whether a guard inside the copy nest of `stage` (of any cache when NULL)
 * has `conjunct` among its conjuncts, compared in simplified form: the
 * copy is skipped where that test fails. */
bool nest_copy_guarded_by(ts_arena *a, const ir_stmt *root,
                          const ts_stage *stage, const ir_expr *conjunct);
/* Checks that bound loops nest as CUDA needs, with `loop` taken as bound to
 * `kind`: no block loop inside a thread loop, and no bound loop inside a
 * reduction loop.  On failure, TS_ERR_THREAD_OUTSIDE_BLOCK or
 * TS_ERR_BOUND_INSIDE_REDUCTION with the outer and inner loop named. */
ts_status nest_check_binding(const ir_stmt *root, const ts_loop *loop,
                             ts_loop_kind kind, const ts_loop **outer,
                             const ts_loop **inner);
/* The error message for a failed nest_check_binding. */
ts_status nest_binding_error(ts_sched *s, const char *fn, ts_status code,
                             const ts_loop *outer, const ts_loop *inner);

#endif
