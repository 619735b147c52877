/*
 * A space's knobs as a user reads a config space (tessel tune --list,
 * tessel list FILE.c): each knob with its values, in the order tune tries
 * them.  The space is enumerated at one definition, as tune does, and each
 * knob's values are gathered over the configurations: a knob declared only
 * in some of them (for some values of another, or at some shapes) is
 * listed with how many, and values computed from earlier knobs are the
 * union of what they came to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

enum { MAX_LISTED = 64 };

typedef struct knob_values {
  const char *name; /* the first configuration's text, not copied */
  const char **values;
  int nvalues;
  int declared; /* configurations that declare it */
} knob_values;

/* The knob `name`, added after the knob `after` (NULL: first) where it is
 * new, so that knobs keep the order the space declares them in even where
 * the first configuration leaves some out; NULL when too many. */
static knob_values *find_knob(knob_values *k, int *n, const char *name,
                              const char *after) {
  int at = 0;
  for (int i = 0; i < *n; i++) {
    if (strcmp(k[i].name, name) == 0)
      return &k[i];
    if (after && strcmp(k[i].name, after) == 0)
      at = i + 1;
  }
  if (*n == MAX_LISTED)
    return NULL;
  memmove(&k[at + 1], &k[at], sizeof(*k) * (size_t)(*n - at));
  k[at] = (knob_values){.name = name};
  (*n)++;
  return &k[at];
}

/* Adds value to the knob's values unless it is there; false when out of
 * memory. */
static bool add_value(knob_values *k, const char *value) {
  for (int i = 0; i < k->nvalues; i++)
    if (strcmp(k->values[i], value) == 0)
      return true;
  const char **grown = realloc(k->values, sizeof(*grown) *
                                              (size_t)(k->nvalues + 1));
  if (!grown)
    return false;
  k->values = grown;
  k->values[k->nvalues++] = value;
  return true;
}

/* Each knob of the configurations with its values; -1 when out of memory. */
static int gather(ts_config **configs, int n, knob_values *k) {
  int nk = 0;
  for (int c = 0; c < n; c++)
    for (int i = 0; i < ts_config_knob_count(configs[c]); i++) {
      knob_values *kv =
          find_knob(k, &nk, ts_config_knob_name(configs[c], i),
                    i ? ts_config_knob_name(configs[c], i - 1) : NULL);
      if (!kv || !add_value(kv, ts_config_knob_value(configs[c], i)))
        return -1;
      kv->declared++;
    }
  return nk;
}

static void print_knob(const knob_values *k, int n, const char *indent) {
  printf("%s%-10s", indent, k->name);
  for (int i = 0; i < k->nvalues; i++)
    printf("%s%s", i ? ", " : " ", k->values[i]);
  if (k->declared < n)
    printf("   (declared in %d of the %d configurations)", k->declared, n);
  fputs("\n", stdout);
}

void cli_print_knobs(const ts_space *sp, const ts_gemm *def,
                     const char *indent) {
  ts_config **configs;
  int n = ts_space_enumerate(sp, def, 0, &configs);
  printf("%sat %lldx%lldx%lld, A and B %s: ", indent, (long long)def->m,
         (long long)def->n, (long long)def->k, ts_dtype_name(def->a_type));
  if (n < 0) {
    printf("more than 100000 configurations (or memory ran out)\n");
    return;
  }
  int pruned = 0;
  for (int i = 0; i < n; i++)
    pruned += ts_config_pruned(configs[i]) != NULL;
  printf("%d configuration%s, %d pruned\n", n, n == 1 ? "" : "s", pruned);
  knob_values k[MAX_LISTED] = {{0}};
  int nk = gather(configs, n, k);
  if (nk < 0)
    printf("%s(out of memory listing the knobs)\n", indent);
  for (int i = 0; i < nk; i++)
    print_knob(&k[i], n, indent);
  for (int i = 0; i < MAX_LISTED; i++)
    free(k[i].values);
  ts_space_free_configs(configs, n);
}
