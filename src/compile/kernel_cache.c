/*
 * The kernel cache on disk (see kernel_cache.h).  An entry file is
 *
 *   "TSKC0001"  key_len  name_len  log_len  cubin_len  checksum   (u64 each)
 *   key  name  log  cubin
 *
 * where checksum is FNV-1a over everything after the header.
 */
#include "kernel_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[8] = {'T', 'S', 'K', 'C', '0', '0', '0', '1'};
enum { NFIELDS = 5, HEADER = 8 + NFIELDS * 8 };
static const uint64_t max_entry = (uint64_t)256 << 20;

uint64_t kcache_fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}


/* ---- Where ------------------------------------------------------------------ */

/* The cache directory, or false when the cache is off or has no home. */
bool kcache_dir(char *out, size_t len) {
  const char *off = getenv("TESSEL_NO_CACHE");
  if (off && *off && strcmp(off, "0") != 0)
    return false;
  const char *dir = getenv("TESSEL_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (dir && *dir)
    n = snprintf(out, len, "%s", dir);
  else if (xdg && *xdg == '/')
    n = snprintf(out, len, "%s/tessel", xdg);
  else if (home && *home)
    n = snprintf(out, len, "%s/.cache/tessel", home);
  else
    return false;
  return n > 0 && (size_t)n < len;
}

/* The file of key's entry in dir. */
static bool entry_path(const char *dir, const char *key, char *out, size_t len) {
  int n = snprintf(out, len, "%s/%016llx.cubin", dir,
                   (unsigned long long)kcache_fnv1a(KCACHE_FNV_SEED, key,
                                                    strlen(key)));
  return n > 0 && (size_t)n < len;
}

/* mkdir -p, private to the user. */
bool kcache_make_dirs(const char *path) {
  char buf[4096];
  int n = snprintf(buf, sizeof(buf), "%s", path);
  if (n <= 0 || (size_t)n >= sizeof(buf))
    return false;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
      return false;
    *p = '/';
  }
  return mkdir(buf, 0700) == 0 || errno == EEXIST;
}

/* ---- Reading ------------------------------------------------------------------ */

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static unsigned char *read_file(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  struct stat st;
  unsigned char *data = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= HEADER &&
      (uint64_t)st.st_size <= max_entry &&
      (data = malloc((size_t)st.st_size))) {
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t r = read(fd, data + got, (size_t)st.st_size - got);
      if (r <= 0)
        break;
      got += (size_t)r;
    }
    if (got != (size_t)st.st_size) {
      free(data);
      data = NULL;
    }
    *size = got;
  }
  close(fd);
  return data;
}

static char *dup_text(const unsigned char *p, uint64_t n) {
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, p, n);
    s[n] = 0;
  }
  return s;
}

/* The fields of a whole, uncorrupted entry for exactly this key. */
static bool parse_entry(const unsigned char *data, size_t size, const char *key,
                        uint64_t len[NFIELDS]) {
  if (memcmp(data, magic, 8) != 0)
    return false;
  uint64_t total = HEADER;
  for (int i = 0; i < NFIELDS; i++)
    len[i] = get_u64(data + 8 + 8 * i);
  for (int i = 0; i < 4; i++) {
    if (len[i] > max_entry)
      return false;
    total += len[i];
  }
  return total == size && len[3] > 0 &&
         kcache_fnv1a(KCACHE_FNV_SEED, data + HEADER, size - HEADER) == len[4] &&
         len[0] == strlen(key) && memcmp(data + HEADER, key, len[0]) == 0;
}

bool kcache_load(ts_kernel *k, const char *key) {
  char dir[3072], path[4096];
  size_t size = 0;
  unsigned char *data;
  if (!kcache_dir(dir, sizeof(dir)) ||
      !entry_path(dir, key, path, sizeof(path)) ||
      !(data = read_file(path, &size)))
    return false;
  uint64_t len[NFIELDS];
  bool ok = parse_entry(data, size, key, len);
  if (ok) {
    const unsigned char *p = data + HEADER + len[0];
    char *name = dup_text(p, len[1]);
    char *log = dup_text(p + len[1], len[2]);
    void *cubin = malloc(len[3]);
    ok = name && log && cubin && strcmp(name, k->name) == 0;
    if (ok) {
      memcpy(cubin, p + len[1] + len[2], len[3]);
      free(k->log);
      k->log = log;
      k->cubin = cubin;
      k->cubin_size = len[3];
    } else {
      free(log);
      free(cubin);
    }
    free(name);
  }
  free(data);
  return ok;
}

/* ---- Writing ------------------------------------------------------------------ */

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0)
      return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

void kcache_store(const ts_kernel *k, const char *key) {
  char dir[3072], path[4096], tmp[4096];
  if (!k->cubin || !k->name || !kcache_dir(dir, sizeof(dir)) ||
      !entry_path(dir, key, path, sizeof(path)) || !kcache_make_dirs(dir) ||
      snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
    return;
  const char *log = k->log ? k->log : "";
  const void *part[4] = {key, k->name, log, k->cubin};
  uint64_t len[NFIELDS] = {strlen(key), strlen(k->name), strlen(log),
                           k->cubin_size, KCACHE_FNV_SEED};
  for (int i = 0; i < 4; i++)
    len[4] = kcache_fnv1a(len[4], part[i], len[i]);
  unsigned char header[HEADER];
  memcpy(header, magic, 8);
  for (int i = 0; i < NFIELDS; i++)
    put_u64(header + 8 + 8 * i, len[i]);
  /* A private temporary file, renamed over the entry when whole. */
  int fd = mkstemp(tmp);
  if (fd < 0)
    return;
  bool ok = write_all(fd, header, HEADER);
  for (int i = 0; i < 4 && ok; i++)
    ok = write_all(fd, part[i], len[i]);
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0)
    unlink(tmp);
}
