#!/bin/sh
# The tessel command: exit statuses, one-line errors, and the subcommands'
# output on a machine with or without a GPU.
# Usage: test_cli.sh TESSEL [FAKE_DRIVER] (tests/fake_cuda.c: tune runs end
# to end on it without a GPU).
tessel="$1"
fake="$2"
fails=0

expect() { # expect STATUS DESCRIPTION -- COMMAND...
  want=$1; what=$2; shift 3
  out=$("$@" 2>&1 < /dev/null); got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; echo "$out" | head -5
    fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
  last="$out"
}

one_line() { # the last output is exactly one line
  if [ "$(printf '%s\n' "$last" | wc -l)" != 1 ]; then
    echo "FAIL: expected a one-line message, got:"; echo "$last"
    fails=$((fails + 1))
  fi
}

lacks() {
  case "$last" in
    *"$1"*) echo "FAIL: output has '$1':"; echo "$last" | head -5; fails=$((fails + 1)) ;;
  esac
}

contains() {
  case "$last" in
    *"$1"*) ;;
    *) echo "FAIL: output lacks '$1':"; echo "$last" | head -5; fails=$((fails + 1)) ;;
  esac
}

expect 0 "list" -- "$tessel" list
contains "coalesced"
expect 0 "--help" -- "$tessel" --help
contains "exit status: 0 done"; contains "2 a usage error"
for cmd in list show check bench tune; do
  expect 0 "$cmd --help" -- "$tessel" $cmd --help
  contains "Exit status: 0 "; contains ", 1 "; contains "usage error"
done
expect 2 "no command" -- "$tessel"
one_line; contains "name a command: list, show, check, bench, tune, explain, compare or plot"
expect 0 "tune --list" -- "$tessel" tune --list
contains "seed003"
# each space's knobs with their values, at 1024^3 (f16 for tensor cores)
contains "                 order      k_innermost, standard, k_after_threads"
contains "                 at 1024x1024x1024, A and B f32: 75 configurations, 0 pruned"
contains "                 buffers    2, 1, 3, 4"
contains "                 swizzle    0, 8   (declared in 768 of the 3840 configurations)"
contains "                 bar_tiles  1, 2, 4   (declared in 1920 of the 3840 configurations)"
contains "                 at 1024x1024x1024, A and B f16: 3456 configurations"
contains "                 xor        0, 1"
expect 2 "unknown space" -- "$tessel" tune nosuch
one_line; contains "unknown space 'nosuch'"
expect 2 "tune without a space" -- "$tessel" tune --shape 64x64x64
one_line; contains "name a space"
expect 2 "--jobs outside tune" -- "$tessel" bench naive --jobs 2
one_line; contains "--jobs is an option of tune"
expect 2 "--cu outside bench" -- "$tessel" tune seed003 --cu x.cu
one_line; contains "--cu is an option of bench"
expect 2 "--tuned in tune" -- "$tessel" tune seed003 --tuned
one_line; contains "--tuned is an option of show, check, bench and explain"
expect 0 "a space's configuration" -- "$tessel" show --trace \
  seed003:block=64x64x32,thread=8x8,order=standard --shape 128x128x64
contains "ts_split(s, j_inner, 8, &j_inner_outer, &j_inner_inner);"
expect 0 "a space's first configuration" -- "$tessel" check seed003 --shape 33x65x17
expect 2 "a configuration that does not parse" -- "$tessel" show seed003:blk
one_line; contains "seed003:blk: ts_config_parse: \"blk\" is not name=value"
expect 1 "a value the knob does not have" -- "$tessel" show seed003:block=1
one_line; contains "block=1 is not one of its values"
expect 0 "--tuned without a record" -- "$tessel" check seed003 --tuned --shape 9x9x9
contains "no tuning record of seed003 at 9x9x9 NN"
expect 2 "unknown command" -- "$tessel" frobnicate
one_line
expect 2 "unknown schedule" -- "$tessel" show nosuch
one_line; contains "unknown schedule 'nosuch'"
expect 2 "a schedule's name mistyped" -- "$tessel" show warptiledd
one_line; contains "unknown schedule 'warptiledd'; did you mean 'warptiled'?"
expect 2 "a space's name mistyped" -- "$tessel" tune seed03
one_line; contains "unknown space 'seed03'; did you mean 'seed003'?"
expect 2 "a built-in space's knob mistyped" -- "$tessel" show seed003:blok=32x32x32
one_line; contains "the space has no knob \"blok\"; did you mean \"block\"? (its knobs: block, thread, order)"
# --tuned on a schedule without knobs says so, and runs it as written.
expect 0 "--tuned on a plain schedule" -- "$tessel" check naive --tuned --shape 9x9x9
contains "tessel: naive is a schedule with no knobs, not a space: --tuned, which reads a space's tuning record, leaves it as it is written"
expect 2 "zero shape" -- "$tessel" check naive --shape 0x5x5
one_line; contains "--shape must be MxNxK"
expect 2 "bad shape" -- "$tessel" show naive --shape abc
one_line
expect 2 "shape with trailing text" -- "$tessel" show naive --shape 4x4x4x4
one_line
expect 2 "--blocks 0" -- "$tessel" check naive --blocks 0
one_line; contains "--blocks must be an integer in 1..100000 (got '0')"
expect 2 "--blocks garbage" -- "$tessel" check naive --blocks many
one_line; contains "--blocks must be an integer"
expect 2 "--blocks outside check" -- "$tessel" show naive --blocks 3
one_line; contains "--blocks is an option of check"
expect 0 "a sampled check at a shape too large to hold" -- "$tessel" check \
  blocktile2d --shape 40001x30011x33
