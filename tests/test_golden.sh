#!/bin/sh
# show --steps and show --ir --provenance of a few built-ins, and explain
# of every built-in, compared line for line with the outputs kept in
# tests/golden/ (each file's name says its command: smem32.steps is
# `tessel show smem32 --steps --shape 64x64x64`, warptiled.explain is
# `tessel explain warptiled --shape 512x512x512`, in f16 for the
# tensor-core ones).  A change to the printer, the trace or a primitive that
# changes them shows here as a diff; where the change is meant, rewrite
# the files with TESSEL_UPDATE_GOLDEN=1 and read their diff before
# committing it.
#
# Usage: test_golden.sh TESSEL GOLDEN_DIR
tessel="$1"
golden="$2"
fails=0
tmp=$(mktemp -d /tmp/tessel-golden-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

# golden FILE COMMAND ARGUMENTS...: tessel COMMAND ARGUMENTS is FILE
golden() {
  file="$1"; shift
  if ! "$tessel" "$@" > "$tmp/out" 2> "$tmp/err"; then
    echo "FAIL: $*: exit $?"; cat "$tmp/err"; fails=$((fails + 1))
    return
  fi
  if [ -n "$TESSEL_UPDATE_GOLDEN" ]; then
    cp "$tmp/out" "$golden/$file" && echo "rewrote $file"
  elif diff -u "$golden/$file" "$tmp/out"; then
    echo "ok: $*"
  else
    echo "FAIL: $* differs from $file (above)"; fails=$((fails + 1))
  fi
}

small="--shape 64x64x64"
golden smem32.steps show smem32 --steps $small
golden tvm_step2.steps show tvm_step2 --steps $small
golden smem32.provenance show smem32 --ir --provenance $small
golden splitk.provenance show splitk --ir --provenance $small

# Every built-in; the tensor-core ones (their trace tensorizes) in f16.
for s in $("$tessel" list | awk '{print $1}'); do
  dtype=f32
  "$tessel" show "$s" --trace --dtype f16 | grep -q ts_tensorize && dtype=f16
  golden "$s.explain" explain "$s" --shape 512x512x512 --dtype $dtype
done
[ "$(ls "$golden"/*.explain | wc -l)" = "$("$tessel" list | wc -l)" ] ||
  { echo "FAIL: a golden explain report for a built-in that no longer is"; fails=$((fails + 1)); }

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
