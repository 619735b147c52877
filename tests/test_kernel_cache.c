/*
 * The kernel cache's faults: a miss, a hit, a truncated entry, a corrupted
 * byte, an entry of another kernel under this one's name, a read-only or
 * missing directory, processes writing one entry at once, and another
 * NVRTC than the one that wrote the entry.  In each the
 * kernel must be the one NVRTC makes for the schedule; nothing may crash.
 * Needs NVRTC (the CUDA toolkit), not a GPU.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "src/compile/kernel_cache.h"
#include "runtime/gpu_impl.h"
#include "src/compile/kernel.h"

static char dir[256];

static ts_kernel *compile_named(const char *schedule) {
  ts_gemm g = ts_gemm_make(64, 48, 40);
  ts_sched *s = ts_builtin_schedule(schedule, &g);
  ts_kernel *k = ts_compile_sched(s, "sm_80");
  ts_sched_free(s);
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("ts_compile %s: %s", schedule, ts_kernel_errmsg(k));
  return k;
}

/* What NVRTC makes with the cache off. */
static ts_kernel *reference(const char *schedule) {
  setenv("TESSEL_NO_CACHE", "1", 1);
  ts_kernel *k = compile_named(schedule);
  unsetenv("TESSEL_NO_CACHE");
  assert_false(ts_kernel_from_cache(k));
  return k;
}

static void assert_same_kernel(const ts_kernel *a, const ts_kernel *b) {
  assert_string_equal(a->name, b->name);
  assert_int_equal(a->cubin_size, b->cubin_size);
  assert_memory_equal(a->cubin, b->cubin, a->cubin_size);
  assert_int_equal(a->ptxas.registers, b->ptxas.registers);
  assert_true(a->ptxas.valid);
}

static int fresh_dir(void **state) {
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/tessel-kcache-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  setenv("TESSEL_CACHE_DIR", dir, 1);
  return 0;
}

static int remove_dir(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The one entry in the cache directory. */
static void entry_path(char *out, size_t len) {
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "ls '%s'/*.cubin", dir);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  assert_non_null(fgets(out, (int)len, p));
  out[strcspn(out, "\n")] = 0;
  assert_null(fgets(out + strlen(out) + 1, 2, p)); /* exactly one */
  pclose(p);
}

static int count_files(const char *path) {
  DIR *d = opendir(path);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_miss_then_hit(void **state) {
  (void)state;
  ts_kernel *want = reference("smem32");
  ts_kernel *first = compile_named("smem32");
  assert_false(ts_kernel_from_cache(first));
  ts_kernel *second = compile_named("smem32");
  assert_true(ts_kernel_from_cache(second));
  assert_same_kernel(first, want);
  assert_same_kernel(second, want);
  assert_string_equal(first->log, second->log);
  /* Another architecture is another entry. */
  ts_gemm g = ts_gemm_make(64, 48, 40);
  ts_sched *s = ts_builtin_schedule("smem32", &g);
  ts_kernel *k90 = ts_compile_sched(s, "sm_90");
  assert_false(ts_kernel_from_cache(k90));
  ts_sched_free(s);
  ts_kernel_free(k90);
  ts_kernel_free(want);
  ts_kernel_free(first);
  ts_kernel_free(second);
}

/* Damages the entry with `damage`, then the next compile must miss, give
 * NVRTC's kernel, and leave a good entry behind. */
static void after_damage(void (*damage)(const char *path)) {
  ts_kernel *want = reference("blocktile1d");
  ts_kernel_free(compile_named("blocktile1d"));
  char path[512];
  entry_path(path, sizeof(path));
  damage(path);
  ts_kernel *k = compile_named("blocktile1d");
  assert_false(ts_kernel_from_cache(k));
  assert_same_kernel(k, want);
  ts_kernel *again = compile_named("blocktile1d");
  assert_true(ts_kernel_from_cache(again));
  assert_same_kernel(again, want);
  ts_kernel_free(want);
  ts_kernel_free(k);
  ts_kernel_free(again);
}

static void truncate_half(const char *path) {
  assert_int_equal(truncate(path, file_size(path) / 2), 0);
}

static void truncate_header(const char *path) {
  assert_int_equal(truncate(path, 20), 0);
}

static void flip_last_byte(const char *path) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  long at = file_size(path) - 1;
  unsigned char c;
  assert_int_equal(pread(fd, &c, 1, at), 1);
  c ^= 0x40;
  assert_int_equal(pwrite(fd, &c, 1, at), 1);
  close(fd);
}

