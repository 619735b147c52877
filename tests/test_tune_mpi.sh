#!/bin/sh
# tessel tune under mpirun on the fake driver (tests/fake_cuda.c), all
# ranks on this host, each on its own fake device (its rank on the host):
# with 2 and 3 ranks every configuration of the budget is timed once, by
# rank 0's runner or another rank's, and the configurations timed and
# recorded are those one process times; then rank 1 is killed (kill -9)
# while its GPU hangs in the middle of a group: its candidates go back in
# the queue, the run completes with every configuration timed once, and
# rank 0 exits 1 naming the lost rank.  Then rank 0 killed: the run taken
# up again times nothing the other ranks journaled.
#
# Usage: test_tune_mpi.sh TESSEL RECORD_ROWS FAKE_DRIVER MPIRUN
tessel="$1"
rows="$2"
fake="$3"
mpirun="$4"
name=tune-mpi
. "$(dirname "$0")/fake_tune_env.sh"
export TESSEL_FAKE_GPUS=3
# CI runs as root; mpirun refuses root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TESSEL_TUNE_FAULT TESSEL_FAKE_HANG_FILE TESSEL_FAKE_GPU_SPEEDS
# The fake's kernels leave C as it was: beta 1 makes every one right.
args="seed003 --shape 64x64x64 --beta 1 --budget 12"

# timed JSON: the configurations timed, sorted.
timed() { "$rows" "$1" | awk -F '\t' '$1 == "timed" { print $2 }' | sort; }
# shares OUT: the candidates the ranks timed in all, from "first pass on".
shares() {
  grep '^# first pass on' "$1" | head -1 | grep -o 'timed [0-9]*' |
    awk '{ s += $2 } END { print s + 0 }'
}
# ranks N STATUS_PREFIX ARGS...: mpirun with N ranks, each rank's status
# written to STATUS_PREFIX.RANK (mpirun's own status hides it under
# --enable-recovery) and its process id to STATUS_PREFIX.pid.RANK; with
# APART set, each rank's cache directory is its own, TESSEL_CACHE_DIR/rankR,
# as on hosts of their own.
export APART="" TESSEL_FAKE_LAUNCH_LOG=""
ranks() {
  n=$1 status=$2
  shift 2
  "$mpirun" --oversubscribe --enable-recovery -n "$n" \
    -x TESSEL_CUDA_DRIVER -x LD_LIBRARY_PATH -x TESSEL_FAKE_GPUS \
    -x TESSEL_CACHE_DIR -x TESSEL_FAKE_GPU_SPEEDS -x TESSEL_FAKE_HANG_FILE \
    -x TESSEL_MPI_TIMEOUT -x APART -x TESSEL_FAKE_LAUNCH_LOG \
    sh -c 'r=$OMPI_COMM_WORLD_RANK
      [ -z "$APART" ] || export TESSEL_CACHE_DIR="$TESSEL_CACHE_DIR/rank$r"
      "$0" "$@" & echo $! > "'"$status"'.pid.$r"
      wait $!; echo $? > "'"$status"'.$r"' \
    "$tessel" "$@"
}
export TESSEL_FAKE_GPU_SPEEDS=1,1,1 TESSEL_FAKE_HANG_FILE="$tmp/unused"
export TESSEL_MPI_TIMEOUT=30

# 0. One process: the configurations the ranks must time.
TESSEL_CACHE_DIR="$tmp/one" "$tessel" tune $args --json "$tmp/one.json" \
  > "$tmp/one.out" 2>&1 || { cat "$tmp/one.out"; fail "one process failed"; }
timed "$tmp/one.json" > "$tmp/one.timed"
[ "$(wc -l < "$tmp/one.timed")" = 12 ] || fail "one process timed $(wc -l < "$tmp/one.timed"), expected 12"
best() { grep -o 'the best at this shape, [^ ]*' "$1" | head -1; }

