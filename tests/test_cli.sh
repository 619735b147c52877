#!/bin/sh
# The tessel command: exit statuses, one-line errors, and the subcommands'
# output on a machine with or without a GPU.
tessel="$1"
fails=0

expect() { # expect STATUS DESCRIPTION -- COMMAND...
  want=$1; what=$2; shift 3
  out=$("$@" 2>&1); got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; echo "$out" | head -5
    fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
  last="$out"
}

one_line() { # the last output is exactly one line
  if [ "$(printf '%s\n' "$last" | wc -l)" != 1 ]; then
    echo "FAIL: expected a one-line message, got:"; echo "$last"
    fails=$((fails + 1))
  fi
}

contains() {
  case "$last" in
    *"$1"*) ;;
    *) echo "FAIL: output lacks '$1':"; echo "$last" | head -5; fails=$((fails + 1)) ;;
  esac
}

expect 0 "list" -- "$tessel" list
contains "coalesced"
expect 0 "--help" -- "$tessel" --help
contains "exit status: 0 done"; contains "2 a usage error"
for cmd in list show check bench tune; do
  expect 0 "$cmd --help" -- "$tessel" $cmd --help
done
expect 2 "no command" -- "$tessel"
expect 0 "tune --list" -- "$tessel" tune --list
contains "seed003"
expect 2 "unknown space" -- "$tessel" tune nosuch
one_line; contains "unknown space 'nosuch'"
expect 2 "tune without a space" -- "$tessel" tune --shape 64x64x64
one_line; contains "name a space"
expect 2 "--jobs outside tune" -- "$tessel" bench naive --jobs 2
one_line; contains "--jobs is an option of tune"
expect 2 "--cu outside bench" -- "$tessel" tune seed003 --cu x.cu
one_line; contains "--cu is an option of bench"
expect 2 "--tuned in tune" -- "$tessel" tune seed003 --tuned
one_line; contains "--tuned is an option of show, check and bench"
expect 0 "a space's configuration" -- "$tessel" show --trace \
  seed003:block=64x64x32,thread=8x8,order=standard --shape 128x128x64
contains "ts_split(s, j_inner, 8, &j_inner_outer, &j_inner_inner);"
expect 0 "a space's first configuration" -- "$tessel" check seed003 --shape 33x65x17
expect 2 "a configuration that does not parse" -- "$tessel" show seed003:blk
one_line; contains "seed003:blk: ts_config_parse: \"blk\" is not name=value"
expect 1 "a value the knob does not have" -- "$tessel" show seed003:block=1
one_line; contains "block=1 is not one of its values"
expect 0 "--tuned without a record" -- "$tessel" check seed003 --tuned --shape 9x9x9
contains "no tuning record of seed003 at 9x9x9 NN"
expect 2 "unknown command" -- "$tessel" frobnicate
one_line
expect 2 "unknown schedule" -- "$tessel" show nosuch
one_line; contains "unknown schedule 'nosuch'"
expect 2 "zero shape" -- "$tessel" check naive --shape 0x5x5
one_line; contains "--shape must be MxNxK"
expect 2 "bad shape" -- "$tessel" show naive --shape abc
one_line
expect 2 "shape with trailing text" -- "$tessel" show naive --shape 4x4x4x4
one_line
expect 2 "--blocks 0" -- "$tessel" check naive --blocks 0
one_line; contains "--blocks must be an integer in 1..100000 (got '0')"
expect 2 "--blocks garbage" -- "$tessel" check naive --blocks many
one_line; contains "--blocks must be an integer"
expect 2 "--blocks outside check" -- "$tessel" show naive --blocks 3
one_line; contains "--blocks is an option of check"
expect 0 "a sampled check at a shape too large to hold" -- "$tessel" check \
  blocktile2d --shape 40001x30011x33
contains "ok (sampled: "; contains "elements of C"
contains "samples blocks (the matrices do not fit in memory"
expect 0 "--blocks samples a small shape" -- "$tessel" check splitk \
  --shape 300x301x77 --blocks 1
contains "ok (sampled: "
expect 2 "bad layout" -- "$tessel" check naive --layout XY
one_line; contains "--layout must be NN, NT, TN or TT (got 'XY')"
expect 2 "unknown option" -- "$tessel" show naive --frob
one_line
expect 2 "bad alpha" -- "$tessel" check naive --alpha nan
one_line
expect 0 "show --ir" -- "$tessel" show coalesced --ir --shape 37x53x29
contains "bound to threadIdx.x"
expect 0 "show --trace" -- "$tessel" show naive --trace
contains "ts_bind(s, i_inner, TS_THREAD_X);"
expect 0 "show --cuda" -- "$tessel" show coalesced --cuda --arch sm_80
contains "// ptxas (sm_80):"
contains "__launch_bounds__(1024)"
expect 1 "show --cuda unknown arch" -- "$tessel" show naive --cuda --arch sm_11
contains "NVRTC does not know architecture sm_11"
expect 0 "check, several shapes and layouts" -- "$tessel" check naive coalesced \
  --shape 1x1x1 --shape 37x53x29 --layout TT --alpha 2 --beta 0.5

