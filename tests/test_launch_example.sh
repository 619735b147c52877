#!/usr/bin/env bash
# examples/launch.c, a program linked with -lcuda as users link it, on the
# fake driver (tests/fake_cuda.c as libcuda.so.1 on the library path): it
# compiles and saves each case's kernel, loads it back, launches it once
# on its own stream and 100 times from a CUDA graph.  The fake runs
# nothing, so C keeps its values: the program must say that every result
# differs and exit 1 (its check can fail), after launching each entry
# point 101 times and each graph once; the kernels of extents chosen at
# launch run at four shapes, each launch on a grid of its own.  The gpu
# suite runs it on a GPU, where every result must match.
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
[ "$cases" -eq 13 ] || fail "$cases cases ran, expected 13"
# Six cases launch once and from a graph; seven take their extents at
# launch and run at 4 shapes each (4 of them all but 4096^3), the first
# also from a graph.
[ "$(grep -c 'DIFFERS' "$tmp/out.txt")" -eq 43 ] ||
  fail "expected each launch and graph to differ"
[ "$(ls "$tmp/kernels"/*.tsk | wc -l)" -eq 13 ] || fail "expected 13 saved kernels"
# Each case's leading dimensions travel in its saved kernel.
grep -q '^warptiled 37x53x29 NN f32, lda 36 ldb 60 ldc 60, from .* (cubins: sm_80 sm_90)$' \
  "$tmp/out.txt" || fail "the saved kernel lost its leading dimensions or cubins"
grep -q '^warptiled 64x64x64 NN f32, lda 72 ldb 72 ldc 72, extents and leading dimensions at launch, from .* (cubins: sm_80 sm_90)$' \
  "$tmp/out.txt" || fail "the saved kernel lost its extents chosen at launch"
[ "$(grep -c '^graph$' "$tmp/launches.txt")" -eq 13 ] || fail "expected 13 graphs"
# Launches by entry point and grid: 101 for a case of compiled extents
# (once, then 100 in the graph's capture), 103 or 104 for one of extents
# chosen at launch (3 or 4 shapes, 100 more at the first), each on the grid its
# shape needs: warptiled's 128 x 128 tiles, tc64's 64 x 64, wgws's
# 128 x 256, the warpgroup configuration's 128 x 128.
expect_launches() { # expect_launches COUNT "NAME GX GY GZ"
  local n
  n=$(grep -c "^$2\$" "$tmp/launches.txt" || true)
  [ "$n" -eq "$1" ] || fail "expected $1 launches of '$2', got $n"
}
expect_launches 101 'tessel_naive 1 1 1'
expect_launches 508 'tessel_warptiled 1 1 1' # 2 x 101 + 3 x (101 + 1)
expect_launches 3 'tessel_warptiled 8 8 1'   # at 999x1001x1003
expect_launches 1 'tessel_warptiled 32 32 1' # at 4096^3
expect_launches 1 'tessel_tc64 16 16 1'
expect_launches 204 'tessel_wgws 4 8 1'      # 2 x 101 at 999, and 2
expect_launches 102 'tessel_wgws 16 32 1'    # 101 at 4096^3, and 1
expect_launches 1 'tessel_warpgroup 32 32 1'
echo "ok"
