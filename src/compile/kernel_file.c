/*
 * A compiled kernel as a file: everything ts_launch needs (the cubin, the
 * architecture, each entry point with its launch geometry and parameter
 * list, the tensor maps' encodings, the workspace, the definition), and
 * the CUDA C and NVRTC's log for a reader, so that a process that never
 * lowers or compiles runs it.  No NVRTC and no GPU here.
 *
 * The layout, every number little-endian as this machine's (a kernel
 * file travels with the GPU binaries it was built beside):
 *
 *   "TSKERNEL"  u32 format  text tessel-version  ... fields ...  u64 check
 *
 * a text being a u64 length and its bytes, the check the FNV-1a of every
 * byte before it.  The format number changes whenever a field does; a
 * file of another format is refused by name, never guessed at.
 */
#include "kernel.h"
#include "kernel_cache.h"
#include "../base/dtype.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char file_magic[8] = {'T', 'S', 'K', 'E', 'R', 'N', 'E', 'L'};
enum { FILE_FORMAT = 2 }; /* 2: extents chosen at launch */
/* No field of a sane kernel is near these; a file past them is corrupt. */
enum { MAX_ENTRIES = 64, MAX_PARAMS = 64 };
static const uint64_t max_blob = (uint64_t)1 << 30;

/* ---- Writing ------------------------------------------------------------- */

typedef struct writer {
  FILE *f;
  uint64_t hash;
  bool ok;
} writer;

static void put(writer *w, const void *p, size_t n) {
  if (!w->ok)
    return;
  w->hash = kcache_fnv1a(w->hash, p, n);
  w->ok = fwrite(p, 1, n, w->f) == n;
}

static void put_u32(writer *w, uint32_t v) { put(w, &v, sizeof(v)); }
static void put_i64(writer *w, int64_t v) { put(w, &v, sizeof(v)); }
static void put_f32(writer *w, float v) { put(w, &v, sizeof(v)); }

static void put_blob(writer *w, const void *p, size_t n) {
  put_i64(w, (int64_t)n);
  put(w, p, n);
}

static void put_text(writer *w, const char *s) {
  put_blob(w, s ? s : "", s ? strlen(s) : 0);
}

static void put_gemm(writer *w, const ts_gemm *d) {
  put_i64(w, d->m);
  put_i64(w, d->n);
  put_i64(w, d->k);
  put_u32(w, (uint32_t)d->layout);
  put_f32(w, d->alpha);
  put_f32(w, d->beta);
  put_u32(w, (uint32_t)d->a_type);
  put_u32(w, (uint32_t)d->b_type);
  put_u32(w, (uint32_t)d->c_type);
  put_u32(w, (uint32_t)d->acc_type);
  put_u32(w, (uint32_t)d->math);
  put_i64(w, d->lda);
  put_i64(w, d->ldb);
  put_i64(w, d->ldc);
  put_u32(w, d->runtime);
  put_i64(w, d->runtime_multiple);
  put_i64(w, d->runtime_ld_multiple);
}

static void put_formula(writer *w, const ts_formula *f) {
  put_u32(w, (uint32_t)f->n);
  for (int i = 0; i < f->n; i++) {
    put_u32(w, f->op[i]);
    put_i64(w, f->arg[i]);
  }
}

static void put_geometry(writer *w, const ts_launch_geometry *l) {
  for (int d = 0; d < 3; d++) {
    put_i64(w, l->grid[d]);
    put_i64(w, l->block[d]);
  }
  put_i64(w, l->dynamic_shared);
  put_u32(w, (uint32_t)l->persistent);
  put_u32(w, (uint32_t)l->cluster);
}

