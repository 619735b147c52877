/*
 * The name nearest a name that is not there, for "did you mean ...": a
 * loop or buffer of a schedule, a knob of a space, a schedule or space of
 * the command line (src/base/nearest.c).
 */
#ifndef TS_NEAREST_H
#define TS_NEAREST_H

/* The one of names[0..n) nearest `name`: equal but for case first, else
 * within a few edits; NULL when none is near. */
const char *ts_nearest_name(const char *name, const char *const *names,
                            int n);

#endif