contains "ok (sampled: "; contains "elements of C"
contains "samples blocks (the matrices do not fit in the "
contains " GiB of memory available; in full about "
expect 0 "--blocks at 1x1x1: one element" -- "$tessel" check naive \
  --shape 1x1x1 --blocks 1
contains "ok (sampled: 1 of 1 block, 1 element of C, "
contains "): 1 of 1 block, under 1 s"
expect 0 "--blocks samples a small shape" -- "$tessel" check splitk \
  --shape 300x301x77 --blocks 1
contains "ok (sampled: "
# The sample's estimate comes first, with the full check's.
contains "samples blocks (--blocks; in full under 1 s and "
contains " blocks, under 1 s and "; contains " MiB of memory"
# A sample that cannot fit (one block's rows of A and columns of B,
# 2^31 - 1 long) is refused before it runs, with the numbers.
expect 1 "a sample past memory" -- "$tessel" check naive --shape 256x256x2147483647
contains "1 of 64 blocks, about "; contains "512.0 GiB of memory"
contains "FAIL: out of memory"; contains "GiB available; check a smaller K"
# The estimate counts every thread of a block, those past C's edge too,
# and every step of its k loop: a 4x4 corner of 32x32 threads walking a
# long K samples, and one block that alone would pass the sample's budget
# is refused at once with why and what to do.
expect 1 "a block past the sample's budget" -- "$tessel" check warptiled \
  --shape 4x4x400000
contains "samples blocks (a full check would take more than 10 s; in full about "
contains "): 1 of 1 block, about "
contains "FAIL: the check would take longer than its budget"
contains "cannot stay within 45 s: the 1 block writing C[0, 0] alone takes about "
contains "each of its threads walks K = 400000); check a smaller K"
# Several schedules, one needing --dtype: its row says why, the rest run,
# exit 1; so too for it alone.
expect 1 "check, a tensor-core schedule among others in f32" -- "$tessel" \
  check naive tc128 tensorcore coalesced --shape 16x16x16
contains "tc128            16x16x16         NN     FAIL: needs --dtype f16, bf16 or tf32"
contains "tensorcore       16x16x16         NN     FAIL: needs --dtype f16, bf16 or tf32"
contains "naive            16x16x16         NN     ok"
contains "coalesced        16x16x16         NN     ok"
expect 1 "check, a tensor-core schedule alone in f32" -- "$tessel" \
  check tc128 --shape 16x16x16
contains "FAIL: needs --dtype f16, bf16 or tf32"
# check --all on a built-in space: 75 rows and the counts; a schedule or a
# configuration is no space; a tensor-core space in f32 a row saying why.
expect 0 "check SPACE --all" -- "$tessel" check seed003 --all --shape 33x65x17
contains "tessel: checking every configuration of seed003 at 33x65x17 runs 75 checks"
contains "seed003:block=64x64x64,thread=8x8,order=k_after_threads 33x65x17         NN     ok"
contains "seed003 at 33x65x17: 75 checked, 0 pruned, 0 failed"
[ "$(printf '%s\n' "$last" | grep -c ' ok$')" = 75 ] ||
  { echo "FAIL: check --all: not 75 rows ok"; fails=$((fails + 1)); }
expect 1 "check --all, a tensor-core space in f32" -- "$tessel" check \
  tensorcore seed003 --all --shape 8x8x8
contains "                      8x8x8            NN     FAIL: needs --dtype f16, bf16 or tf32"
contains "tensorcore at 8x8x8: 0 checked, 0 pruned, 1 failed"
contains "seed003 at 8x8x8: 75 checked, 0 pruned, 0 failed"
expect 2 "check --all, a schedule" -- "$tessel" check naive --all
one_line; contains "check --all checks every configuration of a space; 'naive' is a schedule"
expect 2 "check --all, a configuration" -- "$tessel" check seed003:order=standard --all
one_line; contains "'seed003:order=standard' is a configuration"
# The schedule column widens to the longest name: every row's shape starts
# under the header's.
expect 0 "a long name widens the column" -- "$tessel" check naive \
  seed003:block=64x64x64,thread=8x8,order=k_after_threads --shape 8x8x8
