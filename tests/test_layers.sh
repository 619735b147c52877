#!/usr/bin/env bash
# Data flows forward: schedule -> program -> source -> kernel -> launch.  The
# runtime takes programs and kernels through the public API and never reaches
# back into the schedule, lowering or the code generator; the code generator
# and the executor read the program, not the schedule.
set -euo pipefail
root="$1"
status=0
forbid() { # forbid DIR PATTERN WHY
  local hits
  hits=$(grep -nE "#include \"[^\"]*($2)/" "$root/$1"/*.[ch] || true)
  if [ -n "$hits" ]; then
    echo "$1 must not include $2 headers ($3):"
    echo "$hits"
    status=1
  fi
}
forbid runtime 'schedule|lower|codegen' "it takes the lowered kernel"
forbid src/codegen 'schedule|lower' "it reads the program only"
grep -q "ts_sched\b" "$root"/src/codegen/*.c "$root"/src/ir/exec.c &&
  { echo "codegen or the executor names ts_sched"; status=1; }
[ $status = 0 ] && echo "layers: runtime below the public API and the program"
exit $status
