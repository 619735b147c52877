/*
 * Schedule files: a user's C file of TS_SCHEDULE and TS_SPACE definitions,
 * compiled by the system C compiler into a shared object and loaded, so
 * that its schedules and spaces stand beside the built-ins on the command
 * line.
 *
 * The object is cached under the cache directory (schedules/<hash>.so),
 * keyed by the file's text, the compiler, the header's directory and
 * tessel's version, so a second run loads it without compiling.  Each
 * TS_SCHEDULE (TS_SPACE) has a constructor that calls ts_schedule_file_add
 * (ts_schedule_file_add_space) when the object is loaded; loads are
 * serialized, and the definitions added during one load are that file's.
 * The hash of the text alone names the file's version to tuning records.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel_cache.h"
#include "tessel.h"

extern char **environ;

enum { MAX_SCHEDULES = 64, MSG = 8192 };

struct ts_schedule_file {
  ts_status status;
  char errmsg[MSG];
  void *handle;
  const ts_builtin *defs[MAX_SCHEDULES];
  int n;
  const ts_space *spaces[MAX_SCHEDULES];
  int nspaces;
  int dropped; /* past MAX_SCHEDULES, schedules and spaces */
  char hash[17]; /* of the text: 16 hex digits */
};

/* The file being loaded; its schedules register here. */
static pthread_mutex_t loading_lock = PTHREAD_MUTEX_INITIALIZER;
static ts_schedule_file *loading;

void ts_schedule_file_add(const ts_builtin *def) {
  ts_schedule_file *f = loading;
  if (!f || !def)
    return; /* linked into a program: call the function itself */
  if (f->n == MAX_SCHEDULES)
    f->dropped++;
  else
    f->defs[f->n++] = def;
}

void ts_schedule_file_add_space(const ts_space *def) {
  ts_schedule_file *f = loading;
  if (!f || !def)
    return;
  if (f->nspaces == MAX_SCHEDULES)
    f->dropped++;
  else
    f->spaces[f->nspaces++] = def;
}

static ts_status file_fail(ts_schedule_file *f, ts_status st, const char *fmt,
                           ...) __attribute__((format(printf, 3, 4)));
static ts_status file_fail(ts_schedule_file *f, ts_status st, const char *fmt,
                           ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->errmsg, sizeof(f->errmsg), fmt, ap);
  va_end(ap);
  f->status = st;
  return st;
}

/* ---- Compiling ------------------------------------------------------------ */

static const char *compiler(void) {
  const char *cc = getenv("CC");
  return cc && *cc ? cc : "cc";
}

/* Where tessel.h is: $TESSEL_INCLUDE_DIR, the installed header's
 * directory, or the source tree's (a build that is not installed). */
static const char *include_dir(void) {
  const char *env = getenv("TESSEL_INCLUDE_DIR");
  if (env && *env)
    return env;
  struct stat st;
  if (stat(TESSEL_INSTALLED_INCLUDE_DIR "/tessel.h", &st) == 0)
    return TESSEL_INSTALLED_INCLUDE_DIR;
  return TESSEL_SOURCE_INCLUDE_DIR;
}

/* The whole file, malloc'd and NUL-terminated; NULL with errno set. */
static char *read_text(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  char *text = NULL;
  if (fseek(fp, 0, SEEK_END) == 0) {
    long size = ftell(fp);
    if (size >= 0 && fseek(fp, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)size + 1)) &&
        fread(text, 1, (size_t)size, fp) == (size_t)size) {
      text[size] = 0;
      *len = (size_t)size;
    } else {
      free(text);
      text = NULL;
    }
  }
  int saved = errno;
  fclose(fp);
  errno = saved;
  return text;
}

/* What identifies the object a compile of `text` makes. */
static uint64_t object_key(const char *text, size_t len) {
  uint64_t h = kcache_fnv1a(KCACHE_FNV_SEED, text, len);
  const char *parts[] = {compiler(), include_dir(), TESSEL_VERSION};
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
    h = kcache_fnv1a(h, parts[i], strlen(parts[i]) + 1);
  return h;
}

/* Runs the compiler on `src` into `out`, its diagnostics into `log`;
 * false with f's error (the diagnostics) when it fails. */
static bool compile(ts_schedule_file *f, const char *src, const char *out,
                    const char *log) {
  char inc[4200];
  snprintf(inc, sizeof(inc), "-I%s", include_dir());
  char *argv[] = {(char *)compiler(), "-std=c17", "-O2", "-fPIC", "-shared",
                  "-Wall", inc, "-o", (char *)out, (char *)src, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot run the C "
              "compiler '%s' ($CC, else cc): %s", argv[0], strerror(err));
    return false;
  }
  int ws;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
    return true;
  size_t n = 0;
  char *diag = read_text(log, &n);
  file_fail(f, TS_ERR_BAD_ARG, "ts_schedule_file_open: %s did not compile "
            "(%s -std=c17 -shared -fPIC %s):\n%s", src, argv[0], inc,
            diag ? diag : "(no diagnostics)");
  free(diag);
  return false;
}

/* A directory for the object: the cache's schedules/ (false *temp), else
 * a new temporary one (*temp). */
static bool object_dir(ts_schedule_file *f, char *dir, size_t len,
                       bool *temp) {
  size_t n;
  if (kcache_dir(dir, len) && (n = strlen(dir)) + 11 < len) {
    memcpy(dir + n, "/schedules", 11);
    if (kcache_make_dirs(dir)) {
      *temp = false;
      return true;
    }
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, len, "%s/tessel-schedule-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  *temp = true;
  if (mkdtemp(dir))
    return true;
  return file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot make a "
                   "temporary directory %s: %s", dir, strerror(errno)) ==
         TS_OK;
}

