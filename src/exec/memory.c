/*
 * How much memory this machine has available, for refusing a check that
 * cannot fit before anything is allocated: malloc on Linux promises
 * memory it may not have, and a process whose pages do not fit is killed
 * later without a word.  Physical memory is not the answer on a machine
 * already in use, nor in a container whose cgroup holds less.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tessel/exec.h"

/* A "Key: N kB" line of /proc/meminfo in bytes; 0 when absent. */
static double meminfo(const char *key) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f)
    return 0;
  char line[256];
  double bytes = 0;
  size_t n = strlen(key);
  while (fgets(line, sizeof(line), f)) {
    unsigned long long kb;
    if (strncmp(line, key, n) == 0 && line[n] == ':' &&
        sscanf(line + n + 1, "%llu", &kb) == 1) {
      bytes = (double)kb * 1024;
      break;
    }
  }
  fclose(f);
  return bytes;
}

/* One number from a file of the cgroup v2 at /sys/fs/cgroup (a container
 * sees its own there; elsewhere it is the root, without a limit); 0 when
 * absent or "max". */
static double cgroup_value(const char *file) {
  char path[128];
  snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", file);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  unsigned long long v = 0;
  bool ok = fscanf(f, "%llu", &v) == 1;
  fclose(f);
  return ok ? (double)v : 0;
}

static double physical(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? (double)pages * (double)size : 0;
}

double ts_memory_available(void) {
  double have = meminfo("MemAvailable");
  if (have == 0)
    have = physical();
  double limit = cgroup_value("memory.max");
  if (limit > 0) {
    double left = limit - cgroup_value("memory.current");
    left = left > 0 ? left : 0;
    have = have == 0 || left < have ? left : have;
  }
  return have;
}
