#!/bin/sh
# Records of runs from the command: bench --json end to end on the fake
# driver (tests/fake_cuda.c, which runs nothing), the record read back;
# tessel compare on the example records (tests/records/), whose speedups
# are known; plot's command line; bench's estimate and --max-seconds.
#
# Usage: test_records.sh TESSEL RECORD_ROWS FAKE_DRIVER RECORDS_DIR HAVE_PLPLOT
tessel="$1"
rows="$2"
fake="$3"
records="$4"
have_plplot="$5"
fails=0
tmp=$(mktemp -d /tmp/tessel-records-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$1" "$2" || { fail "$2 lacks '$1'"; cat "$2"; }; }
status() { # status WANT DESCRIPTION GOT
  [ "$3" = "$1" ] && echo "ok: $2" || fail "$2: exit $3, expected $1"
}

# ---- bench --json on the fake driver: every row, the repeats, the trace.
case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
mkdir "$tmp/lib" && ln -s "$fake" "$tmp/lib/libcublas.so.13"
TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" bench naive smem32 --beta 1 --shape 64x64x64 --shape 96x32x16 \
  --repeats 7 --json "$tmp/r.json" > "$tmp/bench.out" 2>&1
status 0 "bench --json on the fake driver" $?
"$rows" "$tmp/r.json" > "$tmp/rows.out" 2>&1
status 0 "the record follows the schema" $?
[ "$(wc -l < "$tmp/rows.out")" = 6 ] || fail "expected 6 rows (2 shapes x cuBLAS, naive, smem32)"
has "ok	cuBLAS	64x64x64	NN	f32	" "$tmp/rows.out"
has "ok	naive	96x32x16	NN	f32	" "$tmp/rows.out"
has "ok	smem32	64x64x64	NN	f32	" "$tmp/rows.out"
# Each row holds its 7 repeats, the trace as C and the .cu's hash.
[ "$(grep -c '"times_ms"' "$tmp/r.json")" = 6 ] || fail "not 6 times_ms arrays"
has '"repeats": 7' "$tmp/r.json"
has 'ts_split(s, i, 32' "$tmp/r.json"
grep -qE '"cu_hash": "[0-9a-f]{16}"' "$tmp/r.json" || fail "no cu_hash"
has '"name": "Fake GPU (tests/fake_cuda.c)"' "$tmp/r.json"
has '"sm_count": 132' "$tmp/r.json"
has '"--json"' "$tmp/r.json"
# Without NVML the sensors say why, with no numbers; with the fake's
# (TESSEL_NVML) the record holds its readings at the start and the end.
has '"unavailable": "' "$tmp/r.json"
if grep -qF '"unavailable": "NVML not loaded' "$tmp/r.json"; then
  TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" TESSEL_NVML="$fake" \
    LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$tessel" bench naive --beta 1 --shape 64x64x64 --repeats 2 --json "$tmp/s.json" \
    > "$tmp/s.out" 2>&1
  status 0 "bench --json with NVML" $?
  [ "$(grep -c '"sm_mhz": 1755' "$tmp/s.json")" = 2 ] ||
    { fail "not the fake NVML's SM clock at start and end"; cat "$tmp/s.json"; }
  has '"memory_mhz": 2619' "$tmp/s.json"
  has '"temperature_c": 41' "$tmp/s.json"
  has '"power_w": 123.4' "$tmp/s.json"
  "$rows" "$tmp/s.json" > /dev/null 2>&1
  status 0 "a record with sensors follows the schema" $?
  # compare shows the clocks, and warns where they differ by over 3%.
  "$tessel" compare "$tmp/s.json" "$tmp/s.json" > "$tmp/sc.out" 2>&1
  has "#    clocks: SM 1755..1755 MHz, memory 2619..2619 MHz (start..end)" "$tmp/sc.out"
  grep -q "warning: the SM clock" "$tmp/sc.out" && fail "a clock warning for equal clocks"
  sed '0,/"sm_mhz": 1755/s//"sm_mhz": 1500/' "$tmp/s.json" > "$tmp/s2.json"
  "$tessel" compare "$tmp/s.json" "$tmp/s2.json" > "$tmp/sd.out" 2>&1
  has "# warning: the SM clocks differ by 17% (A ran at 1755..1755 MHz, B at 1500..1755 MHz, start..end)" "$tmp/sd.out"
fi
# A record compares with itself: every row within noise, speedup 1.
"$tessel" compare "$tmp/r.json" "$tmp/r.json" > "$tmp/self.out" 2>&1
status 0 "compare a record with itself" $?
[ "$(grep -c 'within noise' "$tmp/self.out")" = 6 ] || { fail "not 6 rows within noise"; cat "$tmp/self.out"; }
# Its clocks are not compared where it holds no reading of them, and it
# says why.
grep -qE '^# clocks not compared: A has no reading of them \(.+\)$' "$tmp/self.out" ||
  { fail "no note that the clocks went unchecked"; cat "$tmp/self.out"; }

# ---- A row whose result differs from cuBLAS's (the fake driver runs no
# kernel, so with beta 0 C keeps its NaN poison: an infinite error).  The
# run fails it; so does its record, and compare and plot say it is no
# speed.
TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" bench naive --shape 64x64x64 --repeats 5 --json "$tmp/w.json" \
  > "$tmp/w.out" 2>&1
status 1 "bench of a result that differs from cuBLAS" $?
has "tessel: naive differs from cuBLAS (max relative error inf, over 9.66e-06)" "$tmp/w.out"
has '"status": "differs"' "$tmp/w.json"
has '"error": "differs from cuBLAS (max relative error inf, over 9.66e-06)"' "$tmp/w.json"
has '"max_rel_err": "inf"' "$tmp/w.json"
grep -q '"status": "ok"' "$tmp/w.json" && fail "a row that differs recorded as ok"
"$rows" "$tmp/w.json" > "$tmp/wrows.out" 2>&1
status 0 "a record with a row that differs follows the schema" $?
has "differs	naive	64x64x64	NN	f32	" "$tmp/wrows.out"
"$tessel" compare "$tmp/w.json" "$tmp/w.json" > "$tmp/wc.out" 2>&1
status 0 "compare a record with a row that differs" $?
grep -qE "^naive +64x64x64 +NN +f32 +differs from cuBLAS in both$" "$tmp/wc.out" ||
  { fail "compare took a row that differs as valid"; cat "$tmp/wc.out"; }
has "    A: differs from cuBLAS (max relative error inf" "$tmp/wc.out"
grep -q "geometric mean speedup of" "$tmp/wc.out" && fail "a row that differs in the mean"
has "# geometric mean of 1 cuBLAS row (the machine's drift): 1.000x" "$tmp/wc.out"
if [ "$have_plplot" = true ]; then
  "$tessel" plot "$tmp/w.json" -o "$tmp/w.png" > "$tmp/wp.out" 2>&1
  status 0 "plot a record with a row that differs" $?
  has "# naive 64x64x64 NN: not drawn as a speed, marked where its bar would be (differs from cuBLAS" "$tmp/wp.out"
fi

# ---- Types cuBLAS has no GEMM of (fp32 A and B, an fp16 C; the fake
# refuses them as cuBLAS does, status 15): timed against the nearest it has,
# an fp32 C, said on the output and in the record.
TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" bench naive --c-dtype f16 --beta 1 --shape 64x64x64 --repeats 3 \
  --json "$tmp/h.json" > "$tmp/h.out" 2>&1
status 0 "bench with a C type cuBLAS has no GEMM of" $?
has "# cuBLAS has no GEMM of A f32, B f32 and C f16: its row is the nearest it has, C f32 (which moves more bytes of C), and results are checked against its C rounded to f16" "$tmp/h.out"
grep -qE "^naive +64x64x64 +NN .* 0\.0e\+00 " "$tmp/h.out" || { fail "naive not checked against cuBLAS"; cat "$tmp/h.out"; }
has '"c_type": "f16"' "$tmp/h.json"
has '"cublas_c_type": "f32"' "$tmp/h.json"
"$rows" "$tmp/h.json" > /dev/null 2>&1
status 0 "a record with cuBLAS at other types follows the schema" $?
# Where cuBLAS has the types, it runs at them and nothing is said.
TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" bench naive --dtype f16 --c-dtype f16 --beta 1 --shape 64x64x64 \
  --repeats 3 --json "$tmp/hh.json" > "$tmp/hh.out" 2>&1
status 0 "bench in fp16 throughout" $?
grep -q "cuBLAS has no GEMM" "$tmp/hh.out" && fail "a note for types cuBLAS has"
grep -q "cublas_c_type" "$tmp/hh.json" && fail "cublas_c_type for types cuBLAS has"

# ---- One name for one configuration: tune's record names a file space's
# configurations FILE.c:SPACE:CONFIG, and bench --tuned names its row after
# the configuration it ran, so compare matches the two.
cp "$(dirname "$0")/../examples/regtiles.c" "$tmp/regtiles.c"
(cd "$tmp" && TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" tune regtiles.c --shape 128x128x64 --beta 1 --top 2 \
  --json tune.json > tune.out 2>&1)
status 0 "tune a file's space with --json" $?
has '"space": "regtiles.c:regtiles"' "$tmp/tune.json"
(cd "$tmp" && TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" bench regtiles.c:regtiles --tuned --shape 128x128x64 --beta 1 \
  --repeats 5 --json best.json > best.out 2>&1)
status 0 "bench the space's tuned configuration" $?
best=$(sed -n 's/^# the best at this shape, \(.*\), as C:$/\1/p' "$tmp/tune.out")
[ -n "$best" ] || { fail "tune printed no best configuration"; cat "$tmp/tune.out"; }
has "\"name\": \"regtiles.c:regtiles:$best\"" "$tmp/best.json"
grep -qE "^regtiles.c:regtiles:$best +128x128x64 +NN " "$tmp/best.out" ||
  { fail "bench's row is not named after the configuration"; cat "$tmp/best.out"; }
"$tessel" compare "$tmp/tune.json" "$tmp/best.json" > "$tmp/tb.out" 2>&1
status 0 "compare a tune record with a bench of its best" $?
grep -qE "^regtiles.c:regtiles:$best +128x128x64 +NN +f32 +[0-9.]+ +[0-9.]+ +[0-9.]+x " "$tmp/tb.out" ||
  { fail "the best configuration is not matched across the records"; cat "$tmp/tb.out"; }
grep -q "only in B" "$tmp/tb.out" && { fail "a bench row unmatched"; cat "$tmp/tb.out"; }
# Names longer than 16 characters widen the name column: the header's and
# the rows' columns line up, in bench's table and in compare's.
aligned() { # aligned FILE HEADER_WORD ROW_PATTERN ROW_WORD
  h=$(awk -v w="$2" 'index($0, w) && /^schedule/ {print index($0, w); exit}' "$1")
  r=$(awk -v p="$3" -v w="$4" '$0 ~ p {print index($0, w); exit}' "$1")
  [ -n "$h" ] && [ "$h" = "$r" ] ||
    { fail "$1: '$2' at column $h, the row's '$4' at $r"; cat "$1"; }
}
aligned "$tmp/best.out" shape "^regtiles.c:regtiles:" 128x128x64
aligned "$tmp/best.out" shape "^cuBLAS " 128x128x64
aligned "$tmp/tb.out" shape "^regtiles.c:regtiles:" 128x128x64
aligned "$tmp/tb.out" shape "^cuBLAS " 128x128x64
# Given as text, in part and in another order, a configuration is named in
# full, as tune names it (the knobs not given at their first values).
(cd "$tmp" && TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" bench "regtiles.c:regtiles:bk=16,bm=32" --shape 128x128x64 \
  --beta 1 --repeats 5 --json given.json > given.out 2>&1)
status 0 "bench a configuration given in part" $?
has '"name": "regtiles.c:regtiles:bm=32,bn=64,tm=8,bk=16"' "$tmp/given.json"
"$tessel" compare "$tmp/tune.json" "$tmp/given.json" > "$tmp/tg.out" 2>&1
grep -qE "^regtiles.c:regtiles:bm=32,bn=64,tm=8,bk=16 +128x128x64 +NN +f32 +[0-9.]+ " "$tmp/tg.out" ||
  { fail "a configuration given in part is not matched"; cat "$tmp/tg.out"; }

# ---- compare: B's warptiled 1.25x as fast, the rest within noise.
"$tessel" compare "$records/bench_a.json" "$records/bench_b.json" \
  > "$tmp/cmp.out" 2>&1
status 0 "compare the example records" $?
cat "$tmp/cmp.out"
for shape in 1024x1024x1024 4096x4096x4096; do
  grep -E "^warptiled +$shape +NN +f32 .* 1\.2[45][0-9]x \[1\.2[0-9]+, 1\.2[0-9]+\] faster$" \
    "$tmp/cmp.out" > /dev/null || fail "warptiled at $shape is not 1.25x faster"
  grep -E "^naive +$shape .* within noise$" "$tmp/cmp.out" > /dev/null ||
    fail "naive at $shape is not within noise"
  grep -E "^cuBLAS +$shape .* within noise$" "$tmp/cmp.out" > /dev/null ||
    fail "cuBLAS at $shape is not within noise"
  has "# only in A: splitk $shape NN f32" "$tmp/cmp.out"
  has "# only in B: pipelined $shape NN f32" "$tmp/cmp.out"
done
has "# geometric mean of 2 cuBLAS rows (the machine's drift): 1.000x" "$tmp/cmp.out"
grep -qE "clocks (differ|not compared)" "$tmp/cmp.out" && fail "a word on clocks where they are the same"
# B at an SM clock 1755 MHz at its end (A at 1980 throughout): 13% apart,
# beyond the 3% compare lets by; its memory clock 3% lower, within them.
sed -e '/"end"/,/}/s/"sm_mhz": 1980/"sm_mhz": 1755/' \
    -e '/"end"/,/}/s/"memory_mhz": 3201/"memory_mhz": 3120/' \
    "$records/bench_b.json" > "$tmp/slow.json"
"$tessel" compare "$records/bench_a.json" "$tmp/slow.json" > "$tmp/slow.out" 2>&1
status 0 "compare records whose clocks differ" $?
has "# warning: the SM clocks differ by 13% (A ran at 1980..1980 MHz, B at 1980..1755 MHz, start..end): the timings may differ by that alone" "$tmp/slow.out"
grep -q "memory clocks" "$tmp/slow.out" && fail "a warning for memory clocks 2.6% apart"
# The other way round, warptiled is slower.
"$tessel" compare "$records/bench_b.json" "$records/bench_a.json" \
  > "$tmp/back.out" 2>&1
grep -E "^warptiled +1024x1024x1024 .* 0\.80[0-9]x .* slower$" "$tmp/back.out" \
  > /dev/null || fail "B to A: warptiled is not 0.80x, slower"
# A tune record compares with itself, configuration by configuration.
"$tessel" compare "$records/tune.json" "$records/tune.json" > "$tmp/tune.out" 2>&1
status 0 "compare a tune record" $?
has "warptiled:bm=" "$tmp/tune.out"

# ---- compare's errors.
"$tessel" compare "$records/bench_a.json" > "$tmp/e.out" 2>&1
status 2 "compare with one record" $?
"$tessel" compare "$records/bench_a.json" "$tmp/none.json" > "$tmp/e.out" 2>&1
status 1 "compare with a missing record" $?
has "none.json" "$tmp/e.out"
echo '{"schema": 1}' > "$tmp/bad.json"
"$tessel" compare "$tmp/bad.json" "$records/bench_a.json" > "$tmp/e.out" 2>&1
status 1 "compare with a record that lacks fields" $?
has "bad.json is not a tessel record: kind: missing" "$tmp/e.out"
[ "$(wc -l < "$tmp/e.out")" = 1 ] || fail "the error is not one line"

# ---- plot's command line (the drawing is tested in test_plot.c).
"$tessel" plot "$records/bench_a.json" > "$tmp/e.out" 2>&1
status 2 "plot without -o" $?
# An -o that cannot be written: one line and a usage error, before PLplot
# (which would end the process after a page of its own messages).
"$tessel" plot "$records/bench_a.json" -o /nonexistent/x.png > "$tmp/e.out" 2>&1
status 2 "plot -o into a missing directory" $?
has "tessel: -o must name a file tessel can write (got '/nonexistent/x.png'" "$tmp/e.out"
[ "$(wc -l < "$tmp/e.out")" = 1 ] || { fail "plot's -o error is not one line"; cat "$tmp/e.out"; }
if [ "$have_plplot" = true ]; then
  "$tessel" plot "$records/bench_a.json" -o "$tmp/a.png" > "$tmp/e.out" 2>&1
  status 0 "plot a bench record" $?
  [ -s "$tmp/a.png" ] || fail "no PNG written"
  "$tessel" plot "$records/tune.json" -o "$tmp/t.png" --knob bk > "$tmp/e.out" 2>&1
  status 0 "plot a tune record by knob bk" $?
  "$tessel" plot "$records/tune.json" -o "$tmp/t.png" --knob nosuch > "$tmp/e.out" 2>&1
  status 1 "plot by a knob the space lacks" $?
  has "has no knob 'nosuch'" "$tmp/e.out"
else
  "$tessel" plot "$records/bench_a.json" -o "$tmp/a.png" > "$tmp/e.out" 2>&1
  status 1 "plot without PLplot" $?
  has "install libplplot-dev and plplot-driver-cairo" "$tmp/e.out"
fi

# ---- bench's estimate: a refusal past --max-seconds before any GPU is
# looked for, the estimate said once there is one.
TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$tessel" bench naive \
  --shape 32768x32768x32768 > "$tmp/e.out" 2>&1
status 2 "bench past --max-seconds" $?
has "tessel: bench would take about " "$tmp/e.out"
has "over --max-seconds 600: give --max-seconds " "$tmp/e.out"
has ": 1 compile (" "$tmp/e.out" # one schedule: singular
TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$tessel" bench naive \
  --shape 8192x8192x8192 > "$tmp/e.out" 2>&1
status 1 "bench over 10 s, under --max-seconds, without a GPU" $?
has "bench needs a GPU" "$tmp/e.out"
# Without a GPU the one line is why: no estimate of a run that cannot be.
[ "$(wc -l < "$tmp/e.out")" = 1 ] ||
  { fail "bench without a GPU says more than why"; cat "$tmp/e.out"; }
TESSEL_CACHE_DIR="$tmp/cache" TESSEL_CUDA_DRIVER="$fake" \
  LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$tessel" bench naive --beta 1 --shape 8192x8192x8192 > "$tmp/e.out" 2>&1
status 0 "bench over 10 s on the fake driver" $?
has "tessel: bench will take about " "$tmp/e.out"
TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$tessel" bench naive \
  --shape 32768x32768x32768 --max-seconds 100000 > "$tmp/e.out" 2>&1
status 1 "bench with --max-seconds raised, without a GPU" $?
has "bench needs a GPU" "$tmp/e.out"
TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$tessel" bench naive \
  --shape 1024x1024x1024 > "$tmp/e.out" 2>&1
grep -q "will take about" "$tmp/e.out" && fail "an estimate for a short run"
"$tessel" tune seed003 --max-seconds 5 > "$tmp/e.out" 2>&1
status 2 "--max-seconds outside bench" $?
has "--max-seconds is an option of bench" "$tmp/e.out"

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
echo "ok"