/* The object of `src`: the cached one, else compiled (to a temporary name
 * renamed into place, so that a concurrent run never loads half a file). */
static bool object_of(ts_schedule_file *f, const char *src, char *obj,
                      size_t len, bool *temp) {
  size_t n = 0;
  char *text = read_text(src, &n);
  if (!text)
    return file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot read "
                     "%s: %s", src, strerror(errno)) == TS_OK;
  uint64_t key = object_key(text, n);
  snprintf(f->hash, sizeof(f->hash), "%016llx",
           (unsigned long long)kcache_fnv1a(KCACHE_FNV_SEED, text, n));
  free(text);
  char dir[4096], tmp[4500], log[4500];
  if (!object_dir(f, dir, sizeof(dir), temp))
    return false;
  snprintf(obj, len, "%s/%016llx.so", dir, (unsigned long long)key);
  if (!*temp && access(obj, R_OK) == 0)
    return true;
  snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", obj, (long)getpid());
  snprintf(log, sizeof(log), "%s.%ld.log", obj, (long)getpid());
  bool ok = compile(f, src, tmp, log);
  unlink(log);
  if (ok && rename(tmp, obj) != 0)
    ok = file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot write %s: "
                   "%s", obj, strerror(errno)) == TS_OK;
  if (!ok)
    unlink(tmp);
  return ok;
}

/* ---- Loading --------------------------------------------------------------- */

/* A file's space named as a built-in space or schedule is would stand for
 * two things in reports and records. */
static void check_space_names(ts_schedule_file *f, const char *src) {
  for (int i = 0; i < f->nspaces; i++) {
    const char *name = f->spaces[i]->name;
    bool space = ts_space_find(name) != NULL;
    if (space || ts_builtin_find(name)) {
      file_fail(f, TS_ERR_BAD_ARG, "ts_schedule_file_open: %s defines a "
                "space '%s', the name of a built-in %s; rename it", src,
                name, space ? "space" : "schedule");
      return;
    }
  }
}

static void load(ts_schedule_file *f, const char *src, const char *obj) {
  pthread_mutex_lock(&loading_lock);
  loading = f;
  f->handle = dlopen(obj, RTLD_NOW | RTLD_LOCAL);
  loading = NULL;
  pthread_mutex_unlock(&loading_lock);
  if (!f->handle) {
    const char *why = dlerror();
    file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot load %s (made "
              "from %s): %s", obj, src, why ? why : "unknown error");
  } else if (f->n == 0 && f->nspaces == 0) {
    file_fail(f, TS_ERR_UNKNOWN_SCHEDULE, "ts_schedule_file_open: %s defines "
              "no schedule and no space; write TS_SCHEDULE(name, \"what it "
              "does\") { ... } or TS_SPACE(name, \"...\") { ... } (see "
              "tessel.h)", src);
  } else if (f->dropped) {
    file_fail(f, TS_ERR_BAD_ARG, "ts_schedule_file_open: %s defines %d "
              "schedules and spaces; at most %d of each are read from one "
              "file", src, f->n + f->nspaces + f->dropped, MAX_SCHEDULES);
  } else {
    check_space_names(f, src);
  }
}

ts_schedule_file *ts_schedule_file_open(const char *path) {
  ts_schedule_file *f = calloc(1, sizeof(*f));
  if (!f)
    return NULL;
  if (!path) {
    file_fail(f, TS_ERR_NULL_ARG, "ts_schedule_file_open: argument 1 'path' "
              "is NULL");
    return f;
  }
  char obj[4400];
  bool temp = false;
  if (!object_of(f, path, obj, sizeof(obj), &temp))
    return f;
  load(f, path, obj);
  if (temp) {
    unlink(obj); /* the loaded object stays mapped */
    char *slash = strrchr(obj, '/');
    if (slash) {
      *slash = 0;
      rmdir(obj);
    }
  }
  return f;
}

ts_status ts_schedule_file_status(const ts_schedule_file *f) {
  return f ? f->status : TS_ERR_NO_MEMORY;
}

const char *ts_schedule_file_errmsg(const ts_schedule_file *f) {
  return f ? f->errmsg : "ts_schedule_file_open: out of memory";
}

int ts_schedule_file_count(const ts_schedule_file *f) {
  return f && f->status == TS_OK ? f->n : 0;
}

const ts_builtin *ts_schedule_file_at(const ts_schedule_file *f, int i) {
  return f && f->status == TS_OK && i >= 0 && i < f->n ? f->defs[i] : NULL;
}

const ts_builtin *ts_schedule_file_find(const ts_schedule_file *f,
                                        const char *name) {
  for (int i = 0; name && i < ts_schedule_file_count(f); i++)
    if (strcmp(f->defs[i]->name, name) == 0)
      return f->defs[i];
  return NULL;
}

int ts_schedule_file_space_count(const ts_schedule_file *f) {
  return f && f->status == TS_OK ? f->nspaces : 0;
}

const ts_space *ts_schedule_file_space_at(const ts_schedule_file *f, int i) {
  return f && f->status == TS_OK && i >= 0 && i < f->nspaces ? f->spaces[i]
                                                             : NULL;
}

const ts_space *ts_schedule_file_space_find(const ts_schedule_file *f,
                                            const char *name) {
  for (int i = 0; name && i < ts_schedule_file_space_count(f); i++)
    if (strcmp(f->spaces[i]->name, name) == 0)
      return f->spaces[i];
  return NULL;
}

const char *ts_schedule_file_hash(const ts_schedule_file *f) {
  return f ? f->hash : "";
}

void ts_schedule_file_close(ts_schedule_file *f) {
  if (!f)
    return;
  if (f->handle)
    dlclose(f->handle);
  free(f);
}