static void put_param(writer *w, const ts_param *p) {
  put_u32(w, (uint32_t)p->kind);
  put_u32(w, (uint32_t)p->buffer);
  put_i64(w, p->offset);
  put_u32(w, (uint32_t)p->dtype);
  put_u32(w, p->read_only);
  put_u32(w, (uint32_t)p->align);
  put_u32(w, (uint32_t)p->value);
  put_i64(w, p->dims[0]);
  put_i64(w, p->dims[1]);
  put_i64(w, p->row_bytes);
  put_i64(w, p->box[0]);
  put_i64(w, p->box[1]);
  put_u32(w, (uint32_t)p->swizzle);
  put_u32(w, (uint32_t)p->dim_from[0]);
  put_u32(w, (uint32_t)p->dim_from[1]);
  put_u32(w, (uint32_t)p->pitch_from);
}

static void put_ptxas(writer *w, const ts_ptxas_info *x) {
  const int v[] = {x->registers, x->shared_bytes, x->spill_store_bytes,
                   x->spill_load_bytes, x->stack_bytes, x->valid};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    put_u32(w, (uint32_t)v[i]);
}

static void put_kernel(writer *w, const ts_kernel *k) {
  put(w, file_magic, sizeof(file_magic));
  put_u32(w, FILE_FORMAT);
  put_text(w, TESSEL_VERSION);
  put_text(w, k->arch);
  put_text(w, k->name);
  put_text(w, k->label);
  put_gemm(w, &k->def);
  put_geometry(w, &k->launch);
  put_i64(w, k->workspace);
  put_u32(w, (uint32_t)k->min_blocks);
  put_u32(w, k->hand_written);
  put_u32(w, (uint32_t)k->main_entry);
  put_i64(w, (int64_t)k->source_hash);
  put_ptxas(w, &k->ptxas);
  put_u32(w, (uint32_t)k->nentries);
  for (int i = 0; i < k->nentries; i++) {
    const kernel_entry *e = &k->entries[i];
    put_text(w, e->name);
    put_geometry(w, &e->launch);
    for (int d = 0; d < 3; d++)
      put_formula(w, &e->grid_size[d]);
    put_u32(w, (uint32_t)e->nparams);
    for (int j = 0; j < e->nparams; j++)
      put_param(w, &e->params[j]);
  }
  put_blob(w, k->cubin, k->cubin_size);
  put_u32(w, (uint32_t)k->nimages);
  for (int i = 0; i < k->nimages; i++) {
    put_text(w, k->images[i].arch);
    put_blob(w, k->images[i].cubin, k->images[i].size);
  }
  put_text(w, k->source);
  put_text(w, k->log);
  uint64_t check = w->hash;
  put(w, &check, sizeof(check));
}

static ts_status save_failed(char *msg, size_t len, ts_status code,
                             const char *fmt, const char *a, const char *b) {
  if (msg && len)
    snprintf(msg, len, fmt, a, b);
  return code;
}

ts_status ts_kernel_save(const ts_kernel *k, const char *path, char *msg,
                         size_t msglen) {
  if (msg && msglen)
    msg[0] = 0;
  if (!k || !path)
    return save_failed(msg, msglen, TS_ERR_NULL_ARG, "ts_kernel_save: the "
                       "kernel or the path is NULL%s%s", "", "");
  if (k->status != TS_OK || !k->cubin)
    return save_failed(msg, msglen, TS_ERR_BAD_ARG, "ts_kernel_save: kernel "
                       "\"%s\" did not compile, so there is nothing to save: "
                       "%s", ts_kernel_name(k), k->errmsg);
  /* A temporary file renamed into place: a reader sees the old file or
   * the whole new one. */
  char tmp[4096];
  if (snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid()) >=
      (int)sizeof(tmp))
    return save_failed(msg, msglen, TS_ERR_IO, "ts_kernel_save: the path "
                       "is too long: %.200s%s", path, "");
  writer w = {.f = fopen(tmp, "wb"), .hash = KCACHE_FNV_SEED, .ok = true};
  if (!w.f)
    return save_failed(msg, msglen, TS_ERR_IO, "ts_kernel_save: cannot "
                       "write %.3000s: %s", path, strerror(errno));
  put_kernel(&w, k);
  bool closed = fclose(w.f) == 0;
  if (!w.ok || !closed || rename(tmp, path) != 0) {
    int err = errno;
    remove(tmp);
    return save_failed(msg, msglen, TS_ERR_IO, "ts_kernel_save: writing "
                       "%.3000s failed: %s", path, strerror(err));
  }
  return TS_OK;
}

