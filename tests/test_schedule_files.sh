#!/bin/sh
# Schedule files on the command line.  A header the file includes is part
# of its cached object: edited, the next show compiles the file again.  A
# schedule or space whose code aborts, writes through NULL, loops forever
# (TESSEL_SCHEDULE_TIMEOUT=1) or calls exit(0) is reported by show, check,
# explain, list and bench as "schedule NAME in FILE crashed (SIGSEGV)" (did
# not return in 1 s, called exit()) with the primitives it applied before,
# the good schedule beside it still runs, and the exit status is 1; so does
# a space that declares a knob wrongly.  Two files of one text in one
# directory each define their own; a file that does not include tessel.h
# is told to; one written for tensor cores (TS_TENSOR_SCHEDULE) and run
# without --dtype is asked for one.
#
# Usage: test_schedule_files.sh TESSEL FAKE_DRIVER
# FAKE_DRIVER (tests/fake_cuda.c) lets bench run without a GPU.
tessel="$1"
fake="$2"
fails=0
tmp=$(mktemp -d /tmp/tessel-schedule-files-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0 # the crashing schedules leave no core files
export TESSEL_CACHE_DIR="$tmp/cache"
export TESSEL_SCHEDULE_TIMEOUT=1
case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
mkdir "$tmp/lib" && ln -s "$fake" "$tmp/lib/libcublas.so.13"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$1" "$2" || { fail "$2 lacks '$1'"; cat "$2"; }; }
# run NAME STATUS ARGS...: tessel ARGS, its output in $tmp/NAME.out
run() {
  name=$1; want=$2; shift 2
  "$tessel" "$@" > "$tmp/$name.out" 2>&1
  st=$?
  [ "$st" = "$want" ] || { fail "tessel $*: exit $st, expected $want"; cat "$tmp/$name.out"; }
}

# ---- An edited header compiles the file again.
cat > "$tmp/tile.h" <<'EOF'
#define TILE 32
EOF
cat > "$tmp/h.c" <<'EOF'
#include <tessel.h>
#include "tile.h"
TS_SCHEDULE(tiled, "TILE x TILE blocks") {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), TILE, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), TILE, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_Y); ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y); ts_bind(s, ji, TS_THREAD_X);
  return ts_sched_status(s);
}
EOF
run header32 0 show "$tmp/h.c"
has "block (32, 32, 1)" "$tmp/header32.out"
echo "#define TILE 16" > "$tmp/tile.h"
run header16 0 show "$tmp/h.c"
has "block (16, 16, 1)" "$tmp/header16.out"

# ---- Schedules that crash, hang and exit beside a good one.
cat > "$tmp/faults.c" <<'EOF'
#include <stdlib.h>
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
TS_SCHEDULE(aborts, "splits i by 8 and aborts") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  abort();
}
TS_SCHEDULE(segfaults, "splits i by 16 and writes through NULL") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 16, &io, &ii);
  *(volatile int *)0 = 1;
  return ts_sched_status(s);
}
TS_SCHEDULE(loops, "splits j by 4 and never returns") {
  ts_loop *jo, *ji;
  ts_split(s, ts_get_loop(s, "j"), 4, &jo, &ji);
  for (volatile int x = 0;; x++)
    ;
  return ts_sched_status(s);
}
TS_SCHEDULE(exits, "splits k by 2 and calls exit(0)") {
  ts_loop *ko, *ki;
  ts_split(s, ts_get_loop(s, "k"), 2, &ko, &ki);
  exit(0);
}
EOF
f="$tmp/faults.c"
# faults NAME: each faulty schedule's line and its trace in $tmp/NAME.out
faults() {
  out="$tmp/$1.out"
  has "schedule aborts in $f crashed (SIGABRT); its primitives until then:" "$out"
  has 'ts_sched *s = ts_matmul_named(&def, "aborts");' "$out"
  has "ts_split(s, i, 8, &i_outer, &i_inner);" "$out"
  has "schedule segfaults in $f crashed (SIGSEGV); its primitives until then:" "$out"
  has "ts_split(s, i, 16, &i_outer, &i_inner);" "$out"
  has "schedule loops in $f did not return in 1 s (TESSEL_SCHEDULE_TIMEOUT)" "$out"
  has "ts_split(s, j, 4, &j_outer, &j_inner);" "$out"
  has "schedule exits in $f called exit(); its primitives until then:" "$out"
  has "ts_split(s, k, 2, &k_outer, &k_inner);" "$out"
}

