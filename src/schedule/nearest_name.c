/*
 * What a lookup by name says when the name is not there: the names that
 * are (a schedule's loops in nest order, the buffers a cache can copy) and
 * the one nearest the name asked for, so that "i.outr" or "I" gets "did
 * you mean ...".  Nearest is a match but for case first, else the fewest
 * single-character edits (Levenshtein distance, case ignored) where they
 * change at most a third of the name: a typo, not another name.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/visit.h"
#include "sched.h"

enum { MAX_NAME = 128 }; /* longer names are compared by case alone */

static bool same_but_case(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return false;
  return *a == *b;
}

/* Levenshtein distance of a and b, case ignored; -1 past MAX_NAME. */
static int distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na > MAX_NAME || nb > MAX_NAME)
    return -1;
  int row[MAX_NAME + 1];
  for (size_t j = 0; j <= nb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int up = row[j];
      int change = tolower((unsigned char)a[i - 1]) !=
                   tolower((unsigned char)b[j - 1]);
      int best = diag + change;
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

const char *sched_nearest_name(const char *name, const char *const *names,
                               int n) {
  for (int i = 0; i < n; i++)
    if (same_but_case(name, names[i]))
      return names[i];
  const char *best = NULL;
  int best_d = 0;
  for (int i = 0; i < n; i++) {
    int d = distance(name, names[i]);
    size_t longer = strlen(name) > strlen(names[i]) ? strlen(name)
                                                    : strlen(names[i]);
    if (d > 0 && (size_t)(3 * d) <= longer && (!best || d < best_d)) {
      best = names[i];
      best_d = d;
    }
  }
  return best;
}

void sched_list_names(ts_buf *b, const char *name, const char *const *names,
                      int n, const char *what) {
  const char *near = sched_nearest_name(name, names, n);
  if (near)
    ts_buf_printf(b, "; did you mean \"%s\"?", near);
  ts_buf_printf(b, " (%s: ", what);
  for (int i = 0; i < n; i++)
    ts_buf_printf(b, "%s%s", i ? ", " : "", names[i]);
  ts_buf_puts(b, n ? ")" : "none)");
}

/* ---- The loops of a schedule ------------------------------------------------ */

typedef struct {
  const char **names;
  int n, cap;
} name_list;

static bool visit_for(ir_visitor *v, const ir_stmt *st) {
  name_list *l = v->ctx;
  if (st->kind == S_FOR && l->n < l->cap)
    l->names[l->n++] = st->for_.loop->name;
  return true;
}

int sched_loop_names(const ts_sched *s, const char **names, int cap) {
  name_list l = {.names = names, .cap = cap};
  ir_visitor v = {.stmt = visit_for, .ctx = &l};
  ir_visit_stmt(&v, s->root);
  return l.n;
}

bool sched_buffer_exists(const ts_sched *s, const char *name) {
  return strcmp(name, "A") == 0 || strcmp(name, "B") == 0 ||
         strcmp(name, "C") == 0 || sched_find_stage(s, name);
}

int sched_buffer_names(const ts_sched *s, const char **names, int cap) {
  int n = 0;
  const char *inputs[2] = {"A", "B"};
  for (int w = 0; w < 2 && n < cap; w++)
    names[n++] = inputs[w];
  for (int i = 0; i < s->nstages && n < cap; i++)
    if (!s->stages[i]->write)
      names[n++] = s->stages[i]->name;
  return n;
}