cols=$(printf '%s\n' "$last" | awk '/^schedule/ { print index($0, "shape") }
  / 8x8x8 / { print index($0, " 8x8x8 ") + 1 }' | sort -u)
[ "$cols" = "$(printf '%s\n' "$last" | awk '/^schedule/ { print index($0, "shape") }')" ] ||
  { echo "FAIL: the shape column moves: $cols"; fails=$((fails + 1)); }
expect 2 "bad layout" -- "$tessel" check naive --layout XY
one_line; contains "--layout must be NN, NT, TN or TT (got 'XY')"
expect 2 "unknown option" -- "$tessel" show naive --frob
one_line
expect 2 "bad alpha" -- "$tessel" check naive --alpha nan
one_line
expect 0 "show --ir" -- "$tessel" show coalesced --ir --shape 37x53x29
contains "bound to threadIdx.x"
expect 0 "show --trace" -- "$tessel" show naive --trace
contains "ts_bind(s, i_inner, TS_THREAD_X);"
expect 0 "show --cuda" -- "$tessel" show coalesced --cuda --arch sm_80
contains "// ptxas (sm_80):"
contains "__launch_bounds__(1024)"
expect 0 "show --cuda of a persistent grid" -- "$tessel" show wgpers --cuda \
  --dtype f16 --shape 4096x4096x4096
contains "// ptxas (sm_90): 168 registers"; contains "0 bytes spill stores"
contains "for (int wave = 0; blockIdx.x + wave * gridDim.x < 512; ++wave)"
contains "cp.async.bulk.tensor"; contains "mbarrier.try_wait.parity"
contains "setmaxnreg.dec.sync.aligned.u32 40"
# tf32: wgmma reads an operand k-major in memory as it lies (truncated), so
# wgws in NT and NN has no packing kernel (NN computes C's transpose, B
# read into registers as wgmma's a), and in TN packs only B.
expect 0 "show --cuda of wgws in tf32 NT" -- "$tessel" show wgws --cuda \
  --dtype tf32 --layout NT --shape 4096x4096x4096
contains "tessel_tma_2d(&A_shared[0][0][0], &tmap_A,"
contains "tessel_tma_2d(&B_shared[0][0][0], &tmap_B,"
lacks "_packed"; lacks "tessel_round_tf32"; lacks "cvt.rna.tf32"
[ "$(printf '%s\n' "$last" | grep -c '__global__')" = 1 ] ||
  { echo "FAIL: wgws tf32 NT is not one kernel"; fails=$((fails + 1)); }
expect 0 "show --cuda of wgws in tf32 NN" -- "$tessel" show wgws --cuda \
  --dtype tf32 --layout NN --shape 4096x4096x4096
contains "&tmap_A,"; contains "&tmap_B,"; lacks "_packed"
contains "tessel_wgmma_m64n256k8_tf32_rk(&acc[0][0][0], &a_frag["
contains "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32"
expect 0 "show --cuda of wgws in tf32 TN" -- "$tessel" show wgws --cuda \
  --dtype tf32 --layout TN --shape 4096x4096x4096
contains "&tmap_A,"; contains "&tmap_B_packed,"; lacks "tmap_A_packed"
contains "tessel_round_tf32("
expect 1 "show --cuda unknown arch" -- "$tessel" show naive --cuda --arch sm_11
contains "NVRTC does not know architecture sm_11"
expect 0 "check, several shapes and layouts" -- "$tessel" check naive coalesced \
  --shape 1x1x1 --shape 37x53x29 --layout TT --alpha 2 --beta 0.5

# bench: a table on a GPU; one line and exit 1 without one.
out=$("$tessel" bench naive --shape 64x64x64 --repeats 3 2>&1); st=$?
if [ $st = 0 ]; then
  echo "ok: bench on a GPU"
elif [ $st = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ]; then
  echo "ok: bench without a GPU says why in one line: $out"
else
  echo "FAIL: bench exit $st:"; echo "$out"; fails=$((fails + 1))
fi

# bench --cu: the file is read before the GPU is looked for.
expect 2 "bench --cu, no such file" -- "$tessel" bench naive --cu /nonexistent/k.cu
one_line; contains "cannot read --cu /nonexistent/k.cu: No such file or directory"
expect 2 "--cu outside bench" -- "$tessel" show naive --cu k.cu
one_line; contains "--cu is an option of bench"
expect 2 "bench, neither schedule nor --cu" -- "$tessel" bench --shape 64x64x64
one_line
expect 1 "bench --cu alone without a driver" -- env \
  TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$tessel" bench \
  --cu "$(dirname "$0")/../bench/handwritten/seed001_smem32.cu"
one_line; contains "bench needs a GPU"

# tune runs in a GPU process of its own: its message and status are tune's.
expect 1 "tune without a driver" -- env TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 \
  "$tessel" tune seed003 --shape 64x64x64
one_line; contains "tune needs a GPU: no CUDA driver"

# No driver, an architecture that is not one: one line, exit 1.
expect 1 "bench without a driver" -- env TESSEL_CUDA_DRIVER=/nonexistent/libcuda.so.1 \
  "$tessel" bench naive --shape 64x64x64
one_line
contains "no CUDA driver: /nonexistent/libcuda.so.1 could not be loaded"
expect 2 "show --cuda, not an architecture" -- "$tessel" show naive --cuda --arch compute_90
one_line; contains "--arch must be sm_ and the compute capability, e.g. sm_90 (got 'compute_90')"
expect 2 "check --arch validated too" -- "$tessel" check naive --arch sm_ --shape 8x8x8
one_line; contains "(got 'sm_')"
expect 2 "--ir with --cuda" -- "$tessel" show naive --ir --cuda
one_line; contains "--ir and --cuda exclude each other; give one"
expect 2 "--trace outside show" -- "$tessel" check naive --trace
one_line; contains "--trace is an option of show"

# A check that cannot fit samples at once, with the numbers, and without
# the library's advice to its callers to sample.
expect 0 "check at a shape past memory samples" -- "$tessel" check naive --shape 65536x65536x64
contains "samples blocks (the matrices do not fit in the "
contains "GiB of memory available; in full about "; contains " GiB of memory): "
contains "ok (sampled: "
lacks "ts_program_check_sampled"; lacks "sample it"

reject_each() { # each row of stdin, "TEXT|ARGUMENTS": exit 2, one line with TEXT
  while IFS='|' read -r text args; do
    [ -n "$args" ] || continue
    # shellcheck disable=SC2086 # the arguments are words
    expect 2 "rejects: $args" -- "$tessel" $args
    one_line; contains "$text"
  done
}

# Every rejection of an option: exit 2 and one line that names the option
# and what it expected.
reject_each <<'EOF'
--csv is an option of bench and tune|show naive --csv x.csv
--csv is an option of bench and tune|check naive --csv x.csv
--repeats is an option of bench and tune|check naive --repeats 3
--warmup is an option of bench and tune|show naive --warmup 1
--seed is an option of check, bench and tune|show naive --seed 1
--arch is an option of show, check and explain|bench naive --arch sm_90
--arch is an option of show, check and explain|tune seed003 --arch sm_90
--jobs is an option of tune|check naive --jobs 2
--top is an option of tune|bench naive --top 2
--limit is an option of tune|show naive --limit 2
--budget is an option of tune|check naive --budget 2
--time is an option of tune|bench naive --time 2
--json is an option of bench, tune and explain|check naive --json x.json
--restart is an option of tune|bench naive --restart
--cu is an option of bench|check naive --cu k.cu
--tuned is an option of show, check, bench and explain|tune seed003 --tuned
--ir is an option of show|bench naive --ir
--cuda is an option of show|check naive --cuda
--layout is given twice; give it once (only --shape and --cu repeat)|check naive --layout NN --layout TT
--seed is given twice|check naive --seed 1 --seed 2
--tuned is given twice|check seed003 --tuned --tuned
--shape needs a value: MxNxK|check naive --shape
--layout needs a value: NN, NT, TN or TT|show naive --layout
--alpha needs a value: a finite number|check naive --alpha
--arch needs a value: sm_ and the compute capability|show naive --arch
--csv needs a value: the file to write|bench naive --csv
--jobs needs a value: an integer|tune seed003 --jobs
--dtype needs a value: f32, f16 or bf16|check naive --dtype
unknown or ambiguous option '--c' (see --help)|show naive --c
unknown or ambiguous option '--frob'|tune seed003 --frob
--shape must be MxNxK with each of M, N, K in 1..2147483647 (got '1x2')|bench naive --shape 1x2
--shape must be MxNxK with each of M, N, K in 1..2147483647 (got '2147483648x1x1')|check naive --shape 2147483648x1x1
--layout must be NN, NT, TN or TT (got 'nn')|tune seed003 --layout nn
--alpha must be a finite number within fp32's range (got '1e39')|check naive --alpha 1e39
--beta must be a finite number within fp32's range (got 'inf')|show naive --beta inf
--beta must be a finite number within fp32's range (got '0.5x')|check naive --beta 0.5x
--dtype must be f32, f16, bf16 or tf32 (got 'f64')|show naive --dtype f64
--c-dtype must be f32, f16 or bf16 (got 'int8')|check naive --c-dtype int8
--arch must be sm_ and the compute capability, e.g. sm_90 (got 'sm_9x')|show naive --arch sm_9x
--repeats must be an integer in 1..100000 (got '0')|bench naive --repeats 0
--warmup must be an integer in 0..100000 (got '-1')|bench naive --warmup -1
--seed must be an integer in 0..2147483647 (got 'x')|check naive --seed x
--jobs must be an integer in 1..1024 (got '0')|tune seed003 --jobs 0
--top must be an integer in 1..100000 (got '0')|tune seed003 --top 0
--limit must be an integer in 1..100000 (got '100001')|tune seed003 --limit 100001
--budget must be an integer in 1..100000 (got '1.5')|tune seed003 --budget 1.5
--time must be an integer in 1..1000000 (got '0')|tune seed003 --time 0
--csv must name a file tessel can write (got '/nonexistent/x.csv': No such file or directory)|bench naive --csv /nonexistent/x.csv
--json must name a file tessel can write (got '/': it is a directory)|tune seed003 --json /
--csv and --json both name same.out; give each its own file|tune seed003 --csv same.out --json same.out
--json records one space, and these names make 2 (seed003, warptiled)|tune seed003 warptiled --json x.json
--ir and --trace exclude each other; give one|show naive --ir --trace
--trace and --steps exclude each other; give one|show naive --trace --steps
--provenance annotates --ir's nest; it does not go with --cuda|show naive --cuda --provenance
tc128 runs on tensor cores, which take --dtype f16, bf16 or tf32|show tc128 --shape 16x16x16
tensorcore runs on tensor cores, which take --dtype f16, bf16 or tf32|tune tensorcore --shape 16x16x16
--cuda and --ir exclude each other; give one|show naive --cuda --ir
tune --list takes nothing else (got 'seed003')|tune --list seed003
tune --list takes nothing else (got '--shape')|tune --shape 8x8x8 --list
list takes FILE.c (a C file of schedules and spaces) or nothing (got 'naive')|list naive
show takes one schedule and one --shape (got 2 schedules and 0 shapes; FILE.c:NAME names one of a file's)|show naive coalesced
show takes one schedule and one --shape (got 1 schedule and 2 shapes)|show naive --shape 8x8x8 --shape 9x9x9
explain takes one schedule and one --shape (got 1 schedule and 2 shapes)|explain naive --shape 8x8x8 --shape 9x9x9
name a schedule (tessel list shows them)|check --shape 8x8x8
name a space (tessel tune --list shows them)|tune --jobs 2
unknown schedule 'nosuch' (tessel list shows the schedules, tessel tune --list the spaces)|check nosuch
unknown space 'nosuch' (tessel tune --list shows them)|tune nosuch
tune takes a space, not a schedule ('naive')|tune naive
tune takes a space, not a configuration ('seed003:block=32x32x32')|tune seed003:block=32x32x32
naive is a schedule, not a space: it takes no knob=value,... (got 'naive:a=1')|show naive:a=1
seed003:block=: ts_config_parse: "block=" is not name=value|check seed003:block=
unknown command 'frobnicate' (see tessel --help)|frobnicate
EOF
if [ -e same.out ]; then
  echo "FAIL: a rejected command wrote same.out"; fails=$((fails + 1))
fi

# Schedule files: compiled with the system compiler, mixed with built-ins.
work=$(mktemp -d)
cat > "$work/mine.c" <<'EOF'
#include <tessel.h>
TS_SCHEDULE(rows, "a thread a row") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_X);
  return ts_sched_status(s);
}
TS_SCHEDULE(serial, "no binding at all") { return ts_sched_status(s); }
EOF
printf '#include <tessel.h>\nTS_SCHEDULE(oops, "x") { ts_split(s); }\n' > "$work/bad.c"
printf '#include <tessel.h>\n' > "$work/none.c"
expect 0 "check FILE.c, every schedule of it, beside a built-in" -- \
  "$tessel" check "$work/mine.c" naive --shape 37x53x29
