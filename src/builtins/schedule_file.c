/*
 * Schedule files: a user's C file of TS_SCHEDULE and TS_SPACE definitions,
 * compiled by the system C compiler into a shared object and loaded, so
 * that its schedules and spaces stand beside the built-ins on the command
 * line.
 *
 * The object is cached under the cache directory, so a second run loads
 * it without compiling: schedules/<key>-<deps>.so, where <key> hashes the
 * file's text, its path (real, and as the compiler is given it), the
 * compiler, the header's directory and tessel's version, and <deps> the
 * paths and contents of the headers the compile read (the compiler's -MMD
 * list, kept in schedules/<key>.deps), so an edited header compiles the
 * file again.  Each TS_SCHEDULE (TS_SPACE) has a constructor that calls
 * ts_schedule_file_add (ts_schedule_file_add_space) when the object is
 * loaded; loads are serialized, and the definitions added during one load
 * are that file's (an object loaded already is loaded again from a copy,
 * so that its constructors run).  The hash of the text and of the headers
 * it includes from outside
 * tessel's own directory names the file's version to tuning records.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "../compile/kernel_cache.h"
#include "builtins_impl.h"

extern char **environ;

enum { MAX_SCHEDULES = 64 };

struct ts_schedule_file {
  ts_status status;
  char *errmsg; /* whole: a compiler's diagnostics may run long; NULL: "" */
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
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  free(f->errmsg);
  if (n >= 0 && (f->errmsg = malloc((size_t)n + 1))) {
    va_start(ap, fmt);
    vsnprintf(f->errmsg, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
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

const char *schedule_file_include_flag(char *buf, size_t len) {
  snprintf(buf, len, "-I%s", include_dir());
  return buf;
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

/* What identifies the object a compile of `text` makes, less the headers
 * it reads: the file's real path (its "..." includes are found beside it,
 * and two files of one text are two objects, each loaded with its own
 * constructors) and the path the compiler is given (what its __FILE__
 * and diagnostics say). */
static uint64_t object_key(const char *text, size_t len, const char *src,
                           const char *src_real) {
  uint64_t h = kcache_fnv1a(KCACHE_FNV_SEED, text, len);
  const char *parts[] = {src_real, src, compiler(), include_dir(),
                         TESSEL_VERSION};
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
    h = kcache_fnv1a(h, parts[i], strlen(parts[i]) + 1);
  return h;
}

/* Whether the text has an #include line naming tessel.h. */
static bool includes_tessel(const char *text) {
  for (const char *line = text; line; line = strchr(line, '\n')) {
    line += *line == '\n';
    const char *p = line + strspn(line, " \t");
    if (*p++ != '#')
      continue;
    p += strspn(p, " \t");
    size_t n = strcspn(p, "\n");
    if (strncmp(p, "include", 7) == 0 &&
        memmem(p, n, "tessel.h", 8) != NULL)
      return true;
  }
  return false;
}

/* A line after the diagnostics when they are about tessel's names (ts_...,
 * TS_...) and the file does not include the header that declares them:
 * the compiler says what is undeclared, not what to add.  "" otherwise. */
static const char *include_hint(const char *src, const char *diag, char *buf,
                                size_t len) {
  size_t n;
  char *text = read_text(src, &n);
  bool lacks = text && !includes_tessel(text) && diag &&
               (strstr(diag, "ts_") || strstr(diag, "TS_"));
  free(text);
  if (!lacks)
    return "";
  snprintf(buf, len, "\nhint: %s does not include <tessel.h>; add "
           "`#include <tessel.h>` at its top", src);
  return buf;
}

/* Runs the compiler on `src` into `out`, the headers it reads into `deps`
 * (make's syntax), its diagnostics into `log`; false with f's error (the
 * diagnostics) when it fails. */
static bool compile(ts_schedule_file *f, const char *src, const char *out,
                    const char *deps, const char *log) {
  char inc[4200];
  schedule_file_include_flag(inc, sizeof(inc));
  char *argv[] = {(char *)compiler(), "-std=c17", "-O2", "-fPIC", "-shared",
                  "-Wall", inc, "-MMD", "-MF", (char *)deps, "-o", (char *)out,
                  (char *)src, NULL};
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
  char *diag = read_text(log, &n), hint[4400];
  if (diag && n && diag[n - 1] == '\n')
    diag[n - 1] = 0; /* the hint, or the command, ends the line */
  file_fail(f, TS_ERR_BAD_ARG, "ts_schedule_file_open: %s did not compile "
            "(%s -std=c17 -shared -fPIC %s):\n%s%s", src, argv[0], inc,
            diag ? diag : "(no diagnostics)",
            include_hint(src, diag, hint, sizeof(hint)));
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

/* ---- The headers a file includes ------------------------------------------ */

/* The files a compile read besides the source: absolute paths, malloc'd. */
typedef struct {
  char **path;
  int n;
} dep_list;

static void free_deps(dep_list *d) {
  for (int i = 0; i < d->n; i++)
    free(d->path[i]);
  free(d->path);
  *d = (dep_list){0};
}

/* Adds the file at `path` (as the compiler or a manifest wrote it) unless
 * it is the source; false when out of memory or it is gone. */
static bool add_dep(dep_list *d, const char *path, const char *src_real) {
  char real[PATH_MAX];
  if (!realpath(path, real))
    return false;
  if (strcmp(real, src_real) == 0)
    return true;
  char **grown = realloc(d->path, sizeof(*grown) * (size_t)(d->n + 1));
  if (!grown)
    return false;
  d->path = grown;
  return (d->path[d->n] = strdup(real)) && ++d->n;
}

/* The next word of a make rule at *p ("\ " a space, "$$" a '$', a
 * backslash-newline a blank) into word; false at the end. */
static bool make_word(const char **p, char *word, size_t len) {
  const char *q = *p;
  while (*q == ' ' || *q == '\t' || *q == '\n' ||
         (q[0] == '\\' && q[1] == '\n'))
    q += *q == '\\' ? 2 : 1;
  size_t n = 0;
  for (; *q && *q != ' ' && *q != '\t' && *q != '\n'; q++) {
    if ((q[0] == '\\' && (q[1] == ' ' || q[1] == '#')) ||
        (q[0] == '$' && q[1] == '$'))
      q++;
    else if (q[0] == '\\' && q[1] == '\n')
      break;
    if (n + 1 < len)
      word[n++] = *q;
  }
  word[n] = 0;
  *p = q;
  return n > 0;
}

/* The prerequisites of the one rule a -MMD file holds; false when it
 * cannot be read. */
static bool read_depfile(const char *path, const char *src_real,
                         dep_list *d) {
  size_t n;
  char *text = read_text(path, &n), word[PATH_MAX];
  bool ok = text != NULL;
  const char *p = text;
  bool target = true;
  while (ok && make_word(&p, word, sizeof(word))) {
    size_t w = strlen(word);
    if (target) { /* "obj.tmp:" or "obj.tmp" ":" */
      target = word[w - 1] != ':';
      continue;
    }
    ok = add_dep(d, word, src_real);
  }
  free(text);
  return ok;
}

/* The manifest: the dependencies of the last compile, a path a line;
 * false when absent or one is gone. */
static bool read_manifest(const char *path, const char *src_real,
                          dep_list *d) {
  size_t n;
  char *text = read_text(path, &n);
  bool ok = text != NULL;
  for (char *line = text, *end; ok && line && *line; line = end + 1) {
    if (!(end = strchr(line, '\n')))
      break;
    *end = 0;
    ok = add_dep(d, line, src_real);
  }
  free(text);
  if (!ok)
    free_deps(d);
  return ok;
}

/* Written under a temporary name and renamed into place. */
static void write_manifest(const char *path, const dep_list *d) {
  char tmp[4600];
  snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
  FILE *fp = fopen(tmp, "w");
  if (!fp)
    return; /* the next run compiles again: slower, not wrong */
  for (int i = 0; i < d->n; i++)
    fprintf(fp, "%s\n", d->path[i]);
  if (fclose(fp) != 0 || rename(tmp, path) != 0)
    unlink(tmp);
}

/* Whether path lies under dir (both absolute). */
static bool under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* The hash of the dependencies' paths and contents (*objects), and the
 * file's version (*version, which starts as the text's) continued with the
 * contents of those outside tessel's include directory; false when one
 * cannot be read. */
static bool hash_deps(const dep_list *d, uint64_t *objects,
                      uint64_t *version) {
  char inc[PATH_MAX];
  bool has_inc = realpath(include_dir(), inc) != NULL;
  uint64_t h = KCACHE_FNV_SEED;
  for (int i = 0; i < d->n; i++) {
    size_t n;
    char *text = read_text(d->path[i], &n);
    if (!text)
      return false;
    h = kcache_fnv1a(h, d->path[i], strlen(d->path[i]) + 1);
    h = kcache_fnv1a(h, text, n);
    if (!has_inc || !under(d->path[i], inc))
      *version = kcache_fnv1a(*version, text, n);
    free(text);
  }
  *objects = h;
  return true;
}

/* ---- The object ----------------------------------------------------------------- */

/* The object the manifest's headers, as they are now, select, if it was
 * compiled; with f's hash. */
static bool cached_object(ts_schedule_file *f, const char *stem,
                          const char *src_real, uint64_t version, char *obj,
                          size_t len) {
  char manifest[4500];
  snprintf(manifest, sizeof(manifest), "%s.deps", stem);
  dep_list d = {0};
  uint64_t objects;
  bool ok = read_manifest(manifest, src_real, &d) &&
            hash_deps(&d, &objects, &version);
  free_deps(&d);
  if (!ok)
    return false;
  snprintf(obj, len, "%s-%016llx.so", stem, (unsigned long long)objects);
  if (access(obj, R_OK) != 0)
    return false;
  snprintf(f->hash, sizeof(f->hash), "%016llx", (unsigned long long)version);
  return true;
}

/* Compiles src to the object its headers select (to a temporary name
 * renamed into place, so that a concurrent run never loads half a file),
 * and records them in the manifest (when cached); with f's hash. */
static bool compile_object(ts_schedule_file *f, const char *src,
                           const char *stem, const char *src_real,
                           uint64_t version, bool temp, char *obj,
                           size_t len) {
  char tmp[4500], deps[4500], log[4500], manifest[4500];
  snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", stem, (long)getpid());
  snprintf(deps, sizeof(deps), "%s.%ld.d", stem, (long)getpid());
  snprintf(log, sizeof(log), "%s.%ld.log", stem, (long)getpid());
  bool ok = compile(f, src, tmp, deps, log);
  unlink(log);
  dep_list d = {0};
  uint64_t objects = 0;
  if (ok && !(read_depfile(deps, src_real, &d) &&
              hash_deps(&d, &objects, &version)))
    ok = file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot read the "
                   "headers %s includes (as the compiler listed them in "
                   "%s)", src, deps) == TS_OK;
  unlink(deps);
  snprintf(obj, len, "%s-%016llx.so", stem, (unsigned long long)objects);
  if (ok && rename(tmp, obj) != 0)
    ok = file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot write %s: "
                   "%s", obj, strerror(errno)) == TS_OK;
  if (ok && !temp) {
    snprintf(manifest, sizeof(manifest), "%s.deps", stem);
    write_manifest(manifest, &d);
  }
  if (ok)
    snprintf(f->hash, sizeof(f->hash), "%016llx",
             (unsigned long long)version);
  else
    unlink(tmp);
  free_deps(&d);
  return ok;
}

/* The object of `src`: the cached one whose headers are as they are now,
 * else compiled. */
static bool object_of(ts_schedule_file *f, const char *src, char *obj,
                      size_t len, bool *temp) {
  size_t n = 0;
  char src_real[PATH_MAX];
  char *text = realpath(src, src_real) ? read_text(src, &n) : NULL;
  if (!text)
    return file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot read "
                     "%s: %s", src, strerror(errno)) == TS_OK;
  uint64_t key = object_key(text, n, src, src_real);
  uint64_t version = kcache_fnv1a(KCACHE_FNV_SEED, text, n);
  free(text);
  char dir[4096], stem[4200];
  if (!object_dir(f, dir, sizeof(dir), temp))
    return false;
  snprintf(stem, sizeof(stem), "%s/%016llx", dir, (unsigned long long)key);
  if (!*temp && cached_object(f, stem, src_real, version, obj, len))
    return true;
  return compile_object(f, src, stem, src_real, version, *temp, obj, len);
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

/* Copies the file at `from` to the new file `to_fd` (closed); false with
 * errno set. */
static bool copy_to(const char *from, int to_fd) {
  int in = open(from, O_RDONLY);
  char buf[1 << 16];
  ssize_t n = in < 0 ? -1 : 0;
  while (in >= 0 && (n = read(in, buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 || write(to_fd, buf, (size_t)n) != n)
      break;
  }
  int saved = errno;
  if (in >= 0)
    close(in);
  bool ok = n == 0 && close(to_fd) == 0;
  if (n != 0)
    close(to_fd);
  errno = saved;
  return ok;
}

/* dlopen of an object this process has loaded already (the same file
 * opened twice) hands back its handle without running its constructors
 * again, and the file would define nothing; so such an object is loaded
 * from a copy, another object to the loader.  NULL with f's error. */
static void *open_object(ts_schedule_file *f, const char *src,
                         const char *obj) {
  void *loaded = dlopen(obj, RTLD_NOW | RTLD_NOLOAD);
  const char *path = obj;
  char copy[4500];
  if (loaded) {
    dlclose(loaded);
    snprintf(copy, sizeof(copy), "%s.%ld.XXXXXX", obj, (long)getpid());
    int fd = mkstemp(copy);
    if (fd < 0 || !copy_to(obj, fd)) {
      file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot copy %s (made "
                "from %s, and loaded already) to load it again: %s", obj,
                src, strerror(errno));
      if (fd >= 0)
        unlink(copy);
      return NULL;
    }
    path = copy;
  }
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (path != obj)
    unlink(copy); /* the loaded copy stays mapped */
  if (!handle) {
    const char *why = dlerror();
    file_fail(f, TS_ERR_IO, "ts_schedule_file_open: cannot load %s (made "
              "from %s): %s", obj, src, why ? why : "unknown error");
  }
  return handle;
}

static void load(ts_schedule_file *f, const char *src, const char *obj) {
  pthread_mutex_lock(&loading_lock);
  loading = f;
  f->handle = open_object(f, src, obj);
  loading = NULL;
  pthread_mutex_unlock(&loading_lock);
  if (!f->handle)
    return; /* open_object said why */
  if (f->n == 0 && f->nspaces == 0) {
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
  return !f ? "ts_schedule_file_open: out of memory"
         : f->errmsg ? f->errmsg
         : f->status == TS_OK ? ""
                              : "ts_schedule_file_open: out of memory";
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
  free(f->errmsg);
  free(f);
}
