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

static bool dark(const decoded *d, unsigned x, unsigned y) {
  const unsigned char *p = d->rgb + 3 * ((size_t)y * d->image.width + x);
  return p[0] + p[1] + p[2] < 3 * 128;
}

/* Runs of columns in [x0, x1) with a dark pixel in rows [y0, y1). */
static int dark_column_runs(const decoded *d, unsigned x0, unsigned x1,
                            unsigned y0, unsigned y1) {
  int runs = 0;
  bool before = false;
  for (unsigned x = x0; x < x1; x++) {
    bool any = false;
    for (unsigned y = y0; y < y1 && !any; y++)
      any = dark(d, x, y);
    runs += any && !before;
    before = any;
  }
  return runs;
}

/* Columns inside the plots' boxes (x in [x0, x1)) with at least `least`
 * grey pixels: the lines between groups (equal channels, lighter than
 * text, darker than the white, as a one-pixel line antialiased over two
 * columns comes out). */
static int grey_columns(const decoded *d, unsigned x0, unsigned x1,
                        int least) {
  int n = 0;
  for (unsigned x = x0; x < x1; x++) {
    int in = 0;
    for (unsigned y = 0; y < d->image.height; y++) {
      const unsigned char *p = d->rgb + 3 * ((size_t)y * d->image.width + x);
      in += p[0] == p[1] && p[1] == p[2] && p[0] >= 100 && p[0] <= 225;
    }
    n += in >= least;
  }
  return n;
}

/* The tune record as two shapes (every other row moved to another), each
 * configuration's text made long: a panel each, the best's caption made
 * smaller to fit its panel, the y axis's title clear of its numbers, and
 * the knob's groups apart by lines between them. */
static void test_tune_plot_two_shapes(void **state) {
  (void)state;
  record_data *r = read_example("tune.json");
  static char configs[512][300];
  assert_true(r->nrows <= 512);
  for (int i = 0; i < r->nrows; i++) {
    if (i % 2)
      r->rows[i].shape = "2048x2048x2048";
    if (r->rows[i].config) {
      snprintf(configs[i], sizeof(configs[i]), "%s,a_knob_of_a_long_name="
               "a_value_long_enough_to_pass_the_width_of_the_panel_at_the_"
               "size_it_was_printed,another_knob=another_long_value",
               r->rows[i].config);
      r->rows[i].config = configs[i];
    }
  }
  char err[256];
  assert_true(plot_record(r, png_path, "bk", err, sizeof(err)));
  record_data_free(r);
  decoded d = decode(png_path);
  unsigned w = d.image.width, h = d.image.height;
  assert_int_equal(h, 2 * 560);
  /* No red (the caption) in the last 3% of the width. */
  for (unsigned y = 0; y < h; y++)
    for (unsigned x = w - w * 3 / 100; x < w; x++) {
      const unsigned char *p = d.rgb + 3 * ((size_t)y * w + x);
      assert_false(abs(p[0] - 214) <= 40 && p[1] < 120 && p[2] < 120);
    }
  /* Left of the axes, in each panel's middle rows: the title's columns
   * and the numbers' apart (two runs of dark columns, not one). */
  for (unsigned panel = 0; panel < 2; panel++)
    assert_int_equal(dark_column_runs(&d, 0, w * 8 / 100, panel * 560 + 170,
                                      panel * 560 + 400), 2);
  /* Grey lines between bk's values, in both panels. */
  assert_true(grey_columns(&d, w * 12 / 100, w * 93 / 100, 150) >= 1);
  free(d.rgb);
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
      cmocka_unit_test_setup_teardown(test_tune_plot_two_shapes, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
