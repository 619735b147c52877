/*
 * tessel explain's parts, private to src/explain/: the cost of one
 * warp-wide request (cost.c), the walk of a kernel that finds the requests
 * (walk.c), what a kernel asks of a multiprocessor (resources.c), and the
 * report (explain.c, text.c).
 */
#ifndef TS_EXPLAIN_IMPL_H
#define TS_EXPLAIN_IMPL_H

#include "../base/arena.h"
#include "../ir/program_ir.h"
#include "tessel/explain.h"

enum { WARP = 32 };

/* One warp-wide request: each active lane's first byte and the bytes it
 * reads or writes. */
typedef struct warp_req {
  bool active[WARP];
  int64_t addr[WARP];
  int width;
} warp_req;

typedef struct req_cost {
  int active;
  double sectors, ideal_sectors;       /* global */
  double wavefronts, ideal_wavefronts; /* shared */
  bool misaligned;
  int64_t stride; /* addr[1] - addr[0] of the first two active lanes */
  bool uniform_stride; /* every pair of neighbouring lanes that far apart */
} req_cost;

/* Sectors of 32 bytes a global request touches, and the fewest its
 * distinct bytes could take. */
void cost_global(const warp_req *r, req_cost *c);
/* Wavefronts of a shared request: lanes served together in phases (the
 * warp for 4 bytes or less, halves for 8, quarters for 16), each phase as
 * many wavefronts as the most distinct words any bank holds. */
void cost_shared(const warp_req *r, req_cost *c);
/* ldmatrix: each matrix's 8 rows of 16 bytes are one phase. */
void cost_ldmatrix(const warp_req *r, int matrices, req_cost *c);

/* A request queued until the straight-line run it belongs to ends
 * (compiled.c). */
typedef enum { COST_GLOBAL, COST_SHARED, COST_LDMATRIX, COST_ASYNC } cost_how;

typedef struct pending_req {
  ts_access_report *row; /* as queued: pending_flush finds it by index */
  int index;             /* the row's in explain_rows */
  const ir_buffer *buf;
  cost_how how;
  warp_req q;           /* the request (cp.async: its global side) */
  warp_req shared_side; /* cp.async's stores */
  int matrices;         /* ldmatrix */
  bool load;            /* a load: the compiler may reuse or merge it */
  unsigned epoch;       /* writes to its buffer, and barriers, before it */
  double weight, step;  /* iterations it stands for; its share of a k step */
  bool dropped;         /* reused or merged into another */
} pending_req;

/* The paddings ts_storage_pad takes, 0..32 elements a stored row: the
 * first PAD_SAMPLE shared requests of a row on an unswizzled buffer are
 * costed under each, so that the advice names the padding that removes
 * its conflicts (explain.c).  A row keeps PAD_SLOTS numbers: the sample's
 * wavefronts under each padding, then its fewest wavefronts, its weight
 * and its count of requests. */
enum {
  PAD_CHOICES = 33,
  PAD_IDEAL = PAD_CHOICES,
  PAD_WEIGHT,
  PAD_COUNT,
  PAD_SLOTS,
  PAD_SAMPLE = 128
};

typedef struct explain_rows explain_rows;

typedef struct pending_list {
  pending_req *v;
  int n, cap;
  explain_rows *rows; /* whose pad_wavefronts the costs add to */
} pending_list;

bool pending_add(pending_list *l, const pending_req *p);
/* Costs the requests queued from `from` on and adds them to their rows
 * (each row's ir_requests counts them as the IR makes them); unless
 * as_written, a load that repeats an earlier one of the run is dropped
 * and shared loads that continue each other are merged first. */
void pending_flush(pending_list *l, int from, bool as_written);

/* The explanation being built: rows found by the walk, in the order first
 * met, and strings in the arena. */
struct explain_rows {
  ts_arena *arena; /* the strings */
  ts_access_report *rows;
  const void **keys; /* the IR node each row stands for */
  /* Row r's sample of shared requests costed with its buffer's rows padded
   * by p elements at [r * PAD_SLOTS + p], and the slots after; all 0 where
   * the buffer is not paddable. */
  double *pad_wavefronts;
  int n, cap;
  bool oom;
};

/* Row r's pad_wavefronts (PAD_SLOTS of them). */
static inline double *row_pad_wavefronts(const explain_rows *e, int r) {
  return e->pad_wavefronts + (size_t)r * PAD_SLOTS;
}

/* What the walk of one kernel gives beside its rows. */
/* A local buffer's elements that thread 0 touches: its registers, where
 * the declared buffer may span more (a tile with gaps). */
typedef struct local_use {
  const ir_buffer *buf;
  uint8_t *seen; /* one byte an element of the declared span */
  int64_t size, touched;
} local_use;

typedef struct kernel_walk {
  int64_t k_steps;     /* the k loop's extent; 0: none */
  int64_t blocks_walked;
  local_use *locals;   /* malloc'd; kernel_walk_free */
  int nlocals;
} kernel_walk;

void kernel_walk_free(kernel_walk *kw);

/* Walks kernel `index` of the program (every warp of the middle block, or
 * of every block), adding its requests to rows as sums over the blocks
 * walked. */
bool walk_kernel(const ir_kernel *k, int index, const ts_explain_opts *o,
                 explain_rows *rows, kernel_walk *out);

/* Registers (of the locals kw saw touched; kw may be NULL), shared
 * memory, occupancy for `arch` (NULL: those of sm_80 and sm_90 the kernel
 * runs on), into r; false for an architecture not in the table. */
bool kernel_resources(const ir_kernel *k, const char *arch,
                      const kernel_walk *kw,
                      ts_arena *strings, ts_kernel_report *r);
/* Whether k runs on `arch` ("sm_86"): its min_arch or newer, and exactly
 * it for an arch-specific kernel (wgmma's sm_90a). */
bool explain_runs_on(const ir_kernel *k, const char *arch);
/* "sm_80, sm_86, sm_89, sm_90": the architectures known. */
const char *explain_arch_list(void);

#endif
