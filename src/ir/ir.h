/*
 * The tensor IR: expressions, statements, buffers and loops.
 *
 * Node kinds are listed once (X-macros) and the lists generate the enums and
 * the kind names.  Nodes live in an arena and are treated as immutable once
 * built: a rewrite builds new nodes and returns the very node it was given
 * when nothing below it changed.  The one mutable object is a ts_loop, the
 * handle a user holds: every For node of that loop points to it, so a
 * handle stays valid when the nest around it is rebuilt.
 */
#ifndef TS_IR_H
#define TS_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/arena.h"
#include "../base/formula.h"
#include "../base/limits.h"
#include "params.h"
#include "tessel/types.h"

typedef enum {
  TY_INT,   /* index arithmetic (64-bit in the IR) */
  TY_FLOAT, /* data: an element of the expression's dtype */
  TY_BOOL,  /* conditions */
} ir_type;

/* Where a node kind keeps its children (the kind lists' third column); the
 * traversal in visit.h visits them in the order given here. */
typedef enum {
  FORM_LEAF,    /* none */
  FORM_UNARY,   /* op.a */
  FORM_BINARY,  /* op.a, op.b */
  FORM_SELECT,  /* op.c, op.a, op.b */
  FORM_LOAD,    /* load.idx[0 .. buf->ndim) */
  FORM_VECTOR,  /* vector.lane[0 .. n) */
  FORM_FOR,     /* for_.index (may be NULL), for_.body */
  FORM_SEQ,     /* seq.items[0 .. n) */
  FORM_STORE,   /* store.idx[0 .. buf->ndim), store.value */
  FORM_IF,      /* if_.cond, if_.then_, if_.else_ (may be NULL) */
  FORM_ALLOC,   /* alloc.init (may be NULL), alloc.body */
  FORM_LANES,   /* lanes.body, lanes.expanded */
  FORM_COMPUTE, /* i, j, k, pred, origin[0][0..1], origin[1][0..1]; pred and
                 * the origins may be NULL */
  FORM_MMA,     /* mma.idx[w][0 .. mma.buf[w]->ndim) for w = 0, 1, 2 */
  FORM_LDMATRIX, /* ldsm.idx[0 .. ldsm.frag->ndim), ldsm.src */
  FORM_STMATRIX, /* stsm.dst, stsm.value[0 .. 2 * stsm.matrices) */
  FORM_WGMMA,    /* wgmma.idx[0 .. wgmma.acc->ndim), wgmma.src[0], src[1] */
  FORM_PIPE,     /* pipe.stage, pipe.parity, pipe.dst, pipe.coord[0..1],
                  * pipe.body; each may be NULL */
} ir_form;

#define IR_EXPR_KINDS(X)                                                      \
  X(E_INT, "int", FORM_LEAF)         /* integer immediate */                  \
  X(E_FLOAT, "float", FORM_LEAF)     /* fp32 immediate */                     \
  X(E_VAR, "var", FORM_LEAF)         /* loop or launch variable */            \
  X(E_ADD, "+", FORM_BINARY)                                                  \
  X(E_SUB, "-", FORM_BINARY)                                                  \
  X(E_MUL, "*", FORM_BINARY)                                                  \
  X(E_DIV, "/", FORM_BINARY)         /* floor division */                     \
  X(E_MOD, "%", FORM_BINARY)         /* floor modulo */                       \
  X(E_MIN, "min", FORM_BINARY)                                                \
  X(E_MAX, "max", FORM_BINARY)                                                \
  X(E_LT, "<", FORM_BINARY)                                                   \
  X(E_LE, "<=", FORM_BINARY)                                                  \
  X(E_EQ, "==", FORM_BINARY)                                                  \
  X(E_NE, "!=", FORM_BINARY)                                                  \
  X(E_AND, "&&", FORM_BINARY)                                                 \
  X(E_OR, "||", FORM_BINARY)                                                  \
  X(E_NOT, "!", FORM_UNARY)                                                   \
  X(E_CAST, "cast", FORM_UNARY)      /* op.a converted to the node's dtype */ \
  X(E_ROUND_TF32, "round_tf32", FORM_UNARY) /* fp32 op.a rounded to tf32 */ \
  X(E_SELECT, "select", FORM_SELECT) /* c ? a : b */                          \
  X(E_PAIR_PICK, "pair_pick", FORM_SELECT) /* c ? a : b of lane ^ 1; all  \
                                              three in every lane */       \
  X(E_LOAD, "load", FORM_LOAD)       /* buffer[indices] */                  \
  X(E_VECTOR, "vector", FORM_VECTOR) /* lanes side by side: a vector value */

typedef enum {
#define IR_ENUM(k, s, form) k,
  IR_EXPR_KINDS(IR_ENUM)
#undef IR_ENUM
} ir_expr_kind;

