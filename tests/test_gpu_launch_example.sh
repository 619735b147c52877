#!/usr/bin/env bash
# examples/launch.c on a GPU: every case's launch and graph replay must
# match the reference (exit 0).  Skipped (77) where the driver sees no GPU.
# Usage: test_gpu_launch_example.sh LAUNCH_EXAMPLE
set -euo pipefail
if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "gpu suite skipped: no GPU (nvidia-smi sees none)"
  exit 77
fi
tmp=$(mktemp -d /tmp/tessel-launch-example-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$1" "$tmp"