run check 1 check "$f"
faults check
grep -q "^$f:good .* ok$" "$tmp/check.out" || fail "check: no ok row of good"
grep -q "^$f:exits .* FAIL: the schedule's code crashed, hung or called exit" \
  "$tmp/check.out" || fail "check: no FAIL row of exits"

for sched in aborts segfaults loops exits; do
  run "show-$sched" 1 show "$f:$sched" --trace
  run "explain-$sched" 1 explain "$f:$sched"
done
has "schedule aborts in $f crashed (SIGABRT)" "$tmp/show-aborts.out"
has "ts_split(s, i, 8, &i_outer, &i_inner);" "$tmp/show-aborts.out"
has "schedule segfaults in $f crashed (SIGSEGV)" "$tmp/explain-segfaults.out"
has "ts_split(s, i, 16, &i_outer, &i_inner);" "$tmp/explain-segfaults.out"
has "schedule loops in $f did not return in 1 s" "$tmp/show-loops.out"
has "schedule exits in $f called exit()" "$tmp/explain-exits.out"
run show-good 0 show "$f:good" --trace
has 'ts_sched *s = ts_matmul_named(&def, "good");' "$tmp/show-good.out"

# bench, on the fake driver: the good row timed, each faulty one failed.
TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  run bench 1 bench "$f" --shape 64x64x64 --repeats 2 --warmup 0 --beta 1
faults bench
grep -q "^$f:good *64x64x64 *NN *[0-9.]" "$tmp/bench.out" ||
  fail "bench: no timed row of good"
grep -q "^$f:segfaults *FAIL: the schedule's code crashed" "$tmp/bench.out" ||
  fail "bench: no FAIL row of segfaults"

# ---- Spaces: list enumerates each apart, a configuration runs apart.
cat > "$tmp/spaces.c" <<'EOF'
#include <stdlib.h>
#include <tessel.h>
TS_SPACE(crashy, "writes through NULL at t=16") {
  int64_t t = ts_knob(c, "t", 2, (int64_t[]){8, 16});
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), t, &io, &ii);
  if (t == 16)
    *(volatile int *)0 = 1;
  return ts_sched_status(s);
}
TS_SPACE(hangs, "never returns") {
  (void)c;
  for (volatile int x = 0;; x++)
    ;
  return ts_sched_status(s);
}
TS_SPACE(rows, "a thread a row of a tile of t rows") {
  int64_t t = ts_knob(c, "t", 2, (int64_t[]){8, 16});
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), t, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  return ts_sched_status(s);
}
EOF
sp="$tmp/spaces.c"
run list 1 list "$sp"
has "space crashy in $sp, enumerating its configurations at 1024x1024x1024, crashed (SIGSEGV)" "$tmp/list.out"
has "ts_split(s, i, 16, &i_outer, &i_inner);" "$tmp/list.out"
has "space hangs in $sp, enumerating its configurations at 1024x1024x1024, did not return in 1 s" "$tmp/list.out"
has "$sp:rows             space     a thread a row of a tile of t rows" "$tmp/list.out"
has "    t          8, 16" "$tmp/list.out"
run check-spaces 1 check "$sp:crashy:t=16" "$sp:rows:t=16" "$sp:hangs"
has "space crashy in $sp crashed (SIGSEGV)" "$tmp/check-spaces.out"
has "space hangs in $sp did not return in 1 s" "$tmp/check-spaces.out"
grep -q "^$sp:rows:t=16 .* ok$" "$tmp/check-spaces.out" ||
  fail "check: no ok row of rows:t=16"

