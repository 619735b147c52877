/*
 * A schedule's error as a compiler prints one, for an editor to jump to:
 *
 *   hop.c:27:3: error: ts_tma: ...
 *      27 |   ts_tma(s, a);
 *         |   ^~~~~~~~~~~~
 *   (the rest of the message: the loop nest, the loop marked)
 *
 * The file and line are the failing call's (ts_sched_error_location); the
 * column and the range underlined are found in the file (call_site.c):
 * the whole call with libclang, the primitive's name without.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/strbuf.h"
#include "call_site.h"
#include "tessel/builtins.h"

enum { NAME_LEN = 64 };

/* The primitive a message starts with ("ts_tma: ..." gives ts_tma); false
 * when it starts otherwise. */
static bool primitive_of(const char *text, char *name, size_t len) {
  size_t n = strspn(text, "abcdefghijklmnopqrstuvwxyz_0123456789");
  if (n == 0 || n >= len || strncmp(text, "ts_", 3) != 0 || text[n] != ':')
    return false;
  memcpy(name, text, n);
  name[n] = 0;
  return true;
}

/* "   27 |   ts_tma(s, a);" and under it the call's columns marked, the
 * line's tabs kept so that the marks line up. */
static void print_excerpt(ts_buf *b, const call_site *cs) {
  ts_buf_printf(b, "%5d | %s\n      | ", cs->line, cs->text);
  for (int c = 1; c < cs->first; c++)
    ts_buf_puts(b, cs->text[c - 1] == '\t' ? "\t" : " ");
  ts_buf_puts(b, "^");
  for (int c = cs->first; c < cs->last; c++)
    ts_buf_puts(b, "~");
}

char *ts_sched_diagnostic(const ts_sched *s) {
  if (!s || ts_sched_status(s) == TS_OK)
    return NULL;
  const char *msg = ts_sched_errmsg(s);
  ts_location at = ts_sched_error_location(s);
  char head[4200], name[NAME_LEN];
  int n = at.file ? snprintf(head, sizeof(head), "%s:%d: error: ", at.file,
                             at.line)
                  : 0;
  call_site cs;
  if (n <= 0 || (size_t)n >= sizeof(head) || strncmp(msg, head, (size_t)n) != 0 ||
      !primitive_of(msg + n, name, sizeof(name)) ||
      !call_site_find(at.file, at.line, name, &cs))
    return strdup(msg);
  const char *text = msg + n, *end = strchr(text, '\n');
  int first_line = end ? (int)(end - text) : (int)strlen(text);
  ts_buf b;
  ts_buf_init(&b);
  ts_buf_printf(&b, "%s:%d:%d: error: %.*s\n", at.file, cs.line, cs.first,
                first_line, text);
  print_excerpt(&b, &cs);
  if (end && end[1])
    ts_buf_printf(&b, "\n%s", end + 1);
  char *out = ts_buf_take(&b);
  size_t len = out ? strlen(out) : 0;
  if (len && out[len - 1] == '\n')
    out[len - 1] = 0; /* the caller ends the last line, as for a message */
  return out ? out : strdup(msg);
}
