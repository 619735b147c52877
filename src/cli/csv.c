/*
 * CSV fields as RFC 4180 writes them, for bench's and tune's --csv.
 */
#include "csv.h"

void cli_csv_field(FILE *f, const char *text) {
  fputc('"', f);
  for (const char *c = text; *c; c++) {
    if (*c == '"')
      fputc('"', f);
    fputc(*c, f);
  }
  fputc('"', f);
}