#define IR_STMT_KINDS(X)                                                      \
  X(S_FOR, "for", FORM_FOR)             /* loop over a ts_loop's 0..extent */ \
  X(S_SEQ, "seq", FORM_SEQ)             /* statements in order */             \
  X(S_STORE, "store", FORM_STORE)       /* buffer[indices] = value */         \
  X(S_IF, "if", FORM_IF)                /* guarded statement */               \
  X(S_ALLOC, "allocate", FORM_ALLOC)    /* a buffer live in its body */       \
  X(S_BARRIER, "barrier", FORM_LEAF)    /* __syncthreads() */                 \
  X(S_COMPUTE, "compute", FORM_COMPUTE) /* the GEMM update before lowering */ \
  X(S_LANES, "lanes", FORM_LANES)       /* a vectorized loop, lanes expanded */ \
  X(S_ASYNC_COMMIT, "cp.async.commit", FORM_LEAF) /* closes a copy group */  \
  X(S_ASYNC_WAIT, "cp.async.wait", FORM_LEAF) /* all but wait.pending done */ \
  X(S_MMA, "mma", FORM_MMA) /* a warp's tensor-core multiply-add (mma.h) */ \
  X(S_LDMATRIX, "ldmatrix", FORM_LDMATRIX) /* a warp's fragment load */    \
  X(S_STMATRIX, "stmatrix", FORM_STMATRIX) /* a warp's 8 x 8 tiles stored */ \
  X(S_WGMMA, "wgmma", FORM_WGMMA) /* a warpgroup's multiply-add (mma.h) */   \
  X(S_WGMMA_SYNC, "wgmma.sync", FORM_LEAF) /* fence, or commit and wait */ \
  X(S_PIPELINE, "pipeline", FORM_PIPE) /* a TMA pipeline's barriers, live in body */ \
  X(S_TMA, "tma", FORM_PIPE) /* one bulk tensor copy into a stage */        \
  X(S_MBARRIER, "mbarrier", FORM_PIPE) /* an arrive or a wait on a stage's barrier */ \
  X(S_TMA_STORE, "tma.store", FORM_PIPE) /* one bulk tensor copy out of shared */ \
  X(S_TMA_STORE_WAIT, "tma.store.wait", FORM_LEAF) /* the stores' reads done */

typedef enum {
#define IR_ENUM(k, s, form) k,
  IR_STMT_KINDS(IR_ENUM)
#undef IR_ENUM
} ir_stmt_kind;

typedef enum { SCOPE_GLOBAL, SCOPE_SHARED, SCOPE_LOCAL } ir_scope;

typedef enum {
  VAR_LOOP,   /* a serial or unrolled loop's variable */
  VAR_LAUNCH, /* blockIdx.* / threadIdx.* itself, named by tag (a launch
               * loop's index expression reads them) */
  VAR_GRID,   /* gridDim.* of the block index its tag names: the blocks
               * a persistent grid was launched with (1..extent - 1) */
  VAR_PARAM,  /* a value the kernel takes at launch (ts_gemm.runtime):
               * M, N, K or a leading dimension, named by `value`; no
               * slot of its own (id -1): the executor reads it from the
               * values it runs with */
} ir_var_kind;

typedef struct ir_expr ir_expr;

typedef struct ir_var {
  int id;           /* unique within the schedule; the executor's slot */
  const char *name; /* as the user sees it ("i.outer") */
  ir_var_kind kind;
  ts_loop_kind tag; /* for VAR_LAUNCH: which index */
  /* Values lie in [0, extent): for a loop whose trip count is chosen at
   * launch (ts_loop.size), the most it may be. */
  int64_t extent;
  ts_param_value value; /* for VAR_PARAM: which */
  int64_t divisor;      /* for VAR_PARAM: every value is a multiple */
} ir_var;

enum { IR_MAX_DIMS = 4 };

typedef struct ir_buffer {
  const char *name;
  ir_scope scope;
  ts_dtype dtype; /* the element type it stores */
  int ndim;
  int64_t shape[IR_MAX_DIMS];
  int64_t strides[IR_MAX_DIMS]; /* in elements */
  /* A global operand whose extents or leading dimension the kernel takes
   * at launch (ts_gemm.runtime): the dimension or stride as an expression
   * of them (VAR_PARAM variables), shape[] and strides[] holding the
   * nominal values; NULL where the number is compiled in.  Read through
   * ir_buffer_dim and ir_buffer_stride. */
  ir_expr *shape_expr[IR_MAX_DIMS];
  ir_expr *stride_expr[IR_MAX_DIMS];
  /* Shared and local buffers: the dimensions in storage order, outermost
   * first, and padding added to the innermost one.  Strides follow. */
  int order[IR_MAX_DIMS];
  int64_t pad;
  /* ts_storage_swizzle: the 16-byte chunks of each stored row permuted,
   * chunk ^ (row / (8 / swizzle)) % swizzle, so that 8 consecutive rows
   * read or written at one chunk fall in different banks; 0: none, else
   * the chunks a group (2, 4 or 8).  Rows of more than 8 chunks (128
   * bytes) are stored as 128-byte panels, each the buffer's rows (per
   * stage) by 8 chunks, one panel after the other: the layout wgmma's
   * descriptors read (mma.h).  Offsets go through ir_swizzle_offset. */
  int swizzle;
  /* A vector temporary (lowering's lane expansion): a local buffer of
   * shape[0] elements held as one vector register, which an allocation
   * fills whole with a vector load and nothing stores to. */
  bool vector;
  /* A pipelined shared cache (ts_pipeline): stores into it from global
   * memory become asynchronous copies where their size allows. */
  bool async_fill;
  /* A local buffer an asynchronous instruction reads (wgmma's a in
   * registers): the executor tracks its writes, so that one while the
   * instruction runs is a fault (exec_wgmma.c). */
  bool async_read;
  /* The primitive that made it ("ts_cache_read, step 9"); NULL for the
   * inputs and C and for what lowering makes. */
  const char *made_by;
  /* ts_pack: a global buffer that lives in the workspace, at this many
   * bytes from its start (256-byte aligned), written by the program's
   * packing kernel and read by the schedule's. */
  bool workspace_view;
  int64_t workspace_offset;
  /* A shared buffer placed at the start of the block's shared memory, over
   * the buffers allocated before it, whose use has ended where its scope
   * begins (a barrier comes first): C's shared stage over the pipeline's
   * stages, which a 128 x 256 fp32 tile would not fit beside.  It adds
   * no bytes of its own past theirs. */
  bool overlay;
} ir_buffer;

