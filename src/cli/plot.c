/*
 * tessel plot RECORD.json -o FILE.png: a record of a run drawn with PLplot
 * (its cairo PNG driver).  A bench record: TFLOP/s bars, a group per
 * shape and a colour per schedule, cuBLAS a dashed line over each group.
 * A tune record: a panel per shape, each timed configuration a point
 * (its full count, else its first pass), grouped along x by the values
 * of one knob, the best marked, cuBLAS a dashed line.  Titles name the
 * GPU and the date.  Built without PLplot, the command says how to get
 * it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "plot.h"
#include "record.h"

static const char *plot_help =
    "usage: tessel plot RECORD.json -o FILE.png [--knob NAME]\n"
    "Draws a record of a run (bench or tune --json) as a PNG: for a bench\n"
    "record, TFLOP/s per schedule and shape with cuBLAS as a dashed line;\n"
    "for a tune record, each timed configuration's TFLOP/s (its full count,\n"
    "else its first pass) grouped by the values of --knob (default the\n"
    "first knob), the best marked, cuBLAS as a dashed line, a panel per\n"
    "shape.  Needs tessel built with PLplot (libplplot-dev and\n"
    "plplot-driver-cairo).\n"
    "Exit status: 0 drawn, 1 a record unreadable or no PLplot, 2 a usage\n"
    "error (-o FILE that cannot be written among them).\n";

#ifdef TESSEL_HAVE_PLPLOT
#include <plplot.h>

/* ---- Drawing helpers ---------------------------------------------------------- */

/* Colour map 0: 0 the white background, 1 black, 2 grey, 3 red (the best),
 * then the schedules' colours (the "tab10" palette). */
enum { C_BG, C_BLACK, C_GREY, C_RED, C_FIRST, NCOLOURS = 16 };
static const int palette[NCOLOURS][3] = {
    {255, 255, 255}, {0, 0, 0},       {150, 150, 150}, {214, 39, 40},
    {31, 119, 180},  {255, 127, 14},  {44, 160, 44},   {148, 103, 189},
    {140, 86, 75},   {227, 119, 194}, {127, 127, 127}, {188, 189, 34},
    {23, 190, 207},  {174, 199, 232}, {255, 187, 120}, {152, 223, 138}};

static int schedule_colour(int i) { return C_FIRST + i % (NCOLOURS - C_FIRST); }

/* PLplot ends the process on a fatal error; this says so on one line. */
static int on_plplot_exit(const char *message) {
  fprintf(stderr, "tessel: plot: PLplot: %s\n", message);
  return EXIT_FAIL;
}

static bool have_cairo_png(void) {
  const char *menu_items[128], *name_items[128];
  const char **menu = menu_items, **names = name_items;
  int n = 128;
  plgDevs(&menu, &names, &n);
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], "pngcairo") == 0)
      return true;
  return false;
}

/* A PNG of width x height pixels at path, started; false with a reason. */
static bool start_png(const char *path, int width, int height, char *err,
                      size_t len) {
  if (!have_cairo_png()) {
    snprintf(err, len, "PLplot has no pngcairo device: install "
             "plplot-driver-cairo");
    return false;
  }
  plsexit(on_plplot_exit);
  plsdev("pngcairo");
  plsfnam(path);
  plspage(0, 0, width, height, 0, 0);
  plscmap0n(NCOLOURS);
  for (int i = 0; i < NCOLOURS; i++)
    plscol0(i, palette[i][0], palette[i][1], palette[i][2]);
  plinit();
  plfont(1);
  return true;
}

/* "2026-11-22" of "2026-11-22T08:12:00Z". */
static void title_of(const record_data *d, const char *what, char *out,
                     size_t len) {
  snprintf(out, len, "%s on %s, %.10s", what, d->gpu, d->date);
}

/* A dashed horizontal line from x0 to x1 at y. */
/* A character's width in the cairo driver's sans font as a share of its
 * height, at most (lower case and digits run 0.55 to 0.65 on its PNGs;
 * small sizes round up). */
#define CHAR_WIDTH 0.72

/* The character scale, at most `most`, at which text spans no more than
 * `share` of the viewport's width, so that a long label or caption is
 * made smaller rather than run into its neighbour or off the plot.
 * Leaves that scale set. */
static PLFLT fit_text(const char *text, double share, PLFLT most) {
  PLFLT x0, x1, y0, y1, v0, v1, w0, w1, def, height;
  plgspa(&x0, &x1, &y0, &y1); /* the subpage, in mm */
  plgvpd(&v0, &v1, &w0, &w1); /* the viewport, a fraction of it */
  plschr(0, most);
  plgchr(&def, &height); /* mm, at this scale */
  PLFLT len = (PLFLT)strlen(text) * height * CHAR_WIDTH,
        room = share * (v1 - v0) * (x1 - x0);
  PLFLT scale = len > room && len > 0 ? most * room / len : most;
  plschr(0, scale);
  return scale;
}

