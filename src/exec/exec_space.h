/*
 * A sampled run's global memory (exec_space.c): A and B are never stored,
 * each element a pure function of (seed, matrix, storage index); C, the
 * split-K workspace W and ts_pack's copies of A and B live in small pages
 * (keyed by the executor's global slot) allocated on first touch, each
 * with the shadow a dense buffer keeps (value, defined, last writer and
 * reader with their epochs, atomic).  Private to the executor.
 */
#ifndef TS_EXEC_SPACE_H
#define TS_EXEC_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "../ir/ir.h"

enum { SPACE_PAGE = 256 }; /* elements a page holds */

typedef struct space_page {
  float data[SPACE_PAGE];
  uint8_t defined[SPACE_PAGE], atomic[SPACE_PAGE];
  int32_t writer[SPACE_PAGE], reader[SPACE_PAGE];
  uint64_t wepoch[SPACE_PAGE], repoch[SPACE_PAGE];
} space_page;

/* A box of C's elements, rows and columns inclusive. */
typedef struct {
  int64_t lo[2], hi[2];
} ir_box;

typedef struct exec_space {
  uint64_t seed;
  ts_dtype type[3];  /* A, B, C */
  bool c_defined;    /* C holds data first (beta != 0) */
  int64_t m, n;      /* C's rows and columns */
  int64_t ldc;       /* C's elements from one row to the next (W's: n) */
  /* (matrix, page) -> page, open addressing */
  uint64_t *keys;
  space_page **pages;
  size_t cap, count;
  /* The sample: elements of C (and of W over them) whose writers all run;
   * a read of an unwritten element outside it is no fault. */
  ir_box *boxes;
  int nboxes;
} exec_space;

/* Element `index` of matrix 0 (A), 1 (B) or 2 (C's starting data) of a
 * space seeded `seed`: uniform in [-1, 1), rounded to `type`. */
float space_value(uint64_t seed, int matrix, int64_t index, ts_dtype type);
/* The page holding element `off` of matrix 2 (C) or 3 (W), made on first
 * touch; NULL when out of memory. */
space_page *space_page_of(exec_space *s, int matrix, int64_t off);
/* The page if it exists, else NULL. */
const space_page *space_page_find(const exec_space *s, int matrix,
                                  int64_t off);
/* Element `off` of matrix 2 (C, rows ldc apart) or 3 (W, packed) lies in
 * the sample (W's [part, i, j] over C's [i, j]). */
bool space_in_sample(const exec_space *s, int matrix, int64_t off);
/* Row (dim 0) or column (dim 1) `line` of C meets the sample. */
bool space_line_in_sample(const exec_space *s, int dim, int64_t line);
/* Forgets every page's writers and readers: a kernel boundary. */
void space_forget(exec_space *s);
size_t space_bytes(const exec_space *s);
void space_free(exec_space *s);

#endif