contains "mine.c:rows"; contains "mine.c:serial"; contains "naive"
expect 0 "check FILE.c:NAME at 1x1x1" -- "$tessel" check "$work/mine.c:rows" --shape 1x1x1
# A user's schedule of 32x32 threads at a skinny, very long shape: refused
# before it runs (it would take hours), not run.
cat > "$work/tiles.c" <<'EOF'
#include <tessel.h>
TS_SCHEDULE(tiles32, "32x32 thread blocks, a thread an element") {
  ts_loop *io, *ii, *jo, *ji;
  ts_split(s, ts_get_loop(s, "i"), 32, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), 32, &jo, &ji);
  ts_reorder(s, 4, (ts_loop *[]){io, jo, ii, ji});
  ts_bind(s, io, TS_BLOCK_Y);  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y); ts_bind(s, ji, TS_THREAD_X);
  return ts_sched_status(s);
}
EOF
expect 1 "a user's schedule walking K = 4e8 is refused" -- timeout 60 \
  "$tessel" check "$work/tiles.c" --shape 4x4x400000000
contains "in full about "; contains " hours and "
contains "alone takes about "; contains "check a smaller K"
expect 0 "show FILE.c:NAME" -- "$tessel" show "$work/mine.c:rows" --trace
contains 'ts_sched *s = ts_matmul_named(&def, "rows");'
expect 2 "show FILE.c of two schedules" -- "$tessel" show "$work/mine.c"
one_line; contains "; FILE.c:NAME names one of a file's"
# Names some library also defines still mean the file's schedule and space.
cat > "$work/libc_names.c" <<'EOF'
#include <tessel.h>
TS_SCHEDULE(pipe, "named like libc's pipe") {
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), 4, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  return ts_sched_status(s);
}
TS_SPACE(sync, "named like libc's sync") {
  int64_t f = ts_knob(c, "f", 2, (int64_t[]){4, 2});
  ts_loop *io, *ii;
  ts_split(s, ts_get_loop(s, "i"), f, &io, &ii);
  ts_bind(s, io, TS_BLOCK_X);
  return ts_sched_status(s);
}
EOF
expect 1 "check --arch refuses a kernel that needs a newer one" -- \
  "$tessel" check tc128 --dtype f16 --arch sm_75 --shape 16x16x16