/* text fitted as fit_text does, but no smaller than `least`: past that it
 * is cut, ending in "...", at the length that fits at `least`. */
static void fit_caption(char *text, double share, PLFLT most, PLFLT least) {
  if (fit_text(text, share, most) >= least)
    return;
  PLFLT x0, x1, y0, y1, v0, v1, w0, w1, def, height;
  plschr(0, least);
  plgspa(&x0, &x1, &y0, &y1);
  plgvpd(&v0, &v1, &w0, &w1);
  plgchr(&def, &height);
  size_t fits = (size_t)(share * (v1 - v0) * (x1 - x0) / (height * CHAR_WIDTH));
  if (fits > 3 && fits < strlen(text))
    strcpy(text + fits - 3, "...");
}

static void reference_line(double x0, double x1, double y) {
  PLFLT x[2] = {x0, x1}, yy[2] = {y, y};
  plcol0(C_BLACK);
  pllsty(2);
  plwidth(2);
  plline(2, x, yy);
  pllsty(1);
  plwidth(1);
}

/* ---- Bench records -------------------------------------------------------------- */

/* The index of s in list (growing it when absent), or -1 when full. */
static int index_of(const char **list, int *n, int max, const char *s) {
  for (int i = 0; i < *n; i++)
    if (strcmp(list[i], s) == 0)
      return i;
  if (*n == max)
    return -1;
  list[*n] = s;
  return (*n)++;
}

enum { MAX_GROUPS = 64, MAX_NAMES = 64 };

/* A shape's group: "1024x1024x1024 NN f32" (into out). */
static const char *group_key(const record_row *r, char *out, size_t len) {
  snprintf(out, len, "%s %s %s", r->shape, r->layout, r->types);
  return out;
}

typedef struct {
  char keys[MAX_GROUPS][96];
  const char *key[MAX_GROUPS];
  int ngroups;
  const char *names[MAX_NAMES];
  int nnames;
  double ymax;
} bench_layout;

static bool layout_bench(const record_data *d, bench_layout *b, char *err,
                         size_t len) {
  for (int i = 0; i < d->nrows; i++) {
    const record_row *r = &d->rows[i];
    char key[96];
    group_key(r, key, sizeof(key));
    int before = b->ngroups;
    int g = index_of(b->key, &b->ngroups, MAX_GROUPS, key);
    if (g < 0 || (!r->cublas &&
                  index_of(b->names, &b->nnames, MAX_NAMES, r->name) < 0)) {
      snprintf(err, len, "more than %d shapes or schedules to plot",
               MAX_GROUPS);
      return false;
    }
    if (b->ngroups > before) { /* a new group: its text kept */
      snprintf(b->keys[g], sizeof(b->keys[g]), "%s", key);
      b->key[g] = b->keys[g];
    }
    if (r->valid && r->tflops > b->ymax)
      b->ymax = r->tflops;
  }
  if (b->ymax <= 0) {
    snprintf(err, len, "nothing in the record was timed with a correct "
             "result");
    return false;
  }
  return true;
}

static void draw_bar(double x0, double x1, double y, int colour) {
  PLFLT x[4] = {x0, x0, x1, x1}, yy[4] = {0, y, y, 0};
  plcol0(colour);
  plfill(4, x, yy);
  plcol0(C_BLACK);
  plline(4, x, yy);
}

/* Group g's bars and cuBLAS's line, and its label under the axis. */
static void draw_group(const record_data *d, const bench_layout *b, int g) {
  double width = 0.8 / b->nnames;
  for (int i = 0; i < d->nrows; i++) {
    const record_row *r = &d->rows[i];
    char key[96];
    if (strcmp(group_key(r, key, sizeof(key)), b->key[g]) != 0)
      continue;
    if (r->cublas) {
      if (r->valid)
        reference_line(g + 0.04, g + 0.96, r->tflops);
      continue;
    }
    int s = 0;
    while (strcmp(b->names[s], r->name) != 0)
      s++;
    double x0 = g + 0.1 + s * width;
    if (r->valid) {
      draw_bar(x0, x0 + width * 0.9, r->tflops, schedule_colour(s));
    } else {
      plcol0(C_RED);
      plptex(x0 + width * 0.45, b->ymax * 0.02, 0, 1, 0, r->state);
    }
  }
  /* The shape on a line, its layout and types under it, each fitted to
   * the group's width: neighbouring groups' labels never meet. */
  char shape[96];
  snprintf(shape, sizeof(shape), "%.*s", (int)strcspn(b->key[g], " "),
           b->key[g]);
  const char *rest = b->key[g] + strlen(shape) + (b->key[g][strlen(shape)] != 0);
  double share = 0.9 / b->ngroups;
  plcol0(C_BLACK);
  fit_text(shape, share, 1.0);
  plmtex("b", 1.6, (g + 0.5) / b->ngroups, 0.5, shape);
  fit_text(rest, share, 1.0);
  plmtex("b", 2.9, (g + 0.5) / b->ngroups, 0.5, rest);
  plschr(0, 1.0);
}