/* A pipeline of shared stages filled by the tensor memory accelerator
 * (ts_tma): each stage has a full barrier, which completes a phase when
 * its one producer arrival (arrive.expect_tx of `bytes`) and the copies'
 * `bytes` have come, and an empty barrier, which completes a phase when
 * `consumers` arrivals (one a warp) release the stage.  Phases are waited
 * for by parity.  One node (S_PIPELINE) holds it; the copies and barrier
 * operations inside point to it: codegen, the executor and explain read
 * the stages, bytes and roles from here. */
typedef struct ir_pipeline {
  int id;          /* the kernel's pipelines in order: tessel_full<id> */
  int stages;      /* copies of each cache, and barriers of each kind */
  int64_t bytes;   /* a stage's fill: every copy's box, all caches */
  int consumers;   /* arrivals that release a stage: the block's warps */
  int producer;    /* the thread (linear in the block) that issues copies */
  /* Warp specialization (ts_warp_specialize): 0, the producer is one of
   * the consumers' threads; else the block's last producer_threads
   * threads, after the consumers' `producer` threads, are a producer
   * warpgroup whose first thread issues the copies.  It runs only the
   * pipeline's producer statements and leaves at the pipeline's end
   * (codegen sends its other threads away at the start: each of those
   * statements is under the issuing thread's test); the consumers run
   * everything else. */
  int producer_threads;
  /* Blocks of a cluster (ts_cluster) sharing the pipeline: 1, none; 2,
   * the blocks 2c and 2c + 1 of the grid's x (ir_kernel.cluster).  Each
   * block has its own stages and barriers; a multicast box (S_TMA's
   * `multicast`) lands in every block's stage, completing on each one's
   * full barrier, and each consumer warp releases a stage in every block
   * (S_MBARRIER's `multicast`), so an empty barrier counts `consumers`
   * arrivals: the block's warps times the cluster.  The barriers'
   * initialization ends with a cluster barrier: a peer's barriers exist
   * before any multicast or release reaches them.  A block may leave
   * only once every peer's arrival on its barriers and every multicast
   * into it is one a wait of its own has seen. */
  int cluster;
  /* Ping-pong consumers (ts_pingpong): 0, none; 2, two consumer
   * warpgroups (threadIdx.z 0 and 1, `producer` threads in all) take the
   * block's tiles in turn, team wave % 2 the tile loop's wave-th, each
   * reading every stage of its tiles, so that an empty barrier counts one
   * team's warps (`consumers`).  Two order barriers hand the ring over:
   * order[c] counts team 1 - c's warps, which arrive on it once their
   * tile's main loop is done, and team c waits on it before its tile's
   * first stage.  A full barrier's wait is a team's only while it holds
   * the turn: its warps have waited on its order barrier since they last
   * arrived on the other's. */
  int pingpong;
} ir_pipeline;

/* S_MBARRIER's operations. */
typedef enum {
  MBAR_EXPECT_TX, /* the producer's arrival on full[stage], with bytes */
  MBAR_ARRIVE,    /* a consumer warp's release: arrival on empty[stage] */
  MBAR_WAIT,      /* wait until barrier `bar` of the stage passes parity */
} ir_mbar_op;

/* A stage's barriers, and ping-pong's order barriers (the stage
 * expression is the team, ir_pipeline.pingpong). */
typedef enum { MBAR_FULL, MBAR_EMPTY, MBAR_ORDER } ir_mbar_which;