/* ---- Reading ------------------------------------------------------------- */

typedef struct reader {
  const unsigned char *p, *end;
  bool ok; /* false once a read ran past the end */
} reader;

static bool get(reader *r, void *out, size_t n) {
  if (!r->ok || (size_t)(r->end - r->p) < n) {
    r->ok = false;
    memset(out, 0, n);
    return false;
  }
  memcpy(out, r->p, n);
  r->p += n;
  return true;
}

static uint32_t get_u32(reader *r) {
  uint32_t v;
  get(r, &v, sizeof(v));
  return v;
}

static int64_t get_i64(reader *r) {
  int64_t v;
  get(r, &v, sizeof(v));
  return v;
}

static float get_f32(reader *r) {
  float v;
  get(r, &v, sizeof(v));
  return v;
}

/* A malloc'd copy of the next blob, NUL-terminated (a text); NULL when the
 * file ends first (r->ok false) or memory runs out. */
static char *get_blob(reader *r, size_t *size) {
  int64_t n = get_i64(r);
  if (!r->ok || n < 0 || (uint64_t)n > max_blob || n > r->end - r->p) {
    r->ok = false;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (s) {
    memcpy(s, r->p, (size_t)n);
    s[n] = 0;
  }
  r->p += n;
  if (size)
    *size = (size_t)n;
  return s;
}

static void get_gemm(reader *r, ts_gemm *d) {
  d->m = get_i64(r);
  d->n = get_i64(r);
  d->k = get_i64(r);
  d->layout = (ts_layout)get_u32(r);
  d->alpha = get_f32(r);
  d->beta = get_f32(r);
  d->a_type = (ts_dtype)get_u32(r);
  d->b_type = (ts_dtype)get_u32(r);
  d->c_type = (ts_dtype)get_u32(r);
  d->acc_type = (ts_dtype)get_u32(r);
  d->math = (ts_math)get_u32(r);
  d->lda = get_i64(r);
  d->ldb = get_i64(r);
  d->ldc = get_i64(r);
  d->runtime = get_u32(r);
  d->runtime_multiple = get_i64(r);
  d->runtime_ld_multiple = get_i64(r);
}

/* A formula whose length and operations are in range (its evaluation
 * checks each step's values). */
static bool get_formula(reader *r, ts_formula *f) {
  uint32_t n = get_u32(r);
  if (!r->ok || n > TS_FORMULA_LEN)
    return false;
  f->n = (int)n;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t op = get_u32(r);
    f->op[i] = (uint8_t)op;
    f->arg[i] = get_i64(r);
    if (op >= TS_FORMULA_OPS)
      return false;
  }
  return r->ok;
}

/* The definition's enumerations in range, as ts_matmul accepted them. */
static bool gemm_in_range(const ts_gemm *d) {
  return d->layout <= TS_TT && d->a_type < TS_DTYPE_COUNT &&
         d->b_type < TS_DTYPE_COUNT && d->c_type < TS_DTYPE_COUNT &&
         d->acc_type < TS_DTYPE_COUNT && d->math <= TS_MATH_TF32 &&
         d->m > 0 && d->n > 0 && d->k > 0 && d->lda >= 0 && d->ldb >= 0 &&
         d->ldc >= 0 && d->runtime <= TS_RUNTIME_SHAPE &&
         d->runtime_multiple >= 0 && d->runtime_multiple <= 64 &&
         d->runtime_ld_multiple >= 0 && d->runtime_ld_multiple <= 64;
}

