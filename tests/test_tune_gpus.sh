#!/bin/sh
# tessel tune --gpus on the fake driver (tests/fake_cuda.c) with 4 devices
# of different speeds: one runner per GPU takes candidates of the first
# pass from one queue, so the slow GPU takes fewer, and every candidate is
# timed once; a runner killed in the middle of the pass (kill -9) loses
# nothing: its candidate goes back in the queue, the run completes, and
# the exit status and stderr say that a GPU's runner was lost.  Then kill
# -9 of tune itself leaves no runner behind, and the other GPUs time the
# next shapes while the lead times the last one's fastest; each GPU
# journals what it times, so a run taken up after kill -9 of tune times
# none of it again.
#
# Usage: test_tune_gpus.sh TESSEL RECORD_ROWS FAKE_DRIVER
tessel="$1"
rows="$2"
fake="$3"
name=tune-gpus
. "$(dirname "$0")/fake_tune_env.sh"
export TESSEL_CACHE_DIR="$tmp/cache"
export TESSEL_FAKE_GPUS=4
unset TESSEL_TUNE_FAULT TESSEL_FAKE_HANG_FILE
# The fake's kernels leave C as it was: beta 1 makes every one right.
args="seed003 --shape 64x64x64 --beta 1 --budget 12 --gpus all"

# timed_in SHAPE WHOSE: the first-pass results journaled of SHAPE by the
# lead's GPU (WHOSE "lead", device 0's UUID) or by the others ("others"):
# each runner journals on its own GPU.
lead0="device GPU-fa4e0000-0000-0000-0000-000000000000"
timed_in() {
  for f in "$TESSEL_CACHE_DIR"/tune/*.journal; do
    grep -q "^def $1 " "$f" 2>/dev/null || continue
    if grep -qx "$lead0" "$f"; then whose=lead; else whose=others; fi
    [ "$whose" = "$2" ] && cat "$f"
  done | grep -c "^timed"
}
# record_of SHAPE: the record file of SHAPE.
record_of() { grep -l "^def $1 " "$TESSEL_CACHE_DIR"/tune/*.txt | head -1; }

# timed_by OUT K: what GPU K timed, from the "first pass on" line.
timed_by() {
  sed -n "s/.*GPU $2 timed \([0-9]*\).*/\1/p" "$1" | head -1
}

# 1. Three fast GPUs and a slow one (a launch 500 times as long).  Each
# runner compiles what it takes; the kernels are compiled first, on one
# GPU, so that the launches' times and not the compiling decide who takes
# how many.
TESSEL_FAKE_GPUS=1 "$tessel" tune $args --shape 64x64x32 > "$tmp/warm.out" 2>&1 ||
  fail "the run on one GPU that compiles the kernels: exit $?"
TESSEL_FAKE_GPU_SPEEDS=1,1,1,0.002 "$tessel" tune $args \
  --json "$tmp/speeds.json" > "$tmp/speeds.out" 2>&1
st=$?
cat "$tmp/speeds.out"
[ $st = 0 ] || fail "4 GPUs of different speeds: exit $st, expected 0"
has "# first pass on 4 GPUs:" "$tmp/speeds.out"
sum=0
for k in 0 1 2 3; do
  n=$(timed_by "$tmp/speeds.out" $k)
  [ -n "$n" ] || { fail "no count for GPU $k"; n=0; }
  sum=$((sum + n))
done
[ $sum = 12 ] || fail "the GPUs timed $sum candidates in all, expected the 12 of the budget, each once"
# Against the busiest fast GPU: the lead (GPU 0) also publishes, collects
# and compiles ahead, so on a loaded host it may take few itself.
slow=$(timed_by "$tmp/speeds.out" 3)
fast=0
for k in 0 1 2; do
  n=$(timed_by "$tmp/speeds.out" $k)
  [ "${n:-0}" -gt $fast ] && fast=$n
done
[ "${slow:-99}" -lt "$fast" ] ||
  fail "the slow GPU 3 timed $slow, the busiest fast GPU $fast: the slow one should take fewer"
[ "$(states "$tmp/speeds.json")" = "timed 12 failed 0" ] ||
  fail "speeds.json: $(states "$tmp/speeds.json"), expected timed 12 failed 0"

# 2. GPU 2 hangs on its first launch; its runner is killed (kill -9) while
# the candidate is in flight.  The candidate goes back in the queue, the
# runner is started again, and the run completes with every candidate
# timed, exit status 1 and the loss said.
export TESSEL_FAKE_HANG_FILE="$tmp/hung"
TESSEL_FAKE_GPU_SPEEDS=1,1,0,1 "$tessel" tune $args --restart \
  --json "$tmp/killed.json" > "$tmp/killed.out" 2>&1 &
