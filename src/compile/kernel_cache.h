/*
 * The kernel cache: cubins on disk, so that a schedule compiled once loads
 * at once in later runs.  An entry is keyed by the whole compile (tessel's
 * version, NVRTC's version and library file, the architecture, NVRTC's
 * options with the headers' directory, and the source) and holds the
 * key itself, so a hash collision cannot return another kernel; a checksum
 * covers the rest.  Entries are written to a temporary file and renamed
 * into place, so readers see a whole entry or none, also while other
 * processes write the same one.  Anything wrong (missing or read-only
 * directory, truncated or corrupt entry) makes the cache miss, never fail.
 *
 * The directory is $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else
 * ~/.cache/tessel; TESSEL_NO_CACHE=1 turns the cache off.
 */
#ifndef TS_KERNEL_CACHE_H
#define TS_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"

/* The cache directory, or false when the cache is off or has no home. */
bool kcache_dir(char *out, size_t len);
/* mkdir -p, private to the user. */
bool kcache_make_dirs(const char *path);
/* FNV-1a of n bytes, continuing from h (start from KCACHE_FNV_SEED). */
#define KCACHE_FNV_SEED 0xcbf29ce484222325ull
uint64_t kcache_fnv1a(uint64_t h, const void *data, size_t n);

/* Fills k's log and cubin from a valid entry for this key and k's entry
 * point name. */
bool kcache_load(ts_kernel *k, const char *key);

/* Stores k (compiled from key); silently does nothing on any failure. */
void kcache_store(const ts_kernel *k, const char *key);

#endif
