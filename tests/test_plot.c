/*
 * Plots of records (src/cli/plot.c): the example records of tests/records/
 * drawn into PNGs, which libpng decodes here: the size asked for, a white
 * background, the schedules' colours and the best configuration's red
 * where they belong, and an unknown knob refused.  The records' directory
 * is the first argument.
 */
#include <png.h>
#include "helpers.h"
#include "cli/plot.h"

static const char *records;
static char png_path[64];

static int setup(void **state) {
  (void)state;
  return make_temp_file(png_path, sizeof(png_path), "tessel-plot");
}

static int teardown(void **state) {
  (void)state;
  return unlink(png_path);
}

typedef struct {
  png_image image;
  unsigned char *rgb;
} decoded;

static decoded decode(const char *path) {
  decoded d = {.image = {.version = PNG_IMAGE_VERSION}};
  assert_true(png_image_begin_read_from_file(&d.image, path));
  d.image.format = PNG_FORMAT_RGB;
  d.rgb = malloc(PNG_IMAGE_SIZE(d.image));
  assert_non_null(d.rgb);
  assert_true(png_image_finish_read(&d.image, NULL, d.rgb, 0, NULL));
  return d;
}

/* How many pixels are within 12 of (r, g, b) in each channel. */
static long count_colour(const decoded *d, int r, int g, int b) {
  long n = 0;
  for (size_t i = 0; i < (size_t)d->image.width * d->image.height; i++) {
    const unsigned char *p = d->rgb + 3 * i;
    n += abs(p[0] - r) <= 12 && abs(p[1] - g) <= 12 && abs(p[2] - b) <= 12;
  }
  return n;
}

static void assert_white(const decoded *d, unsigned x, unsigned y) {
  const unsigned char *p = d->rgb + 3 * ((size_t)y * d->image.width + x);
  assert_true(p[0] > 245 && p[1] > 245 && p[2] > 245);
}

static record_data *read_example(const char *name) {
  char path[512], err[512];
  snprintf(path, sizeof(path), "%s/%s", records, name);
  record_data *d = record_read(path, err, sizeof(err));
  if (!d)
    fail_msg("%s", err);
  return d;
}

/* bench_a.json: 2 shapes of 3 schedules each; bars of the first three
 * colours (blue, orange, green), a page 700 high and wide enough for the
 * two groups and a legend of its longest name ("warptiled": 200 + 330 * 2
 * + 120 + 14 * 9 pixels), white corners. */
static void test_bench_plot(void **state) {
  (void)state;
  record_data *r = read_example("bench_a.json");
  char err[256];
  assert_true(plot_record(r, png_path, NULL, err, sizeof(err)));
  record_data_free(r);
  decoded d = decode(png_path);
  assert_int_equal(d.image.width, 200 + 330 * 2 + 120 + 14 * 9);
  assert_int_equal(d.image.height, 700);
  assert_white(&d, 0, 0);
  assert_white(&d, d.image.width - 1, d.image.height - 1);
  /* warptiled's bars are the tallest, splitk's shorter, naive's short
   * (it is slow); the legend has a box of each. */
  long naive = count_colour(&d, 31, 119, 180),
       warptiled = count_colour(&d, 255, 127, 14),
       splitk = count_colour(&d, 44, 160, 44);
  assert_true(naive > 300);
  assert_true(splitk > 5 * naive);
  assert_true(warptiled > 1.5 * splitk);
  assert_int_equal(count_colour(&d, 148, 103, 189), 0); /* no fourth */
  free(d.rgb);
}

/* tune.json: one shape, 60 timed configurations grouped by a knob, the
 * best a red star. */
static void test_tune_plot(void **state) {
  (void)state;
  record_data *r = read_example("tune.json");
  char err[256];
  assert_true(plot_record(r, png_path, "bk", err, sizeof(err)));
  decoded d = decode(png_path);
  assert_int_equal(d.image.width, 1200);
  assert_int_equal(d.image.height, 560);
  assert_white(&d, 0, 0);
  assert_true(count_colour(&d, 31, 119, 180) > 200); /* the points */
  assert_true(count_colour(&d, 214, 39, 40) > 50);   /* the best */
  free(d.rgb);
  assert_false(plot_record(r, png_path, "nosuch", err, sizeof(err)));
  assert_non_null(strstr(err, "has no knob 'nosuch'"));
  record_data_free(r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_plot RECORDS_DIR\n");
    return 2;
  }
  records = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_bench_plot, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tune_plot, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
