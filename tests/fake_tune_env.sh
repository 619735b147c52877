# Sourced by test_tune_gpus.sh, test_tune_mpi.sh and test_tune_report.sh,
# after they set $name, $fake (the fake driver, tests/fake_cuda.c) and
# $rows (record_rows, for states):
# a directory of the test's own ($tmp) whose leftover processes ($pids)
# are killed at exit, the fake as the CUDA driver and as cuBLAS (under
# libcublas.so.13 on LD_LIBRARY_PATH), and the checks both make.
fails=0
tmp=$(mktemp -d "/tmp/tessel-$name-XXXXXX") || exit 1
pids=""
cleanup() {
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -c 0
. "$(dirname "$0")/use_fake_driver.sh"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$1" "$2" || fail "$2 lacks '$1'"; }
# states JSON: "timed N failed M", each configuration counted once.
states() {
  "$rows" "$1" | awk -F '\t' '{ n[$1]++ } END { printf "timed %d failed %d", n["timed"], n["failed"] }'
}
# taken_up OUT LAUNCHES OTHERS SHAPE SHARES RECORD WHOLE: a run taken up
# again after an interruption, OUT its output and LAUNCHES its launch log:
# no cuBLAS call of SHAPE (M N K) on the other GPUs (OTHERS, a pattern of
# their device numbers), SHAPE's 12 first-pass results all from journals,
# its "first pass on" line SHARES (none timed again), and its record
# RECORD is WHOLE, an uninterrupted run's.
taken_up() {
  again=$(grep -c "^cublas $(echo "$4" | tr x ' ') device $3\$" "$2")
  [ "$again" = 0 ] ||
    fail "taken up again, the other GPUs made $again cuBLAS calls of $4's first pass: their journals' results should have been taken"
  sed -n "/^# seed003 $4:/,/^# first pass on/p" "$1" > "$1.shape"
  has "12 timed by an interrupted run, taken from its journal" "$1.shape"
  has "$5" "$1.shape"
  cmp -s "$6" "$7" ||
    fail "the record at $4 of the run taken up again differs from the uninterrupted run's: $(diff "$6" "$7")"
}
