/*
 * The kernel cache: cubins on disk, so that a schedule compiled once loads
 * at once in later runs.  An entry is keyed by the whole compile (tessel's
 * version, the architecture, NVRTC's options and the source) and holds the
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

#include "kernel.h"

/* Fills k's log and cubin from a valid entry for this key and k's entry
 * point name. */
bool kcache_load(ts_kernel *k, const char *key);

/* Stores k (compiled from key); silently does nothing on any failure. */
void kcache_store(const ts_kernel *k, const char *key);

#endif