static void bench_legend(const bench_layout *b) {
  int n = b->nnames + 1;
  PLINT opts[MAX_NAMES + 1], colours[MAX_NAMES + 1], patterns[MAX_NAMES + 1],
      styles[MAX_NAMES + 1];
  PLFLT scales[MAX_NAMES + 1], widths[MAX_NAMES + 1];
  const char *text[MAX_NAMES + 1];
  for (int i = 0; i < n; i++) {
    bool blas = i == b->nnames;
    opts[i] = blas ? PL_LEGEND_LINE : PL_LEGEND_COLOR_BOX;
    colours[i] = blas ? C_BLACK : schedule_colour(i);
    patterns[i] = 0;
    styles[i] = blas ? 2 : 1;
    scales[i] = 0.8;
    widths[i] = blas ? 2 : 1;
    text[i] = blas ? "cuBLAS" : b->names[i];
  }
  PLINT black[MAX_NAMES + 1];
  for (int i = 0; i < n; i++)
    black[i] = C_BLACK;
  PLFLT w, h;
  pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
           PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT,
           0.02, 0, 0.06, C_BG, C_BLACK, 1, 0, 0, n, opts, 1.0, 0.9, 2.0, 0,
           black, text, colours, patterns, scales, widths, colours, styles,
           widths, NULL, NULL, NULL, NULL);
}

static bool plot_bench(const record_data *d, const char *path, char *err,
                       size_t len) {
  bench_layout *b = calloc(1, sizeof(*b));
  if (!b) {
    snprintf(err, len, "out of memory");
    return false;
  }
  bool ok = layout_bench(d, b, err, len);
  /* The legend, right of the bars, gets room for its longest name (about
   * 14 pixels a character), so a file's schedule is not cut off. */
  int longest = 6;
  for (int i = 0; ok && i < b->nnames; i++)
    longest = (int)strlen(b->names[i]) > longest ? (int)strlen(b->names[i])
                                                  : longest;
  int legend = 120 + 14 * longest, width = 200 + 330 * b->ngroups + legend;
  ok = ok && start_png(path, width, 700, err, len);
  if (ok) {
    char title[256];
    title_of(d, "tessel bench", title, sizeof(title));
    pladv(0);
    /* Left of the axis, room for its numbers and, apart, its title. */
    plvpor(0.12, 1.0 - (double)(legend + 20) / width, 0.16, 0.9);
    plwind(0, b->ngroups, 0, b->ymax * 1.12);
    plcol0(C_BLACK);
    plbox("bc", 0, 0, "bcnstv", 0, 0);
    for (int g = 0; g < b->ngroups; g++)
      draw_group(d, b, g);
    bench_legend(b);
    plcol0(C_BLACK);
    plmtex("t", 2.0, 0.5, 0.5, title);
    plmtex("l", 4.2, 0.5, 0.5, "TFLOP/s");
    plmtex("b", 4.6, 0.5, 0.5, "shape (M x N x K), layout, types");
    plend();
  }
  free(b);
  return ok;
}

/* ---- Tune records ---------------------------------------------------------------- */

/* The value of knob in a configuration's text ("bm=128,bn=64,..."), into
 * out; false when the text has no such knob. */
static bool knob_value(const char *config, const char *knob, char *out,
                       size_t len) {
  size_t n = strlen(knob);
  for (const char *p = config; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (strncmp(p, knob, n) == 0 && p[n] == '=') {
      size_t v = strcspn(p + n + 1, ",");
      snprintf(out, len, "%.*s", (int)v, p + n + 1);
      return true;
    }
  }
  return false;
}

static bool is_number(const char *s) {
  char *end;
  strtod(s, &end);
  return end != s && !*end;
}

static int by_number(const void *a, const void *b) {
  double x = strtod(*(const char *const *)a, NULL),
         y = strtod(*(const char *const *)b, NULL);
  return (x > y) - (x < y);
}