struct ir_expr {
  ir_expr_kind kind;
  ir_type type;
  /* TY_FLOAT: the element type of the value.  Arithmetic is fp32 (the
   * constructors widen narrower operands, as C's arithmetic conversions
   * do); fp16 and bf16 values are loads, and casts for a store. */
  ts_dtype dtype;
  union {
    int64_t ival;
    float fval;
    ir_var *var;
    struct {
      ir_expr *a, *b, *c; /* select: c ? a : b */
    } op;
    struct {
      ir_buffer *buf;
      ir_expr **idx; /* buf->ndim logical indices */
      /* > 1: one access of `lanes` elements, contiguous in memory.  In a
       * vectorized loop's body (S_LANES's body, and before the lanes pass)
       * the mark on an access over the loop's variable; in the expanded
       * lanes, a vector load whose lane 0 is at idx. */
      int lanes;
    } load;
    struct {
      ir_expr **lane; /* n values of one dtype, lane 0 first */
      int n;
    } vector;
  };
};

/* A loop: the object a ts_loop handle points to. */
struct ts_loop {
  int id;            /* creation order within the schedule */
  const char *name;
  const char *birth; /* the name it was made with; the trace's C variable */
  ir_var *var;
  int64_t extent;
  /* A trip count chosen at launch (ts_gemm.runtime), as an expression of
   * the VAR_PARAM variables (M, or (M + 127) / 128 after a split); extent
   * is then its value at the definition's nominal shape, and var->extent
   * the most it may be.  NULL: extent is the trip count.  Read through
   * ir_loop_size. */
  ir_expr *size;
  ts_loop_kind kind;
  bool reduce;       /* iterates the reduction axis k */
  bool live;         /* false once split or fused away */
  bool partitioned;  /* ts_partition: lowering splits off its tail */
  int wgmma_in_flight; /* ts_wgmma_in_flight: batches left running */
  /* ts_tensorize: the instruction's dimension the loop walks, 0 (m, its
   * accumulators' rows), 1 (n) or 2 (k); a loop over j with 0 computes
   * C's transpose (lower_tensorize.c). */
  int mma_axis;
  /* The tile loop of a persistent grid (lowering's, ts_persistent): its
   * variable counts the block's tiles, which are blockIdx.x + var *
   * gridDim.x while that is below the extent (C's tiles). */
  bool persistent;
  const void *owner; /* the schedule that made it */
  struct ts_stage *stage; /* the cache stage whose copy it walks, or NULL */
  /* The primitive that made it: "ts_split, step 3"; NULL for i, j and k,
   * and for the loops lowering makes. */
  const char *made_by;
};

