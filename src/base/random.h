/*
 * Random test data: splitmix64, so that a seed gives the same matrices on
 * every machine.  Values are uniform in [-1, 1), never all zeros.
 */
#ifndef TS_RANDOM_H
#define TS_RANDOM_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t ts_random_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline void ts_fill_random(float *x, size_t n, uint64_t *state) {
  for (size_t i = 0; i < n; i++)
    x[i] = (float)((double)(ts_random_next(state) >> 40) / (double)(1 << 23)) -
           1.0f;
}

#endif