contains "needs sm_80 or newer"
expect 0 "check --arch new enough" -- \
  "$tessel" check tc128 --dtype f16 --arch sm_90 --shape 16x16x16
expect 0 "a schedule named pipe is the file's" -- \
  "$tessel" show "$work/libc_names.c:pipe" --shape 8x8x8
contains "grid (2, 1, 1)"
expect 0 "a space named sync is the file's" -- \
  "$tessel" show "$work/libc_names.c:sync:f=2" --shape 8x8x8
contains "grid (4, 1, 1)"
expect 2 "FILE.c:NAME, no such schedule" -- "$tessel" check "$work/mine.c:cols"
one_line; contains "mine.c defines no schedule or space 'cols'; it defines rows, serial"
expect 1 "FILE.c that does not compile" -- "$tessel" check "$work/bad.c"
contains "bad.c did not compile"; contains "bad.c:2"
expect 1 "FILE.c without schedules" -- "$tessel" check "$work/none.c"
one_line; contains "none.c defines no schedule and no space"
expect 1 "FILE.c that is not there" -- "$tessel" check "$work/gone.c"
one_line; contains "cannot read"

# Counts of one are singular in explain's report: a grid of one block.
expect 0 "explain a grid of one block" -- "$tessel" explain naive --shape 1x1x1
contains "= 1 block of (32, 32, 1) threads"
contains "4-byte accesses, 1 lane; "
contains "global stores  1 request, 1 sector"
lacks "1 blocks"; lacks "1 lanes"; lacks "1 requests"

