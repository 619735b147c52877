#!/usr/bin/env bash
# Data flows forward, and the tree says whether it does, two ways:
#
#   by symbol   each object file's undefined symbols (nm) are looked up in
#               the object that defines them;
#   by include  each `#include` of src/, runtime/ and include/ is resolved
#               as the compiler does (the including file's folder, then
#               include/) to the header it names (only a file's own
#               includes: a header's are checked at that header);
#
# and a reference from a lower layer to a higher one fails:
#
#   base < ir < schedule < lower = exec = explain < codegen < compile
#      < launch < runtime < tune = builtins = facade < cli
#
# (the executor and explain read programs beside lowering; src/builtins/,
# the built-in schedules and spaces, and src/facade.c, the conveniences
# that chain stages, sit with tune's spaces, above the runtime).  Each
# header of include/tessel/ is of the stage whose API it is, and the
# users' umbrella, include/tessel.h, is of the top layer: a file below the
# command includes the stage headers it needs, not all of them.
#
# Some references downward skip a stage's artifact and are refused too:
# the code generator, the executor, explain and the compiler read
# programs, never schedules; the executor and explain read the program
# (src/ir/program.c, tessel/program_read.h) without lowering; the launch
# (src/launch/) and the runtime receive compiled kernels, so they reach
# neither the schedule, lowering, the code generator nor what reads
# programs, and the launch compiles nothing either (NVRTC: <nvrtc.h>, and
# the functions that hand out its entry points, ts_nvrtc*).
#
# A reference the layers forbid but the tree still makes is listed in the
# allowance file, one a line:
#
#   FROM_OBJECT SYMBOL        by symbol (src_lower_lower.c.o ts_foo)
#   include FILE HEADER       by include, HEADER as the line spells it
#                             (include runtime/kernel.h tessel.h)
#
# The test fails on any other, and on an allowance no longer needed (so
# the list only shrinks).  With --strict the allowance is ignored.
#
# Usage: test_layers.sh BUILD_DIR SOURCE_DIR ALLOWANCE [--strict]
set -euo pipefail
build="$1"
src="$2"
allow="$3"
strict="${4:-}"
tmp=$(mktemp -d /tmp/tessel-layers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The layers: "PATH RANK NAME", a folder (ending in /) for what is below
# it, else one file; the first entry that matches wins.  An object's name
# is its source's path with / as _ (src_lower_lower.c.o).
cat > "$tmp/map" <<'EOF'
include/tessel.h               7    umbrella
include/tessel/types.h         0    base
include/tessel/program_read.h  0.5  ir
include/tessel/schedule.h      1    schedule
include/tessel/program.h       2    lower
include/tessel/exec.h          2    exec
include/tessel/explain.h       2    explain
include/tessel/compile.h       4    compile
include/tessel/launch.h        4.5  launch
include/tessel/gpu.h           5    runtime
include/tessel/space.h         6    tune
include/tessel/tune.h          6    tune
include/tessel/builtins.h      6    builtins
include/tessel/facade.h        6    facade
<nvrtc.h>                      4    nvrtc
src/base/                      0    base
src/ir/                        0.5  ir
src/schedule/                  1    schedule
src/lower/                     2    lower
src/exec/                      2    exec
src/explain/                   2    explain
src/codegen/                   3    codegen
src/compile/                   4    compile
src/launch/                    4.5  launch
runtime/                       5    runtime
src/tune/                      6    tune
src/builtins/                  6    builtins
src/facade.c                   6    facade
src/cli/                       7    cli
EOF

# "FROM TO": references that do not climb and are refused all the same,
# past a stage's artifact (runtime -> lower) or into a stage beside whose
# artifact is read without its code (exec -> lower).
skips="codegen schedule,exec schedule,explain schedule,compile schedule"
skips+=",exec lower,explain lower"
skips+=",launch schedule,launch lower,launch codegen,launch exec"
skips+=",launch explain,launch nvrtc"
skips+=",runtime schedule,runtime lower,runtime codegen,runtime exec"
skips+=",runtime explain"

# Awk functions both rules use: load_map, entry_of (a path's entry in the
# map, 0 for none), refused (whether a reference from one entry to
# another climbs or skips) and why (the words for it).
# shellcheck disable=SC2016 # awk's $1, not the shell's
lib='
function load_map() { nmap++; mpath[nmap] = $1; mrank[nmap] = $2 + 0; mname[nmap] = $3 }
function entry_of(path, is_object,   i, p) {
  for (i = 1; i <= nmap; i++) {
    p = mpath[i]
    if (is_object) {
      gsub("/", "_", p)
      if (p !~ /_$/) p = p ".o"
    }
    if (p ~ /[\/_]$/ ? substr(path, 1, length(p)) == p : path == p)
      return i
  }
  return 0
}
function refused(a, b) {
  return mrank[b] > mrank[a] || ((mname[a] " " mname[b]) in skip)
}
function why(a, b,   ab) {
  ab = mname[a] " (" mrank[a] ") -> " mname[b] " (" mrank[b] ")"
  if (mname[b] == "umbrella")
    return ab ", the umbrella of every stage: include the headers of include/tessel/ it uses"
  if (mrank[b] > mrank[a])
    return ab ", a higher layer"
  return ab ", a stage " mname[a] " must not reach (the skips in test_layers.sh)"
}
BEGIN { n = split(SKIPS, s, ","); for (i = 1; i <= n; i++) skip[s[i]] = 1 }
'

# ---- By symbol ----------------------------------------------------------

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
  echo "$base" >> "$tmp/objects"
  nm -g --defined-only "$o" | awk -v o="$base" 'NF == 3 { print $3, o }' >> "$tmp/defs"
  nm -g --undefined-only "$o" | awk -v o="$base" '{ print o, $NF }' >> "$tmp/uses"
done

# Each reference refused: "FROM SYMBOL message"; each object of no layer
# in $tmp/unmapped.
awk -v SKIPS="$skips" -v unmapped="$tmp/unmapped" "$lib"'
  FILENAME == ARGV[1] { load_map(); next }
  FILENAME == ARGV[2] { if (!entry_of($1, 1)) print $1 > unmapped; next }
  FILENAME == ARGV[3] { def[$1] = $2; next }
  { from = entry_of($1, 1); sym = $2; to_obj = def[sym]
    if (sym ~ /^ts_nvrtc/)
      to = entry_of("<nvrtc.h>", 0)
    else if (to_obj != "")
      to = entry_of(to_obj, 1)
    else
      next
    if (from && to && refused(from, to))
      print $1, sym, $1 ": " sym " (" why(from, to) ", defined in " to_obj ")" }' \
  "$tmp/map" "$tmp/objects" "$tmp/defs" "$tmp/uses" | sort -u > "$tmp/sym_up"

# ---- By include ---------------------------------------------------------

# The files of the layers, and every #include line of them as
# "FILE:LINE:TEXT".
(cd "$src" && find src runtime include -type f \( -name '*.c' -o -name '*.h' \) |
   sort) > "$tmp/files"
(cd "$src" &&
   { xargs grep -n -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' \
       < "$tmp/files" || true; }) > "$tmp/include_lines"

# Each include refused: "FILE HEADER FILE:LINE: message"; each file of no
# layer in $tmp/unmapped.
awk -v SKIPS="$skips" -v unmapped="$tmp/unmapped" "$lib"'
  # "a/b/../c/./d.h" as "a/c/d.h".
  function normalize(path,   n, part, i, out, k) {
    n = split(path, part, "/"); k = 0
    for (i = 1; i <= n; i++) {
      if (part[i] == "." || part[i] == "") continue
      if (part[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
      out[++k] = part[i]
    }
    path = out[1]
    for (i = 2; i <= k; i++) path = path "/" out[i]
    return path
  }
  # The header an include names, as the compiler finds it: a quoted one
  # beside the including file, else under include/ (where a file is not
  # there yet, the path beside it); an angled one under include/, else
  # as <NAME> (a system header, of a layer only where the map names it).
  function resolve(file, delim, name,   dir, here) {
    if (delim == "\"") {
      dir = file; sub(/\/[^\/]*$/, "", dir)
      here = normalize(dir "/" name)
      if (!(here in exists) && (("include/" name) in exists))
        return "include/" name
      return here
    }
    return ("include/" name) in exists ? "include/" name : "<" name ">"
  }
  FILENAME == ARGV[1] { load_map(); next }
  FILENAME == ARGV[2] { exists[$0] = 1
                        if (!entry_of($0, 0)) print $0 > unmapped
                        next }
  { file = $0; sub(/:.*/, "", file)
    rest = substr($0, length(file) + 2)
    line = rest; sub(/:.*/, "", line)
    text = substr(rest, length(line) + 2)
    if (!match(text, /#[ \t]*include[ \t]*("[^"]+"|<[^>]+>)/)) next
    spelled = substr(text, RSTART, RLENGTH); sub(/^#[ \t]*include[ \t]*/, "", spelled)
    name = substr(spelled, 2, length(spelled) - 2)
    header = resolve(file, substr(spelled, 1, 1), name)
    from = entry_of(file, 0); to = entry_of(header, 0)
    if (from && to && refused(from, to))
      print file, name, file ":" line ": #include " spelled " (" header "): " \
            why(from, to) }' \
  "$tmp/map" "$tmp/files" "$tmp/include_lines" | sort -u > "$tmp/inc_up"

# ---- Against the allowance ----------------------------------------------

status=0
if [ -s "$tmp/unmapped" ]; then
  echo "of no layer (add its folder to the map in $0):"
  sort -u "$tmp/unmapped" | sed 's/^/  /'
  status=1
fi

# The allowance's lines, by kind: "OBJECT SYMBOL" and "FILE HEADER".
: > "$tmp/sym_allowed"; : > "$tmp/inc_allowed"
if [ "$strict" != --strict ]; then
  n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    case "$line" in '#'*|'') continue ;; esac
    read -r -a f <<< "$line"
    if [ "${f[0]}" = include ] && [ ${#f[@]} = 3 ]; then
      echo "${f[1]} ${f[2]}" >> "$tmp/inc_allowed"
    elif [ ${#f[@]} = 2 ] && [[ "${f[0]}" == *.o ]]; then
      echo "${f[0]} ${f[1]}" >> "$tmp/sym_allowed"
    else
      echo "$allow:$n: expected \"FROM_OBJECT SYMBOL\" or \"include FILE HEADER\", got: $line"
      status=1
    fi
  done < "$allow"
fi

# Compares one rule's refusals ("KEY1 KEY2 message") with its allowances
# ("KEY1 KEY2", spelled FORMAT in the file): prints the new ones under
# TITLE and the stale ones as the file spells them.  Returns 1 when there
# is either.
compare() {
  local refused="$1" allowed="$2" title="$3" format="$4" prefix="" new stale
  if [ "${format%% *}" = include ]; then prefix="include "; fi
  awk '{ print $1, $2 }' "$refused" | sort -u > "$refused.pairs"
  sort -u "$allowed" -o "$allowed"
  new=$(comm -23 "$refused.pairs" "$allowed")
  stale=$(comm -13 "$refused.pairs" "$allowed")
  [ -z "$new" ] && [ -z "$stale" ] && return 0
  if [ -n "$new" ]; then
    echo "$title"
    while read -r a b; do
      awk -v a="$a" -v b="$b" '$1 == a && $2 == b { $1 = $2 = ""; sub(/^  /, ""); print "  " $0 }' \
        "$refused"
    done <<< "$new"
    echo "  (move the code to its layer; a line \"$format\"" \
         "in $allow allows one while a move is under way)"
  fi
  if [ -n "$stale" ]; then
    echo "allowed in $allow but no longer made (remove the lines):"
    sed "s/^/  $prefix/" <<< "$stale"
  fi
  return 1
}
compare "$tmp/sym_up" "$tmp/sym_allowed" \
  "references by symbol from a lower layer to a higher one, or past a stage:" \
  "FROM_OBJECT SYMBOL" ||
  status=1
compare "$tmp/inc_up" "$tmp/inc_allowed" \
  "includes from a lower layer to a higher one, or past a stage:" \
  "include FILE HEADER" ||
  status=1
[ $status = 0 ] && echo "layers: $(wc -l < "$tmp/sym_up.pairs") allowed references by symbol, $(wc -l < "$tmp/inc_up.pairs") by include, no other"
exit $status
