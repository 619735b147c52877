/*
 * CSV fields as RFC 4180 writes them, for bench's and tune's --csv.
 */
#ifndef TS_CLI_CSV_H
#define TS_CLI_CSV_H

#include <stdio.h>

/* `text` quoted, its quotes doubled: a schedule named by its configuration
 * ("warpgroup:bm=128,bn=256") or a GPU's name stays one field. */
void cli_csv_field(FILE *f, const char *text);

#endif