# bench: a table on a GPU; one line and exit 1 without one.
out=$("$tessel" bench naive --shape 64x64x64 --repeats 3 2>&1); st=$?
if [ $st = 0 ]; then
  echo "ok: bench on a GPU"
elif [ $st = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ]; then
  echo "ok: bench without a GPU says why in one line: $out"
else
  echo "FAIL: bench exit $st:"; echo "$out"; fails=$((fails + 1))
fi

# bench --cu: the file is read before the GPU is looked for.
expect 2 "bench --cu, no such file" -- "$tessel" bench naive --cu /nonexistent/k.cu
one_line; contains "cannot read --cu /nonexistent/k.cu: No such file or directory"
expect 2 "--cu outside bench" -- "$tessel" show naive --cu k.cu
one_line; contains "--cu is an option of bench"
expect 2 "bench, neither schedule nor --cu" -- "$tessel" bench --shape 64x64x64
one_line
expect 1 "bench --cu alone without a driver" -- env \
  TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$tessel" bench \
  --cu "$(dirname "$0")/../bench/handwritten/seed001_smem32.cu"
one_line; contains "bench needs a GPU"

# tune runs in a GPU process of its own: its message and status are tune's.
expect 1 "tune without a driver" -- env TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 \
  "$tessel" tune seed003 --shape 64x64x64
one_line; contains "tune needs a GPU: no CUDA driver"

# No driver, an architecture that is not one: one line, exit 1.
expect 1 "bench without a driver" -- env TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 \
  "$tessel" bench naive --shape 64x64x64
one_line
contains "no CUDA driver: /nonexistent/libcuda.so.1 could not be loaded"
expect 2 "show --cuda, not an architecture" -- "$tessel" show naive --cuda --arch compute_90
one_line; contains "--arch must be sm_ and the compute capability, e.g. sm_90 (got 'compute_90')"
expect 2 "check --arch validated too" -- "$tessel" check naive --arch sm_ --shape 8x8x8
one_line; contains "(got 'sm_')"
expect 2 "--ir with --cuda" -- "$tessel" show naive --ir --cuda
one_line; contains "--ir and --cuda exclude each other; give one"
expect 2 "--trace outside show" -- "$tessel" check naive --trace
one_line; contains "--trace is an option of show"

# A check that cannot fit is refused at once, with the numbers.
expect 0 "check at a shape past memory samples" -- "$tessel" check naive --shape 65536x65536x64
contains "check needs about"; contains "and this machine has"
contains "ok (sampled: "

# Schedule files: compiled with the system compiler, mixed with built-ins.
work=$(mktemp -d)
cat > "$work/mine.c" <<'EOF'
#include <tessel.h>
TS_SCHEDULE(rows, "a thread a row") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  return ts_sched_status(s);
}
TS_SCHEDULE(serial, "no binding at all") { return ts_sched_status(s); }
EOF
printf '#include <tessel.h>\nTS_SCHEDULE(oops, "x") { ts_split(s); }\n' > "$work/bad.c"
printf '#include <tessel.h>\n' > "$work/none.c"
expect 0 "check FILE.c, every schedule of it, beside a built-in" -- \
  "$tessel" check "$work/mine.c" naive --shape 37x53x29
contains "mine.c:rows"; contains "mine.c:serial"; contains "naive"
expect 0 "check FILE.c:NAME at 1x1x1" -- "$tessel" check "$work/mine.c:rows" --shape 1x1x1
expect 0 "show FILE.c:NAME" -- "$tessel" show "$work/mine.c:rows" --trace
contains 'ts_sched *s = ts_matmul_named(&def, "rows");'
expect 2 "show FILE.c of two schedules" -- "$tessel" show "$work/mine.c"
one_line; contains "as FILE.c:NAME names one of a file's"
expect 2 "FILE.c:NAME, no such schedule" -- "$tessel" check "$work/mine.c:cols"
one_line; contains "mine.c defines no schedule 'cols'; it defines rows, serial"
expect 1 "FILE.c that does not compile" -- "$tessel" check "$work/bad.c"
contains "bad.c did not compile"; contains "bad.c:2"
expect 1 "FILE.c without schedules" -- "$tessel" check "$work/none.c"
one_line; contains "none.c defines no schedule"
expect 1 "FILE.c that is not there" -- "$tessel" check "$work/gone.c"
one_line; contains "cannot read"
rm -rf "$work"

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
