/* A growable, NUL-terminated text buffer with a sticky out-of-memory flag. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ts_buf_init(ts_buf *b) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}

void ts_buf_free(ts_buf *b) {
  free(b->data);
  ts_buf_init(b);
}

static bool reserve(ts_buf *b, size_t extra) {
  if (b->failed)
    return false;
  if (b->len + extra + 1 <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->failed = true;
    return false;
  }
  b->data = p;
  b->cap = cap;
  return true;
}

void ts_buf_puts(ts_buf *b, const char *s) {
  size_t n = strlen(s);
  if (!reserve(b, n))
    return;
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

void ts_buf_printf(ts_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = true;
    return;
  }
  if (!reserve(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void ts_buf_indent(ts_buf *b, int depth) {
  for (int i = 0; i < depth; i++)
    ts_buf_puts(b, "  ");
}

char *ts_buf_take(ts_buf *b) {
  if (b->failed || !reserve(b, 0)) {
    ts_buf_free(b);
    return NULL;
  }
  char *p = b->data;
  p[b->len] = '\0'; /* an empty buffer has had nothing written to end it */
  ts_buf_init(b);
  return p;
}

void ts_buf_c_name(ts_buf *b, const char *name) {
  for (const char *p = name; *p; p++) {
    char c[2] = {*p == '.' ? '_' : *p, 0};
    ts_buf_puts(b, c);
  }
}