static void empty_file(const char *path) {
  assert_int_equal(truncate(path, 0), 0);
}

/* Another kernel's whole, valid entry under this one's name: what a hash
 * collision would look like. */
static void other_kernel(const char *path) {
  char other_dir[300], cmd[1200];
  snprintf(other_dir, sizeof(other_dir), "%s/other", dir);
  setenv("TESSEL_CACHE_DIR", other_dir, 1);
  ts_kernel_free(compile_named("naive"));
  setenv("TESSEL_CACHE_DIR", dir, 1);
  snprintf(cmd, sizeof(cmd), "cp '%s'/*.cubin '%s' && rm -rf '%s'", other_dir,
           path, other_dir);
  assert_int_equal(system(cmd), 0);
}

static void test_truncated_entry(void **state) {
  (void)state;
  after_damage(truncate_half);
}

static void test_truncated_header(void **state) {
  (void)state;
  after_damage(truncate_header);
}

static void test_empty_entry(void **state) {
  (void)state;
  after_damage(empty_file);
}

static void test_corrupted_entry(void **state) {
  (void)state;
  after_damage(flip_last_byte);
}

static void test_entry_of_another_kernel(void **state) {
  (void)state;
  after_damage(other_kernel);
}

/* A directory nothing can be written in (/proc/self refuses new files even
 * to root, where permission bits would not), and one that cannot be made
 * (under a regular file). */
