#!/bin/sh
# tessel tune's report on the fake driver (tests/fake_cuda.c): a run where
# every configuration differs from cuBLAS names none the best and records
# none; knob values never timed read "-" in the tables by knob; --gpus
# naming a GPU the host has not is refused before anything runs; and with
# MPIRUN, progress written under mpirun to a file is lines, never a
# carriage return.
#
# Usage: test_tune_report.sh TESSEL FAKE_DRIVER [MPIRUN]
tessel="$1"
fake="$2"
mpirun="$3"
name=tune-report
. "$(dirname "$0")/fake_tune_env.sh"
unset TESSEL_TUNE_FAULT TESSEL_FAKE_FAULT TESSEL_FAKE_GPUS

lacks() { ! grep -qF -- "$1" "$2" || fail "$2 has '$1'"; }
count() { # count PATTERN FILE N: the extended regex is on N lines of FILE
  n=$(grep -cE -- "$1" "$2")
  [ "$n" = "$3" ] || fail "'$1' is on $n lines of $2, expected $3"
}

# 1. The fake's kernels leave C as it was, and beta 0 poisons C with NaN:
# every configuration differs from cuBLAS.
TESSEL_CACHE_DIR="$tmp/wrong" "$tessel" tune warptiled --shape 256x256x256 \
  --budget 4 > "$tmp/wrong.out" 2>&1
st=$?
cat "$tmp/wrong.out"
[ $st = 1 ] || fail "every configuration wrong: exit $st, expected 1"
has "# no correct configuration at this shape: every one timed differs from cuBLAS" "$tmp/wrong.out"
lacks "# the best at this shape" "$tmp/wrong.out"
lacks "# recorded for this GPU" "$tmp/wrong.out"
lacks "TFLOP/s (" "$tmp/wrong.out" # no progress line names a wrong one best
[ -z "$(ls "$tmp/wrong/tune" 2>/dev/null)" ] ||
  fail "a tuning record was written: $(ls "$tmp/wrong/tune")"

# 2. --budget 4 leaves values of bm and bn untimed.
TESSEL_CACHE_DIR="$tmp/right" "$tessel" tune warptiled --shape 256x256x256 \
  --budget 4 --beta 1 > "$tmp/right.out" 2>&1 ||
  { cat "$tmp/right.out"; fail "tune --beta 1 failed"; }
sed -n '/^# by knob/,$p' "$tmp/right.out" > "$tmp/knobs.out"
count '^  [^ ]+ +0 +0\.00 +0\.00$' "$tmp/knobs.out" 0
n=$(grep -cE '^  [^ ]+ +0 +- +-$' "$tmp/knobs.out")
[ "$n" -gt 0 ] || { cat "$tmp/knobs.out"; fail "no untimed knob value reads '-'"; }

# 3. --gpus 0,5 on a host of 2 GPUs: refused, nothing launched.
TESSEL_FAKE_GPUS=2 TESSEL_FAKE_LAUNCH_LOG="$tmp/launches" \
  TESSEL_CACHE_DIR="$tmp/gpus" "$tessel" tune seed003 --shape 64x64x64 \
  --beta 1 --budget 4 --gpus 0,5 > "$tmp/gpus.out" 2>&1
st=$?
cat "$tmp/gpus.out"
[ $st = 1 ] || fail "--gpus 0,5 on 2 GPUs: exit $st, expected 1"
has "tessel: tune: --gpus names GPU 5, but the CUDA driver sees 2 GPUs (0 to 1)" "$tmp/gpus.out"
lacks "# tune seed003" "$tmp/gpus.out"
[ ! -s "$tmp/launches" ] || fail "--gpus 0,5 launched kernels before refusing"

# 4. Under mpirun a rank's stdout is a pseudo-terminal, even into a file.
if [ -n "$mpirun" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  TESSEL_CACHE_DIR="$tmp/mpi" "$mpirun" --oversubscribe -n 1 \
    -x TESSEL_CUDA_DRIVER -x LD_LIBRARY_PATH -x TESSEL_CACHE_DIR \
    "$tessel" tune seed003 --shape 64x64x64 --beta 1 --budget 4 \
    > "$tmp/mpi.out" 2>&1 || { cat "$tmp/mpi.out"; fail "tune under mpirun failed"; }
  cr=$(tr -cd '\r' < "$tmp/mpi.out" | wc -c)
  [ "$cr" = 0 ] || fail "tune under mpirun wrote $cr carriage returns to a file"
  count '^# timed 4/4' "$tmp/mpi.out" 1
fi

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
