#!/usr/bin/env bash
# Sets up and builds tessel, then shows, checks and benchmarks the built-in
# schedules: in fp32, and the tensor-core ones in fp16.  Without a GPU it
# shows and checks, and says in one line why it does not time.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -d build/meson-info ] || meson setup build
ninja -C build
tessel=build/tessel
schedules=$($tessel list | awk '!/tensor cores/ {print $1}')
tensor=$($tessel list | awk '/tensor cores/ {print $1}' | tr '\n' ' ')
$tessel list
for s in $schedules $tensor; do
  dtype=f32
  case " $tensor " in *" $s "*) dtype=f16 ;; esac
  echo; echo "== $s ($dtype)"
  $tessel show "$s" --ir --shape 37x53x29 --dtype $dtype
  # sed reads it all: head would close the pipe early and fail the script
  $tessel show "$s" --cuda --shape 4096x4096x4096 --dtype $dtype | sed -n 1p
done
echo
$tessel check $schedules --shape 1x1x1 --shape 37x53x29 --shape 64x33x100
$tessel check $tensor --dtype f16 --shape 1x1x1 --shape 37x53x29 --shape 64x33x100
echo
$tessel bench $schedules --shape 4096x4096x4096 || true
$tessel bench $tensor --dtype f16 --shape 4096x4096x4096 || true
