#!/usr/bin/env bash
# Data flows forward, and the build's objects say whether it does: each
# object file's undefined symbols (nm) are looked up in the object that
# defines them, and a reference from a lower layer to a higher one fails.
#
#   base < ir < schedule < lower = exec = explain < codegen < compile < runtime
#      < tune < cli
#
# (the executor and explain read programs beside lowering; src/builtins/,
# the built-in schedules and spaces, sit with tune's spaces, above the
# runtime).  Some references downward skip a stage's artifact and are
# refused too: the code generator, the executor, explain and the compiler
# read programs, never schedules; the executor and explain read the
# program (src/ir/program.c) without calling lowering; and the runtime
# receives compiled kernels, so it calls neither the schedule, lowering,
# the code generator nor what reads programs.  A reference the layers forbid but the tree still makes is
# listed in the allowance file, one "FROM_OBJECT SYMBOL" a line: the
# test fails on any other, and on an allowance no longer needed (so the
# list only shrinks).  With --strict the allowance is ignored.
#
# Usage: test_layers.sh BUILD_DIR ALLOWANCE [--strict]
set -euo pipefail
build="$1"
allow="$2"
strict="${3:-}"
tmp=$(mktemp -d /tmp/tessel-layers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The layer of an object, from the source path in its name
# (src_lower_lower.c.o); empty for objects outside the layers.
layer_of() {
  case "$1" in
    src_base_*) echo "0 base" ;;
    src_ir_*) echo "0.5 ir" ;;
    src_schedule_*) echo "1 schedule" ;;
    src_lower_*) echo "2 lower" ;;
    src_exec_*) echo "2 exec" ;;
    src_explain_*) echo "2 explain" ;;
    src_codegen_*) echo "3 codegen" ;;
    src_compile_*) echo "4 compile" ;;
    runtime_*) echo "5 runtime" ;;
    src_tune_*|src_builtins_*|src_facade.c.o) echo "6 tune" ;;
    src_cli_*) echo "7 cli" ;;
  esac
}

# The objects the command is linked from, as the build knows them (not
# whatever a directory still holds from files since moved).
objects=()
while read -r o; do
  objects+=("$build/$o")
done < <(ninja -C "$build" -t inputs tessel | grep '\.o$')
[ ${#objects[@]} -gt 0 ] || { echo "no objects under $build"; exit 1; }

# sym -> defining object; object -> its undefined symbols.
: > "$tmp/defs"; : > "$tmp/uses"
for o in "${objects[@]}"; do
  base=$(basename "$o")
  nm -g --defined-only "$o" | awk -v o="$base" 'NF == 3 { print $3, o }' >> "$tmp/defs"
  nm -g --undefined-only "$o" | awk -v o="$base" '{ print o, $NF }' >> "$tmp/uses"
done
: > "$tmp/layers"
for o in "${objects[@]}"; do
  base=$(basename "$o")
  l=$(layer_of "$base")
  [ -n "$l" ] && echo "$base $l" >> "$tmp/layers"
done

# Each reference upward: FROM SYMBOL (FROM's layer -> TO's layer, in TO).
awk 'FILENAME == ARGV[1] { rank[$1] = $2; name[$1] = $3; next }
     FILENAME == ARGV[2] { def[$1] = $2; next }
     { from = $1; sym = $2; to = def[sym]
       if (to == "" || !(from in rank) || !(to in rank)) next
       if (rank[to] > rank[from] || skips[name[from] " " name[to]])
         print from, sym, "(" name[from] " -> " name[to] ", defined in " to ")" }
     BEGIN { n = split("codegen schedule,exec schedule,explain schedule," \
                       "compile schedule,runtime schedule,runtime lower," \
                       "runtime codegen,runtime exec,runtime explain," \
                       "exec lower,explain lower", p, ",")
             for (i = 1; i <= n; i++) skips[p[i]] = 1 }' \
  "$tmp/layers" "$tmp/defs" "$tmp/uses" | sort -u > "$tmp/up"

status=0
if [ "$strict" = --strict ]; then
  : > "$tmp/allowed"
else
  { grep -vE '^(#|$)' "$allow" || true; } | awk '{ print $1, $2 }' |
    sort -u > "$tmp/allowed"
fi
awk '{ print $1, $2 }' "$tmp/up" | sort -u > "$tmp/up_pairs"
new=$(comm -23 "$tmp/up_pairs" "$tmp/allowed")
stale=$(comm -13 "$tmp/up_pairs" "$tmp/allowed")
if [ -n "$new" ]; then
  echo "references from a lower layer to a higher one:"
  while read -r from sym; do
    grep -F "$from $sym " "$tmp/up"
  done <<< "$new"
  status=1
fi
if [ -n "$stale" ]; then
  echo "allowed in $allow but no longer made (remove the lines):"
  echo "$stale"
  status=1
fi
[ $status = 0 ] && echo "layers: $(wc -l < "$tmp/up_pairs") allowed references upward, no other"
exit $status
