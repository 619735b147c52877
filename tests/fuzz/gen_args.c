/*
 * How a fuzz case draws: each choice from the case's source (a seeded
 * generator or libFuzzer's bytes), and the loop and stage arguments of a
 * call, plausible ones or, in a hostile case, wrong ones on purpose; and
 * the slots the loops and stages a call returns go to.
 */
#include "gen_impl.h"

#include <stdio.h>

#include "base/random.h"

/* ---- Choices --------------------------------------------------------------- */

static uint32_t pick(fz_source *src, uint32_t n) {
  if (n <= 1)
    return 0;
  uint32_t v;
  if (src->data) {
    if (src->pos >= src->size)
      return 0;
    v = src->data[src->pos++];
    if (n > 256 && src->pos < src->size)
      v = v << 8 | src->data[src->pos++];
  } else {
    v = (uint32_t)(ts_random_next(&src->rng) >> 32);
  }
  return v % n;
}

uint32_t fz_pick(fz_source *src, uint32_t n) { return pick(src, n); }

bool fz_chance(fz_case *c, uint32_t percent) {
  return pick(c->src, 100) < percent;
}

/* A plausible loop (live and serial) the case holds, recent ones more
 * often; -1 when there is none. */
static int plausible_loop(fz_case *c) {
  int live[MAX_LOOPS], n = 0;
  for (int i = 0; i < c->nloops; i++)
    if (c->loops[i] && !c->gone[i])
      live[n++] = i;
  if (n == 0)
    return -1;
  int span = n < 4 || fz_chance(c, 40) ? n : 4;
  return live[n - 1 - (int)pick(c->src, (uint32_t)span)];
}

/* A loop argument: a plausible one, or, in a hostile case, sometimes NULL,
 * a loop of another schedule or any loop the case ever held. */
ts_loop *fz_loop_arg_at(fz_case *c, char *text, size_t len, int *index) {
  uint32_t r = c->hostile ? pick(c->src, 100) : 100;
  int i = r < 30 && c->nloops ? (int)pick(c->src, (uint32_t)c->nloops)
                              : plausible_loop(c);
  if (i < 0 && !c->hostile) {
    fz_op_get_loop(c, (const char *[]){"i", "j", "k"}[pick(c->src, 3)]);
    i = c->nloops - 1;
  }
  *index = -1;
  if (r < 5 || i < 0) {
    snprintf(text, len, "NULL");
    return NULL;
  }
  if (r < 10) {
    snprintf(text, len, "F");
    return c->foreign;
  }
  snprintf(text, len, "L[%d]", i);
  *index = i;
  return c->loops[i];
}

ts_loop *fz_loop_arg(fz_case *c, char *text, size_t len) {
  int index;
  return fz_loop_arg_at(c, text, len, &index);
}

ts_stage *fz_stage_arg(fz_case *c, char *text, size_t len) {
  if (c->nstages == 0 || (c->hostile && fz_chance(c, 5))) {
    snprintf(text, len, "NULL");
    return NULL;
  }
  int i = (int)pick(c->src, (uint32_t)c->nstages);
  snprintf(text, len, "S[%d]", i);
  return c->stages[i];
}

/* The slot a returned loop goes to, reusing the last one when full. */
int fz_new_loop_slot(fz_case *c) {
  return c->nloops < MAX_LOOPS ? c->nloops++ : MAX_LOOPS - 1;
}

int fz_new_stage_slot(fz_case *c) {
  return c->nstages < MAX_STAGES ? c->nstages++ : MAX_STAGES - 1;
}