# 1. 2 and 3 ranks.
for n in 2 3; do
  export TESSEL_CACHE_DIR="$tmp/cache$n"
  ranks $n "$tmp/st$n" tune $args --json "$tmp/r$n.json" > "$tmp/r$n.out" 2>&1
  cat "$tmp/r$n.out"
  [ "$(cat "$tmp/st$n.0" 2>/dev/null)" = 0 ] ||
    fail "$n ranks: rank 0 exited $(cat "$tmp/st$n.0" 2>/dev/null), expected 0"
  has "# first pass on $n MPI ranks: rank 0 timed" "$tmp/r$n.out"
  [ "$(shares "$tmp/r$n.out")" = 12 ] ||
    fail "$n ranks timed $(shares "$tmp/r$n.out") in all, expected the 12 of the budget, each once"
  grep -q "rank $((n - 1)) timed [1-9]" "$tmp/r$n.out" ||
    fail "$n ranks: rank $((n - 1)) timed none"
  [ "$(states "$tmp/r$n.json")" = "timed 12 failed 0" ] ||
    fail "r$n.json: $(states "$tmp/r$n.json"), expected timed 12 failed 0"
  timed "$tmp/r$n.json" | cmp -s - "$tmp/one.timed" ||
    fail "$n ranks timed other configurations than one process"
  [ -n "$(best "$tmp/r$n.out")" ] || fail "$n ranks: no best configuration"
  has "# recorded for this GPU" "$tmp/r$n.out"
  ls "$TESSEL_CACHE_DIR"/tune/*.journal > /dev/null 2>&1 &&
    fail "$n ranks: a journal is left after the run"
done

# 2. --gpus under mpirun is refused (one GPU a rank).
export TESSEL_CACHE_DIR="$tmp/cache-gpus"
ranks 2 "$tmp/stg" tune $args --gpus 2 > "$tmp/gpus.out" 2>&1
[ "$(cat "$tmp/stg.0" 2>/dev/null)" = 1 ] || fail "--gpus under mpirun: rank 0 exited $(cat "$tmp/stg.0" 2>/dev/null), expected 1"
has "--gpus under mpirun: each rank times on one GPU" "$tmp/gpus.out"

# 3. Rank 1's GPU hangs on its first launch; rank 1 is killed (kill -9)
# while its group is in flight.
export TESSEL_CACHE_DIR="$tmp/cache-killed" TESSEL_FAKE_GPU_SPEEDS=1,0,1
export TESSEL_FAKE_HANG_FILE="$tmp/hung" TESSEL_MPI_TIMEOUT=3
ranks 3 "$tmp/stk" tune $args --json "$tmp/killed.json" > "$tmp/killed.out" 2>&1 &
job=$!
pids="$job"
i=0
while [ ! -e "$tmp/hung" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$tmp/hung" ] || fail "rank 1's GPU never hung"
runner=$(pgrep -x tessel-gpu1 | head -1)
rank1=$([ -n "$runner" ] && ps -o ppid= -p "$runner" | tr -d ' ')
[ -n "$rank1" ] || fail "no rank 1 (the parent of tessel-gpu1)"
if [ -n "$rank1" ]; then
  kill -9 "$rank1"
else # nothing to kill: say what runs, and end the run rather than wait on it
  ps -eo pid,ppid,comm,args | grep -E "[t]essel|[m]pirun" >&2
  pkill -9 -f "$tmp/killed.json"
  kill -9 "$job" 2>/dev/null
fi
wait "$job"
pids=""
cat "$tmp/killed.out"
[ "$(cat "$tmp/stk.0" 2>/dev/null)" = 1 ] ||
  fail "rank 1 killed: rank 0 exited $(cat "$tmp/stk.0" 2>/dev/null), expected 1"
has "tessel: tune: MPI rank 1 (host " "$tmp/killed.out"
has "stopped answering for 3 s;" "$tmp/killed.out"
has "rank 1 is lost to this run, the other ranks time the rest" "$tmp/killed.out"
has "tessel: tune: 1 MPI rank lost before the run ended: rank 1 (host" "$tmp/killed.out"
[ "$(states "$tmp/killed.json")" = "timed 12 failed 0" ] ||
  fail "killed.json: $(states "$tmp/killed.json"), expected timed 12 failed 0"
[ "$(shares "$tmp/killed.out")" = 12 ] ||
  fail "with rank 1 killed the ranks timed $(shares "$tmp/killed.out"), expected 12, each once"
grep -q "rank 1 timed 0" "$tmp/killed.out" || fail "rank 1 is credited with results it never sent"

# 4. Each rank journals what it times on its own GPU and sends rank 0
# what its journals hold at the start: each rank with a cache directory
# of its own (the kernels compiled into each beforehand), rank 0 (a slow
# GPU, timing the first shape's fastest in full) killed (kill -9) once
# rank 1 has timed the second shape's first pass, before rank 0 took its
# results; run again, no rank times the second shape's first pass again
# (no cuBLAS call at K 48 on rank 1's GPU), and the record is an
# uninterrupted run's.
export TESSEL_FAKE_HANG_FILE="$tmp/unused" TESSEL_FAKE_GPU_SPEEDS=""
export TESSEL_MPI_TIMEOUT=3 TESSEL_CACHE_DIR="$tmp/apart"
two="$args --shape 64x64x48 --top 1"
TESSEL_CACHE_DIR="$tmp/warm" "$tessel" tune $two > "$tmp/warm.out" 2>&1 ||
  fail "the run that compiles the kernels: exit $?"
rm -rf "$tmp/warm/tune"
mkdir -p "$tmp/apart"
for r in 0 1; do cp -r "$tmp/warm" "$tmp/apart/rank$r"; done
# rank_timed R: the first-pass results in rank R's journal of 64x64x48.
rank_timed() {
  cat "$tmp/apart/rank$1"/tune/*.journal 2>/dev/null |
    awk '/^def / { on = $2 == "64x64x48" } on && /^timed/' | wc -l
}
record48() { grep -l "^def 64x64x48 " "$tmp/apart/rank0"/tune/*.txt | head -1; }
export APART=1
ranks 2 "$tmp/sta" tune $two --restart > "$tmp/whole.out" 2>&1
[ "$(cat "$tmp/sta.0" 2>/dev/null)" = 0 ] ||
  { cat "$tmp/whole.out"; fail "the uninterrupted run: rank 0 exited $(cat "$tmp/sta.0" 2>/dev/null)"; }
cp "$(record48)" "$tmp/whole48.txt" || fail "the uninterrupted run recorded nothing at 64x64x48"
TESSEL_FAKE_GPU_SPEEDS=0.001,1 ranks 2 "$tmp/stc" tune $two --restart \
  > "$tmp/cut.out" 2>&1 &
job=$!
pids="$job"
i=0
until [ "$(rank_timed 1)" -ge 12 ] || grep -q "first pass on 2 MPI" "$tmp/cut.out" ||
      [ $i -ge 1200 ]; do
  sleep 0.05; i=$((i + 1))
done
lead_had=$(rank_timed 0)
kill -9 "$(cat "$tmp/stc.pid.0")"
wait "$job"
pids=""
[ "$(rank_timed 1)" = 12 ] ||
  fail "rank 1's own journal held $(rank_timed 1) of the second shape's 12 first-pass results when rank 0 was killed"
[ "$lead_had" = 0 ] ||
  fail "rank 0 had journaled $lead_had of the second shape's results before the kill: the test needs it to have none"
TESSEL_FAKE_LAUNCH_LOG="$tmp/launches.txt" ranks 2 "$tmp/str" tune $two \
  > "$tmp/resumed.out" 2>&1
[ "$(cat "$tmp/str.0" 2>/dev/null)" = 0 ] ||
  { cat "$tmp/resumed.out"; fail "the run taken up again: rank 0 exited $(cat "$tmp/str.0" 2>/dev/null), expected 0"; }
taken_up "$tmp/resumed.out" "$tmp/launches.txt" 1 64x64x48 \
  "# first pass on 2 MPI ranks: rank 0 timed 0, rank 1 timed 0" \
  "$(record48)" "$tmp/whole48.txt"
ls "$tmp/apart"/rank*/tune/*.journal > /dev/null 2>&1 &&
  fail "journals left after the run taken up again finished: $(ls "$tmp/apart"/rank*/tune/*.journal)"

[ $fails = 0 ] && echo "ok: tune under mpirun with 2 and 3 ranks, and one killed"
exit $fails