# explain --json: a warp-specialized pipeline's register split with the
# blocks a multiprocessor it was made for, as the text says them; one
# consumer warpgroup at one block launches with ptxas's 232, its largest
# setmaxnreg count.
explain_split() { # SCHEDULE LAUNCH PRODUCER CONSUMER BLOCKS
  expect 0 "explain $1 --json" -- "$tessel" explain "$1" --dtype f16 \
    --json "$work/explain.json"
  contains "registers (setmaxnreg): $2 a thread at launch ($5 block"
  last=$(tr -d ' \n' < "$work/explain.json")
  contains "\"launch_registers\":$2,\"producer_registers\":$3,\"consumer_registers\":$4,\"blocks\":$5,\"tma\":"
}
explain_split wgws 168 40 232 1
explain_split warpgroup:bm=64,bn=256 232 40 232 1
explain_split warpgroup:bm=64,bn=128,stages=4,blocks=2 128 24 232 2

# Spaces in schedule files: listed, checked, shown by configuration, tuned.
cp "$(dirname "$0")/../examples/regtiles.c" "$work/regtiles.c"
f="$work/regtiles.c"
expect 0 "list FILE.c" -- "$tessel" list "$f"
contains "regtiles.c:regtile64        schedule  64x64 block tiles"
contains "regtiles.c:regtiles         space     regtile64's block tile, thread tile and k step"
contains "    at 1024x1024x1024, A and B f32: 24 configurations, 2 pruned"
contains "    bm         64, 32, 128"
contains "    bk         8, 16"
expect 0 "check FILE.c: its schedule and its space" -- "$tessel" check "$f" --shape 70x50x30
contains "regtiles.c:regtile64"; contains "regtiles.c:regtiles "
expect 0 "show FILE.c:SPACE:CONFIG" -- "$tessel" show --trace \
  "$f:regtiles:bm=128,bn=32,tm=4,bk=16" --shape 256x256x64
contains "ts_split(s, i, 128, &i_outer, &i_inner);"
contains "ts_split(s, k, 16, &k_outer, &k_inner);"
expect 0 "the space's first configuration is the schedule" -- "$tessel" show "$f:regtiles" --shape 96x96x32
space_ir=$(printf '%s\n' "$last" | sed 's/"regtiles"/"regtile64"/')
expect 0 "the schedule" -- "$tessel" show "$f:regtile64" --shape 96x96x32
[ "$space_ir" = "$last" ] || { echo "FAIL: regtiles' first configuration is not regtile64"; fails=$((fails + 1)); }
expect 2 "FILE.c:SPACE:CONFIG, a knob the space lacks" -- "$tessel" show "$f:regtiles:bq=1"
one_line; contains "regtiles: the space has no knob \"bq\"; did you mean \"bm\"? (its knobs: bm, bn, tm, bk)"
expect 2 "FILE.c:SPACE:CONFIG, a knob mistyped" -- "$tessel" show "$f:regtiles:bx=32"
one_line; contains "did you mean \"bm\"?"
expect 2 "FILE.c:NAME mistyped" -- "$tessel" show "$f:regtile65"
one_line; contains "regtiles.c defines no schedule or space 'regtile65'; did you mean 'regtile64'? It defines regtile64; the space regtiles"
expect 0 "--tuned on FILE.c: its plain schedule says so" -- "$tessel" check "$f" --tuned --shape 9x9x9
contains "regtiles.c:regtile64 is a schedule with no knobs, not a space"
# check --all: every configuration of a file's space, a row each, pruned
# ones counted apart, the whole set's time said first.
expect 0 "check FILE.c:SPACE --all" -- "$tessel" check "$f:regtiles" --all \
  --shape 128x128x64
contains "tessel: checking every configuration of $f:regtiles at 128x128x64 runs 22 checks on the reference executor (2 configurations pruned, not run; "
contains "$f:regtiles:bm=64,bn=64,tm=8,bk=8   128x128x64       NN     ok"
contains "pruned: 2048 threads a block, over 1024"
contains "$f:regtiles at 128x128x64: 22 checked, 2 pruned, 0 failed"
reject_each <<EOF
regtiles.c defines no schedule or space 'cols'; it defines regtile64; the space regtiles|check $f:cols
regtiles.c:regtile64 is a schedule, not a space|show $f:regtile64:bm=64
tune takes a space, not a schedule ('$f:regtile64')|tune $f:regtile64
tune takes a space, not a configuration ('$f:regtiles:bm=64')|tune $f:regtiles:bm=64
regtiles.c defines no space 'cols'; it defines the space regtiles|tune $f:cols
mine.c defines no space to tune; write TS_SPACE|tune $work/mine.c
EOF
cat > "$work/clash.c" <<'EOF'
#include <tessel.h>
TS_SPACE(warptiled, "mine") { (void)c; return ts_sched_status(s); }
EOF
expect 1 "a file's space named as a built-in" -- "$tessel" list "$work/clash.c"
one_line; contains "clash.c defines a space 'warptiled', the name of a built-in space; rename it"
sed 's/regtile64,/other64,/; s/"regtile64.s/"other/' "$f" > "$work/again.c"
expect 1 "two files' spaces of one name" -- "$tessel" check "$f" "$work/again.c"
one_line; contains "regtiles.c and $work/again.c both define a space 'regtiles'; rename one"
cat > "$work/knobless.c" <<'EOF'
#include <tessel.h>
TS_SPACE(knobless, "a knob without values") {
  int64_t f = ts_knob(c, "f", 0, (int64_t[]){4});
  ts_loop *o, *i;
  ts_split(s, ts_get_loop(s, "i"), f, &o, &i);
  return ts_sched_status(s);
}
EOF
expect 1 "a knob declared wrongly in a file's space" -- "$tessel" tune "$work/knobless.c"
one_line; contains "knobless.c:knobless: ts_space_schedule: knobless: a knob needs a name and at least one value (got \"f\", 0)"

