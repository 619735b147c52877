/*
 * Plots of the records of runs (plot.c), with PLplot's cairo PNG driver.
 */
#ifndef TS_CLI_PLOT_H
#define TS_CLI_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "record.h"

/* Draws the record into a PNG at path: a bench record as TFLOP/s bars per
 * schedule and shape, cuBLAS a dashed line over each shape; a tune record
 * as each timed configuration's TFLOP/s grouped by the values of `knob`
 * (NULL: the first knob), the best marked, a panel per shape.  False with
 * the reason in err (no cairo driver, an unknown knob, nothing timed). */
bool plot_record(const record_data *d, const char *path, const char *knob,
                 char *err, size_t len);

#endif
