/*
 * A bump allocator over a list of malloc'd blocks.  Allocations are never
 * freed one by one; ts_arena_release frees every block.
 */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK_SIZE = 64 * 1024, ALIGN = 16 };

struct ts_arena_block {
  ts_arena_block *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
};

void ts_arena_init(ts_arena *a) {
  a->head = NULL;
  a->failed = 0;
}

void ts_arena_release(ts_arena *a) {
  ts_arena_block *b = a->head;
  while (b) {
    ts_arena_block *next = b->next;
    free(b);
    b = next;
  }
  a->head = NULL;
}

void *ts_arena_alloc(ts_arena *a, size_t size) {
  size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
  ts_arena_block *b = a->head;
  if (!b || b->size - b->used < size) {
    size_t cap = size > BLOCK_SIZE ? size : BLOCK_SIZE;
    b = malloc(sizeof(*b) + cap);
    if (!b) {
      a->failed = 1;
      return NULL;
    }
    b->used = 0;
    b->size = cap;
    b->next = a->head;
    a->head = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

char *ts_arena_strdup(ts_arena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ts_arena_alloc(a, n);
  if (p)
    memcpy(p, s, n);
  return p;
}

char *ts_arena_printf(ts_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
  char *p = ts_arena_alloc(a, (size_t)n + 1);
  if (!p)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

size_t ts_arena_used(const ts_arena *a) {
  size_t n = 0;
  for (const ts_arena_block *b = a->head; b; b = b->next)
    n += b->used;
  return n;
}
