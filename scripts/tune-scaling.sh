#!/bin/sh
# The scaling of tessel tune over the GPUs of a host (docs/tuning.md,
# "Scaling"): warptiled at the nine shapes of the tuning issue with
# --budget 200, each run with a cold kernel cache (a cache directory of its
# own), on one GPU, then on N GPUs with --gpus N, then (where mpirun and an
# MPI build are there) with mpirun -n N, one rank per GPU.  Prints each
# run's wall time, its ratio to the one GPU's, and each shape's best
# configuration with its full-count time and its ratio to the one GPU's best.
# Usage: scripts/tune-scaling.sh [BUILD_DIR] [N] [OUT_DIR]
set -u
build=${1:-build}
gpus=${2:-4}
out=${3:-tune-scaling}
tessel="$build/tessel"
mkdir -p "$out"
shapes="--shape 1024x1024x1024 --shape 2048x2048x2048 --shape 4096x4096x4096
        --shape 8192x8192x8192 --shape 1536x768x2304 --shape 999x1001x1003
        --shape 4096x4096x256 --shape 8192x128x8192 --shape 128x8192x8192"
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv \
  > "$out/gpus.txt" 2>&1
cat "$out/gpus.txt"

# run NAME COMMAND...: the command with a cold kernel cache of its own, its
# output in OUT/NAME.out, its record in OUT/NAME.json, its wall time in
# OUT/NAME.seconds.
run() {
  name=$1
  shift
  rm -rf "$out/$name.cache"
  start=$(date +%s.%N)
  TESSEL_CACHE_DIR="$out/$name.cache" "$@" --json "$out/$name.json" \
    > "$out/$name.out" 2>&1
  st=$?
  end=$(date +%s.%N)
  # awk, not bc: the GPU hosts need not have bc.
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' > "$out/$name.seconds"
  echo "$name: exit $st, $(cat "$out/$name.seconds") s wall ($*)"
}

# shape_bests NAME: "shape config ms" for each shape's best, by the full
# count (the first pass's where a configuration has no full count).
shape_bests() {
  python3 - "$out/$1.json" <<'EOF'
import json, sys
rec = json.load(open(sys.argv[1]))
for s in rec["shapes"]:
    best = None
    for c in s["configurations"]:
        t = c.get("full") or c.get("first_pass")
        if c.get("state") == "timed" and t and (best is None or t["median_ms"] < best[1]):
            best = (c["config"], t["median_ms"])
    print(s["shape"], best[0] if best else "-", "%.6f" % best[1] if best else "nan")
EOF
}

run one "$tessel" tune warptiled $shapes --budget 200
run gpus "$tessel" tune warptiled $shapes --budget 200 --gpus "$gpus"
runs="gpus"
if command -v mpirun > /dev/null && "$tessel" tune --help | grep -q mpirun; then
  run mpi mpirun -n "$gpus" "$tessel" tune warptiled $shapes --budget 200
  runs="gpus mpi"
fi

echo
echo "== wall time against one GPU (done when at most 0.30 on 4 GPUs, 0.55 on 2)"
one=$(cat "$out/one.seconds")
for r in $runs; do
  echo "$r: $(cat "$out/$r.seconds") s, $(awk -v a="$(cat "$out/$r.seconds")" -v b="$one" 'BEGIN { printf "%.3f", a / b }') of one GPU's $one s"
done
echo
echo "== each shape's best (done when the same configuration, or within 2% of one GPU's time)"
shape_bests one > "$out/one.best"
for r in $runs; do
  shape_bests "$r" > "$out/$r.best"
  echo "-- $r against one GPU"
  # Both list the shapes in the command line's order.
  paste -d ' ' "$out/one.best" "$out/$r.best" | awk '{
    same = $2 == $5 ? "same" : "other"
    printf "%-16s %-6s %8.4f %8.4f ms  %.3f  %s\n", $1, same, $3, $6, $6 / $3, $5 }'
done
