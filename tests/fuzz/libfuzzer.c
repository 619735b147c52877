/*
 * The schedule fuzzer, coverage-guided: libFuzzer's bytes drive the same
 * case generator as the test suite's seeded runs (tests/fuzz/gen.c), so a
 * failure prints the case as a C program.  Build with -Dfuzzer=true (clang)
 * and run, for example:
 *
 *     build-fuzz/tests/fuzz_schedules -max_total_time=3600 corpus/
 */
#include <stdio.h>
#include <stdlib.h>

#include "gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_source src = {.data = data, .size = size};
  fz_result r = fz_run_case(&src, (uint64_t)size);
  if (r.outcome == FZ_FAIL) {
    fprintf(stderr, "%s\n", r.report ? r.report : "(no report)");
    abort();
  }
  free(r.report);
  return 0;
}
