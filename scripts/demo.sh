#!/usr/bin/env bash
# Sets up and builds tessel, then shows, checks and benchmarks the built-in
# schedules.  Without a GPU it shows and checks, and says in one line why it
# does not time.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -d build/meson-info ] || meson setup build
ninja -C build
tessel=build/tessel
schedules=$($tessel list | awk '{print $1}')
$tessel list
for s in $schedules; do
  echo; echo "== $s"
  $tessel show "$s" --ir --shape 37x53x29
  # The kernel's first line, ptxas's resources; sed reads to the end, where
  # head would leave tessel writing into a closed pipe (SIGPIPE, and the
  # demo stops under pipefail).
  $tessel show "$s" --cuda --shape 4096x4096x4096 | sed -n 1p
done
echo
$tessel check $schedules --shape 1x1x1 --shape 37x53x29 --shape 64x33x100
echo
$tessel bench $schedules --shape 4096x4096x4096 || true
