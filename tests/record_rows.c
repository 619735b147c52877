/*
 * Prints the rows of a record of a run (src/cli/record_read.c), one line
 * each, for shell tests to grep:
 *
 *   STATE <tab> NAME <tab> SHAPE <tab> LAYOUT <tab> TYPES <tab> MEDIAN_MS <tab> ERROR
 *
 * NAME is SPACE:CONFIG for a tune record's configurations; MEDIAN_MS is
 * "-" for a row not timed.  Exit 1 with the reason when the record does
 * not read or does not follow the schema.
 */
#include <stdio.h>

#include "cli/record.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: record_rows RECORD.json\n");
    return 2;
  }
  char err[512];
  record_data *d = record_read(argv[1], err, sizeof(err));
  if (!d) {
    fprintf(stderr, "record_rows: %s\n", err);
    return 1;
  }
  for (int i = 0; i < d->nrows; i++) {
    const record_row *r = &d->rows[i];
    printf("%s\t%s\t%s\t%s\t%s\t", r->state, r->name, r->shape, r->layout,
           r->types);
    if (r->timed)
      printf("%.6f", r->median_ms);
    else
      printf("-");
    printf("\t%s\n", r->error);
  }
  record_data_free(d);
  return 0;
}
