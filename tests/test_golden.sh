#!/bin/sh
# show --steps and show --ir --provenance of a few built-ins, compared
# line for line with the outputs kept in tests/golden/ (each file's name
# says its command: smem32.steps is `tessel show smem32 --steps --shape
# 64x64x64`).  A change to the printer, the trace or a primitive that
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

# golden FILE ARGUMENTS...: tessel show ARGUMENTS --shape 64x64x64 is FILE
golden() {
  file="$1"; shift
  if ! "$tessel" show "$@" --shape 64x64x64 > "$tmp/out" 2> "$tmp/err"; then
    echo "FAIL: show $*: exit $?"; cat "$tmp/err"; fails=$((fails + 1))
    return
  fi
  if [ -n "$TESSEL_UPDATE_GOLDEN" ]; then
    cp "$tmp/out" "$golden/$file" && echo "rewrote $file"
  elif diff -u "$golden/$file" "$tmp/out"; then
    echo "ok: show $*"
  else
    echo "FAIL: show $* differs from $file (above)"; fails=$((fails + 1))
  fi
}

golden smem32.steps smem32 --steps
golden tvm_step2.steps tvm_step2 --steps
golden smem32.provenance smem32 --ir --provenance
golden splitk.provenance splitk --ir --provenance

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
