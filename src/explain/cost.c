/*
 * The cost of one warp-wide memory request, as the L1 of an sm_80 or sm_90
 * multiprocessor serves it and Nsight Compute counts it:
 *
 *   global: the 32-byte sectors that the active lanes' bytes fall in
 *           (l1tex__t_sectors_pipe_lsu_mem_global_op_ld per request);
 *   shared: wavefronts.  32 banks of 4 bytes; lanes reading the same
 *           word share it (a broadcast), different words in one bank are
 *           served one after another (a conflict).  The warp is one group
 *           for accesses of 4 and 8 bytes, its halves two for 16; a group
 *           whose words fall in distinct banks takes one wavefront, else
 *           it is split in halves, down to the narrowest phase the width
 *           allows (the warp for 4 bytes, 16 lanes for 8, 8 for 16), and a
 *           phase with conflicts takes as many wavefronts as the most
 *           distinct words any one bank holds.  Nsight Compute's counts on
 *           an H200 follow this (docs/explain.md): a 16-byte load of 8
 *           distinct rows by a warp takes 2 wavefronts, not 4.
 *
 * The fewest sectors are the requested distinct bytes packed into aligned
 * sectors; the fewest wavefronts, one a phase the hardware served (a
 * conflict is a phase's wavefront beyond its first, as Nsight Compute's
 * l1tex__data_bank_conflicts_pipe_lsu_mem_shared counts them).
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

/* The distinct words lanes [from, to) touch, sorted; their count. */
static int words_of(const warp_req *r, int from, int to, int width,
                    int64_t *words) {
  int n = 0;
  for (int l = from; l < to; l++) {
    if (!r->active[l])
      continue;
    int64_t first = r->addr[l] / WORD, last = (r->addr[l] + width - 1) / WORD;
    for (int64_t w = first; w <= last && n < WARP * MAX_WIDTH / WORD; w++)
      words[n++] = w;
  }
  int d = distinct(words, n);
  /* distinct() sorted them; keep each once at the front. */
  for (int i = 1, k = 1; i < n; i++)
    if (words[i] != words[k - 1])
      words[k++] = words[i];
  return d;
}

/* The most distinct words of lanes [from, to) in any one bank: the
 * wavefronts of one phase; 0 when no lane of it is active. */
static int phase_wavefronts(const warp_req *r, int from, int to, int width) {
  int64_t words[WARP * MAX_WIDTH / WORD];
  int n = words_of(r, from, to, width, words);
  int per_bank[BANKS] = {0}, most = 0;
  for (int i = 0; i < n; i++) {
    int bank = (int)(((words[i] % BANKS) + BANKS) % BANKS);
    if (++per_bank[bank] > most)
      most = per_bank[bank];
  }
  return most;
}

/* Each narrowest phase of lanes [from, from + lanes) reads at most 32
 * distinct bytes (two 16-byte chunks, four 8-byte words). */
static bool phases_narrow(const warp_req *r, int from, int lanes,
                          int narrowest) {
  int64_t words[WARP * MAX_WIDTH / WORD];
  for (int p = from; p < from + lanes; p += narrowest)
    if (words_of(r, p, p + narrowest, r->width, words) > 32 / WORD)
      return false;
  return true;
}

/* Lanes [from, from + lanes) as the hardware serves them: in one
 * wavefront where no bank holds two of their words and each of their
 * narrowest phases reads no more than 32 distinct bytes; else, for
 * accesses wider than 4 bytes, as two halves each served the same way,
 * down to the narrowest phase (8 lanes for 16 bytes, 16 for 8, the warp
 * for 4); a phase with conflicts takes a wavefront per word of its
 * busiest bank.  (The 32 bytes are what an H200's counters show: a half
 * warp whose quarters each read two float4s, 4 lanes a float4, takes one
 * wavefront; one whose quarters each read four takes two, conflict-free.) */
static void serve(const warp_req *r, int from, int lanes, int narrowest,
                  req_cost *c) {
  int w = phase_wavefronts(r, from, from + lanes, r->width);
  if (w == 0)
    return;
  if (w == 1 && lanes > narrowest && !phases_narrow(r, from, lanes, narrowest))
    w = 2; /* served in halves, conflict-free: go on splitting */
  if (w == 1 || lanes <= narrowest) {
    c->wavefronts += w;
    c->ideal_wavefronts += 1;
    return;
  }
  serve(r, from, lanes / 2, narrowest, c);
  serve(r, from + lanes / 2, lanes / 2, narrowest, c);
}

/* The groups of lanes served apart whatever their addresses: the warp for
 * 4 and 8 bytes, halves for 16. */
static void groups(const warp_req *r, int group, int narrowest, req_cost *c) {
  for (int from = 0; from < WARP; from += group)
    serve(r, from, group, narrowest, c);
}

void cost_shared(const warp_req *r, req_cost *c) {
  lanes_of(r, c);
  if (r->width <= 4)
    groups(r, WARP, WARP, c);
  else if (r->width <= 8)
    groups(r, WARP, WARP / 2, c);
  else
    groups(r, WARP / 2, WARP / 4, c);
}

void cost_ldmatrix(const warp_req *r, int matrices, req_cost *c) {
  lanes_of(r, c);
  warp_req rows = *r;
  for (int l = 8 * matrices; l < WARP; l++)
    rows.active[l] = false;
  for (int m = 0; m < matrices; m++) { /* a matrix's 8 rows a phase */
    int w = phase_wavefronts(&rows, 8 * m, 8 * m + 8, 16);
    c->wavefronts += w;
    c->ideal_wavefronts += w > 0;
  }
}
