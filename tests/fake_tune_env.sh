# Sourced by test_tune_gpus.sh and test_tune_mpi.sh, after they set
# $name, $fake (the fake driver, tests/fake_cuda.c) and $rows (record_rows):
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
case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
mkdir "$tmp/lib" && ln -s "$fake" "$tmp/lib/libcublas.so.13"
export TESSEL_CUDA_DRIVER="$fake"
export LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$1" "$2" || fail "$2 lacks '$1'"; }
# states JSON: "timed N failed M", each configuration counted once.
states() {
  "$rows" "$1" | awk -F '\t' '{ n[$1]++ } END { printf "timed %d failed %d", n["timed"], n["failed"] }'
}
