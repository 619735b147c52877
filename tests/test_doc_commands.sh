#!/bin/sh
# Every tessel command the documents give a reader to type runs as written.
# A line of a fenced block that starts with `tessel ` or `$ tessel ` is
# such a command (a synopsis, with its SCHEDULE, FILE.c or [--option]
# placeholders, is not).  The commands run in a scratch directory that
# holds the source tree's examples/ and bench/ and the README's tiles.c,
# in the order the documents give them (a plot reads the record a bench
# before it wrote), with the kernel cache there too.  bench and tune run
# on the fake driver (tests/fake_cuda.c, which runs nothing): with one
# repeat, and tune with --limit 2 where the line sets no limit, so that a
# command's names and options are what is tried, not a GPU's speed.
#
# What must hold: no command is refused as a usage error (exit 2: an
# unknown schedule, an option a command does not take); a command that
# needs no GPU succeeds (exit 0); on the fake driver a bench or tune may
# exit 1 only for results (the fake computes nothing), never with a
# message that a name or file is unknown.  A command whose block shows
# its output with a FAIL in it (a refusal the document explains) may
# exit 1.
#
# Usage: test_doc_commands.sh TESSEL SOURCE_ROOT FAKE_DRIVER DOC...
tessel="$1"
root="$2"
fake="$3"
shift 3
fails=0
case "$tessel" in /*) ;; *) tessel="$PWD/$tessel" ;; esac
case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
tmp=$(mktemp -d /tmp/tessel-doc-commands-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cd "$root" || exit 1
root=$PWD
mkdir "$tmp/run" "$tmp/lib" "$tmp/bin" || exit 1
ln -s "$root/examples" "$tmp/run/examples"
ln -s "$root/bench" "$tmp/run/bench"
ln -s "$root/tests" "$tmp/run/tests"
ln -s "$fake" "$tmp/lib/libcublas.so.13"
ln -s "$tessel" "$tmp/bin/tessel"
# The README's tiles.c: the fenced block whose first line names it.
awk '/^```/ { if (inb) { inb = 0; keep = 0; next } inb = 1; first = 1; next }
     inb && first { first = 0; keep = ($0 == "/* tiles.c */") }
     inb && keep' README.md > "$tmp/run/tiles.c"
[ -s "$tmp/run/tiles.c" ] || fail "README.md has no block /* tiles.c */"

# commands DOC: the commands of DOC's fenced blocks, one a line, less
# "$ " and a trailing "# comment"; each after "1\t" where the block shows
# its output with a FAIL in it (the document shows a refusal), else "0\t".
commands() {
  awk 'function flush() { if (n) for (i = 1; i <= n; i++) print fails "\t" cmd[i]; n = 0 }
       /^```/ { if (inb) flush(); inb = !inb; fails = 0; shown = 0; next }
       inb && /^(\$ )?tessel / {
         if ($0 ~ /^\$ /) shown = 1
         sub(/^\$ /, ""); sub(/[ \t]+#.*$/, ""); cmd[++n] = $0; next }
       inb && shown && /FAIL/ { fails = 1 }' "$1"
}

# A synopsis names its arguments in capitals or brackets (a glob's
# brackets, step[1-7].c, are part of a word).
is_synopsis() {
  case "$1" in
    *" ["*|*SCHEDULE*|*SPACE*|*FILE.c*|*FILE.png*|*RECORD.json*|*A.json*) return 0 ;;
  esac
  return 1
}

# with_fast_options LINE: bench with one repeat, tune with a small limit.
with_fast_options() {
  line="$1"
  case "$line" in
    "tessel bench "*)
      case "$line" in *--repeats*) ;; *) line="$line --repeats 1" ;; esac
      case "$line" in *--warmup*) ;; *) line="$line --warmup 0" ;; esac ;;
    "tessel tune --list") ;;
    "tessel tune "*)
      case "$line" in *--limit*|*--budget*) ;; *) line="$line --limit 2" ;; esac
      case "$line" in *--repeats*) ;; *) line="$line --repeats 1" ;; esac ;;
  esac
  printf '%s\n' "$line"
}

ran=0
for doc in "$@"; do
  commands "$doc" > "$tmp/cmds"
  while IFS="$(printf '\t')" read -r shows_fail line; do
    is_synopsis "$line" && continue
    run=$(with_fast_options "$line")
    ran=$((ran + 1))
    (cd "$tmp/run" &&
     PATH="$tmp/bin:$PATH" TESSEL_CACHE_DIR="$tmp/cache" \
     TESSEL_CUDA_DRIVER="$fake" \
     LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
     sh -c "$run") > "$tmp/out" 2>&1 < /dev/null
    rc=$?
    case "$line" in
      "tessel bench "*|"tessel tune "*) gpu=1 ;;
      *) gpu=0 ;;
    esac
    [ "$line" = "tessel tune --list" ] && gpu=0
    if [ $rc = 2 ] || [ $rc -gt 2 ] ||
       { [ $gpu = 0 ] && [ $rc != 0 ] &&
         ! { [ $rc = 1 ] && [ "$shows_fail" = 1 ]; }; } ||
       grep -qE "unknown (schedule|space|option)|defines no|cannot read" \
         "$tmp/out"; then
      fail "$doc: '$line' (run as '$run') exits $rc:"
      sed 's/^/    /' "$tmp/out" | head -n 20
    else
      echo "ok: $doc: $line (exit $rc)"
    fi
  done < "$tmp/cmds"
done
[ $ran -gt 0 ] || fail "no commands found in $*"

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok: $ran commands"
