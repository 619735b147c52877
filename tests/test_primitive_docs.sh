#!/bin/sh
# Every primitive of the public API has its section in docs/primitives.md:
# each `ts_status ts_NAME(ts_sched *s, ...)` that include/tessel/schedule.h
# declares appears as `ts_NAME(` in one of the document's headings (its own
# `## ts_NAME(...)`, or a heading it shares with another primitive).
# ts_sched_fail, which records an error and rewrites nothing, is no
# primitive.
#
# Usage: test_primitive_docs.sh SOURCE_ROOT
root="$1"
header="$root/include/tessel/schedule.h"
doc="$root/docs/primitives.md"
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The declarations may break after the '(' of their parameter list.
names=$(tr '\n' ' ' < "$header" |
        grep -o 'ts_status ts_[a-z0-9_]*( *ts_sched \*s\b' |
        sed 's/^ts_status \(ts_[a-z0-9_]*\)(.*/\1/' | grep -vx ts_sched_fail)
[ "$(echo "$names" | wc -l)" -ge 20 ] || fail "read only: $names"

headings=$(grep '^#' "$doc")
for name in $names; do
  if printf '%s\n' "$headings" | grep -q "\(^\|[^a-z0-9_]\)$name("; then
    echo "ok: $name"
  else
    fail "$name has no heading in docs/primitives.md (## $name(s, ...))"
  fi
done

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
