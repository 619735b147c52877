#!/usr/bin/env bash
# Sets up, builds and runs every test suite: the unit suite, then the gpu
# suite (which reports itself skipped where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
opts=()
[ -n "${CUDA_HOME:-}" ] && opts+=(-Dtoolkit_dir="$CUDA_HOME")
[ -d build/meson-info ] || meson setup build "${opts[@]}"
ninja -C build
meson test -C build --suite unit --print-errorlogs
meson test -C build --suite gpu --print-errorlogs