static void test_unwritable_directory(void **state) {
  (void)state;
  ts_kernel *want = reference("naive");
  char file[300], below[400];
  snprintf(file, sizeof(file), "%s/a-file", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(below, sizeof(below), "%s/cache", file);
  const char *dirs[] = {"/proc/self", below};
  for (int i = 0; i < 2; i++) {
    setenv("TESSEL_CACHE_DIR", dirs[i], 1);
    for (int round = 0; round < 2; round++) {
      ts_kernel *k = compile_named("naive");
      assert_false(ts_kernel_from_cache(k));
      assert_same_kernel(k, want);
      ts_kernel_free(k);
    }
  }
  setenv("TESSEL_CACHE_DIR", dir, 1);
  ts_kernel_free(want);
}

static void test_missing_directory_is_made(void **state) {
  (void)state;
  char nested[300];
  snprintf(nested, sizeof(nested), "%s/a/b/c", dir);
  setenv("TESSEL_CACHE_DIR", nested, 1);
  ts_kernel_free(compile_named("naive"));
  ts_kernel *k = compile_named("naive");
  assert_true(ts_kernel_from_cache(k));
  ts_kernel_free(k);
  setenv("TESSEL_CACHE_DIR", dir, 1);
}

/* NVRTC as the compiles see it, to be made another for a while: what a
 * toolkit upgrade does to a cache that outlives it. */
static ts_nvrtc_api *loaded_nvrtc(void) {
  char err[512];
  const ts_nvrtc_api *api = ts_nvrtc(err, sizeof(err));
  if (!api)
    fail_msg("%s", err);
  return (ts_nvrtc_api *)api; /* a static object of the loader's */
}

static nvrtcResult newer_version(int *major, int *minor) {
  *major = 99;
  *minor = 9;
  return NVRTC_SUCCESS;
}

/* The key names the compiler: another NVRTC version, or another file of
 * the library (a patch release), misses and compiles afresh; back to the
 * first, the first entry is found again.  The entry's key says which. */
static void test_key_names_the_compiler(void **state) {
  (void)state;
  ts_nvrtc_api *api = loaded_nvrtc();
  int major = 0, minor = 0;
  assert_int_equal(api->nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  ts_kernel_free(compile_named("smem32"));
  char path[512], want[64];
  entry_path(path, sizeof(path));
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char head[4096] = "";
  size_t got = fread(head, 1, sizeof(head) - 1, f);
  fclose(f);
  head[got] = 0;
  snprintf(want, sizeof(want), "nvrtc %d.%d ", major, minor);
  assert_non_null(strstr(head + 48, want)); /* the key, after the header */

  __typeof__(api->nvrtcVersion) real = api->nvrtcVersion;
  api->nvrtcVersion = newer_version;
  ts_kernel *k = compile_named("smem32");
  api->nvrtcVersion = real;
  assert_false(ts_kernel_from_cache(k));
  ts_kernel_free(k);

  char file[sizeof(api->lib_file)];
  memcpy(file, api->lib_file, sizeof(file));
  assert_true(strlen(file) > 0 && strlen(file) + 2 < sizeof(file));
  strcat(api->lib_file, ".1");
  k = compile_named("smem32");
  memcpy(api->lib_file, file, sizeof(file));
  assert_false(ts_kernel_from_cache(k));
  ts_kernel_free(k);

  k = compile_named("smem32");
  assert_true(ts_kernel_from_cache(k));
  ts_kernel_free(k);
  assert_int_equal(count_files(dir), 3);
}

/* Processes that compile the same kernel at the same moment each write the
 * entry; each must get the right kernel and the entry must end whole. */
static void test_concurrent_writers(void **state) {
  (void)state;
  enum { WRITERS = 4 };
  ts_kernel *want = reference("coalesced");
  int go[2];
  assert_int_equal(pipe(go), 0);
  pid_t pids[WRITERS];
  for (int i = 0; i < WRITERS; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      char c;
      close(go[1]);
      if (read(go[0], &c, 1) != 0) /* wait for the start: the pipe's close */
        _exit(3);
      ts_gemm g = ts_gemm_make(64, 48, 40);
      ts_sched *s = ts_builtin_schedule("coalesced", &g);
      ts_kernel *k = ts_compile_sched(s, "sm_80");
      int ok = ts_kernel_status(k) == TS_OK &&
               k->cubin_size == want->cubin_size &&
               memcmp(k->cubin, want->cubin, k->cubin_size) == 0;
      _exit(ok ? 0 : 1);
    }
  }
  close(go[0]);
  close(go[1]);
  for (int i = 0; i < WRITERS; i++) {
    int status = 0;
    assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  ts_kernel *k = compile_named("coalesced");
  assert_true(ts_kernel_from_cache(k));
  assert_same_kernel(k, want);
  assert_int_equal(count_files(dir), 1); /* no temporary file left */
  ts_kernel_free(k);
  ts_kernel_free(want);
}

/* Tuning records live beside the kernels, one per GPU (name and driver),
 * space and definition; anything else is no record. */
static void test_tuning_records(void **state) {
  (void)state;
  ts_gpu *g = calloc(1, sizeof(*g)); /* a GPU as ts_gpu_open describes it */
  assert_non_null(g);
  snprintf(g->name, sizeof(g->name), "NVIDIA H200");
  g->driver_version = 13000;
  ts_gemm def = ts_gemm_make(1024, 1024, 1024);
  double tflops;
  assert_null(ts_tune_record_load(g, "seed003", &def, &tflops));
  assert_int_equal(ts_tune_record_save(g, "seed003", &def, "block=32x64x32",
                                       12.5), TS_OK);
  char *c = ts_tune_record_load(g, "seed003", &def, &tflops);
  assert_string_equal(c, "block=32x64x32");
  assert_true(tflops == 12.5);
  free(c);
  /* A better one replaces it. */
  assert_int_equal(ts_tune_record_save(g, "seed003", &def, "block=64x64x32",
                                       13.0), TS_OK);
  c = ts_tune_record_load(g, "seed003", &def, NULL);
  assert_string_equal(c, "block=64x64x32");
  free(c);
  /* Another definition, space, driver or GPU has none. */
  ts_gemm other = def;
  other.c_type = TS_F16;
  assert_null(ts_tune_record_load(g, "seed003", &other, NULL));
  other = def;
  other.beta = 1.0f;
  assert_null(ts_tune_record_load(g, "seed003", &other, NULL));
  assert_null(ts_tune_record_load(g, "other", &def, NULL));
  g->driver_version = 12080;
  assert_null(ts_tune_record_load(g, "seed003", &def, NULL));
  g->driver_version = 13000;
  snprintf(g->name, sizeof(g->name), "NVIDIA H100 80GB HBM3");
  assert_null(ts_tune_record_load(g, "seed003", &def, NULL));
  assert_int_equal(ts_tune_record_save(g, "seed003", &def, "a\nb", 1),
                   TS_ERR_NULL_ARG);
  setenv("TESSEL_NO_CACHE", "1", 1);
  assert_int_equal(ts_tune_record_save(g, "seed003", &def, "x=1", 1),
                   TS_ERR_BAD_ARG);
  unsetenv("TESSEL_NO_CACHE");
  free(g);
}

/* A tuning run's journal: lines appended and read back in order, kept
 * per GPU, space and definition, removed at the end. */
static void test_tuning_journal(void **state) {
  (void)state;
  ts_gpu *g = calloc(1, sizeof(*g));
  assert_non_null(g);
  snprintf(g->name, sizeof(g->name), "NVIDIA H200");
  g->driver_version = 13000;
  ts_gemm def = ts_gemm_make(512, 256, 128), other = ts_gemm_make(512, 256, 64);
  ts_tune_journal_remove(g, "warptiled", &def);
  assert_null(ts_tune_journal_load(g, "warptiled", &def));
  assert_int_equal(ts_tune_journal_add(g, "warptiled", &def,
                                       "timed\t0.5\t1e-06\tbm=64"), TS_OK);
  assert_int_equal(ts_tune_journal_add(g, "warptiled", &def,
                                       "failed\tbm=32\tno"), TS_OK);
  assert_int_equal(ts_tune_journal_add(g, "warptiled", &def, "a\nb"),
                   TS_ERR_BAD_ARG);
  char *lines = ts_tune_journal_load(g, "warptiled", &def);
  assert_string_equal(lines, "timed\t0.5\t1e-06\tbm=64\nfailed\tbm=32\tno\n");
  free(lines);
  assert_null(ts_tune_journal_load(g, "warptiled", &other));
  assert_null(ts_tune_journal_load(g, "seed003", &def));
  ts_tune_journal_remove(g, "warptiled", &def);
  assert_null(ts_tune_journal_load(g, "warptiled", &def));
  setenv("TESSEL_NO_CACHE", "1", 1);
  assert_int_equal(ts_tune_journal_add(g, "warptiled", &def, "x"), TS_ERR_IO);
  unsetenv("TESSEL_NO_CACHE");
  free(g);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, fresh_dir, remove_dir)
  const struct CMUnitTest tests[] = {
      T(test_miss_then_hit),
      T(test_truncated_entry),
      T(test_truncated_header),
      T(test_empty_entry),
      T(test_corrupted_entry),
      T(test_entry_of_another_kernel),
      T(test_unwritable_directory),
      T(test_missing_directory_is_made),
      T(test_concurrent_writers),
      T(test_key_names_the_compiler),
      T(test_tuning_records),
      T(test_tuning_journal),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
