/*
 * A primitive's call in a source file, for an error printed as a compiler
 * prints one (src/builtins/call_site.c).
 */
#ifndef TS_CALL_SITE_H
#define TS_CALL_SITE_H

#include <stdbool.h>

enum { CALL_SITE_TEXT = 1024 };

/* Where a call lies: the line it starts on and its columns there (1 is the
 * first), first..last, the call's whole source range on that line with
 * libclang, the function's name without; the line's text. */
typedef struct call_site {
  int line;
  int first, last;
  bool whole;                 /* first..last is the whole call (libclang) */
  char text[CALL_SITE_TEXT];  /* the source line, without its newline */
} call_site;

/* The call of `name` (ts_tma: its macro's ts_tma_at too) that a compiler
 * put at `line` of `file`: with libclang, the call expression whose source
 * range holds the line; else, or when libclang finds none, `name` followed
 * by '(' on that line or one of the few before it (a compiler may give a
 * call over several lines its last line).  False when none is found or
 * the file cannot be read. */
bool call_site_find(const char *file, int line, const char *name,
                    call_site *out);

/* Whether libclang loads here (as call_site_find would load it). */
bool call_site_has_libclang(void);

#endif
