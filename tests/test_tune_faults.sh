#!/bin/sh
# tessel tune past a candidate that crashes the GPU: TESSEL_TUNE_FAULT
# gives one sampled configuration a kernel that writes through an invalid
# C pointer (an illegal address), then (signal:) kills the GPU process
# while it is timed; each run must report the fault, restart, list the
# configuration among the failures with its error, and still report a
# best configuration, once.
#
# Usage: test_tune_faults.sh TESSEL RECORD_ROWS [FAKE_DRIVER]
# RECORD_ROWS (tests/record_rows.c) prints the --json records' rows.
# With FAKE_DRIVER (tests/fake_cuda.c, which runs nothing and faults where
# a kernel's entry point is `gemm`) it runs without a GPU; without, on the
# GPU, and exits 77 (skipped) where there is none.
tessel="$1"
rows="$2"
fake="$3"
fails=0
tmp=$(mktemp -d /tmp/tessel-tune-faults-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0 # a killed GPU process leaves no core file
export TESSEL_CACHE_DIR="$tmp/cache" # a journal of its own
unset TESSEL_TUNE_FAULT
args="--budget 6"
if [ -n "$fake" ]; then
  . "$(dirname "$0")/use_fake_driver.sh"
  args="$args --beta 1" # the fake's kernels leave C as it was
fi

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$1" "$2" || fail "$2 lacks '$1'"; }
count() { # count TEXT FILE N: TEXT is on N lines of FILE
  n=$(grep -cF -- "$1" "$2")
  [ "$n" = "$3" ] || fail "'$1' is on $n lines of $2, expected $3"
}
faulty_tune() { # faulty_tune NAME FAULT ARGS...: output in $tmp/NAME.out
  name=$1; fault=$2; shift 2
  TESSEL_TUNE_FAULT="$fault" "$tessel" tune warptiled "$@" $args \
    > "$tmp/$name.out" 2>&1
  st=$?
  cat "$tmp/$name.out"
  # Exit 1, as for any candidate that fails.
  [ $st = 1 ] || fail "$name: exit $st, expected 1"
  ls "$TESSEL_CACHE_DIR"/tune/*.journal > /dev/null 2>&1 &&
    fail "$name: a journal is left after the run"
}

# The sample --budget 6 draws, from a run without faults.
"$tessel" tune warptiled --shape 256x256x256 $args --json "$tmp/clean.json" \
  > "$tmp/clean.out" 2>&1
st=$?
if grep -q "tune needs a GPU" "$tmp/clean.out"; then
  echo "skipped: $(cat "$tmp/clean.out")"
  exit 77
fi
[ $st = 0 ] || { cat "$tmp/clean.out"; fail "the run without faults: exit $st"; }
# The third timed configuration: its name is warptiled:CONFIG.
config=$("$rows" "$tmp/clean.json" | awk -F '\t' '$1 == "timed"' | sed -n 3p |
  cut -f 2 | sed 's/^warptiled://')
[ -n "$config" ] || { fail "no third timed configuration in clean.json"; exit 1; }
echo "the faulting configuration: $config"

# A kernel that faults: its group of 6 faults, they are timed alone, it
# faults alone.  (--restart clears the journal once, not at each restart.)
faulty_tune fault "$config" --shape 256x256x256 --json "$tmp/fault.json" \
  --csv "$tmp/fault.csv" --restart
has "tessel: tune: one of 6 configurations timed together at 256x256x256 faulted (" "$tmp/fault.out"
has "restarting the GPU process and timing them one at a time (1 of 16 restarts)" "$tmp/fault.out"
has "tessel: tune: configuration $config at 256x256x256 faulted (" "$tmp/fault.out"
has "CUDA_ERROR_ILLEGAL_ADDRESS" "$tmp/fault.out"
has "restarting the GPU process and resuming (2 of 16 restarts)" "$tmp/fault.out"
has "  FAIL $config: " "$tmp/fault.out"
grep -F "  FAIL $config: " "$tmp/fault.out" | grep -q ILLEGAL_ADDRESS ||
  fail "the failure of $config does not name the illegal address"
count "# the best at this shape, " "$tmp/fault.out" 1
count "# by knob, over every shape" "$tmp/fault.out" 1
[ "$(grep -cE '^  1 +[0-9.]+ +[0-9.]+ +[0-9.]+%' "$tmp/fault.out")" = 1 ] ||
  fail "fault.out has not one best configuration ranked 1"
tab=$(printf '\t')
"$rows" "$tmp/fault.json" | grep -F "${tab}warptiled:$config${tab}" |
  grep "^failed${tab}" | grep -q ILLEGAL_ADDRESS ||
  fail "fault.json does not give $config as failed with its error"
count "gpu,shape,configuration" "$tmp/fault.csv" 1
[ -z "$(sort "$tmp/fault.csv" | uniq -d)" ] || fail "fault.csv repeats rows"

# The GPU process killed while the configuration is timed, at the second
# of two shapes: the first is reported once, the crash recorded as the
# configuration's failure.  (At 128x128x1024 every configuration has a
# splitk knob, so none is the faulting one.)
faulty_tune crash "signal:$config" --shape 128x128x1024 --shape 256x256x256
has "tessel: tune: one of 6 configurations timed together at 256x256x256 crashed the GPU process (" "$tmp/crash.out"
has "tessel: tune: configuration $config at 256x256x256 crashed the GPU process (" "$tmp/crash.out"
has "  FAIL $config: crashed the GPU process (" "$tmp/crash.out"
count "# the best at this shape, " "$tmp/crash.out" 2
count "# warptiled 128x128x1024: " "$tmp/crash.out" 1
count "# by knob, over every shape" "$tmp/crash.out" 1

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