static void get_geometry(reader *r, ts_launch_geometry *l) {
  for (int d = 0; d < 3; d++) {
    l->grid[d] = get_i64(r);
    l->block[d] = get_i64(r);
  }
  l->dynamic_shared = get_i64(r);
  l->persistent = (int)get_u32(r);
  l->cluster = (int)get_u32(r);
}

static bool get_param(reader *r, ts_param *p) {
  p->kind = (ts_param_kind)get_u32(r);
  p->buffer = (ts_param_buffer)get_u32(r);
  p->offset = get_i64(r);
  p->dtype = (ts_dtype)get_u32(r);
  p->read_only = get_u32(r) != 0;
  p->align = (int)get_u32(r);
  p->value = (ts_param_value)get_u32(r);
  p->dims[0] = get_i64(r);
  p->dims[1] = get_i64(r);
  p->row_bytes = get_i64(r);
  p->box[0] = get_i64(r);
  p->box[1] = get_i64(r);
  p->swizzle = (int)get_u32(r);
  p->dim_from[0] = (int)get_u32(r);
  p->dim_from[1] = (int)get_u32(r);
  p->pitch_from = (int)get_u32(r);
  for (int i = 0; i < 3; i++) { /* 0, or 1 + an extent or an ld */
    int from = i < 2 ? p->dim_from[i] : p->pitch_from;
    if (from < 0 || from > TS_VALUE_COUNT || from == 1 + TS_VALUE_ALPHA ||
        from == 1 + TS_VALUE_BETA)
      return false;
  }
  return p->kind <= TS_PARAM_TENSOR_MAP && p->buffer < TS_PARAM_NBUFFERS &&
         p->dtype < TS_DTYPE_COUNT && p->value < TS_VALUE_COUNT;
}

static void get_ptxas(reader *r, ts_ptxas_info *x) {
  x->registers = (int)get_u32(r);
  x->shared_bytes = (int)get_u32(r);
  x->spill_store_bytes = (int)get_u32(r);
  x->spill_load_bytes = (int)get_u32(r);
  x->stack_bytes = (int)get_u32(r);
  x->valid = (int)get_u32(r);
}

/* Copies text into a fixed field; false when it does not fit. */
static bool get_fixed(reader *r, char *out, size_t len) {
  char *s = get_blob(r, NULL);
  bool fits = s && strlen(s) < len;
  if (fits)
    memcpy(out, s, strlen(s) + 1);
  free(s);
  return fits;
}

/* The further architectures' cubins. */
static bool get_images(reader *r, ts_kernel *k) {
  uint32_t n = get_u32(r);
  if (!r->ok || n > MAX_ENTRIES)
    return false;
  if (n && !(k->images = calloc(n, sizeof(*k->images))))
    return false;
  for (uint32_t i = 0; i < n; i++) {
    kernel_image *im = &k->images[i];
    k->nimages = (int)i + 1;
    if (!get_fixed(r, im->arch, sizeof(im->arch)) ||
        !(im->cubin = get_blob(r, &im->size)) || im->size == 0)
      return false;
  }
  return true;
}

static bool get_entries(reader *r, ts_kernel *k) {
  uint32_t n = get_u32(r);
  if (!r->ok || n < 1 || n > MAX_ENTRIES)
    return false;
  if (!(k->entries = calloc(n, sizeof(*k->entries))))
    return false;
  k->nentries = (int)n;
  for (uint32_t i = 0; i < n; i++) {
    kernel_entry *e = &k->entries[i];
    e->name = get_blob(r, NULL);
    get_geometry(r, &e->launch);
    for (int d = 0; d < 3; d++)
      if (!get_formula(r, &e->grid_size[d]))
        return false;
    uint32_t np = get_u32(r);
    if (!e->name || !r->ok || np > MAX_PARAMS ||
        !(e->params = calloc(np + 1, sizeof(*e->params))))
      return false;
    e->nparams = (int)np;
    for (uint32_t j = 0; j < np; j++)
      if (!get_param(r, &e->params[j]))
        return false;
  }
  return r->ok && k->main_entry >= 0 && k->main_entry < k->nentries;
}

