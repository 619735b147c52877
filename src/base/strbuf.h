/*
 * A growable text buffer for the printers and the code generator.  Out of
 * memory is sticky: later appends do nothing and ts_buf_take returns NULL.
 */
#ifndef TS_STRBUF_H
#define TS_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ts_buf {
  char *data;
  size_t len, cap;
  bool failed;
} ts_buf;

void ts_buf_init(ts_buf *b);
void ts_buf_free(ts_buf *b);
void ts_buf_puts(ts_buf *b, const char *s);
void ts_buf_printf(ts_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ts_buf_indent(ts_buf *b, int depth); /* two spaces a level */
/* A loop or buffer name as a C identifier: "i.outer" -> "i_outer". */
void ts_buf_c_name(ts_buf *b, const char *name);
/* The text (malloc'd, caller frees), or NULL if anything failed. */
char *ts_buf_take(ts_buf *b);

#endif
