#!/bin/sh
# The generated CUDA of every built-in at three shapes, four layouts and
# the types it takes (tests/cuda_digest.c) is what tests/golden/
# cuda_digests.txt says: a reorganisation changes none of it.  Where
# generated code changes on purpose, rewrite the file with
# TESSEL_UPDATE_GOLDEN=1 and say in the commit which kernels changed.
#
# Usage: test_cuda_digests.sh CUDA_DIGEST GOLDEN_FILE
out=$(mktemp /tmp/tessel-digests-XXXXXX) || exit 1
trap 'rm -f "$out"' EXIT
"$1" > "$out" || { echo "FAIL: $1 exits $?"; exit 1; }
if [ -n "$TESSEL_UPDATE_GOLDEN" ]; then
  cp "$out" "$2" && echo "rewrote $2 ($(wc -l < "$2") programs)"
  exit
fi
if diff -u "$2" "$out"; then
  echo "ok: $(wc -l < "$out") programs' CUDA as before"
else
  echo "FAIL: generated CUDA differs from $2 (above)"
  exit 1
fi
