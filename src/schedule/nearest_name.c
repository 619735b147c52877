/*
 * What a lookup by name says when the name is not there: the names that
 * are (a schedule's loops in nest order, the buffers a cache can copy) and
 * the one nearest the name asked for (ts_nearest_name, src/base/nearest.c),
 * so that "i.outr" or "I" gets "did you mean ...".
 */
#include <string.h>

#include "../base/nearest.h"
#include "../ir/visit.h"
#include "sched.h"

void sched_list_names(ts_buf *b, const char *name, const char *const *names,
                      int n, const char *what) {
  const char *near = ts_nearest_name(name, names, n);
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
