#!/usr/bin/env bash
# Sets up, builds and runs every test suite: the unit suite (which includes
# valgrind runs of the command), the unit suite under ASan and UBSan, then the
# gpu suite (which reports itself skipped where there is no GPU).
#
# Each test runs where it tells most in the least time: the tests that run
# the tessel command from a shell script (the suite 'shell') run once, under
# the sanitizers; the fuzzer runs every knob case on the executor in the
# plain build and one in four under the sanitizers; both builds share one
# kernel cache, so the sanitizer build compiles no kernel the plain build
# compiled.  meson uses ccache where it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
opts=(-Dwerror=true -Dmpi=enabled -Dtest_kernel_cache="$PWD/build-kernel-cache")
[ -n "${CUDA_HOME:-}" ] && opts+=(-Dtoolkit_dir="$CUDA_HOME")
# A build the demo set up has its options set again (-Dwerror=true).
setup() { # setup DIR OPTION...
  if [ -d "$1/meson-info" ]; then meson configure "$@"; else meson setup "$@"; fi
}
setup build "${opts[@]}"
setup build-asan -Dsanitizers=true "${opts[@]}"
ninja -C build
ninja -C build-asan
meson test -C build --suite unit --no-suite shell --print-errorlogs
# The unit suite again, built with ASan and UBSan (any report fails it).
meson test -C build-asan --suite unit --print-errorlogs
meson test -C build --suite gpu --print-errorlogs