/* A knob's values in numeric order where they are all numbers (else as
 * they first appear), their counts following them. */
static void sort_values(const char **value, int n, int *count) {
  for (int i = 0; i < n; i++)
    if (!is_number(value[i]))
      return;
  int old[MAX_GROUPS];
  const char *before[MAX_GROUPS];
  memcpy(old, count, sizeof(int) * (size_t)n);
  memcpy(before, value, sizeof(*value) * (size_t)n);
  qsort(value, (size_t)n, sizeof(*value), by_number);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (value[i] == before[j])
        count[i] = old[j];
}

typedef struct {
  const char *shape[MAX_GROUPS]; /* a panel each */
  int nshapes;
  char knob[64];
} tune_layout;

/* Light grey lines between the knob's n groups of points, from 0 to top,
 * so that where one value's points end and the next's begin shows. */
static void separate_groups(int n, double top) {
  plcol0(C_GREY);
  pllsty(2);
  for (int g = 1; g < n; g++) {
    PLFLT x[2] = {g, g}, y[2] = {0, top};
    plline(2, x, y);
  }
  pllsty(1);
  plcol0(C_BLACK);
}

/* One shape's panel: its configurations grouped by the knob's values. */
static bool draw_panel(const record_data *d, const tune_layout *t,
                       const char *shape, char *err, size_t len) {
  char values[MAX_GROUPS][64];
  const char *value[MAX_GROUPS];
  int nvalues = 0, count[MAX_GROUPS] = {0};
  double ymax = 0, blas = 0;
  const record_row *best = NULL;
  for (int i = 0; i < d->nrows; i++) {
    const record_row *r = &d->rows[i];
    if (strcmp(r->shape, shape) != 0 || !r->valid)
      continue;
    ymax = r->tflops > ymax ? r->tflops : ymax;
    if (r->cublas) {
      blas = r->tflops;
      continue;
    }
    char v[64];
    if (!knob_value(r->config, t->knob, v, sizeof(v))) {
      snprintf(err, len, "configuration %s has no knob '%s'", r->config,
               t->knob);
      return false;
    }
    int g = 0;
    while (g < nvalues && strcmp(value[g], v) != 0)
      g++;
    if (g == nvalues) {
      if (nvalues == MAX_GROUPS) {
        snprintf(err, len, "knob '%s' has more than %d values", t->knob,
                 MAX_GROUPS);
        return false;
      }
      snprintf(values[g], sizeof(values[g]), "%s", v);
      value[nvalues++] = values[g];
    }
    count[g]++;
    if (!best || r->tflops > best->tflops)
      best = r;
  }
  if (!best) {
    snprintf(err, len, "no configuration at %s was timed with a correct "
             "result", shape);
    return false;
  }
  sort_values(value, nvalues, count);
  char title[512];
  title_of(d, "", title, sizeof(title));
  char head[640];
  snprintf(head, sizeof(head), "tessel tune %s at %s%s", d->space, shape,
           title);
  pladv(0);
  /* Room left of the axis for its numbers and, apart from them, its
   * title (at two panels a page the characters are as large and the
   * panel half as high). */
  plvpor(0.1, 0.95, 0.18, 0.8);
  plwind(0, nvalues, 0, ymax * 1.15);
  plcol0(C_BLACK);
  plbox("bc", 0, 0, "bcnstv", 0, 0);
  separate_groups(nvalues, ymax * 1.15);
  for (int g = 0; g < nvalues; g++) {
    fit_text(value[g], 0.9 / nvalues, 1.0);
    plmtex("b", 1.4, (g + 0.5) / nvalues, 0.5, value[g]);
  }
  plschr(0, 1.0);
  int placed[MAX_GROUPS] = {0};
  double bx = 0;
  for (int i = 0; i < d->nrows; i++) {
    const record_row *r = &d->rows[i];
    char v[64];
    if (strcmp(r->shape, shape) != 0 || !r->valid || r->cublas ||
        !knob_value(r->config, t->knob, v, sizeof(v)))
      continue;
    int g = 0;
    while (strcmp(value[g], v) != 0)
      g++;
    PLFLT x = g + 0.15 + 0.7 * (count[g] > 1 ? (double)placed[g]++ / (count[g] - 1)
                                              : 0.5),
          y = r->tflops;
    if (r == best)
      bx = x;
    plcol0(schedule_colour(0));
    plssym(0, 0.9);
    plpoin(1, &x, &y, 17);
  }
  if (blas > 0) {
    reference_line(0, nvalues, blas);
    char text[64];
    snprintf(text, sizeof(text), "cuBLAS %.1f", blas);
    plptex(0.02 * nvalues, blas + ymax * 0.045, 1, 0, 0, text);
  }
  PLFLT x = bx, y = best->tflops;
  plcol0(C_RED);
  plssym(0, 2.2);
  plpoin(1, &x, &y, 18);
  char label[400]; /* its speed first, which a cut never takes */
  snprintf(label, sizeof(label), "best (star), %.1f TFLOP/s: %s",
           best->tflops, best->config);
  fit_caption(label, 0.97, 0.85, 0.6); /* within the panel, legible */
  plmtex("t", 0.9, 0.0, 0.0, label);
  plcol0(C_BLACK);
  fit_text(head, 1.0, 1.0);
  plmtex("t", 2.5, 0.5, 0.5, head);
  plschr(0, 1.0);
  plmtex("l", 4.4, 0.5, 0.5, "TFLOP/s (full count, else first pass)");
  char xl[128];
  snprintf(xl, sizeof(xl), "knob %s", t->knob);
  plmtex("b", 3.0, 0.5, 0.5, xl);
  return true;
}

