/*
 * Finding a primitive's call in its source file, so that an error names
 * the call's column and shows its line underlined as a compiler does.
 *
 * The trace has the file and line of each call (__FILE__ and __LINE__,
 * which give no column).  Where libclang is installed it is loaded at run
 * time (dlopen, as the compile stage loads NVRTC; $TESSEL_LIBCLANG names
 * the library, or "off" for none), the file parsed as a schedule file is
 * compiled (-std=c17, tessel.h's directory), and the call expression of
 * the primitive whose source range holds the line gives the column and
 * the range to underline; gcc gives a call over several lines its first
 * line, clang its last, and either is in the range.  Without libclang
 * the line, and a few before it, are scanned for the primitive's name
 * followed by '(': the column of the name, the name underlined.
 */
#include "call_site.h"
#include "builtins_impl.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  SCAN_BACK = 8,      /* lines before the given one the scan looks at */
  NAME_MAX_LEN = 128, /* a primitive's name, "_at" included */
};

/* ---- libclang's C API, as much as is used (clang-c/Index.h) ---------------- */

typedef struct {
  const void *ptr_data[2];
  unsigned int_data;
} cx_location;
typedef struct {
  const void *ptr_data[2];
  unsigned begin_int_data, end_int_data;
} cx_range;
typedef struct {
  int kind;
  int xdata;
  const void *data[3];
} cx_cursor;
typedef struct {
  const void *data;
  unsigned private_flags;
} cx_string;

enum {
  CX_CURSOR_CALL_EXPR = 103, /* CXCursor_CallExpr */
  CX_VISIT_BREAK = 0,        /* CXChildVisit_Break */
  CX_VISIT_CONTINUE = 1,     /* CXChildVisit_Continue */
  CX_VISIT_RECURSE = 2,      /* CXChildVisit_Recurse */
  CX_KEEP_GOING = 0x200,     /* CXTranslationUnit_KeepGoing */
};

typedef int (*cx_visitor)(cx_cursor, cx_cursor, void *);

typedef struct {
  void *lib;
  void *(*create_index)(int, int);
  void (*dispose_index)(void *);
  void *(*parse)(void *, const char *, const char *const *, int, void *,
                 unsigned, unsigned);
  void (*dispose_unit)(void *);
  cx_cursor (*unit_cursor)(void *);
  unsigned (*visit_children)(cx_cursor, cx_visitor, void *);
  int (*cursor_kind)(cx_cursor);
  cx_string (*cursor_spelling)(cx_cursor);
  const char *(*c_string)(cx_string);
  void (*dispose_string)(cx_string);
  cx_location (*cursor_location)(cx_cursor);
  cx_range (*cursor_extent)(cx_cursor);
  cx_location (*range_start)(cx_range);
  cx_location (*range_end)(cx_range);
  void (*expansion_location)(cx_location, void **, unsigned *, unsigned *,
                             unsigned *);
  void *(*get_file)(void *, const char *);
} libclang;

/* The function `name` of the library into *fn; false when it lacks it. */
static bool resolve(void *lib, const char *name, void *fn) {
  void *p = dlsym(lib, name);
  memcpy(fn, &p, sizeof(p));
  return p != NULL;
}

static bool resolve_all(libclang *c) {
  void *l = c->lib;
  return resolve(l, "clang_createIndex", &c->create_index) &&
         resolve(l, "clang_disposeIndex", &c->dispose_index) &&
         resolve(l, "clang_parseTranslationUnit", &c->parse) &&
         resolve(l, "clang_disposeTranslationUnit", &c->dispose_unit) &&
         resolve(l, "clang_getTranslationUnitCursor", &c->unit_cursor) &&
         resolve(l, "clang_visitChildren", &c->visit_children) &&
         resolve(l, "clang_getCursorKind", &c->cursor_kind) &&
         resolve(l, "clang_getCursorSpelling", &c->cursor_spelling) &&
         resolve(l, "clang_getCString", &c->c_string) &&
         resolve(l, "clang_disposeString", &c->dispose_string) &&
         resolve(l, "clang_getCursorLocation", &c->cursor_location) &&
         resolve(l, "clang_getCursorExtent", &c->cursor_extent) &&
         resolve(l, "clang_getRangeStart", &c->range_start) &&
         resolve(l, "clang_getRangeEnd", &c->range_end) &&
         resolve(l, "clang_getExpansionLocation", &c->expansion_location) &&
         resolve(l, "clang_getFile", &c->get_file);
}

/* libclang loaded: $TESSEL_LIBCLANG's, else the loader's by the names
 * Debian and LLVM's own builds give it; false when off or none is found. */
static bool load_libclang(libclang *c) {
  *c = (libclang){0};
  const char *env = getenv("TESSEL_LIBCLANG");
  if (env && strcmp(env, "off") == 0)
    return false;
  static const char *const names[] = {
      "libclang.so.1", "libclang.so", "libclang-19.so.1", "libclang-18.so.1",
      "libclang-17.so.1", "libclang-16.so.1", "libclang-15.so.1",
      "libclang-14.so.1", "libclang-13.so.1", NULL};
  if (env && *env)
    c->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
  for (int i = 0; !c->lib && !(env && *env) && names[i]; i++)
    c->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (c->lib && resolve_all(c))
    return true;
  if (c->lib)
    dlclose(c->lib);
  c->lib = NULL;
  return false;
}

bool call_site_has_libclang(void) {
  libclang c;
  if (!load_libclang(&c))
    return false;
  dlclose(c.lib);
  return true;
}

/* ---- The call by libclang ------------------------------------------------- */