# tune FILE.c end to end on the fake driver: pruned with the reason,
# recorded under the space's name and the file's hash; --tuned reads the
# record until the file changes.
if [ -n "$fake" ]; then
  case "$fake" in /*) ;; *) fake="$PWD/$fake" ;; esac
  mkdir "$work/lib" && ln -s "$fake" "$work/lib/libcublas.so.13"
  fakerun() {
    TESSEL_CACHE_DIR="$work/cache" TESSEL_CUDA_DRIVER="$fake" \
      LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
  }
  expect 0 "tune FILE.c on the fake driver" -- fakerun "$tessel" tune "$f" \
    --shape 128x128x64 --beta 1 --top 2
  contains "# tune $f:regtiles on Fake GPU"
  contains "regtiles 128x128x64: 24 configurations, 2 pruned, 22 compiled"
  contains "2 pruned: 2048 threads a block, over 1024"
  contains "recorded for this GPU: \`tessel bench $f:regtiles --tuned --shape 128x128x64\`"
  grep -q "^space regtiles@[0-9a-f]\{16\}$" "$work"/cache/tune/*.txt ||
    { echo "FAIL: no record keyed by regtiles@HASH"; fails=$((fails + 1)); }
  # --shapes-from: a model's GEMMs, each line with its own layout and type;
  # --tuned at a shape not tuned takes the nearest tuned one's record.
  printf '# two GEMMs\n64x64x64\n\n96x64x64 TN f32  # a comment\n' > "$work/shapes.txt"
  expect 0 "tune --shapes-from" -- fakerun "$tessel" tune seed003 \
    --shapes-from "$work/shapes.txt" --beta 1 --budget 2
  contains "# seed003 64x64x64: 75 configurations"
  contains "# seed003 96x64x64: 75 configurations"
  contains "uses it"
  # A tuned row is named by its configuration, commas and all: --csv
  # quotes it as one field.
  expect 0 "bench --tuned --csv" -- fakerun "$tessel" bench seed003 --tuned \
    --shape 64x64x64 --beta 1 --csv "$work/tuned.csv"
  grep -q '^"Fake GPU[^"]*","seed003:[^"]*,[^"]*",64,64,64,NN,' "$work/tuned.csv" ||
    { echo "FAIL: bench --csv does not quote the tuned configuration:"
      cat "$work/tuned.csv"; fails=$((fails + 1)); }
  expect 0 "--tuned at a shape not tuned" -- fakerun "$tessel" show seed003 \
    --tuned --shape 100x64x64 --layout TN --beta 1
  contains "no tuning record of seed003 at 100x64x64 TN on Fake GPU (tests/fake_cuda.c); using the record of the nearest tuned shape, 96x64x64 (each size within a factor of 1.04)"
  expect 0 "--tuned where no shape of the layout was tuned" -- fakerun \
    "$tessel" show seed003 --tuned --shape 100x64x64 --layout TT --beta 1
  contains "using its first configuration"
  printf '64x64x64\n64x64 NN\n' > "$work/bad_shapes.txt"
  expect 2 "--shapes-from with a bad line" -- "$tessel" tune seed003 \
    --shapes-from "$work/bad_shapes.txt"
  contains "bad_shapes.txt:2: a line is MxNxK [layout] [dtype]"
  printf '64x64x64 NN TT\n' > "$work/bad_shapes.txt"
  expect 2 "--shapes-from with two layouts" -- "$tessel" tune seed003 \
    --shapes-from "$work/bad_shapes.txt"
  contains "bad_shapes.txt:1: 'TT' is neither a layout"
  # A persistent grid is launched with the device's 132 multiprocessors'
  # blocks, not its 512 tiles.
  expect 1 "bench a persistent grid on the fake driver" -- fakerun env \
    TESSEL_FAKE_LAUNCH_LOG="$work/launches.txt" "$tessel" bench wgpers \
    --dtype f16 --shape 4096x4096x64 --repeats 1 --warmup 0
  last=$(sort -u "$work/launches.txt")
  contains "tessel_wgpers 132 1 1"
  expect 0 "bench --repeats 1 on the fake driver" -- fakerun "$tessel" bench \
    naive --shape 64x64x64 --repeats 1 --warmup 0 --beta 1
  contains ", median of 1 run after 0 warm-up"
  # Several schedules, one of them needing --dtype: its row says so, the
  # rest run, and the exit status is 1.
  expect 1 "bench, one schedule needing --dtype among others" -- fakerun \
    "$tessel" bench naive tc128 smem32 --shape 64x64x64 --repeats 1 --beta 1
  contains "tc128            FAIL: needs --dtype f16, bf16 or tf32"
  contains "smem32 "; contains "naive "
  # --limit: 24 configurations at this shape, pruned ones counted.
  expect 1 "--limit below the space's configurations" -- fakerun "$tessel" \
    tune "$f" --shape 128x128x64 --beta 1 --limit 23
  contains "regtiles has more than 23 configurations at 128x128x64 (or memory ran out); raise --limit"
  expect 1 "--limit 1" -- fakerun "$tessel" tune "$f" --shape 128x128x64 \
    --beta 1 --limit 1
  contains "regtiles has more than 1 configuration at 128x128x64 (or memory ran out)"
  expect 0 "--limit at the space's configurations" -- fakerun "$tessel" \
    tune "$f" --shape 128x128x64 --beta 1 --limit 24
  contains "regtiles 128x128x64: 24 configurations, 2 pruned"
  expect 0 "--tuned reads the file space's record" -- fakerun "$tessel" check \
    "$f:regtiles" --tuned --shape 128x128x64 --beta 1
  case "$last" in *"no tuning record"*) echo "FAIL: the record was not read"
    fails=$((fails + 1)) ;; esac
  # A knob declared for one value of another (b only where a is 8): each
  # table by knob lists that knob's values and no other's.
  cat > "$work/cond.c" <<'EOF'
#include <tessel.h>
TS_SPACE(cond, "b only where a is 8") {
  int64_t a = ts_knob(c, "a", 2, (int64_t[]){4, 8});
  int64_t b = a == 8 ? ts_knob(c, "b", 2, (int64_t[]){2, 4}) : 1;
  int64_t d = ts_knob(c, "d", 2, (int64_t[]){16, 32});
  ts_loop *io, *ii, *jo, *ji, *ko, *ki;
  ts_split(s, ts_get_loop(s, "i"), a, &io, &ii);
  ts_split(s, ts_get_loop(s, "j"), d, &jo, &ji);
  ts_split(s, ts_get_loop(s, "k"), b, &ko, &ki);
  ts_reorder(s, 6, (ts_loop *[]){io, jo, ii, ji, ko, ki});
  ts_bind(s, io, TS_BLOCK_Y);
  ts_bind(s, jo, TS_BLOCK_X);
  ts_bind(s, ii, TS_THREAD_Y);
  ts_bind(s, ji, TS_THREAD_X);
  return ts_sched_status(s);
}
EOF
  expect 0 "tune a space with a dependent knob" -- fakerun "$tessel" tune \
    "$work/cond.c" --shape 64x64x64 --beta 1
  table_rows() { # the first column of knob $1's table in the last output
    printf '%s\n' "$last" |
      awk -v k="$1" '$1 == k && $2 == "count" {on = 1; next}
                     on && NF == 0 {on = 0} on {printf "%s ", $1}'
  }
  [ "$(table_rows b)" = "2 4 " ] ||
    { echo "FAIL: knob b's table has rows '$(table_rows b)'"; fails=$((fails + 1)); }
  [ "$(table_rows d)" = "16 32 " ] ||
    { echo "FAIL: knob d's table has rows '$(table_rows d)'"; fails=$((fails + 1)); }
  # A knob's name past 20 characters widens its table's first column: the
  # header's "count" and each row's count end in the same column.
  sed 's/"d", 2/"a_knob_named_past_twenty", 2/' "$work/cond.c" > "$work/long.c"
  sed -i 's/TS_SPACE(cond,/TS_SPACE(longknob,/' "$work/long.c"
  expect 0 "tune a space with a long knob name" -- fakerun "$tessel" tune \
    "$work/long.c" --shape 64x64x64 --beta 1
  ends=$(printf '%s\n' "$last" | awk '
    $1 == "a_knob_named_past_twenty" && $2 == "count" {on = 1; print index($0, "count") + 4; next}
    on && NF == 0 {exit} on {print index($0, " " $2 " ") + length($2)}' | sort -u | wc -l)
  [ "$ends" = 1 ] || { echo "FAIL: the long knob's table is out of line"
    printf '%s\n' "$last" | grep -A3 a_knob_named; fails=$((fails + 1)); }
  # bench --gpu N: the device by ordinal; fake device 1 runs at half
  # speed, so its cuBLAS takes twice the fake milliseconds of device 0's.
  for g in 0 1; do
    expect 0 "bench --gpu $g of 2" -- fakerun env TESSEL_FAKE_GPUS=2 \
      TESSEL_FAKE_GPU_SPEEDS=1,0.5 "$tessel" bench naive \
      --shape 64x64x64 --beta 1 --repeats 3 --gpu $g
    eval "blas$g=\$(printf '%s\n' \"\$last\" | awk '\$1 == \"cuBLAS\" { print \$4 }')"
  done
  [ "$blas0" = 0.0500 ] && [ "$blas1" = 0.1000 ] ||
    { echo "FAIL: bench --gpu: cuBLAS took $blas0 ms on GPU 0 and $blas1 on GPU 1, expected 0.0500 and 0.1000"; fails=$((fails + 1)); }
  expect 1 "bench --gpu 2 of 2" -- fakerun env TESSEL_FAKE_GPUS=2 "$tessel" \
    bench naive --shape 64x64x64 --beta 1 --gpu 2
  contains "tessel: bench needs a GPU (--gpu 2): no GPU 2: the CUDA driver sees 2 devices"
  expect 2 "--gpu outside bench" -- "$tessel" tune seed003 --gpu 1
  contains "--gpu is an option of bench"
  echo "/* edited */" >> "$f"
  expect 0 "--tuned after the file changed" -- fakerun "$tessel" check \
    "$f:regtiles" --tuned --shape 128x128x64 --beta 1
  contains "no tuning record of $f:regtiles at 128x128x64 NN on Fake GPU"
fi
rm -rf "$work"

[ $fails = 0 ] || { echo "$fails failures"; exit 1; }
