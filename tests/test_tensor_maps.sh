#!/bin/sh
# The operands' tensor maps are encoded once for each (map parameter,
# buffer), not at every launch: tessel bench of the TMA built-ins on the
# fake driver (tests/fake_cuda.c), which counts cuTensorMapEncodeTiled's
# maps and the distinct ones (base address, box) it was asked for.  At
# 128x256x128 in f16 the fake's 1 MiB L2 gives 8 input sets; the kernel's
# 24 launches (the check, 3 warm-ups, 20 timed) take 6 of them, as they
# alternate with cuBLAS's: 12 maps (A and B), where encoding at every
# launch made 48.  In tf32 at K odd the maps are of ts_pack's copies in
# the workspace (below).
# Usage: test_tensor_maps.sh TESSEL FAKE_DRIVER
tessel="$1"
fake="$2"
case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/lib" && ln -s "$fake" "$work/lib/libcublas.so.13"
fails=0

for schedule in wgtma wgws; do
  rm -f "$work/maps"
  if ! TESSEL_CUDA_DRIVER="$fake" TESSEL_FAKE_TENSOR_MAPS="$work/maps" \
      LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$tessel" bench "$schedule" --dtype f16 --shape 128x256x128 --beta 1 \
      --warmup 3 --repeats 20 > "$work/out" 2>&1; then
    echo "FAIL: tessel bench $schedule on the fake driver:"; cat "$work/out"
    fails=$((fails + 1))
    continue
  fi
  read -r _ encoded _ distinct < "$work/maps" || encoded=
  if [ -z "$encoded" ] || [ "$encoded" != "$distinct" ] ||
     [ "$distinct" -lt 4 ]; then
    echo "FAIL: $schedule: $encoded tensor maps encoded, $distinct distinct" \
         "(map, buffer) pairs; expected one encoding each, of 2 maps over" \
         "several input sets"
    fails=$((fails + 1))
  else
    echo "ok: $schedule: $encoded tensor maps encoded, one for each of" \
         "$distinct (map, buffer) pairs"
  fi
done

# tf32 at K and N not multiples of 4 (no row of A or B 16-byte aligned):
# wgws copies ts_pack's copies of op(A) and op(B) from the
# workspace, so its 2 maps are encoded once whatever the input set (the
# workspace is the module's), fp32 (CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7:
# the pack rounded the values already), K real elements (not the row
# padded to 16 bytes) by M and N rows, and B's map lies past A's packed
# copy at its 256-byte-aligned offset: 128 x 128 and 128 x 132 fp32
# elements.  (At N a multiple of 4, B would be read as it lies, n-major, on
# C's transpose.)
for case in "126 65536" "130 67584"; do
  set -- $case
  k=$1 offset=$2
  rm -f "$work/maps"
  if ! TESSEL_CUDA_DRIVER="$fake" TESSEL_FAKE_TENSOR_MAPS="$work/maps" \
      LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$tessel" bench wgws --dtype tf32 --shape "128x254x$k" --beta 1 \
      --warmup 3 --repeats 20 > "$work/out" 2>&1; then
    echo "FAIL: tessel bench wgws --dtype tf32 on the fake driver:"
    cat "$work/out"
    fails=$((fails + 1))
    continue
  fi
  a=$(grep "^map type 7 dims $k 128 box 32 128 base " "$work/maps")
  b=$(grep "^map type 7 dims $k 254 box 32 256 base " "$work/maps")
  if [ "$(head -n 1 "$work/maps")" != "encoded 2 distinct 2" ] ||
     [ -z "$a" ] || [ -z "$b" ] ||
     [ $((${b##* } - ${a##* })) -ne "$offset" ]; then
    echo "FAIL: wgws tf32 K=$k: expected 2 fp32 maps of the workspace," \
         "$k x 128 and $k x 254, $offset bytes apart; the fake saw:"
    cat "$work/maps"
    fails=$((fails + 1))
  else
    echo "ok: wgws tf32 K=$k: the packed copies' maps, $offset bytes apart" \
         "in the workspace, encoded once"
  fi
done
exit $((fails != 0))