typedef struct {
  const libclang *c;
  void *file;                 /* the file's CXFile */
  const char *name, *name_at; /* ts_tma, ts_tma_at */
  unsigned line;
  bool found;
  unsigned first_line, first_col, last_line, last_col; /* last: one past */
} search;

/* Where a macro's expansion puts loc: the file, line and column of the
 * macro's use (ts_tma(s, a) is tessel.h's ts_tma_at(...) spelled there). */
static void *expansion(const libclang *c, cx_location loc, unsigned *line,
                       unsigned *col) {
  void *file;
  unsigned offset;
  c->expansion_location(loc, &file, line, col, &offset);
  return file;
}

/* The first call of the name whose range holds the line, outermost first;
 * what lies in other files (headers) is skipped. */
static int visit(cx_cursor cur, cx_cursor parent, void *data) {
  (void)parent;
  search *s = data;
  const libclang *c = s->c;
  unsigned l, col;
  if (expansion(c, c->cursor_location(cur), &l, &col) != s->file)
    return CX_VISIT_CONTINUE;
  if (c->cursor_kind(cur) != CX_CURSOR_CALL_EXPR)
    return CX_VISIT_RECURSE;
  cx_string spelling = c->cursor_spelling(cur);
  const char *callee = c->c_string(spelling);
  bool named = callee && (strcmp(callee, s->name) == 0 ||
                          strcmp(callee, s->name_at) == 0);
  c->dispose_string(spelling);
  if (!named)
    return CX_VISIT_RECURSE;
  cx_range r = c->cursor_extent(cur);
  unsigned l0, c0, l1, c1;
  expansion(c, c->range_start(r), &l0, &c0);
  expansion(c, c->range_end(r), &l1, &c1);
  if (l0 > s->line || l1 < s->line)
    return CX_VISIT_RECURSE;
  s->found = true;
  s->first_line = l0;
  s->first_col = c0;
  s->last_line = l1;
  s->last_col = c1;
  return CX_VISIT_BREAK;
}

static bool find_by_libclang(const char *file, int line, const char *name,
                             const char *name_at, call_site *out) {
  libclang c;
  if (!load_libclang(&c))
    return false;
  char inc[4200];
  schedule_file_include_flag(inc, sizeof(inc));
  const char *const args[] = {"-x", "c", "-std=c17", "-D_GNU_SOURCE", inc};
  void *index = c.create_index(0, 0);
  void *unit = index ? c.parse(index, file, args, 5, NULL, 0, CX_KEEP_GOING)
                     : NULL;
  search s = {.c = &c, .name = name, .name_at = name_at,
              .line = (unsigned)line};
  if (unit && (s.file = c.get_file(unit, file)))
    c.visit_children(c.unit_cursor(unit), visit, &s);
  if (unit)
    c.dispose_unit(unit);
  if (index)
    c.dispose_index(index);
  dlclose(c.lib);
  if (!s.found)
    return false;
  out->line = (int)s.first_line;
  out->first = (int)s.first_col;
  out->last = s.last_line == s.first_line ? (int)s.last_col - 1 : 0;
  out->whole = true;
  return true;
}

/* ---- The call by a scan of the text ----------------------------------------- */

/* Line `n` (1 first) of the file into text, without its newline. */
static bool read_line(FILE *fp, int n, char *text, size_t len) {
  rewind(fp);
  for (int at = 1; fgets(text, (int)len, fp); at++) {
    size_t k = strlen(text);
    bool whole = k > 0 && text[k - 1] == '\n';
    if (whole)
      text[--k] = 0;
    if (at == n)
      return true;
    while (!whole) { /* the rest of a line longer than text */
      int ch = fgetc(fp);
      if (ch == EOF || ch == '\n')
        break;
    }
  }
  return false;
}

static bool ident_char(char ch) {
  return isalnum((unsigned char)ch) || ch == '_';
}

/* The column of `name` called on the line (the name alone, then '('), or
 * 0. */
static int name_column(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
    const char *q = p + n;
    while (*q == ' ' || *q == '\t')
      q++;
    if ((p == text || !ident_char(p[-1])) && *q == '(')
      return (int)(p - text) + 1;
  }
  return 0;
}

static bool find_by_scan(FILE *fp, int line, const char *name,
                         call_site *out) {
  for (int l = line; l >= 1 && l >= line - SCAN_BACK; l--) {
    if (!read_line(fp, l, out->text, sizeof(out->text)))
      continue;
    int col = name_column(out->text, name);
    if (col) {
      out->line = l;
      out->first = col;
      out->last = col + (int)strlen(name) - 1;
      out->whole = false;
      return true;
    }
  }
  return false;
}

bool call_site_find(const char *file, int line, const char *name,
                    call_site *out) {
  *out = (call_site){0};
  char name_at[NAME_MAX_LEN];
  if (!file || line < 1 || !name ||
      snprintf(name_at, sizeof(name_at), "%s_at", name) >=
          (int)sizeof(name_at))
    return false;
  FILE *fp = fopen(file, "r");
  if (!fp)
    return false;
  bool found = find_by_libclang(file, line, name, name_at, out)
                   ? read_line(fp, out->line, out->text, sizeof(out->text))
                   : find_by_scan(fp, line, name, out);
  fclose(fp);
  if (!found)
    return false;
  /* libclang's columns may pass a line read_line cut: keep both on it */
  int len = (int)strlen(out->text);
  if (out->first < 1 || out->first > len + 1)
    out->first = out->first < 1 ? 1 : len + 1;
  if (out->last == 0 || out->last > len)
    out->last = len; /* a call past its line's end */
  return true;
}
