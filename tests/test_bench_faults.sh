#!/bin/sh
# tessel bench past a kernel that faults the GPU, at each of two shapes.
# Its rows must name it and the CUDA error, the rows before and after it
# be timed (in a fresh GPU process) at both shapes, the table's header be
# printed once, and the --json record and --csv hold every shape, the
# faulting kernel failed with its error.
#
# Usage: test_bench_faults.sh TESSEL RECORD_ROWS SOURCE_DIR [FAKE_DRIVER]
# With FAKE_DRIVER (tests/fake_cuda.c) it runs without a GPU, and
# TESSEL_FAKE_FAULT makes smem32's kernel fault; without, on the GPU,
# where tests/fault_kernel.cu (--cu) writes through an invalid pointer,
# and it exits 77 (skipped) where there is no GPU.
tessel="$1"
rows="$2"
src="$3"
fake="$4"
fails=0
tmp=$(mktemp -d /tmp/tessel-bench-faults-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0
export TESSEL_CACHE_DIR="$tmp/cache"
unset TESSEL_FAKE_FAULT
# Multiples of 16, as seed 004's kernel needs.
shapes="--shape 64x64x64 --shape 96x32x16 --repeats 3"
if [ -n "$fake" ]; then
  . "$(dirname "$0")/use_fake_driver.sh"
  # The fake's kernels leave C as it was: beta 1 makes every one right.
  clean="naive smem32 coalesced --beta 1 $shapes"
  faulty="$clean"
  culprit=smem32 others="cuBLAS naive coalesced" fault=tessel_smem32
else
  seed004="--cu $src/bench/handwritten/seed004_smem16.cu"
  clean="naive smem32 $shapes $seed004"
  faulty="naive smem32 $shapes --cu $src/tests/fault_kernel.cu $seed004"
  culprit=fault_kernel others="cuBLAS naive smem32 seed004_smem16" fault=
fi

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$1" "$2" || fail "$2 lacks '$1'"; }
count() { # count PATTERN FILE N: the extended regex is on N lines of FILE
  n=$(grep -cE -- "$1" "$2")
  [ "$n" = "$3" ] || fail "'$1' is on $n lines of $2, expected $3"
}

"$tessel" bench $clean > "$tmp/clean.out" 2>&1
st=$?
if grep -q "bench needs a GPU" "$tmp/clean.out"; then
  echo "skipped: $(cat "$tmp/clean.out")"
  exit 77
fi
[ $st = 0 ] || { cat "$tmp/clean.out"; fail "bench without a fault: exit $st"; }

TESSEL_FAKE_FAULT="$fault" "$tessel" bench $faulty --json "$tmp/r.json" \
  --csv "$tmp/r.csv" > "$tmp/fault.out" 2> "$tmp/fault.err"
st=$?
cat "$tmp/fault.out" "$tmp/fault.err"
[ $st = 1 ] || fail "exit $st with a kernel that faults, expected 1"
count "^$culprit +FAIL: faulted the GPU: .*CUDA_ERROR_ILLEGAL_ADDRESS" \
  "$tmp/fault.out" 2
for row in $others; do
  count "^$row +(64x64x64|96x32x16) +NN +[0-9.]+ " "$tmp/fault.out" 2
done
count '^# .*median of 3 runs' "$tmp/fault.out" 1
count '^schedule ' "$tmp/fault.out" 1
has "tessel: bench: $culprit at 64x64x64 faulted the GPU (" "$tmp/fault.err"
has "timing the other rows in a fresh GPU process" "$tmp/fault.err"

"$rows" "$tmp/r.json" > "$tmp/rows.out" 2>&1 ||
  { cat "$tmp/rows.out"; fail "the record does not follow the schema"; }
tab=$(printf '\t')
nothers=$(($(echo $others | wc -w) * 2))
others_re=$(echo $others | tr ' ' '|')
count "^ok${tab}($others_re)${tab}" "$tmp/rows.out" $nothers
count "^failed${tab}$culprit${tab}.*CUDA_ERROR_ILLEGAL_ADDRESS" \
  "$tmp/rows.out" 2
count '^gpu,schedule,' "$tmp/r.csv" 1
count "\"($others_re)\"," "$tmp/r.csv" $nothers

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
