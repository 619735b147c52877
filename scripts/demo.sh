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
$tessel list
# The tensor-core schedules (their trace in f16 calls ts_tensorize) take
# f16, bf16 or tf32 inputs and refuse exact fp32: they run in f16 here, the
# rest in fp32.
fp32=() tc=()
for s in $($tessel list | awk '{print $1}'); do
  case "$($tessel show "$s" --trace --dtype f16 2>/dev/null || true)" in
  *ts_tensorize*) tc+=("$s") ;;
  *) fp32+=("$s") ;;
  esac
done
show() { # show SCHEDULE [OPTION...]
  echo; echo "== $*"
  $tessel show "$@" --ir --shape 37x53x29
  # The kernel's first line, ptxas's resources; sed reads to the end, where
  # head would leave tessel writing into a closed pipe (SIGPIPE, and the
  # demo stops under pipefail).
  $tessel show "$@" --cuda --shape 4096x4096x4096 | sed -n 1p
}
for s in "${fp32[@]}"; do show "$s"; done
for s in "${tc[@]}"; do show "$s" --dtype f16; done
shapes=(--shape 1x1x1 --shape 37x53x29 --shape 64x33x100)
echo
$tessel check "${fp32[@]}" "${shapes[@]}"
$tessel check "${tc[@]}" --dtype f16 "${shapes[@]}"
echo
# Without a GPU the first bench says why in one line, and the second is
# not tried (it would only say the same).
err=$(mktemp)
trap 'rm -f "$err"' EXIT
if ! $tessel bench "${fp32[@]}" --shape 4096x4096x4096 2> "$err" &&
   grep -q "bench needs a GPU" "$err"; then
  cat "$err" >&2
  exit 0
fi
cat "$err" >&2
$tessel bench "${tc[@]}" --dtype f16 --shape 4096x4096x4096 || true
