/*
 * The hand-written baselines in bench/handwritten compile with NVRTC for
 * sm_80 and sm_90 as `tessel bench --cu` compiles them, with no spills, and
 * define what the bench reads from them: the entry point gemm and the
 * launch geometry.  Needs NVRTC, not a GPU; the gpu suite runs them.
 */
#include <dirent.h>
#include <stdio.h>

#include "helpers.h"
#include "src/compile/kernel.h"

static const char *dir = "bench/handwritten";

static bool has_symbol(const ts_kernel *k, const char *name) {
  return memmem(k->cubin, k->cubin_size, name, strlen(name) + 1) != NULL;
}

static void compile_one(const char *path, const char *arch) {
  char *src = read_text(path);
  ts_kernel *k = kernel_from_source(src, "gemm", arch);
  if (ts_kernel_status(k) != TS_OK)
    fail_msg("%s for %s: %s", path, arch, ts_kernel_errmsg(k));
  ts_ptxas_info p = ts_kernel_ptxas(k);
  printf("  %-44s %s: %3d registers, %5d bytes shared, spills %d/%d\n", path,
         arch, p.registers, p.shared_bytes, p.spill_store_bytes,
         p.spill_load_bytes);
  if (p.valid) {
    assert_int_equal(p.spill_store_bytes, 0);
    assert_int_equal(p.spill_load_bytes, 0);
  }
  assert_true(has_symbol(k, "gemm"));
  assert_true(has_symbol(k, "tessel_block"));
  assert_true(has_symbol(k, "tessel_tile"));
  ts_kernel_free(k);
  free(src);
}

static void test_baselines_compile(void **state) {
  (void)state;
  DIR *d = opendir(dir);
  if (!d)
    fail_msg("cannot open %s", dir);
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".cu") != 0)
      continue;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    compile_one(path, "sm_80");
    compile_one(path, "sm_90");
    count++;
  }
  closedir(d);
  /* Seeds 000 (two), 001 and 004 at least: an empty folder is a failure. */
  assert_true(count >= 4);
}

/* A source without the entry point compiles, and the bench's loader is
 * what refuses it; NVRTC's own errors come back with its log. */
static void test_broken_source_reports_nvrtc_log(void **state) {
  (void)state;
  ts_kernel *k = kernel_from_source(
      "extern \"C\" __global__ void gemm(float *C) { C[0] = undefined; }",
      "gemm", "sm_90");
  assert_int_equal(ts_kernel_status(k), TS_ERR_NVRTC);
  assert_non_null(strstr(ts_kernel_errmsg(k), "undefined"));
  ts_kernel_free(k);
}

int main(int argc, char **argv) {
  if (argc > 1)
    dir = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_baselines_compile),
      cmocka_unit_test(test_broken_source_reports_nvrtc_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
