#!/bin/sh
# The excerpts of tessel's output that documents show are what it prints
# now.  A fenced block whose first line is `$ tessel ...` is run from the
# source root (show, check, list, tune --list, explain and compare only:
# they need no GPU and take seconds), and the block's other lines must appear in the output in
# order, each run of lines between `...` lines (the document's elisions)
# contiguous.
#
# Usage: test_excerpts.sh TESSEL SOURCE_ROOT DOC:MIN_BLOCKS...
tessel="$1"
root="$2"
shift 2
fails=0
tmp=$(mktemp -d /tmp/tessel-excerpts-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 1

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# split DOC DIR: block n of DOC becomes DIR/n.cmd (its command, less "$ ")
# and DIR/n.want (the lines it shows).
split() {
  mkdir "$2" && awk -v dir="$2" '
    /^```/ { if (inblock) { inblock = 0; next } inblock = 1; first = 1; next }
    inblock && first { first = 0
      if ($0 ~ /^\$ tessel /) { n++; sub(/^\$ /, ""); print > (dir "/" n ".cmd"); keep = 1 }
      else keep = 0
      next }
    inblock && keep { print > (dir "/" n ".want") }' "$1"
}

# shown WANT OUT: WANT's runs of lines are in OUT, in order.
shown() {
  awk -v outfile="$2" '
    BEGIN { while ((getline l < outfile) > 0) out[++n] = l; at = 1 }
    $0 == "..." { if (len) find(); next }
    { chunk[++len] = $0 }
    END { if (len) find(); exit bad }
    function find(   i, j, ok) {
      for (i = at; i + len - 1 <= n; i++) {
        ok = 1
        for (j = 1; j <= len && ok; j++) ok = out[i + j - 1] == chunk[j]
        if (ok) { at = i + len; len = 0; return }
      }
      print "  not in the output (in order): " chunk[1]; bad = 1; len = 0
    }' "$1"
}

for arg in "$@"; do
  doc=${arg%:*}; min=${arg##*:}
  dir="$tmp/$(basename "$doc" .md)"
  split "$doc" "$dir" || { fail "cannot read $doc"; continue; }
  blocks=$(ls "$dir"/*.cmd 2> /dev/null | wc -l)
  [ "$blocks" -ge "$min" ] ||
    fail "$doc shows $blocks excerpts of output, fewer than the $min expected"
  for cmd in "$dir"/*.cmd; do
    [ -e "$cmd" ] || continue
    want="${cmd%.cmd}.want"
    line=$(cat "$cmd")
    case "$line" in
      "tessel show "*|"tessel check "*|"tessel list "*|"tessel tune --list"|\
      "tessel explain "*|"tessel compare "*) ;;
      *) fail "$doc shows the output of '$line', which this test does not run"
         continue ;;
    esac
    [ -s "$want" ] || { fail "$doc: '$line' shows no output"; continue; }
    # shellcheck disable=SC2086
    "$tessel" ${line#tessel } > "$tmp/out" 2>&1
    if shown "$want" "$tmp/out"; then
      echo "ok: $doc: $line"
    else
      fail "$doc's excerpt of '$line' (above) is not what it prints"
    fi
  done
done

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
