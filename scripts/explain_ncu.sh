#!/bin/bash
# Nsight Compute's memory counters for every built-in at one shape, beside
# what `tessel explain` predicts for them (docs/explain.md).  Needs a GPU
# and ncu; run from the source tree after a build:
#
#   scripts/explain_ncu.sh [OUTDIR] [MxNxK]
#
# For each built-in it writes OUTDIR/NAME.explain.json (tessel explain
# --json) and OUTDIR/NAME.ncu.csv (ncu --csv, one launch of each of the
# schedule's kernels in a one-repeat bench), then scripts/explain_ncu.py
# prints the table of predicted and counted totals.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-explain-ncu}
shape=${2:-4096x4096x4096}
tessel=${TESSEL:-build/tessel}
mkdir -p "$out"

# The metrics this ncu knows, of those explain predicts: global requests
# and sectors (loads, stores, cp.async), shared wavefronts and conflicts.
ncu --query-metrics > "$out/metrics.txt" 2>&1 || true
metrics=$(grep -oE '^(l1tex__t_(requests|sectors)_pipe_lsu_mem_global_op_(ld|st|ldgsts)[a-z_]*|l1tex__data_pipe_lsu_wavefronts_mem_shared(_op_(ld|st|ldsm|ldgsts))?|l1tex__data_bank_conflicts_pipe_lsu_mem_shared(_op_(ld|st|ldsm|ldgsts))?|smsp__inst_executed_op_(shared_ld|shared_st|ldsm|ldgsts))\b' \
  "$out/metrics.txt" | sort -u | sed 's/$/.sum/' | paste -sd, -)
echo "metrics: $metrics" > "$out/metrics.used"

for s in $("$tessel" list | awk '{print $1}'); do
  dtype=f32
  "$tessel" show "$s" --trace --dtype f16 2>/dev/null | grep -q ts_tensorize &&
    dtype=f16
  "$tessel" explain "$s" --shape "$shape" --dtype "$dtype" \
    --json "$out/$s.explain.json" > "$out/$s.explain.txt"
  kernels=$("$tessel" explain "$s" --shape "$shape" --dtype "$dtype" |
    grep -c '^kernel ')
  ncu --clock-control none --csv --print-units base --metrics "$metrics" \
    --kernel-name regex:'^tessel_' --launch-count "$kernels" \
    "$tessel" bench "$s" --shape "$shape" --dtype "$dtype" --repeats 1 \
    --warmup 0 > "$out/$s.ncu.csv" 2> "$out/$s.ncu.err" ||
    echo "$s: ncu failed (see $out/$s.ncu.err)"
done
python3 scripts/explain_ncu.py "$out"
