/*
 * The name nearest a name asked for (nearest.h).  Nearest is a match but
 * for case first, else the fewest single-character edits (Levenshtein
 * distance, case ignored) where they change at most a third of the name,
 * or one character of a name that keeps the others ("bx" for "bm"): a
 * typo, not another name ("q" is not "i").
 */
#include "nearest.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

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

/* Whether d edits make a typo of names whose longer has `longer`
 * characters. */
static bool a_typo(int d, size_t longer) {
  return d > 0 && ((size_t)(3 * d) <= longer || (d == 1 && longer > 1));
}

const char *ts_nearest_name(const char *name, const char *const *names,
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
    if (a_typo(d, longer) && (!best || d < best_d)) {
      best = names[i];
      best_d = d;
    }
  }
  return best;
}
