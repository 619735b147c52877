#!/bin/sh
# Where a schedule file's primitives are called, named as a compiler names
# the place of an error: show prints a refused primitive as
# "FILE:LINE:COL: error: ts_NAME: ..." with the call's line underlined,
# the whole call where libclang is installed and the primitive's name
# without it (TESSEL_LIBCLANG=off); --steps heads each step and
# --provenance labels each loop with the line of its call; check's row
# carries "FILE:LINE: error:"; the file is named as the command line names
# it.  A schedule file compiled by clang, which gives a call over several
# lines its last line, is reported at the call's first line with libclang.
#
# Usage: test_call_locations.sh TESSEL
tessel="$1"
case "$tessel" in /*) ;; *) tessel="$PWD/$tessel" ;; esac
fails=0
tmp=$(mktemp -d /tmp/tessel-locations-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
export TESSEL_CACHE_DIR="$tmp/cache"
cd "$tmp" || exit 1

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# has TEXT FILE: a line of FILE is TEXT
has() { grep -qxF -- "$1" "$2" || { fail "$2 lacks the line '$1'"; cat "$2"; }; }
# run NAME STATUS ARGS...: tessel ARGS, its output in NAME.out
run() {
  name=$1; want=$2; shift 2
  "$tessel" "$@" > "$name.out" 2>&1
  st=$?
  [ "$st" = "$want" ] || { fail "tessel $*: exit $st, expected $want"; cat "$name.out"; }
}

mkdir sub
cat > sub/loc.c <<'C'
#include <tessel.h>
TS_SCHEDULE(line, "a refused split on one line") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  ts_bind(s, io, TS_BLOCK_Y);
  ts_split(s, ts_get_loop(s, "j"), 0, &io, &ii);
  return ts_sched_status(s);
}
TS_SCHEDULE(lines, "a refused split over two lines") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "j"),
           0, &io, &ii);
  return ts_sched_status(s);
}
C
msg="ts_split: argument 3 'factor' must be >= 1 (got 0) for loop \"j\""

# ---- Without libclang: the column of the primitive's name.
TESSEL_LIBCLANG=off run plain 1 show sub/loc.c:line --shape 64x64x64
has "sub/loc.c:6:3: error: $msg" plain.out
has '    6 |   ts_split(s, ts_get_loop(s, "j"), 0, &io, &ii);' plain.out
has '      |   ^~~~~~~~' plain.out
has '      for j in 0..64:   <-- here' plain.out
[ "$(head -1 plain.out | cut -c1-10)" = "sub/loc.c:" ] ||
  fail "the error does not start the output"
TESSEL_LIBCLANG=off run plain2 1 show sub/loc.c:lines --shape 64x64x64
has "sub/loc.c:11:3: error: $msg" plain2.out
has '      |   ^~~~~~~~' plain2.out

# ---- With libclang: the whole call underlined, to its line's end when it
# goes on.  A machine without libclang runs the rest and reports the test
# skipped (scripts/setup.sh installs libclang).
no_libclang=""
if ldconfig -p | grep -q 'libclang[-.0-9]*\.so'; then
  run clang 1 show sub/loc.c:line --shape 64x64x64
  has "sub/loc.c:6:3: error: $msg" clang.out
  has '      |   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~' clang.out
  run clang2 1 show sub/loc.c:lines --shape 64x64x64
  has '   11 |   ts_split(s, ts_get_loop(s, "j"),' clang2.out
  has '      |   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~' clang2.out
  if command -v clang > /dev/null; then
    CC=clang run byclang 1 show sub/loc.c:lines --shape 64x64x64
    has "sub/loc.c:11:3: error: $msg" byclang.out
  fi
else
  no_libclang="no libclang on this machine (libclang1-14; scripts/setup.sh installs it)"
fi

# ---- The steps, the provenance and check's row name the lines.
cat > sub/good.c <<'C'
#include <tessel.h>
TS_SCHEDULE(good, "8x8 tiles") {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 8, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_Y); ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y); ts_bind(s, ji, TS_THREAD_X);
  return ts_sched_status(s);
}
C
run steps 0 show sub/good.c --steps --shape 64x64x64
has 'sub/good.c:4: step 1: ts_loop *i_outer, *i_inner;' steps.out
has 'sub/good.c:8: step 7: ts_bind(s, j_inner, TS_THREAD_X);' steps.out
run prov 0 show sub/good.c --ir --provenance --shape 64x64x64
grep -qF 'for i.outer in 0..8 bound to blockIdx.y:   # sub/good.c:4: ts_split, step 1' prov.out ||
  { fail "no located provenance"; cat prov.out; }
run check 1 check sub/loc.c:line --shape 64x64x64
grep -qF "sub/loc.c:6: error: $msg" check.out || { fail "check's row"; cat check.out; }

# ---- Named as the command line names the file, from where it runs.
(cd sub && run ../here 0 show good.c --steps --shape 64x64x64)
has 'good.c:4: step 1: ts_loop *i_outer, *i_inner;' here.out

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
[ -z "$no_libclang" ] || { echo "skipped with libclang: $no_libclang"; exit 77; }
echo "ok"