# ---- A space that declares a knob wrongly fails alone: list lists the
# other (spaces.c's rows), check runs it, and the exit status is 1.
cat > "$tmp/knobs.c" <<'EOF'
#include <tessel.h>
TS_SPACE(nameless, "a knob without a name") {
  int64_t t = ts_knob(c, NULL, 2, (int64_t[]){8, 16});
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), t, &io, &ii);
  return ts_sched_status(s);
}
EOF
sed -n '/^TS_SPACE(rows,/,/^}/p' "$sp" >> "$tmp/knobs.c" # a good one beside
k="$tmp/knobs.c"
why='ts_space_schedule: nameless: a knob needs a name and at least one value (got "(null)", 2)'
run list-knobs 1 list "$k"
has "tessel: $k:nameless: $why" "$tmp/list-knobs.out"
has "$k:rows             space     a thread a row of a tile of t rows" "$tmp/list-knobs.out"
has "    t          8, 16" "$tmp/list-knobs.out"
run check-knobs 1 check "$k" --shape 64x64x64
grep -q "^$k:nameless .* FAIL: the space declares a knob wrongly" "$tmp/check-knobs.out" ||
  fail "check: no FAIL row of nameless"
has "$why" "$tmp/check-knobs.out"
grep -q "^$k:rows .* ok$" "$tmp/check-knobs.out" || fail "check: no ok row of rows"
run show-knobs 0 show "$k:rows" --shape 64x64x64
run tune-knobs 1 tune "$k:nameless"
has "tessel: $k:nameless: $why" "$tmp/tune-knobs.out"

# ---- Two files of one text in one directory each define their own.
cp "$sp" "$tmp/spaces2.c"
run twins-check 0 check "$sp:rows" "$tmp/spaces2.c:rows" --shape 64x64x64
grep -q "^$tmp/spaces2.c:rows .* ok$" "$tmp/twins-check.out" ||
  fail "check: the copy of spaces.c defines no rows"

# ---- A file without #include <tessel.h> is told to include it.
grep -v '#include <tessel.h>' "$f" > "$tmp/noinclude.c"
run noinclude 1 show "$tmp/noinclude.c"
has "noinclude.c did not compile" "$tmp/noinclude.out"
has "hint: $tmp/noinclude.c does not include <tessel.h>; add \`#include <tessel.h>\` at its top" "$tmp/noinclude.out"
printf '#include <tessel.h>\nTS_SCHEDULE(x, "y") { ts_nosuch(s); }\n' > "$tmp/included.c"
run included 1 show "$tmp/included.c"
grep -q "hint:" "$tmp/included.out" && fail "a file that includes tessel.h gets the hint"

# ---- A schedule or space written for tensor cores asks for --dtype.
cat > "$tmp/tensor.c" <<'EOF'
#include <tessel.h>
TS_TENSOR_SCHEDULE(mma, "for f16, bf16 or tf32") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 8, &io, &ii);
  ts_vectorize(s, ii); /* 8 lanes: 2-byte types only */
  return ts_sched_status(s);
}
TS_TENSOR_SPACE(mmas, "for f16, bf16 or tf32") {
  int64_t t = ts_knob(c, "t", 2, (int64_t[]){8, 16});
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), t, &io, &ii);
  ts_vectorize(s, ii);
  return ts_sched_status(s);
}
EOF
t="$tmp/tensor.c"
for name in "$t" "$t:mma" "$t:mmas"; do
  run tensor 2 show "$name"
  has "runs on tensor cores, which take --dtype f16, bf16 or tf32 (fp32 rounded to tf32), not exact f32" "$tmp/tensor.out"
done
run tensor-check 1 check "$t" --shape 64x64x64
grep -q "^$t:mma .* needs --dtype f16, bf16 or tf32" "$tmp/tensor-check.out" ||
  fail "check: no row of mma asking for --dtype"
run tensor-tune 2 tune "$t"
has "runs on tensor cores" "$tmp/tensor-tune.out"

# ---- Each command that runs a file's code says so in its --help.
for cmd in list show check explain bench; do
  "$tessel" $cmd --help | grep -q 'runs past \$TESSEL_SCHEDULE_TIMEOUT' ||
    fail "tessel $cmd --help does not name TESSEL_SCHEDULE_TIMEOUT"
done

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
