#!/usr/bin/env bash
# examples/launch.c, a program linked with -lcuda as users link it, on the
# fake driver (tests/fake_cuda.c as libcuda.so.1 on the library path): it
# compiles and saves each case's kernel, loads it back, launches it once
# on its own stream and 100 times from a CUDA graph.  The fake runs
# nothing, so C keeps its values: the program must say that every result
# differs and exit 1 (its check can fail), after launching each entry
# point 101 times and each graph once.  The gpu suite runs it on a GPU,
# where every result must match.
#
# Usage: test_launch_example.sh LAUNCH_EXAMPLE FAKE_DRIVER
set -euo pipefail
example="$1"
fake="$2"
tmp=$(mktemp -d /tmp/tessel-launch-example-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/lib" "$tmp/kernels"
ln -s "$fake" "$tmp/lib/libcuda.so.1"
status=0
LD_LIBRARY_PATH="$tmp/lib" TESSEL_CUDA_DRIVER="$fake" \
  TESSEL_FAKE_LAUNCH_LOG="$tmp/launches.txt" \
  "$example" "$tmp/kernels" > "$tmp/out.txt" 2>&1 || status=$?
cat "$tmp/out.txt"
fail() { echo "FAIL: $*"; exit 1; }
[ "$status" -eq 1 ] || fail "exit status $status, expected 1 (a result differs)"
cases=$(grep -c ', from ' "$tmp/out.txt")
[ "$cases" -eq 6 ] || fail "$cases cases ran, expected 6"
[ "$(grep -c 'DIFFERS' "$tmp/out.txt")" -eq 12 ] ||
  fail "expected each case's launch and graph to differ"
[ "$(ls "$tmp/kernels"/*.tsk | wc -l)" -eq 6 ] || fail "expected 6 saved kernels"
# Each case's leading dimensions travel in its saved kernel.
grep -q '^warptiled 37x53x29 NN f32, lda 36 ldb 60 ldc 60, from .* (cubins: sm_80 sm_90)$' \
  "$tmp/out.txt" || fail "the saved kernel lost its leading dimensions or cubins"
[ "$(grep -c '^graph$' "$tmp/launches.txt")" -eq 6 ] || fail "expected 6 graphs"
# Every entry point launched a multiple of 101 times (once, then 100 in
# the graph's capture).
awk '$1 != "graph" { n[$1]++ } END { for (e in n) if (n[e] % 101) {
       print "entry " e " launched " n[e] " times"; exit 1 } }' \
  "$tmp/launches.txt" || fail "launch counts"
echo "ok"
