/*
 * The fixed text of each status code (ts_strerror), from the one list of
 * codes in tessel.h: every stage reports through these codes, so their
 * text lives below every stage.
 */
#include "tessel/types.h"

static const struct {
  ts_status code;
  const char *text;
} status_text[] = {
#define TS_STATUS_TEXT(code, text) {code, text},
    TS_STATUS_LIST(TS_STATUS_TEXT)
#undef TS_STATUS_TEXT
};

const char *ts_strerror(ts_status status) {
  if ((int)status < 0 || status >= TS_STATUS_COUNT)
    return "unknown status";
  return status_text[status].text;
}
