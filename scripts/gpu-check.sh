#!/bin/sh
# The whole GPU check in one go: the gpu test suite, compute-sanitizer on a
# small non-divisible shape, and the benchmark of the built-in schedules
# beside the seeds' hand-written kernels (bench/handwritten): those of seeds
# 001 and 004 in layout NN, those of seed 000 in NT, as the posts store B;
# the NN runs' records (--json) and their plots go to OUT_DIR too.
# Usage: scripts/gpu-check.sh BUILD_DIR OUT_DIR [SHAPE...]
# Runs the binaries of an existing build (built elsewhere if need be).
set -u
build=${1:-build}
out=${2:-gpu-out}
shift 2 2>/dev/null
shapes=${*:-4096x4096x4096}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv \
  > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
echo "== gpu suite"
"$build/tests/test_gpu" > "$out/gpu-suite.log" 2>&1
echo "gpu suite exit $?"; tail -n 4 "$out/gpu-suite.log"
schedules=$("$build/tessel" list | awk '{print $1}' | tr '\n' ' ')
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck initcheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 \
      "$build/tessel" bench $schedules --shape 100x75x37 --repeats 1 --warmup 0 \
      > "$out/sanitizer-$tool.log" 2>&1
    echo "compute-sanitizer $tool exit $? ($(grep -cE 'ERROR SUMMARY: 0 errors|SUMMARY: 0 hazards displayed \(0 errors' "$out/sanitizer-$tool.log") clean summaries)"
  done
fi
hand=bench/handwritten
echo "== bench"
for shape in $shapes; do
  "$build/tessel" bench $schedules --cu $hand/seed001_smem32.cu \
    --cu $hand/seed004_smem16.cu --shape "$shape" \
    --csv "$out/bench-$shape.csv" --json "$out/bench-$shape.json" 2>&1 |
    tee -a "$out/bench.txt"
  # The record drawn (tessel plot says so where PLplot is missing).
  "$build/tessel" plot "$out/bench-$shape.json" -o "$out/bench-$shape.png"
done
echo "== bench, layout NT"
for shape in $shapes; do
  "$build/tessel" bench $schedules --cu $hand/seed000_matmul3.cu \
    --cu $hand/seed000_matmul4.cu --layout NT --shape "$shape" \
    --csv "$out/bench-NT-$shape.csv" 2>&1 | tee -a "$out/bench.txt"
done
