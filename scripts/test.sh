#!/usr/bin/env bash
# Sets up, builds and runs every test suite: the unit suite (which includes
# valgrind runs of the command), the unit suite under ASan and UBSan, then the
# gpu suite (which reports itself skipped where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
opts=(-Dwerror=true -Dmpi=enabled)
[ -n "${CUDA_HOME:-}" ] && opts+=(-Dtoolkit_dir="$CUDA_HOME")
# A build the demo set up has its options set again (-Dwerror=true).
setup() { # setup DIR OPTION...
  if [ -d "$1/meson-info" ]; then meson configure "$@"; else meson setup "$@"; fi
}
setup build "${opts[@]}"
ninja -C build
meson test -C build --suite unit --print-errorlogs
# The unit suite again, built with ASan and UBSan (any report fails it).
setup build-asan -Dsanitizers=true "${opts[@]}"
ninja -C build-asan
meson test -C build-asan --suite unit --print-errorlogs
meson test -C build --suite gpu --print-errorlogs