static bool plot_tune(const record_data *d, const char *path, const char *knob,
                      char *err, size_t len) {
  tune_layout t = {0};
  for (int i = 0; i < d->nrows; i++) {
    const record_row *r = &d->rows[i];
    if (index_of(t.shape, &t.nshapes, MAX_GROUPS, r->shape) < 0) {
      snprintf(err, len, "more than %d shapes to plot", MAX_GROUPS);
      return false;
    }
    if (!t.knob[0] && !knob && r->config) /* the first knob */
      snprintf(t.knob, sizeof(t.knob), "%.*s",
               (int)strcspn(r->config, "="), r->config);
  }
  if (knob)
    snprintf(t.knob, sizeof(t.knob), "%s", knob);
  if (!t.knob[0]) {
    snprintf(err, len, "the record holds no configuration");
    return false;
  }
  if (!start_png(path, 1200, 560 * t.nshapes, err, len))
    return false;
  plssub(1, t.nshapes);
  bool ok = true;
  for (int s = 0; ok && s < t.nshapes; s++)
    ok = draw_panel(d, &t, t.shape[s], err, len);
  plend();
  return ok;
}

/* A line for each row that was timed but whose result differs from
 * cuBLAS's: its time is no speed, so it is not drawn as one. */
static void say_not_drawn(const record_data *d) {
  for (int i = 0; i < d->nrows; i++) {
    const record_row *r = &d->rows[i];
    if (r->timed && !r->valid)
      printf("# %s %s %s: not drawn as a speed, %s (%s)\n", r->name, r->shape,
             r->layout, d->space ? "left out" : "marked where its bar would be",
             r->error[0] ? r->error : r->state);
  }
}

bool plot_record(const record_data *d, const char *path, const char *knob,
                 char *err, size_t len) {
  say_not_drawn(d);
  return d->space ? plot_tune(d, path, knob, err, len)
                  : plot_bench(d, path, err, len);
}
#endif

int cli_plot(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *knob = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(plot_help, stdout);
      return 0;
    }
    if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--knob") == 0) &&
        i + 1 < argc) {
      *(argv[i][1] == 'o' ? &out : &knob) = argv[i + 1];
      i++;
    } else if (argv[i][0] != '-' && !in) {
      in = argv[i];
    } else {
      fprintf(stderr, "tessel: plot: unexpected '%s' (usage: tessel plot "
              "RECORD.json -o FILE.png [--knob NAME])\n", argv[i]);
      return EXIT_USAGE;
    }
  }
  if (!in || !out) {
    fprintf(stderr, "tessel: plot takes a record and -o FILE.png (usage: "
            "tessel plot RECORD.json -o FILE.png [--knob NAME])\n");
    return EXIT_USAGE;
  }
  /* Before PLplot opens it: PLplot ends the process on a file it cannot
   * open, after a page of its own messages. */
  if (!cli_check_output("-o", out))
    return EXIT_USAGE;
#ifdef TESSEL_HAVE_PLPLOT
  char err[512];
  record_data *d = record_read(in, err, sizeof(err));
  bool ok = d && plot_record(d, out, knob, err, sizeof(err));
  if (!ok)
    fprintf(stderr, "tessel: plot: %s\n", err);
  record_data_free(d);
  return ok ? 0 : EXIT_FAIL;
#else
  (void)knob;
  fprintf(stderr, "tessel: plot: this tessel was built without PLplot: "
          "install libplplot-dev and plplot-driver-cairo (scripts/setup.sh "
          "does) and build again\n");
  return EXIT_FAIL;
#endif
}
