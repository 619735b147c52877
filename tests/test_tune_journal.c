/*
 * tessel tune's journal read back (src/tune/journal.c): results of
 * the first pass and the full count, failures, cuBLAS's time, the marks of
 * candidates in flight (the last line about a configuration decides), and
 * lines an older version wrote or a killed run tore.  No GPU: the journal
 * is keyed by a GPU's name and driver, which a test can make up.
 */
#include <unistd.h>

#include "helpers.h"
#include "tune/tune_impl.h"
#include "runtime/gpu_impl.h"

typedef struct {
  ts_gpu gpu; /* as ts_gpu_open describes one: a name and a driver */
  const ts_space *sp;
  ts_tune_shape r;
} fixture;

static char dir[256];

static int setup(void **state) {
  if (make_temp_cache_dir(dir, sizeof(dir), "tessel-journal") != 0)
    return -1;
  fixture *f = calloc(1, sizeof(*f));
  if (!f)
    return -1;
  snprintf(f->gpu.name, sizeof(f->gpu.name), "NVIDIA H200");
  f->gpu.driver_version = 13000;
  f->sp = ts_space_find("seed003");
  f->r.def = ts_gemm_make(64, 64, 64);
  ts_config **configs;
  int n = ts_space_enumerate(f->sp, &f->r.def, 1000, &configs);
  f->r.c = calloc((size_t)n, sizeof(*f->r.c));
  if (n < 4 || !f->r.c)
    return -1;
  f->r.n = n;
  for (int i = 0; i < n; i++) {
    f->r.c[i].config = configs[i];
    f->r.c[i].text = ts_config_text(configs[i]);
  }
  free(configs);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  for (int i = 0; i < f->r.n; i++) {
    ts_config_free(f->r.c[i].config);
    free(f->r.c[i].text);
  }
  free(f->r.c);
  free(f);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void add(fixture *f, const char *line) {
  assert_int_equal(ts_tune_journal_add(&f->gpu, f->sp->name, &f->r.def, line),
                   TS_OK);
}

/* A journal of an earlier version: timed and failed lines only. */
static void test_timed_and_failed_lines(void **state) {
  fixture *f = *state;
  ts_tune_candidate *c = f->r.c;
  char line[512];
  snprintf(line, sizeof(line), "timed\t0.250000\t1.000e-06\t%s", c[0].text);
  add(f, line);
  snprintf(line, sizeof(line), "failed\t%s\tNVRTC said no", c[1].text);
  add(f, line);
  assert_int_equal(tune_resume(&f->gpu, f->sp->name, &f->r), 2);
  assert_true(c[0].has_quick && c[0].resumed && !c[0].has_full);
  assert_int_equal(c[0].quick.status, TS_OK);
  assert_true(c[0].quick.median_ms == 0.25);
  assert_true(c[0].quick.tflops > 0);
  assert_true(c[1].has_quick && c[1].resumed);
  assert_int_equal(c[1].quick.status, TS_ERR_CUDA);
  assert_string_equal(c[1].quick.message, "NVRTC said no");
  assert_false(c[2].has_quick || c[2].resumed || c[2].suspect);
}

/* Marks: one still in flight is a suspect; one followed by its result is
 * not; a mark after a first-pass result (the full count in flight) makes a
 * suspect that keeps its result. */
static void test_marks_in_flight(void **state) {
  fixture *f = *state;
  ts_tune_candidate *c = f->r.c;
  tune_journal_timing(&f->gpu, f->sp->name, &f->r, &c[0]);
  tune_journal_timing(&f->gpu, f->sp->name, &f->r, &c[1]);
  tune_journal_timing(&f->gpu, f->sp->name, &f->r, &c[2]);
  c[1].quick = (ts_bench_result){.status = TS_OK, .median_ms = 0.5};
  tune_journal_note(&f->gpu, f->sp->name, &f->r, &c[1], false);
  c[2].quick = c[1].quick;
  tune_journal_note(&f->gpu, f->sp->name, &f->r, &c[2], false);
  tune_journal_timing(&f->gpu, f->sp->name, &f->r, &c[2]);
  memset(&c[1].quick, 0, sizeof(c[1].quick));
  memset(&c[2].quick, 0, sizeof(c[2].quick));
  assert_int_equal(tune_resume(&f->gpu, f->sp->name, &f->r), 2);
  assert_true(c[0].suspect && !c[0].has_quick && !c[0].resumed);
  assert_true(!c[1].suspect && c[1].has_quick);
  assert_true(c[2].suspect && c[2].has_quick);
  assert_true(c[2].quick.median_ms == 0.5);
}

/* The full count's result and cuBLAS's time come back; ratios are left
 * to the caller (the shape's last cuBLAS time). */
static void test_full_count_and_cublas(void **state) {
  fixture *f = *state;
  ts_tune_candidate *c = f->r.c;
  c[0].quick = (ts_bench_result){.status = TS_OK, .median_ms = 0.5};
  c[0].full = (ts_bench_result){.status = TS_OK, .median_ms = 0.4,
                                .max_rel_err = 2e-7};
  tune_journal_note(&f->gpu, f->sp->name, &f->r, &c[0], false);
  tune_journal_note(&f->gpu, f->sp->name, &f->r, &c[0], true);
  f->r.cublas.median_ms = 0.125;
  tune_journal_cublas(&f->gpu, f->sp->name, &f->r);
  memset(&c[0].quick, 0, sizeof(c[0].quick));
  memset(&c[0].full, 0, sizeof(c[0].full));
  memset(&f->r.cublas, 0, sizeof(f->r.cublas));
  ts_tune_shape fresh = f->r;
  assert_int_equal(tune_resume(&f->gpu, f->sp->name, &fresh), 1);
  assert_true(fresh.c[0].has_quick && fresh.c[0].has_full);
  assert_true(fresh.c[0].full.median_ms == 0.4);
  assert_true(fresh.c[0].full.max_rel_err > 1e-7);
  assert_true(fresh.c[0].full.ratio_to_cublas == 0);
  assert_int_equal(fresh.cublas.status, TS_OK);
  assert_true(fresh.cublas.median_ms == 0.125);
  assert_true(fresh.cublas.tflops > 0);
}

/* A failure after a mark (a fault caught, or the crash its next process
 * recorded) ends the suspicion and is resumed with its message, tabs and
 * newlines in it made spaces. */
static void test_failure_after_a_mark(void **state) {
  fixture *f = *state;
  ts_tune_candidate *c = f->r.c;
  tune_journal_timing(&f->gpu, f->sp->name, &f->r, &c[3]);
  tune_journal_failure(&f->gpu, f->sp->name, &f->r, c[3].text,
                       "crashed\tthe GPU\nprocess");
  assert_int_equal(tune_resume(&f->gpu, f->sp->name, &f->r), 1);
  assert_true(c[3].has_quick && c[3].resumed && !c[3].suspect);
  assert_int_equal(c[3].quick.status, TS_ERR_CUDA);
  assert_string_equal(c[3].quick.message, "crashed the GPU process");
}

/* Lines of kinds this version does not know, configurations the space
 * does not have, results that do not parse and a torn last line are
 * passed over. */
static void test_lines_passed_over(void **state) {
  fixture *f = *state;
  ts_tune_candidate *c = f->r.c;
  char line[512];
  add(f, "verdict\tsomething new");
  add(f, "timed\t0.5\t0\tblock=1x1x1,thread=1x1,order=none");
  snprintf(line, sizeof(line), "timed\tfast\t0\t%s", c[0].text);
  add(f, line);
  snprintf(line, sizeof(line), "timed\t-1\t0\t%s", c[0].text);
  add(f, line);
  add(f, "cublas\tslow");
  snprintf(line, sizeof(line), "timing\t%s\textra", c[1].text);
  add(f, line);
  assert_int_equal(tune_resume(&f->gpu, f->sp->name, &f->r), 0);
  assert_false(c[0].has_quick || c[1].suspect);
  assert_int_equal(f->r.cublas.status, TS_OK);
  assert_true(f->r.cublas.median_ms == 0);
  /* A torn last line: its process died while writing it. */
  char path[512];
  snprintf(line, sizeof(line), "timed\t0.5\t0\t%s", c[2].text);
  add(f, line);
  snprintf(path, sizeof(path), "ls %s/tune/*.journal", dir);
  FILE *p = popen(path, "r");
  assert_non_null(p);
  assert_non_null(fgets(path, sizeof(path), p));
  pclose(p);
  path[strcspn(path, "\n")] = 0;
  FILE *j = fopen(path, "a");
  assert_non_null(j);
  fprintf(j, "timed\t0.7\t0\t%s", c[3].text);
  fclose(j);
  assert_int_equal(tune_resume(&f->gpu, f->sp->name, &f->r), 1);
  assert_true(c[2].has_quick && !c[3].has_quick);
}

/* Another device's journal (a peer: the same model, another UUID) gives
 * first-pass results and failures to candidates this GPU's journal has
 * none for; its full counts, marks and cuBLAS time are its own GPU's and
 * are passed over, as is a journal of another model, of another device
 * sent by a rank (a text, its key first) as one in the cache directory,
 * and this GPU's own journal. */
static void test_peers_give_first_passes(void **state) {
  fixture *f = *state;
  ts_tune_candidate *c = f->r.c;
  snprintf(f->gpu.uuid, sizeof(f->gpu.uuid), "GPU-aaaa");
  ts_gpu peer = f->gpu, other_model = f->gpu;
  snprintf(peer.uuid, sizeof(peer.uuid), "GPU-bbbb");
  snprintf(other_model.name, sizeof(other_model.name), "NVIDIA H100");
  char line[512];
  snprintf(line, sizeof(line), "timed\t0.250000\t0\t%s", c[0].text);
  add(f, line); /* this GPU's own */
  snprintf(line, sizeof(line), "timed\t0.900000\t0\t%s", c[0].text);
  ts_tune_journal_add(&peer, f->sp->name, &f->r.def, line);
  snprintf(line, sizeof(line), "timed\t0.500000\t0\t%s", c[1].text);
  ts_tune_journal_add(&peer, f->sp->name, &f->r.def, line);
  snprintf(line, sizeof(line), "full\t0.400000\t0\t%s", c[1].text);
  ts_tune_journal_add(&peer, f->sp->name, &f->r.def, line);
  snprintf(line, sizeof(line), "timing\t%s", c[2].text);
  ts_tune_journal_add(&peer, f->sp->name, &f->r.def, line);
  ts_tune_journal_add(&peer, f->sp->name, &f->r.def, "cublas\t0.125000");
  snprintf(line, sizeof(line), "timed\t0.100000\t0\t%s", c[3].text);
  ts_tune_journal_add(&other_model, f->sp->name, &f->r.def, line);
  /* A rank's journal as it sends it: a third device's, failing c[2]. */
  ts_gpu rank = f->gpu;
  snprintf(rank.uuid, sizeof(rank.uuid), "GPU-cccc");
  snprintf(line, sizeof(line), "failed\t%s\tcrashed", c[2].text);
  ts_tune_journal_add(&rank, f->sp->name, &f->r.def, line);
  char *sent = tune_journal_text(&rank, f->sp->name, &f->r.def);
  assert_non_null(sent);
  ts_tune_journal_remove(&rank, f->sp->name, &f->r.def);

  assert_int_equal(tune_resume(&f->gpu, f->sp->name, &f->r), 1);
  char *lines = tune_journal_peers(&f->gpu, f->sp->name, &f->r.def, sent,
                                   strlen(sent) + 1);
  free(sent);
  assert_non_null(lines);
  assert_int_equal(tune_resume_peers(&f->r, lines), 2);
  free(lines);
  assert_true(c[0].quick.median_ms == 0.25); /* its own result stands */
  assert_true(c[1].has_quick && c[1].resumed && !c[1].has_full);
  assert_true(c[1].quick.median_ms == 0.5);
  assert_true(c[2].has_quick && !c[2].suspect);
  assert_int_equal(c[2].quick.status, TS_ERR_CUDA);
  assert_false(c[3].has_quick || c[3].resumed);
  assert_false(f->r.cublas.median_ms > 0);

  /* Every device's journal of the model goes; another model's stays. */
  tune_journal_remove_all(&f->gpu, f->sp->name, &f->r.def);
  char *left = ts_tune_journal_load(&peer, f->sp->name, &f->r.def);
  assert_null(left);
  left = ts_tune_journal_load(&f->gpu, f->sp->name, &f->r.def);
  assert_null(left);
  left = ts_tune_journal_load(&other_model, f->sp->name, &f->r.def);
  assert_non_null(left);
  free(left);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_timed_and_failed_lines),
      T(test_marks_in_flight),
      T(test_full_count_and_cublas),
      T(test_failure_after_a_mark),
      T(test_lines_passed_over),
      T(test_peers_give_first_passes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