typedef struct ir_stmt ir_stmt;
struct ir_stmt {
  ir_stmt_kind kind;
  union {
    struct {
      ts_loop *loop;
      ir_stmt *body;
      /* A launch loop's value as an expression of the launch indices
       * (VAR_LAUNCH variables), where ts_swizzle remaps the blocks; NULL:
       * the launch index its kind names. */
      ir_expr *index;
    } for_;
    struct {
      ir_stmt **items;
      int n;
    } seq;
    struct {
      ir_buffer *buf;
      ir_expr **idx;
      ir_expr *value; /* with lanes > 1 expanded: an E_VECTOR of lanes */
      int lanes;      /* as a load's */
      bool atomic;    /* buf[idx] += value, atomically (split-K into C) */
      /* cp.async: value is a load of global memory (lanes wide, 4, 8 or 16
       * bytes) that lands in the thread's current copy group. */
      bool async;
    } store;
    struct {
      ir_expr *cond;
      ir_stmt *then_, *else_; /* else_ may be NULL */
    } if_;
    struct {
      ir_buffer *buf;
      ir_expr *init; /* NULL, or a vector temporary's vector load */
      ir_stmt *body;
    } alloc;
    struct {
      /* A vectorized loop after the lanes pass.  The loop and its body as
       * scheduled, vector accesses marked, are what the IR text shows;
       * `expanded` is what runs, and what codegen prints: per-lane
       * statements, vector temporaries and vector stores, the loop's
       * variable substituted away. */
      ts_loop *loop;
      ir_stmt *body;
      ir_stmt *expanded;
    } lanes;
    struct {
      /* S_ASYNC_WAIT: copy groups that may stay in flight.  S_WGMMA_SYNC:
       * -1, wgmma.fence (before a batch of S_WGMMA: their accumulators
       * were written by other instructions); else the batch's
       * commit_group and a wait_group leaving `pending` in flight. */
      int pending;
      ir_buffer *acc; /* S_WGMMA_SYNC: the accumulators of its batch */
    } wait;
    struct {
      /* S_BARRIER: the threads that meet at it, the block's first
       * `threads` (a named barrier: a warp-specialized kernel's consumers,
       * whose producer warpgroup has left); 0: the whole block. */
      int64_t threads;
    } barrier;
    struct {
      /* acc += a * b over one instruction's tile, collectively by the 32
       * lanes of a warp.  Operand w (0: the fp32 accumulator, 1: a, 2: b)
       * is the local buffer buf[w]; a lane's registers of it are the
       * elements from idx[w] on along its innermost dimension, as many as
       * the instruction gives a lane (mma.h).  The element type of a and
       * b selects the instruction. */
      ir_buffer *buf[3];
      ir_expr **idx[3];
    } mma;
    struct {
      /* ldmatrix.sync.aligned.m8n8.x<matrices>[.trans].b16, collectively
       * by the 32 lanes of a warp: 8 x `matrices` lanes each give the
       * address of one row of 8 contiguous 16-bit elements (lane l: row
       * l % 8 of matrix l / 8), src, a load of the row's first element
       * from a shared buffer; each lane then receives two elements of
       * each matrix into frag's registers from idx on (matrix m: the
       * registers 2m and 2m + 1), those of row lane / 4 at 2 (lane % 4)
       * and the next, or with trans those of rows 2 (lane % 4) and the
       * next at lane / 4. */
      ir_buffer *frag;
      ir_expr **idx;
      ir_expr *src;
      int matrices; /* 1, 2 or 4 */
      bool trans;
    } ldsm;
    struct {
      /* stmatrix.sync.aligned.m8n8.x<matrices>.shared.b16, ldmatrix the
       * other way, collectively by the 32 lanes of a warp: 8 x `matrices`
       * lanes each give the address of one row of 8 contiguous 16-bit
       * elements (lane l: row l % 8 of matrix l / 8), dst, a load of the
       * row's first element from a shared buffer; each lane gives two
       * elements of each matrix, value[2m] and value[2m + 1], those of
       * row lane / 4 at 2 (lane % 4) and the next, stored as the buffer's
       * type as a store converts them. */
      ir_expr *dst;
      ir_expr **value; /* 2 x matrices */
      int matrices;    /* 1, 2 or 4 */
    } stsm;
    struct {
      /* acc += a * b over one m64nNk16 tile (`in`), collectively by the
       * 128 lanes of a warpgroup: a lane's n / 2 accumulators are acc's
       * elements from idx on along its innermost dimension (mma_acc_coord
       * places them).  src[0] and src[1] load the first element of the a
       * (64 x 16) and b (16 x n) tiles from swizzled shared caches, which
       * the instruction reads through descriptors: byte offsets lbo and
       * sbo, k-major or mn-major (mma_desc), the tile's k along its
       * buffer's dimension kdim (its last two: the one before the last,
       * or the last).  Or src[0] loads a local buffer (ir_wgmma_a_regs):
       * a is in each lane's registers from there on along its innermost
       * dimension (mma_wgmma_a_coord places them). */
      const struct mma_instr_s *in;
      ir_buffer *acc;
      ir_expr **idx;
      ir_expr *src[2];
      int64_t lbo[2], sbo[2];
      bool mn_major[2];
      int kdim[2];
    } wgmma;
    struct {
      /* S_PIPELINE: the barriers of `pipe`, initialized before body runs.
       * S_TMA: a box of the global buffer `src` (tensor map parameter
       * `map` of the kernel's list), box[0] elements along its contiguous
       * dimension by box[1], from coord (innermost first, may lie past
       * the edge: zeros come), into the staged cache at dst (a load of
       * the box's first element), completing on full[stage].
       * S_MBARRIER: op on barrier `bar` of stage; parity for a wait.
       * S_TMA_STORE: the other way, a box of the shared buffer at dst
       * (a load of its first element, a 128-byte panel's) into the
       * global buffer `src` (C) at coord, through tensor map `map`; the
       * TMA writes only the part inside the map's dimensions.  It reads
       * shared memory until an S_TMA_STORE_WAIT of the issuing thread. */
      /* S_TMA: the box lands in every block of the pipeline's cluster,
       * at dst in each, on each block's full[stage].  S_MBARRIER's
       * arrive: on the stage's barrier in every block of the cluster. */
      const ir_pipeline *pipe;
      bool multicast;
      ir_mbar_op op;
      ir_mbar_which bar;
      ir_expr *stage, *parity, *dst;
      ir_expr *coord[2];
      ir_buffer *src;
      int map;
      int64_t box[2];
      ir_stmt *body;
    } pipe;
    struct {
      /* C[i, j] += A[i, k] * B[k, j] for the iteration (i, j, k) that these
       * expressions of the loop variables give, where pred holds. */
      ir_expr *i, *j, *k;
      ir_expr *pred; /* NULL: always */
      /* Where op(A) (0) and op(B) (1) are read: NULL for the inputs, else
       * a cache whose element [0, 0] is the operand's element origin. */
      ir_buffer *src[2];
      ir_expr *origin[2][2];
    } compute;
  };
};

/* A lowered kernel: what codegen and the reference executor consume. */
/* A kernel's parameter (params.h) with the buffer of the IR it binds:
 * NULL for a scalar, and for the workspace of a kernel that reaches it
 * only through packed views. */
typedef struct ir_param {
  ts_param p;
  const ir_buffer *buf;
} ir_param;