/* The fields after the header; false on anything out of place. */
static bool get_body(reader *r, ts_kernel *k) {
  if (!get_fixed(r, k->arch, sizeof(k->arch)) ||
      !(k->name = get_blob(r, NULL)) || !(k->label = get_blob(r, NULL)))
    return false;
  get_gemm(r, &k->def);
  get_geometry(r, &k->launch);
  k->workspace = get_i64(r);
  k->min_blocks = (int)get_u32(r);
  k->hand_written = get_u32(r) != 0;
  k->main_entry = (int)get_u32(r);
  k->source_hash = (uint64_t)get_i64(r);
  get_ptxas(r, &k->ptxas);
  if (!r->ok || !gemm_in_range(&k->def) || !get_entries(r, k) ||
      !(k->cubin = get_blob(r, &k->cubin_size)) || k->cubin_size == 0 ||
      !get_images(r, k) ||
      !(k->source = get_blob(r, NULL)) || !(k->log = get_blob(r, NULL)))
    return false;
  return r->ok && r->p == r->end;
}

static unsigned char *read_whole(const char *path, size_t *size, int *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    *err = errno;
    return NULL;
  }
  unsigned char *data = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (uint64_t)n <= max_blob * 2 &&
      (data = malloc((size_t)n + 1)) &&
      fread(data, 1, (size_t)n, f) == (size_t)n) {
    *size = (size_t)n;
  } else {
    *err = errno ? errno : EIO;
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

/* The header: magic, format, and the version that wrote it (for the
 * message when the format is not this tessel's). */
static void check_header(ts_kernel *k, reader *r, const char *path) {
  char magic[sizeof(file_magic)];
  if (!get(r, magic, sizeof(magic)) ||
      memcmp(magic, file_magic, sizeof(magic)) != 0) {
    kernel_fail(k, TS_ERR_IO, "ts_kernel_load: %.3000s is not a tessel "
                "kernel file (ts_kernel_save writes them)", path);
    return;
  }
  uint32_t format = get_u32(r);
  char version[64] = "?";
  if (!get_fixed(r, version, sizeof(version)))
    snprintf(version, sizeof(version), "?");
  if (format != FILE_FORMAT)
    kernel_fail(k, TS_ERR_IO, "ts_kernel_load: %.3000s was written in "
                "kernel file format %u (by tessel %s); this tessel (%s) "
                "reads format %d: compile the kernel again and save it with "
                "this version", path, format, version, TESSEL_VERSION,
                FILE_FORMAT);
}

ts_kernel *ts_kernel_load(const char *path) {
  ts_kernel *k = calloc(1, sizeof(*k));
  if (!k)
    return &kernel_nomem;
  if (!path)
    return kernel_fail(k, TS_ERR_NULL_ARG, "ts_kernel_load: the path is "
                       "NULL");
  size_t size = 0;
  int err = 0;
  unsigned char *data = read_whole(path, &size, &err);
  if (!data)
    return kernel_fail(k, TS_ERR_IO, "ts_kernel_load: cannot read "
                       "%.3000s: %s", path, strerror(err));
  uint64_t check = 0;
  size_t body = size >= sizeof(check) ? size - sizeof(check) : 0;
  reader r = {.p = data, .end = data + body, .ok = true};
  check_header(k, &r, path);
  if (k->status == TS_OK) {
    memcpy(&check, data + body, sizeof(check));
    if (size < sizeof(check) ||
        kcache_fnv1a(KCACHE_FNV_SEED, data, body) != check)
      kernel_fail(k, TS_ERR_IO, "ts_kernel_load: %.3000s is corrupt or "
                  "truncated (its checksum does not match): save the "
                  "kernel again", path);
    else if (!get_body(&r, k))
      kernel_fail(k, TS_ERR_IO, "ts_kernel_load: %.3000s is malformed (a "
                  "field out of range, or out of memory reading it): save "
                  "the kernel again", path);
  }
  free(data);
  return k;
}
