#!/bin/sh
# docs/tutorial.md and its schedule files, examples/tutorial/*.c, kept true:
# - every file checks correct on the reference executor at 37x53x29 and
#   1x1x1 (in f16 where it tensorizes);
# - each step's schedule makes the kernel of the built-in whose measured
#   speed the tutorial cites (the same CUDA C, the names aside: the
#   schedule's, and C.local, which ts_cache_write names the accumulators
#   that lowering otherwise calls acc);
# - step 10's schedule, which adapts to the layout and element type, checks
#   correct in every layout in f16, bf16 and tf32, at a shape where every
#   operand is packed and at one whose rows the TMA can copy as they lie;
# (test_excerpts.sh checks the tutorial's excerpts of output.)
#
# Usage: test_tutorial.sh TESSEL SOURCE_ROOT
tessel="$1"
root="$2"
fails=0
tmp=$(mktemp -d /tmp/tessel-tutorial-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 1

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---- every file correct at two shapes ------------------------------------
files=$(ls examples/tutorial/*.c)
[ "$(echo "$files" | wc -l)" -ge 10 ] || fail "fewer than 10 tutorial files"
for f in $files; do
  dtype=f32
  grep -q ts_tensorize "$f" && dtype=f16
  if "$tessel" check "$f" --dtype $dtype --shape 37x53x29 --shape 1x1x1 \
       > "$tmp/out" 2>&1; then
    echo "ok: check $f ($dtype)"
  else
    fail "check $f ($dtype):"; cat "$tmp/out"
  fi
done

# ---- each step's kernel is its built-in's ---------------------------------
# same_kernel SCHEDULE BUILTIN [OPTIONS...]: the CUDA C of the two at
# 4096^3, each with its own name replaced, is the same.
same_kernel() {
  mine="$1"; theirs="$2"; shift 2
  cuda_of "$mine" "$@" > "$tmp/mine.cu"
  cuda_of "$theirs" "$@" > "$tmp/theirs.cu"
  if ! grep -q __global__ "$tmp/mine.cu"; then
    fail "$mine: no kernel"; cat "$tmp/mine.cu"
  elif cmp -s "$tmp/mine.cu" "$tmp/theirs.cu"; then
    echo "ok: $mine is $theirs $*"
  else
    fail "$mine is not $theirs $*:"
    diff "$tmp/theirs.cu" "$tmp/mine.cu" | head -20
  fi
}
# cuda_of SCHEDULE [OPTIONS...]: its CUDA C with its name as NAME (the name
# of FILE.c:NAME[:config] or NAME[:config]), in its kernels' names too
# (tessel_NAME_pack_b), and C_local as acc.
cuda_of() {
  name=${1#*.c:}; name=${name%%:*}
  sched="$1"; shift
  "$tessel" show "$sched" --cuda --shape 4096x4096x4096 "$@" 2>&1 |
    sed -e "s/\"$name\"/\"NAME\"/g" -e "s/\btessel_$name\b/tessel_NAME/g" \
        -e "s/\btessel_${name}_/tessel_NAME_/g" -e 's/\bC_local\b/acc/g'
}
t=examples/tutorial
same_kernel $t/step1.c:rows_first naive
same_kernel $t/step2.c:cols_first coalesced
same_kernel $t/step3.c:shared32 smem32
same_kernel $t/step4.c:column8 blocktile1d
same_kernel $t/step4.c:tile8x8 blocktile2d
same_kernel $t/step5.c:float4s vectorized
same_kernel $t/step5.c:padded bankfree
same_kernel $t/step5.c:prefetched double_buffered
same_kernel $t/step6.c:warps warptiled
same_kernel $t/step6.c:stages3 warptiled:buffers=3
same_kernel $t/step7.c:warp_space warptiled
same_kernel $t/step7.c:warp_space:bm=128,bn=256,warp=64x32,swizzle=8 \
  warptiled:bm=128,bn=256,warp=64x32,swizzle=8
same_kernel $t/step8.c:mma128 tc128 --dtype f16
same_kernel $t/step8.c:mma128 tc128 --dtype tf32
for layout in NN NT TN TT; do
  same_kernel $t/step9.c:hopper wgws --dtype f16 --layout $layout
done
same_kernel $t/step9.c:hopper wgws --dtype bf16 --layout NT
# step 9 takes 16-bit types only, and says so rather than failing deeper
if "$tessel" check $t/step9.c --dtype tf32 --shape 37x53x29 > "$tmp/out" 2>&1; then
  fail "step9.c checked in tf32, which it refuses"
elif grep -q "hopper: A and B must be 16-bit" "$tmp/out"; then
  echo "ok: step9.c refuses tf32"
else
  fail "step9.c in tf32:"; cat "$tmp/out"
fi

# step 10 reads the definition: tf32's k step, C's transpose (NN), A from
# registers (TT, TN), packs (B in tf32 TN; at 37x53x29 both, whose rows
# the TMA cannot copy): wgws's kernel in every layout and type
for dtype in f16 bf16 tf32; do
  for layout in NN NT TN TT; do
    same_kernel $t/step10.c:any_type wgws --dtype $dtype --layout $layout
    if "$tessel" check $t/step10.c:any_type --layout $layout --dtype $dtype \
         --shape 37x53x29 --shape 40x72x24 > "$tmp/out" 2>&1; then
      echo "ok: check step10.c:any_type --layout $layout --dtype $dtype"
    else
      fail "check step10.c:any_type --layout $layout --dtype $dtype:"
      cat "$tmp/out"
    fi
  done
done

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