typedef struct ir_kernel {
  ir_stmt *body;
  int64_t grid[3], block[3];
  /* The values of the VAR_PARAM variables at the definition's nominal
   * shape (by ts_param_value: m, n, k and each leading dimension as
   * resolved), which the executor runs with unless given others. */
  int64_t values[TS_VALUE_COUNT];
  /* A grid dimension that follows extents chosen at launch: its blocks as
   * an expression of the VAR_PARAM variables (grid[] holds its nominal
   * value); NULL where grid[] is the count. */
  ir_expr *grid_size[3];
  int64_t shared_bytes; /* every shared buffer, each 16-byte aligned */
  /* The TMA pipelines' mbarriers: static shared arrays beside the buffers
   * (codegen declares them), 16 bytes a stage, in the block's total too. */
  int64_t barrier_bytes;
  ir_buffer *A, *B, *C; /* the parameters, in this order */
  ir_buffer *W;         /* split-K's workspace, a fourth parameter; or NULL */
  /* ts_pack's copies of op(A) and op(B), views of the workspace that the
   * kernel reads (the schedule's) or writes (a packing kernel); NULL for an
   * operand not packed.  Any of them also makes W a parameter. */
  ir_buffer *packed[2];
  /* The entry point's parameters in order (ir_kernel_set_params). */
  const ir_param *params;
  int nparams;
  const char *entry;    /* the entry point's name */
  int nvars;            /* every variable's id is below this */
  int min_blocks;       /* blocks per multiprocessor asked for; 0: any */
  /* A persistent grid (ts_persistent): this many blocks a multiprocessor,
   * at most grid[0] (C's tiles, each block looping over them); the
   * launch makes the grid min(grid[0], multiprocessors x persistent).
   * 0: the grid as it is. */
  int persistent;
  /* Threads (linear, from 0) that run the kernel outside its
   * warp-specialized pipeline; the rest are its producer. 0: all. */
  int64_t consumer_threads;
  /* With a producer: its registers and the consumers' after setmaxnreg
   * (the counts codegen emits and explain reports), and a thread's at
   * launch, for min_blocks blocks a multiprocessor (ts_register_split_of);
   * all 0 without one. */
  ts_register_split registers;
  int min_arch;         /* compute capability it needs (80: cp.async); 0 */
  bool arch_specific;   /* sm_90a's instructions (wgmma): sm_90 alone */
  /* The kernel stores C through the TMA (S_TMA_STORE): its barriers carry
   * the proxy fence, and its shared memory is dynamic (an overlay). */
  bool tma_store;
  /* Blocks a cluster along the grid's x (ts_cluster, __cluster_dims__):
   * blocks 2c and 2c + 1 run together, sharing their TMA pipeline's
   * multicast boxes and releases; grid[0] is a multiple (ir_kernel_grid
   * keeps a persistent grid's so).  0 or 1: none. */
  int cluster;
} ir_kernel;

const char *ir_expr_kind_name(ir_expr_kind k);
const char *ir_stmt_kind_name(ir_stmt_kind k);
const char *ir_loop_kind_name(ts_loop_kind k);
bool ir_kind_is_block(ts_loop_kind k);
bool ir_kind_is_thread(ts_loop_kind k);
bool ir_kind_is_launch(ts_loop_kind k);
/* A reduction loop bound to blockIdx.z: ts_split_k's outer loop, the one
 * bound reduction loop (ts_bind refuses the others).  The accumulator lies
 * inside it: each block sums its part of k. */
bool ir_loop_is_split_k(const ts_loop *l);

/* ---- Constructors (new_*); NULL only when the arena is out of memory ---- */

ir_var *ir_new_var(ts_arena *a, int id, const char *name, ir_var_kind kind,
                   int64_t extent);
ts_loop *ir_new_loop(ts_arena *a, int id, const char *name, int64_t extent,
                     bool reduce, const void *owner);
ir_buffer *ir_new_buffer(ts_arena *a, const char *name, ir_scope scope,
                         ts_dtype dtype, int ndim, const int64_t *shape,
                         const int64_t *strides);

/* Sets the storage order (outermost dimension first) and the padding of
 * the innermost stored dimension, and the strides that follow from them. */
void ir_buffer_set_layout(ir_buffer *b, const int *order, int64_t pad);
/* An element's offset from its unswizzled one (see ir_buffer.swizzle). */
int64_t ir_swizzle_offset(const ir_buffer *b, int64_t off);
/* Elements of a stored row, and of a 16-byte chunk, of a swizzled buffer;
 * the rows a chunk's pattern repeats after. */
int64_t ir_swizzle_row(const ir_buffer *b);
int64_t ir_swizzle_chunk(const ir_buffer *b);
int64_t ir_swizzle_rows(const ir_buffer *b);
/* Elements a 128-byte panel of a row holds, where the rows are stored in
 * panels (see ir_buffer.swizzle); 0 where not. */
int64_t ir_swizzle_panel(const ir_buffer *b);

/* The grid k is launched with on a device of `multiprocessors`: its grid,
 * or a persistent one's blocks (see ir_kernel.persistent). */
void ir_kernel_grid(const ir_kernel *k, int multiprocessors, int64_t grid[3]);

/* Sets k's parameters from its buffers: A, B and C (those it has), then
 * the workspace W where it has split-K's W or a packed view.  False when
 * the arena is out of memory. */
bool ir_kernel_set_params(ts_arena *a, ir_kernel *k);
/* A tensor map parameter's dimensions and pitch encoded again from its
 * buffer, as numbers (after ir_kernel_resolve gave the buffer numbers). */
void ir_param_remap(ir_param *p);

