/*
 * A sampled run's global memory: computed inputs and C and W in pages of
 * SPACE_PAGE elements made on first touch, found through an open-addressing
 * hash table keyed by (matrix, page number).  A page of C starts as C's
 * data (beta != 0) or unwritten; a page of W unwritten.  exec_space.h says
 * what it is for.
 */
#include "exec_space.h"

#include <math.h>
#include <stdlib.h>

#include "../base/dtype.h"

enum { NONE_WRITER = -1 };

static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float space_value(uint64_t seed, int matrix, int64_t index, ts_dtype type) {
  uint64_t h = mix(mix(seed ^ ((uint64_t)matrix << 56)) ^ (uint64_t)index);
  float v = (float)((double)(h >> 11) * 0x1p-53 * 2.0 - 1.0);
  return ts_round_to(type, v);
}

static uint64_t key_of(int matrix, int64_t page) {
  return ((uint64_t)matrix << 56) ^ (uint64_t)page;
}

static size_t find_slot(const exec_space *s, uint64_t key) {
  size_t i = (size_t)mix(key) & (s->cap - 1);
  while (s->pages[i] && s->keys[i] != key)
    i = (i + 1) & (s->cap - 1);
  return i;
}

/* Doubles the table (or makes its first one); false when out of memory. */
static bool grow(exec_space *s) {
  size_t cap = s->cap ? 2 * s->cap : 1024;
  exec_space bigger = *s;
  bigger.cap = cap;
  bigger.keys = calloc(cap, sizeof(uint64_t));
  bigger.pages = calloc(cap, sizeof(space_page *));
  if (!bigger.keys || !bigger.pages) {
    free(bigger.keys);
    free(bigger.pages);
    return false;
  }
  for (size_t i = 0; i < s->cap; i++)
    if (s->pages[i]) {
      size_t j = find_slot(&bigger, s->keys[i]);
      bigger.keys[j] = s->keys[i];
      bigger.pages[j] = s->pages[i];
    }
  free(s->keys);
  free(s->pages);
  s->keys = bigger.keys;
  s->pages = bigger.pages;
  s->cap = cap;
  return true;
}

/* A new page: C's data or unwritten, no writer or reader. */
static space_page *new_page(const exec_space *s, int matrix, int64_t page) {
  space_page *p = calloc(1, sizeof(*p));
  for (int i = 0; p && i < SPACE_PAGE; i++) {
    p->writer[i] = p->reader[i] = NONE_WRITER;
    int64_t off = page * SPACE_PAGE + i;
    if (matrix == 2 && s->c_defined && off / s->ldc < s->m &&
        off % s->ldc < s->n) {
      p->data[i] = space_value(s->seed, 2, off, s->type[2]);
      p->defined[i] = 1;
    } else if (matrix == 2) {
      p->data[i] = NAN;
    }
  }
  return p;
}

space_page *space_page_of(exec_space *s, int matrix, int64_t off) {
  int64_t page = off / SPACE_PAGE;
  uint64_t key = key_of(matrix, page);
  if (s->cap) {
    size_t i = find_slot(s, key);
    if (s->pages[i])
      return s->pages[i];
  }
  if (2 * (s->count + 1) > s->cap && !grow(s))
    return NULL;
  size_t i = find_slot(s, key);
  if (!(s->pages[i] = new_page(s, matrix, page)))
    return NULL;
  s->keys[i] = key;
  s->count++;
  return s->pages[i];
}

const space_page *space_page_find(const exec_space *s, int matrix,
                                  int64_t off) {
  if (!s->cap)
    return NULL;
  return s->pages[find_slot(s, key_of(matrix, off / SPACE_PAGE))];
}

bool space_in_sample(const exec_space *s, int matrix, int64_t off) {
  int64_t ld = matrix == 2 ? s->ldc : s->n;
  int64_t e = matrix == 2 ? off : off % (s->m * s->n), i = e / ld,
          j = e % ld;
  for (int b = 0; b < s->nboxes; b++) {
    const ir_box *x = &s->boxes[b];
    if (i >= x->lo[0] && i <= x->hi[0] && j >= x->lo[1] && j <= x->hi[1])
      return true;
  }
  return false;
}

bool space_line_in_sample(const exec_space *s, int dim, int64_t line) {
  for (int b = 0; b < s->nboxes; b++)
    if (line >= s->boxes[b].lo[dim] && line <= s->boxes[b].hi[dim])
      return true;
  return false;
}

void space_forget(exec_space *s) {
  for (size_t i = 0; i < s->cap; i++) {
    space_page *p = s->pages[i];
    for (int e = 0; p && e < SPACE_PAGE; e++) {
      p->writer[e] = p->reader[e] = NONE_WRITER;
      p->atomic[e] = 0;
    }
  }
}

size_t space_bytes(const exec_space *s) {
  return s->count * sizeof(space_page) +
         s->cap * (sizeof(uint64_t) + sizeof(space_page *));
}

void space_free(exec_space *s) {
  for (size_t i = 0; i < s->cap; i++)
    free(s->pages[i]);
  free(s->keys);
  free(s->pages);
  free(s->boxes);
  s->keys = NULL;
  s->pages = NULL;
  s->boxes = NULL;
  s->cap = s->count = 0;
}
