#!/usr/bin/env bash
# The launcher (src/launch/) is what an exported library carries: with the
# compiled kernel's readers and file (src/compile/kernel.c, kernel_file.c)
# and the base below them, it must need the CUDA driver alone, loaded at
# run time.  From the launcher's objects, every undefined symbol (nm) is
# followed to the object that defines it: that object must be one of those,
# and a symbol no object of tessel defines must be the C library's (libc,
# libm, libdl, libpthread), never NVRTC's, cuBLAS's, jansson's, PLplot's
# or MPI's.  So a call into lowering, the code generator, NVRTC or the
# runtime from the launcher fails here, naming the symbol and its object.
#
# Usage: test_launcher_deps.sh BUILD_DIR
set -euo pipefail
build="$1"
tmp=$(mktemp -d /tmp/tessel-launcher-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

allowed() { # allowed OBJECT_BASENAME
  case "$1" in
    src_launch_*|src_compile_kernel.c.o|src_compile_kernel_file.c.o) return 0 ;;
    src_compile_kernel_cache.c.o|src_base_*) return 0 ;;
  esac
  return 1
}

objects=()
while read -r o; do
  objects+=("$build/$o")
done < <(ninja -C "$build" -t inputs tessel | grep '\.o$')
: > "$tmp/defs"
for o in "${objects[@]}"; do
  nm -g --defined-only "$o" | awk -v o="$(basename "$o")" 'NF == 3 { print $3, o }'
done > "$tmp/defs"
declare -A seen path
for o in "${objects[@]}"; do path[$(basename "$o")]="$o"; done
queue=()
for o in "${objects[@]}"; do
  case "$(basename "$o")" in src_launch_*) queue+=("$o"); seen[$(basename "$o")]=1 ;; esac
done
[ ${#queue[@]} -ge 3 ] || { echo "FAIL: no launcher objects under $build"; exit 1; }
failed=0
while [ ${#queue[@]} -gt 0 ]; do
  o="${queue[0]}"; queue=("${queue[@]:1}")
  from=$(basename "$o")
  while read -r sym; do
    to=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$tmp/defs")
    if [ -z "$to" ]; then
      case "$sym" in
        nvrtc*|cublas*|json_*|pl*|MPI_*|ompi_*|clang_*)
          echo "FAIL: $from needs $sym, outside the driver and the C library"
          failed=1 ;;
      esac
      continue
    fi
    if ! allowed "$to"; then
      echo "FAIL: $from calls $sym, defined in $to: the launcher needs the driver alone"
      failed=1
    elif [ -z "${seen[$to]:-}" ]; then
      seen[$to]=1
      queue+=("${path[$to]}")
    fi
  done < <(nm -g --undefined-only "$o" | awk '{ print $NF }')
done
[ $failed -eq 0 ] || exit 1
echo "the launcher's objects (${!seen[*]}) need only the driver and the C library"
