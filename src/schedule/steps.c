/*
 * How a loop nest got where it is: the schedule's trace replayed a record
 * at a time onto a fresh schedule of its definition, and after each
 * primitive the nest printed as a diff against the nest before it, under
 * the primitive's call as C (`tessel show S --steps`).  The diff is the
 * longest common subsequence of the two nests' lines; unchanged lines
 * show around each change, longer unchanged runs as "...".
 */
#include <stdlib.h>
#include <string.h>

#include "../ir/printer.h"
#include "sched.h"

enum { CONTEXT = 1 }; /* unchanged lines shown either side of a change */

typedef struct {
  char **line;
  int n;
  char *text; /* the lines point into it */
} lines;

static bool split_lines(char *text, lines *l) {
  l->text = text;
  l->n = 0;
  int cap = 1;
  for (const char *p = text; *p; p++)
    cap += *p == '\n';
  l->line = malloc(sizeof(*l->line) * (size_t)cap);
  if (!l->line)
    return false;
  for (char *p = text; p && *p;) {
    char *end = strchr(p, '\n');
    if (end)
      *end = '\0';
    l->line[l->n++] = p;
    p = end ? end + 1 : NULL;
  }
  return true;
}

static void free_lines(lines *l) {
  free(l->line);
  free(l->text);
  *l = (lines){0};
}

/* The schedule's nest, a line a statement. */
static bool nest_lines(const ts_sched *s, lines *out) {
  ts_buf b;
  ts_buf_init(&b);
  ir_print_stmt(&b, s->root, 0, NULL);
  char *text = ts_buf_take(&b);
  return text && split_lines(text, out);
}

/* An edit: a line kept (' '), removed ('-') or added ('+'). */
typedef struct {
  char op;
  const char *line;
} edit;

/* The edits from a to b by their longest common subsequence; NULL when
 * out of memory. */
static edit *diff(const lines *a, const lines *b, int *nedits) {
  size_t w = (size_t)b->n + 1;
  int *lcs = calloc(((size_t)a->n + 1) * w, sizeof(*lcs));
  edit *e = malloc(sizeof(*e) * (size_t)(a->n + b->n + 1));
  if (!lcs || !e) {
    free(lcs);
    free(e);
    return NULL;
  }
  for (int i = a->n - 1; i >= 0; i--)
    for (int j = b->n - 1; j >= 0; j--)
      lcs[i * w + j] = strcmp(a->line[i], b->line[j]) == 0
                           ? lcs[(i + 1) * w + j + 1] + 1
                           : (lcs[(i + 1) * w + j] > lcs[i * w + j + 1]
                                  ? lcs[(i + 1) * w + j]
                                  : lcs[i * w + j + 1]);
  int i = 0, j = 0, n = 0;
  while (i < a->n || j < b->n) {
    if (i < a->n && j < b->n && strcmp(a->line[i], b->line[j]) == 0) {
      e[n++] = (edit){' ', a->line[i++]};
      j++;
    } else if (i < a->n &&
               (j == b->n || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
      e[n++] = (edit){'-', a->line[i++]}; /* removals first, as diff does */
    } else {
      e[n++] = (edit){'+', b->line[j++]};
    }
  }
  free(lcs);
  *nedits = n;
  return e;
}

/* Whether edit k is a change or within CONTEXT lines of one. */
static bool shown(const edit *e, int n, int k) {
  for (int d = -CONTEXT; d <= CONTEXT; d++)
    if (k + d >= 0 && k + d < n && e[k + d].op != ' ')
      return true;
  return false;
}

static void print_diff(ts_buf *b, const edit *e, int n) {
  bool elided = false;
  for (int k = 0; k < n; k++) {
    if (!shown(e, n, k)) {
      if (!elided)
        ts_buf_puts(b, "  ...\n");
      elided = true;
      continue;
    }
    elided = false;
    ts_buf_printf(b, "%c %s\n", e[k].op, e[k].line);
  }
}

/* Step k: the call, then what it changed. */
static bool print_step(ts_buf *b, const ts_sched *s, int k, lines *before,
                       const ts_sched *t) {
  lines after;
  if (!nest_lines(t, &after))
    return false;
  int n;
  edit *e = diff(before, &after, &n);
  if (!e) {
    free_lines(&after);
    return false;
  }
  const trace_rec *r = &s->trace[k];
  if (r->at.file) /* where an editor jumps to, as to a compiler's error */
    ts_buf_printf(b, "\n%s:%d: step %d: ", r->at.file, r->at.line, k + 1);
  else
    ts_buf_printf(b, "\n// step %d: ", k + 1);
  sched_print_record(b, s, r);
  bool same = true;
  for (int q = 0; q < n; q++)
    same &= e[q].op == ' ';
  if (same)
    ts_buf_puts(b, "  (the nest is unchanged: it changes how lowering "
                   "treats a loop or cache)\n");
  else
    print_diff(b, e, n);
  free(e);
  free_lines(before);
  *before = after;
  return true;
}

char *ts_print_steps(ts_sched *s) {
  if (!s || s->status != TS_OK)
    return NULL;
  ts_sched *t = ts_matmul_named(&s->def, s->name);
  lines before = {0};
  ts_buf b;
  ts_buf_init(&b);
  bool ok = ts_sched_status(t) == TS_OK && nest_lines(t, &before);
  if (ok) {
    ts_buf_printf(&b, "// the nest of ts_matmul_named(&def, \"%s\")\n",
                  s->name);
    for (int q = 0; q < before.n; q++)
      ts_buf_printf(&b, "  %s\n", before.line[q]);
  }
  for (int k = 0; ok && k < s->ntrace; k++)
    ok = sched_replay_record(t, &s->trace[k]) == TS_OK &&
         print_step(&b, s, k, &before, t);
  free_lines(&before);
  ts_sched_free(t);
  char *text = ts_buf_take(&b);
  if (!ok) {
    free(text);
    return NULL;
  }
  return text;
}
