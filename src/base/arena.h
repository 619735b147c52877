/*
 * Arena allocation for IR.  Every node of a schedule lives in one arena;
 * freeing the arena frees the schedule's whole IR at once, so rewrites may
 * drop nodes without bookkeeping and nothing is reference counted.
 */
#ifndef TS_ARENA_H
#define TS_ARENA_H

#include <stddef.h>

typedef struct ts_arena_block ts_arena_block;

typedef struct ts_arena {
  ts_arena_block *head; /* newest block first */
  int failed;           /* set once an allocation failed; sticky */
} ts_arena;

void ts_arena_init(ts_arena *a);
void ts_arena_release(ts_arena *a);
/* Zeroed memory, or NULL (and a->failed set) when out of memory. */
void *ts_arena_alloc(ts_arena *a, size_t size);
char *ts_arena_strdup(ts_arena *a, const char *s);
/* Bytes handed out so far (tests use it to see that nothing allocated). */
size_t ts_arena_used(const ts_arena *a);
char *ts_arena_printf(ts_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
