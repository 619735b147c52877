/*
 * A shape's candidates before timing: every configuration of a space
 * enumerated (pruned ones marked), --budget's sample drawn, and the ones
 * still wanted lowered and compiled in parallel (tuner.c's prepare; the
 * runners compile what they take with tune_compile_some).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../base/random.h"
#include "tune_impl.h"

bool tune_enumerate(const ts_tune_space *sp, const ts_tune_opts *o,
                    ts_tune_shape *r) {
  ts_config **configs;
  int n = ts_space_enumerate(sp->space, &r->def, o->limit, &configs);
  if (n < 0) {
    char shape[64];
    tune_shape_text(&r->def, shape, sizeof(shape));
    fprintf(stderr, "tessel: %s has more than %d configuration%s at %s (or "
            "memory ran out); raise --limit\n", sp->name, o->limit,
            o->limit == 1 ? "" : "s", shape);
    return false;
  }
  r->c = calloc((size_t)(n ? n : 1), sizeof(*r->c));
  if (!r->c) {
    ts_space_free_configs(configs, n);
    return false;
  }
  r->n = n;
  for (int i = 0; i < n; i++) {
    r->c[i].config = configs[i];
    r->c[i].text = ts_config_text(configs[i]);
  }
  free(configs); /* the configurations now belong to r */
  return true;
}

/* Whether candidate c still needs a kernel: not pruned, not left out, not
 * resumed from the journal. */
bool tune_wanted(const ts_tune_candidate *c) {
  return !ts_config_pruned(c->config) && !c->left_out && !c->resumed &&
         !c->kernel;
}

bool tune_compile_some(const ts_tune_space *sp, const ts_tune_opts *o,
                         const char *arch, ts_tune_shape *r, const int *which,
                         int n) {
  ts_program **progs = calloc((size_t)(n ? n : 1), sizeof(*progs));
  ts_kernel **k = calloc((size_t)(n ? n : 1), sizeof(*k));
  bool ok = progs && k;
  for (int v = 0; ok && v < n; v++) {
    ts_sched *s = ts_space_schedule(sp->space, &r->def, r->c[which[v]].config);
    progs[v] = ts_lower(s);
    ts_sched_free(s);
  }
  if (ok)
    ts_compile_all(progs, n, arch, o->jobs, k);
  for (int v = 0; ok && v < n; v++)
    r->c[which[v]].kernel = k[v];
  if (ok)
    tune_inject_faulting_kernel(arch, r, which, n);
  for (int v = 0; progs && v < n; v++)
    ts_program_free(progs[v]);
  free(progs);
  free(k);
  return ok;
}

/* --budget: the space's first configuration (its default) and a sample
 * of the rest drawn at random with the run's seed, n in all.  The sample
 * is drawn over every unpruned configuration, whatever a journal holds,
 * so that a resumed run times the sample the interrupted one drew; those
 * outside it are left out unless the journal has their results. */
void tune_apply_budget(const ts_tune_opts *o, ts_tune_shape *r) {
  if (o->budget <= 0)
    return;
  int *pool = malloc(sizeof(*pool) * (size_t)(r->n ? r->n : 1)), np = 0;
  for (int i = 0; pool && i < r->n; i++)
    if (!ts_config_pruned(r->c[i].config))
      pool[np++] = i;
  uint64_t rng = o->seed ^ 0x7e55e1b0d6e7ull;
  for (int i = 1; i < np; i++) { /* shuffle all but the first */
    int j = 1 + (int)(ts_random_next(&rng) % (uint64_t)i);
    int x = pool[i];
    pool[i] = pool[j];
    pool[j] = x;
  }
  for (int i = o->budget; i < np; i++)
    if (!r->c[pool[i]].resumed)
      r->c[pool[i]].left_out = "--budget";
  free(pool);
}

/* Every wanted candidate compiled; returns how many there were, -1 when
 * out of memory.  With several runners (lazy) none is: each runner
 * compiles what it takes, so that NVRTC runs while the other GPUs time,
 * and under MPI on every rank's cores. */
int tune_compile_wanted(const ts_tune_space *sp, const ts_tune_opts *o,
                          const char *arch, ts_tune_shape *r, bool lazy) {
  int *which = malloc(sizeof(*which) * (size_t)(r->n ? r->n : 1)), n = 0;
  if (!which)
    return -1;
  for (int i = 0; i < r->n; i++)
    if (tune_wanted(&r->c[i]))
      which[n++] = i;
  bool ok = lazy || tune_compile_some(sp, o, arch, r, which, n);
  free(which);
  return ok ? n : -1;
}
