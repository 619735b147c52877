/*
 * The cost of one warp-wide memory request, as the L1 of an sm_80 or sm_90
 * multiprocessor serves it and Nsight Compute counts it:
 *
 *   global: the 32-byte sectors that the active lanes' bytes fall in
 *           (l1tex__t_sectors_pipe_lsu_mem_global_op_ld per request);
 *   shared: wavefronts.  32 banks of 4 bytes; the lanes are served in
 *           phases (the whole warp for accesses of 4 bytes or less, halves
 *           for 8, quarters for 16), and a phase takes as many wavefronts
 *           as the most distinct 4-byte words any one bank holds: lanes
 *           reading the same word share it (a broadcast), different words
 *           in one bank are served one after another (a conflict).
 *
 * The fewest sectors are the requested distinct bytes packed into aligned
 * sectors; the fewest wavefronts one a phase that has an active lane.
 */
#include <stdlib.h>
#include <string.h>

#include "explain_impl.h"

enum { SECTOR = 32, BANKS = 32, WORD = 4, MAX_WIDTH = 16 };

static int compare_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sorts v[0..n) and returns how many distinct values it holds. */
static int distinct(int64_t *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), compare_i64);
  int d = 0;
  for (int i = 0; i < n; i++)
    d += i == 0 || v[i] != v[i - 1];
  return d;
}

/* Active lanes, alignment and the distance between neighbouring lanes. */
static void lanes_of(const warp_req *r, req_cost *c) {
  memset(c, 0, sizeof(*c));
  int64_t prev = 0;
  int prev_lane = -1;
  c->uniform_stride = true;
  for (int l = 0; l < WARP; l++) {
    if (!r->active[l])
      continue;
    c->active++;
    c->misaligned |= r->width > 1 && r->addr[l] % r->width != 0;
    if (prev_lane >= 0) {
      int64_t step = (r->addr[l] - prev) / (l - prev_lane);
      if (c->active == 2)
        c->stride = step;
      else if (step != c->stride || (r->addr[l] - prev) % (l - prev_lane))
        c->uniform_stride = false;
    }
    prev = r->addr[l];
    prev_lane = l;
  }
}

void cost_global(const warp_req *r, req_cost *c) {
  lanes_of(r, c);
  int64_t sectors[WARP * 2], bytes[WARP * MAX_WIDTH];
  int ns = 0, nb = 0;
  for (int l = 0; l < WARP; l++) {
    if (!r->active[l])
      continue;
    int64_t first = r->addr[l], last = first + r->width - 1;
    for (int64_t s = first / SECTOR; s <= last / SECTOR && ns < WARP * 2; s++)
      sectors[ns++] = s;
    for (int64_t b = first; b <= last && nb < WARP * MAX_WIDTH; b++)
      bytes[nb++] = b;
  }
  c->sectors = distinct(sectors, ns);
  int unique = distinct(bytes, nb);
  c->ideal_sectors = (unique + SECTOR - 1) / SECTOR;
}

/* Wavefronts of lanes [from, to): the most distinct words in one bank. */
static int phase_wavefronts(const warp_req *r, int from, int to, int width) {
  int64_t words[WARP * MAX_WIDTH / WORD];
  int n = 0;
  for (int l = from; l < to; l++) {
    if (!r->active[l])
      continue;
    int64_t first = r->addr[l] / WORD, last = (r->addr[l] + width - 1) / WORD;
    for (int64_t w = first; w <= last && n < WARP * MAX_WIDTH / WORD; w++)
      words[n++] = w;
  }
  if (n == 0)
    return 0;
  distinct(words, n);
  int per_bank[BANKS] = {0}, most = 0;
  for (int i = 0; i < n; i++) {
    if (i && words[i] == words[i - 1])
      continue;
    int bank = (int)(((words[i] % BANKS) + BANKS) % BANKS);
    if (++per_bank[bank] > most)
      most = per_bank[bank];
  }
  return most;
}

/* Wavefronts of phases of `lanes` lanes each, and the fewest. */
static void phases(const warp_req *r, int lanes, int width, req_cost *c) {
  for (int from = 0; from < WARP; from += lanes) {
    int w = phase_wavefronts(r, from, from + lanes, width);
    c->wavefronts += w;
    c->ideal_wavefronts += w > 0;
  }
}

void cost_shared(const warp_req *r, req_cost *c) {
  lanes_of(r, c);
  int lanes = r->width <= 4 ? WARP : r->width == 8 ? WARP / 2 : WARP / 4;
  phases(r, lanes, r->width, c);
}

void cost_ldmatrix(const warp_req *r, int matrices, req_cost *c) {
  lanes_of(r, c);
  warp_req rows = *r;
  for (int l = 8 * matrices; l < WARP; l++)
    rows.active[l] = false;
  phases(&rows, 8, 16, c);
}