/* Elements a buffer spans in memory, padding included. */
int64_t ir_buffer_size(const ir_buffer *b);
/* Bytes of that span. */
int64_t ir_buffer_bytes(const ir_buffer *b);
/* Bytes of the buffer's C declaration (each stored dimension, the innermost
 * padded), rounded up to 16 so that the next buffer stays aligned. */
int64_t ir_shared_slot_bytes(const ir_buffer *b);
/* A shared buffer's alignment in bytes: 1024 for rows swizzled in 128
 * bytes (the swizzle repeats every 8 rows of 128 bytes, and wgmma's
 * descriptors apply it from the address), else 16; and the first offset
 * at or after `offset` so aligned. */
int ir_shared_alignment(const ir_buffer *b);
int64_t ir_shared_slot_start(const ir_buffer *b, int64_t offset);

/* ---- Sizes chosen at launch (symbolic.c) ---------------------------------- */

/* A loop's trip count, a buffer's dimension d or stride d: its
 * expression where chosen at launch, else the number as an E_INT. */
ir_expr *ir_loop_size(ts_arena *a, const ts_loop *l);
ir_expr *ir_buffer_dim(ts_arena *a, const ir_buffer *b, int d);
ir_expr *ir_buffer_stride(ts_arena *a, const ir_buffer *b, int d);
/* A dimension or stride of b is chosen at launch. */
bool ir_buffer_symbolic(const ir_buffer *b);
/* The value of a size expression at the launch values (by
 * ts_param_value); false where it reads anything else. */
bool ir_eval_size(const ir_expr *e, const int64_t *values, int64_t *out);
/* l with trip count `size` where that is not a number (its variable's
 * extent then the most the size may be); l itself either way. */
ts_loop *ir_loop_sized(ts_loop *l, ir_expr *size);
/* The formula of a size expression for the launcher; false where it is
 * not one (reads a loop's variable, or is too long). */
bool ir_formula_of(const ir_expr *e, ts_formula *out);
/* k at the launch values (by ts_param_value; NULL: its nominal ones) in
 * out, built in a: every value a number, every loop's trip count, global
 * buffer's dimension and stride, and grid dimension resolved, so that the
 * executor and the estimates run it as a kernel compiled for them.  False
 * when out of memory or a size does not evaluate. */
bool ir_kernel_resolve(ts_arena *a, const ir_kernel *k, const int64_t *values,
                       ir_kernel *out);
/* k takes values at launch (has anything ir_kernel_resolve resolves). */
bool ir_kernel_symbolic(const ir_kernel *k);

ir_expr *ir_int(ts_arena *a, int64_t v);
ir_expr *ir_float(ts_arena *a, float v);
ir_expr *ir_varref(ts_arena *a, ir_var *v);
ir_expr *ir_binary(ts_arena *a, ir_expr_kind kind, ir_expr *x, ir_expr *y);
ir_expr *ir_not(ts_arena *a, ir_expr *x);
ir_expr *ir_select(ts_arena *a, ir_expr *c, ir_expr *x, ir_expr *y);
ir_expr *ir_load(ts_arena *a, ir_buffer *buf, ir_expr *const *idx);
/* The n values (of one dtype) as the lanes of a vector. */
ir_expr *ir_vector(ts_arena *a, ir_expr *const *lanes, int n);
/* x converted to `to` (rounding to nearest even when narrowing); x itself
 * when it already is of that type. */
/* fp32 x rounded to tf32 as cvt.rna.tf32.f32 rounds (mma_round_tf32). */
ir_expr *ir_round_tf32(ts_arena *a, ir_expr *x);
/* c ? own : the value `theirs` has in the neighbouring lane (lane ^ 1 of
 * the warp), fp32: a warp shuffle, so every lane of the warp evaluates
 * all three operands whatever c (E_PAIR_PICK). */
ir_expr *ir_pair_pick(ts_arena *a, ir_expr *c, ir_expr *own, ir_expr *theirs);
ir_expr *ir_cast(ts_arena *a, ts_dtype to, ir_expr *x);
/* Folding helpers: like ir_binary, but fold constants and identities
 * (x + 0, x * 1, x * 0, true && x) so built expressions stay small. */
ir_expr *ir_add(ts_arena *a, ir_expr *x, ir_expr *y);
ir_expr *ir_sub(ts_arena *a, ir_expr *x, ir_expr *y);
ir_expr *ir_mul(ts_arena *a, ir_expr *x, ir_expr *y);
ir_expr *ir_and(ts_arena *a, ir_expr *x, ir_expr *y); /* NULL means true */

ir_stmt *ir_new_for(ts_arena *a, ts_loop *loop, ir_stmt *body);
ir_stmt *ir_new_seq(ts_arena *a, ir_stmt *const *items, int n);
/* The value is converted to the buffer's dtype, as a C assignment
 * converts it. */
ir_stmt *ir_new_store(ts_arena *a, ir_buffer *buf, ir_expr *const *idx,
                      ir_expr *value);
/* buf[idx] += value as one atomic read-modify-write (value converted to
 * the buffer's dtype). */