tune=$!
pids="$tune"
i=0
while [ ! -e "$tmp/hung" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$tmp/hung" ] || fail "GPU 2 never hung"
runner=$(pgrep -P "$tune" -x tessel-gpu2)
[ -n "$runner" ] || fail "no runner named tessel-gpu2 under tune ($tune)"
[ -n "$runner" ] && kill -9 "$runner"
wait "$tune"
st=$?
pids=""
cat "$tmp/killed.out"
[ $st = 1 ] || fail "a runner killed: exit $st, expected 1"
has "tessel: tune: GPU 2: its runner was killed (signal 9, Killed); 1 of its configurations back in the queue; restarting its runner (1 of 16 restarts)" "$tmp/killed.out"
has "tessel: tune: 1 GPU runner ended before the run did" "$tmp/killed.out"
[ "$(states "$tmp/killed.json")" = "timed 12 failed 0" ] ||
  fail "killed.json: $(states "$tmp/killed.json"), expected timed 12 failed 0"
ls "$TESSEL_CACHE_DIR"/tune/*.journal > /dev/null 2>&1 &&
  fail "a journal is left after the run"

# 3. kill -9 of tune itself, while GPU 1 hangs: no runner is left.
rm -f "$tmp/hung"
TESSEL_FAKE_GPU_SPEEDS=1,0,1,1 "$tessel" tune $args --restart \
  > "$tmp/orphans.out" 2>&1 &
tune=$!
pids="$tune"
i=0
while [ ! -e "$tmp/hung" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$tmp/hung" ] || fail "GPU 1 never hung"
runners=$(pgrep -P "$tune" | tr '\n' ' ')
[ -n "$runners" ] || fail "no runner under tune ($tune)"
kill -9 "$tune"
wait "$tune" 2>/dev/null
pids=""
left=""
for p in $runners; do
  # Gone, or a zombie its new parent has not reaped yet.
  i=0
  while [ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null &&
        [ $i -lt 100 ]; do
    sleep 0.1; i=$((i + 1))
  done
  if [ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then
    left="$left $p"
    pids="$pids $p"
  fi
done
[ -z "$left" ] || fail "runners left after kill -9 of tune:$left"

# 4. The next shape's first pass is published before the lead times the
# last shape's fastest in full, so the other GPUs take it meanwhile: with
# a slow lead (GPU 0, launches 1000 times as long; the kernels cached by
# the first run), the fast ones time all of the second shape's first pass
# while the lead times the first shape's best with the full count.
TESSEL_FAKE_GPU_SPEEDS=0.001,1,1,1 "$tessel" tune $args --restart \
  --shape 64x64x32 --top 1 > "$tmp/ahead.out" 2>&1
st=$?
cat "$tmp/ahead.out"
[ $st = 0 ] || fail "a slow lead: exit $st, expected 0"
second=$(sed -n "s/.*GPU 0 timed \([0-9]*\).*/\1/p" "$tmp/ahead.out" | sed -n 2p)
[ "$second" = 0 ] ||
  fail "the slow lead timed ${second:-?} of the second shape's first pass, expected 0: the other GPUs should have timed it while the lead timed the first shape's best"
has "12 compiled by the runner that takes each" "$tmp/ahead.out"

# 5. The lead publishes several shapes ahead, not only the next: with a
# slow lead, the other GPUs time the third shape's first pass (cuBLAS at
# K 48 beside it) before the lead has timed the first shape's best in
# full (its last cuBLAS at K 64), not only once it has gone on to the
# second.  The launch log has every GPU's cuBLAS calls in their order.
TESSEL_FAKE_GPUS=1 "$tessel" tune $args --shape 64x64x48 > "$tmp/warm3.out" 2>&1 ||
  fail "the run on one GPU that compiles the third shape's kernels: exit $?"
rm -f "$tmp/launches.txt"
TESSEL_FAKE_LAUNCH_LOG="$tmp/launches.txt" TESSEL_FAKE_GPU_SPEEDS=0.01,1,1,1 \
  "$tessel" tune $args --restart --shape 64x64x32 --shape 64x64x48 --top 1 \
  > "$tmp/deep.out" 2>&1 &
tune=$!
pids="$tune"
# What the other GPUs timed of the shapes ahead is journaled once the lead
# has timed a shape's fastest in full, before it reports it: when the
# first shape's report is out, the third shape's journal has all 12.
i=0
until grep -q "first pass on 4 GPUs" "$tmp/deep.out" || [ $i -ge 1200 ]; do
  sleep 0.05; i=$((i + 1))
done
n=$(timed_in 64x64x48 lead)
[ "$n" = 12 ] ||
  fail "at the first shape's report the third shape's journal had $n results, expected 12: the shapes ahead are not journaled after a full count"
wait "$tune"
st=$?
pids=""
[ $st = 0 ] || { cat "$tmp/deep.out"; fail "three shapes, a slow lead: exit $st, expected 0"; }
lead_last=$(grep -n "^cublas 64 64 64 device 0$" "$tmp/launches.txt" | tail -1 | cut -d: -f1)
third_first=$(grep -n "^cublas 64 64 48 device [123]$" "$tmp/launches.txt" | head -1 | cut -d: -f1)
[ -n "$lead_last" ] && [ -n "$third_first" ] ||
  fail "the launch log lacks the lead's 64^3 or another GPU's 64x64x48 cuBLAS calls"
[ "${third_first:-0}" -lt "${lead_last:-0}" ] ||
  fail "the other GPUs began the third shape at launch ${third_first:-?}, after the lead's last of the first (${lead_last:-?}): it was not published ahead"

# 6. A shape that cannot be prepared ahead of its turn (more
# configurations than --limit) fails in its turn, as itself: not tuned as
# an empty shape, and no GPU's runner lost over it.
TESSEL_FAKE_GPUS=2 "$tessel" tune warptiled --shape 256x256x256 \
  --shape 128x128x1024 --limit 2500 --budget 4 --top 1 --beta 1 --gpus all \
  > "$tmp/refused.out" 2>&1
st=$?
[ $st = 1 ] || fail "a shape over --limit: exit $st, expected 1"
has "warptiled has more than 2500 configurations at 128x128x1024" "$tmp/refused.out"
has "# warptiled 256x256x256:" "$tmp/refused.out"
if grep -q "0x0x0\|is lost to this run" "$tmp/refused.out"; then
  cat "$tmp/refused.out"
  fail "the shape refused ahead was tuned as 0x0x0, or a GPU was lost over it"
fi

# 7. Each runner journals what it times on its own GPU, and the lead of
# a run taken up again takes the other GPUs' results before it publishes
# a shape: tune killed (kill -9) once the other GPUs have timed the third
# shape's first pass, before the slow lead (timing the first shape's
# fastest in full) has taken their results, resumes without any GPU timing
# the third shape's first pass again (no cuBLAS call of a first-pass group
# at K 48: the lead's full count is all), and records what an
# uninterrupted run records.
TESSEL_FAKE_GPUS=4 "$tessel" tune $args --restart --shape 64x64x32 \
  --shape 64x64x48 --top 1 > "$tmp/whole.out" 2>&1 ||
  fail "the uninterrupted run: exit $?"
cp "$(record_of 64x64x48)" "$tmp/whole48.txt" ||
  fail "the uninterrupted run recorded nothing at 64x64x48"
TESSEL_FAKE_GPU_SPEEDS=0.001,1,1,1 "$tessel" tune $args --restart \
  --shape 64x64x32 --shape 64x64x48 --top 1 > "$tmp/cut.out" 2>&1 &
tune=$!
pids="$tune"
i=0
until [ "$(timed_in 64x64x48 others)" = 12 ] ||
      grep -q "first pass on 4 GPUs" "$tmp/cut.out" || [ $i -ge 1200 ]; do
  sleep 0.05; i=$((i + 1))
done
lead_had=$(timed_in 64x64x48 lead)
kill -9 "$tune"
wait "$tune" 2>/dev/null
pids=""
[ "$(timed_in 64x64x48 others)" = 12 ] ||
  fail "the other GPUs' own journals held $(timed_in 64x64x48 others) of the third shape's 12 first-pass results when tune was killed"
[ "$lead_had" = 0 ] ||
  fail "the lead had journaled $lead_had of the third shape's results before the kill: the test needs it to have none"
rm -f "$tmp/launches.txt"
TESSEL_FAKE_LAUNCH_LOG="$tmp/launches.txt" "$tessel" tune $args \
  --shape 64x64x32 --shape 64x64x48 --top 1 > "$tmp/resumed.out" 2>&1
st=$?
[ $st = 0 ] || { cat "$tmp/resumed.out"; fail "the run taken up again: exit $st, expected 0"; }
taken_up "$tmp/resumed.out" "$tmp/launches.txt" "[123]" 64x64x48 \
  "# first pass on 4 GPUs: GPU 0 timed 0, GPU 1 timed 0, GPU 2 timed 0, GPU 3 timed 0" \
  "$(record_of 64x64x48)" "$tmp/whole48.txt"
ls "$TESSEL_CACHE_DIR"/tune/*.journal > /dev/null 2>&1 &&
  fail "journals left after the run taken up again finished: $(ls "$TESSEL_CACHE_DIR"/tune/)"

[ $fails = 0 ] && echo "ok: tune --gpus on 4 fake GPUs"
exit $fails
