#!/bin/sh
# `meson install` into a staging directory: the command's run path is the
# prefix's library directory, and tessel.pc builds and links a program
# (examples/custom.c) that runs against the installed library.
build="$1"; src="$2"; prefix="$3"; libdir="$4"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

meson install -C "$build" --destdir "$stage" --no-rebuild --quiet >/dev/null ||
  fail "meson install --destdir"
root="$stage$prefix"
lib="$root/$libdir"
for f in "$root/bin/tessel" "$root/include/tessel.h" \
         "$root/include/tessel/schedule.h" "$lib/libtessel.so" \
         "$lib/pkgconfig/tessel.pc" "$root/share/tessel/handwritten"; do
  [ -e "$f" ] || fail "not installed: $f"
done
echo "ok: installed under $prefix"

runpath=$(readelf -d "$root/bin/tessel" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
[ "$runpath" = "$prefix/$libdir" ] ||
  fail "tessel's run path is '$runpath', expected '$prefix/$libdir'"
echo "ok: tessel finds its library in $prefix/$libdir"

# The library's real home is the prefix; here it is staged, so point the
# loader at the stage for the programs that run.
export LD_LIBRARY_PATH="$lib"
"$root/bin/tessel" list >/dev/null || fail "the installed tessel does not run"
echo "ok: the installed tessel runs"

export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
flags=$(pkg-config --cflags --libs tessel) || fail "pkg-config tessel"
${CC:-cc} "$src/examples/custom.c" $flags -o "$stage/custom" ||
  fail "cc custom.c \$(pkg-config --cflags --libs tessel)"
out=$(TESSEL_NO_CACHE=1 TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 \
      "$stage/custom" 64 64 64 2>&1)
case "$out" in
  *"reference executor at 37x53x29: correct"*) echo "ok: a program built with tessel.pc runs" ;;
  *) fail "custom did not check its schedule: $out" ;;
esac
# Its refused split, named by its place in custom.c and underlined.
case "$out" in
  *"custom.c:"*": error: ts_split: argument 3 'factor'"*"^~~~~~~~"*)
    echo "ok: a refused call names its place in the program" ;;
  *) fail "custom's refused split did not name its place: $out" ;;
esac
