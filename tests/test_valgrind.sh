#!/bin/sh
# tessel under valgrind memcheck: show (with NVRTC's compile and ptxas
# report), check (the reference executor), a schedule file's space, the
# command line's rejections and compare (records read with jansson) must
# run with no invalid
# access and nothing definitely or indirectly lost.  Memory NVRTC keeps for
# the life of the process is "still reachable", which is not a leak.
tessel="$1"
command -v valgrind >/dev/null || { echo "valgrind is not installed"; exit 77; }
fails=0
run() { # run EXPECTED_EXIT ARGS...: valgrind reports errors with exit 99
  want=$1; shift
  log=$(mktemp)
  valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --error-exitcode=99 "$tessel" "$@" > /dev/null 2> "$log"
  rc=$?
  if [ $rc != "$want" ]; then
    echo "FAIL: valgrind tessel $* (exit $rc, expected $want)"; head -40 "$log"; fails=$((fails + 1))
  else
    echo "ok: valgrind tessel $*"
  fi
  rm -f "$log"
}
# NVRTC's compile (the cache off), then the kernel cache's store and load
# in an empty cache.
export TESSEL_NO_CACHE=1
run 0 show smem32 --cuda --shape 37x29x13
unset TESSEL_NO_CACHE
TESSEL_CACHE_DIR=$(mktemp -d); export TESSEL_CACHE_DIR
run 0 show smem16 --cuda --shape 37x29x13
run 0 show smem16 --cuda --shape 37x29x13
rm -rf "$TESSEL_CACHE_DIR"
run 0 show warptiled --ir --shape 100x75x37
run 0 show double_buffered --ir --shape 37x53x29 --layout TT
run 0 show bankfree --trace
run 0 check smem32 blocktile2d --shape 37x29x13 --layout NT
run 0 check vectorized --shape 33x20x9 --beta 0.5
records="$(dirname "$0")/records"
run 0 compare "$records/bench_a.json" "$records/bench_b.json"
run 0 compare "$records/tune.json" "$records/tune.json"
run 1 compare "$records/bench_a.json" /nonexistent/b.json
run 2 show nonexistent
run 2 show smem32 --shape 0x5x5
run 2 bench naive --csv /nonexistent/x.csv
# A schedule file: compiled, loaded, its space run and unloaded.
file="$(dirname "$0")/../examples/regtiles.c"
run 0 list "$file"
run 0 check "$file:regtiles:bm=32,bn=32,tm=4,bk=8" --shape 37x29x13
run 2 tune "$file:regtile64"
exit $((fails > 0))