ir_stmt *ir_new_atomic_add(ts_arena *a, ir_buffer *buf, ir_expr *const *idx,
                           ir_expr *value);
ir_stmt *ir_new_if(ts_arena *a, ir_expr *cond, ir_stmt *then_, ir_stmt *else_);
ir_stmt *ir_new_alloc(ts_arena *a, ir_buffer *buf, ir_stmt *body);
ir_stmt *ir_new_barrier(ts_arena *a);
/* A barrier of the block's first `threads` threads (0: all of them). */
ir_stmt *ir_new_named_barrier(ts_arena *a, int64_t threads);
/* The TMA's store of the box at src (a load of a shared buffer's element)
 * into global buffer dst_global at coord, and the wait for the issuing
 * thread's stores to have read shared memory. */
ir_stmt *ir_new_tma_store(ts_arena *a, ir_expr *src, ir_buffer *dst_global,
                          ir_expr *const coord[2], const int64_t box[2]);
ir_stmt *ir_new_tma_store_wait(ts_arena *a);
ir_stmt *ir_new_async_commit(ts_arena *a);
ir_stmt *ir_new_async_wait(ts_arena *a, int pending);
ir_stmt *ir_new_lanes(ts_arena *a, ts_loop *loop, ir_stmt *body,
                      ir_stmt *expanded);
ir_stmt *ir_new_compute(ts_arena *a, ir_expr *i, ir_expr *j, ir_expr *k,
                        ir_expr *pred);
/* acc[acc_idx..] += a[a_idx..] * b[b_idx..] for one warp (see S_MMA). */
ir_stmt *ir_new_mma(ts_arena *a, ir_buffer *const *buf, ir_expr **const *idx);

/* A warpgroup's wgmma (see S_WGMMA); its descriptors' fields are set by
 * the caller. */
ir_stmt *ir_new_wgmma(ts_arena *a, const struct mma_instr_s *in,
                      ir_buffer *acc, ir_expr *const *idx, ir_expr *src_a,
                      ir_expr *src_b);
/* Whether wgmma s takes its a operand from registers (a local buffer)
 * rather than a shared tile. */
bool ir_wgmma_a_regs(const ir_stmt *s);

/* wgmma.fence (pending -1), or commit_group and wait_group(pending). */
ir_stmt *ir_new_wgmma_sync(ts_arena *a, int pending, ir_buffer *acc);
ir_stmt *ir_new_pipeline(ts_arena *a, const ir_pipeline *p, ir_stmt *body);
/* The box (box[0] x box[1], innermost first) of src at coord into dst. */
ir_stmt *ir_new_tma(ts_arena *a, const ir_pipeline *p, ir_expr *stage,
                    ir_expr *dst, ir_buffer *src, ir_expr *const coord[2],
                    const int64_t box[2]);
ir_stmt *ir_new_mbarrier(ts_arena *a, const ir_pipeline *p, ir_mbar_op op,
                         ir_mbar_which bar, ir_expr *stage, ir_expr *parity);

/* frag[idx..] = a warp's ldmatrix of `matrices` 8 x 8 matrices whose rows
 * the lanes' `src` loads address (see S_LDMATRIX). */
ir_stmt *ir_new_ldmatrix(ts_arena *a, ir_buffer *frag, ir_expr *const *idx,
                         ir_expr *src, int matrices, bool trans);
/* A warp's stmatrix of `matrices` 8 x 8 matrices whose rows the lanes'
 * `dst` loads address, of the lanes' 2 x matrices values (S_STMATRIX). */
ir_stmt *ir_new_stmatrix(ts_arena *a, ir_expr *dst, ir_expr *const *value,
                         int matrices);

/* A compute node like s with op(A) (which = 0) or op(B) (1) read from `src`
 * whose element [0, 0] is operand element (o0, o1). */
/* Operand w's coordinate d in global terms: A[i, k] (w = 0), B[k, j]. */
ir_expr *ir_compute_coord(const ir_stmt *s, int w, int d);
ir_stmt *ir_compute_with_src(ts_arena *a, const ir_stmt *s, int which,
                             ir_buffer *src, ir_expr *o0, ir_expr *o1);
/* A compute node like s with each of its expressions passed through fn. */
typedef ir_expr *(*ir_expr_fn)(ts_arena *a, ir_expr *e, void *ctx);
ir_stmt *ir_compute_map(ts_arena *a, ir_stmt *s, ir_expr_fn fn, void *ctx);

bool ir_expr_uses_var(const ir_expr *e, const ir_var *v);
/* Whether e reads gridDim (a persistent grid's tile). */
bool ir_expr_uses_grid(const ir_expr *e);
bool ir_expr_equal(const ir_expr *x, const ir_expr *y);

/* ---- Rewrites ------------------------------------------------------------ */

/* One variable replaced by an expression, through a statement or expression;
 * returns the same node where nothing changed. */
ir_expr *ir_subst_expr(ts_arena *a, ir_expr *e, const ir_var *v,
                       ir_expr *with);
ir_stmt *ir_subst_stmt(ts_arena *a, ir_stmt *s, const ir_var *v,
                       ir_expr *with);

#endif
