#!/bin/sh
# Every command's synopsis names every option the command takes, and no
# other, in all three places a user reads it: `tessel COMMAND --help`,
# `tessel --help` and the README's list of commands (docs/tuning.md's
# synopsis of tune too).  What a command takes is asked of the command
# itself: each option of the parser's table (src/cli/parse.c's long_opts) is
# given to it, and one it does not take is refused as "an option of" others.
#
# Usage: test_synopses.sh TESSEL SOURCE_ROOT
tessel="$1"
root="$2"
fails=0
tmp=$(mktemp -d /tmp/tessel-synopses-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The long options of the parser's table, less --help.
table=$(sed -n '/long_opts\[\] = {/,/^};/p' "$root/src/cli/parse.c" |
        grep -o '{"[a-z-]*"' | tr -d '{"' | grep -vx help)
[ "$(echo "$table" | wc -l)" -ge 20 ] || fail "read only: $table"

# options < TEXT: the sorted --options and -o a text names
options() { grep -o -- '-[-a-z]*[a-z]' | grep -v -- '--help' | sort -u; }

# accepted COMMAND: the options of the table the command takes.  A value
# follows each (a no-argument option leaves it as a schedule's name, which
# is unknown); the refusal of an option comes before anything else.
accepted() {
  for o in $table; do
    "$tessel" "$1" "--$o" 1 2>&1 < /dev/null | grep -q "is an option of" ||
      echo "--$o"
  done | sort
}

# The synopsis of COMMAND in `tessel COMMAND --help`: its usage lines.
in_help() {
  "$tessel" "$1" --help | awk 'NR == 1 || /^ / || /^       tessel/ { print; next } { exit }'
}
# ... in `tessel --help`: the lines of the command's entry that start
# "tessel COMMAND" and continue it.
in_usage() {
  "$tessel" --help | awk -v c="$1" '
    /^  [a-z]/ { entry = ($1 == c); syn = 0; next }
    entry && $1 == "tessel" { syn = 1 }
    entry && syn && /^           / { print }'
}
# ... in a markdown file's fenced synopses: lines "tessel COMMAND ..." and
# the indented lines that continue them.
in_doc() {
  awk -v c="$1" '
    /^```/ { inblock = !inblock; syn = 0; next }
    inblock && $1 == "tessel" { syn = ($2 == c) }
    inblock && syn && ($1 == "tessel" || /^ /) { print }' "$2"
}

for c in list show check bench tune explain compare plot; do
  case $c in
    show|check|bench|tune|explain) accepted $c > "$tmp/want" ;;
    list|compare) : > "$tmp/want" ;;
    plot) printf -- '--knob\n-o\n' > "$tmp/want" ;;
  esac
  [ $c = tune ] && { echo --list >> "$tmp/want"; sort -o "$tmp/want" "$tmp/want"; }
  for where in help usage readme; do
    case $where in
      help) in_help $c ;;
      usage) in_usage $c ;;
      readme) in_doc $c "$root/README.md" ;;
    esac > "$tmp/synopsis"
    [ -s "$tmp/synopsis" ] || { fail "no synopsis of $c in $where"; continue; }
    options < "$tmp/synopsis" > "$tmp/got"
    if cmp -s "$tmp/want" "$tmp/got"; then
      echo "ok: $c's synopsis in $where"
    else
      fail "$c's synopsis in $where (< takes, > named):"
      diff "$tmp/want" "$tmp/got"
    fi
  done
done
in_doc tune "$root/docs/tuning.md" | options > "$tmp/got"
accepted tune > "$tmp/want"; echo --list >> "$tmp/want"; sort -o "$tmp/want" "$tmp/want"
cmp -s "$tmp/want" "$tmp/got" && echo "ok: tune's synopsis in docs/tuning.md" ||
  { fail "tune's synopsis in docs/tuning.md:"; diff "$tmp/want" "$tmp/got"; }

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
