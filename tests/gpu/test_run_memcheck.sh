#!/usr/bin/env bash
# tests/gpu/run.sh --memcheck without a GPU: the flag is parsed, the dry run
# lists every check wrapped in compute-sanitizer --tool memcheck with its
# timeout tripled, a missing compute-sanitizer stops the run before any check,
# and a real run goes through a stub compute-sanitizer (it records its
# arguments and runs the check) against a fake build folder whose probe is a
# stub: the check passes, or is "memcheck errors" when the stub exits 86 as
# compute-sanitizer does on errors. Without the flag no sanitizer is run.
# Until 2026-12-04 run.sh had no way to run its checks under memcheck.
# CTest: test_gpu_run_memcheck.   Usage: test_run_memcheck.sh (no arguments)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
run="$root/tests/gpu/run.sh"
fake=$(mktemp -d /tmp/gmux-memcheck.XXXXXX)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake"/{bin,build/tools/gmux}
stub() { # stub PATH BODY: a shell script
  printf '#!/usr/bin/env bash\n%s\n' "$2" >"$fake/$1"
  chmod +x "$fake/$1"
}
stub build/tools/gmux/gmux 'exit 0'
stub build/probe "touch $fake/probe-ran"
printf 'add_test(test_gpu_probe "%s")\n' "$fake/build/probe" >"$fake/build/CTestTestfile.cmake"
# compute-sanitizer's options end where the program begins (bash)
stub bin/compute-sanitizer "echo \"\$*\" >>$fake/san-args
while [[ \$1 != bash ]]; do shift; done
\"\$@\" || exit
[[ -z \${FAKE_SAN_ERRORS:-} ]] || { echo '========= ERROR SUMMARY: 1 error'; exit 86; }"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
go() { # go NAME ARGS...: run.sh with ARGS, output in $fake/NAME.log, status in $rc
  local name=$1
  shift
  GMUX_GPU_OUT="$fake/out-$name" "$run" --no-build --build-dir "$fake/build" --deadline 60 "$@" \
    >"$fake/$name.log" 2>&1
  rc=$?
}

go dry-off --dry-run
[[ $rc == 0 ]] || bad "dry run without --memcheck exited $rc"
grep -q compute-sanitizer "$fake/dry-off.log" && bad "dry run without --memcheck names compute-sanitizer"
grep -qE '^probe +30s ' "$fake/dry-off.log" || bad "dry run: probe's timeout is not 30s"

COMPUTE_SANITIZER="$fake/bin/compute-sanitizer" go dry-on --dry-run --memcheck
[[ $rc == 0 ]] || bad "dry run with --memcheck exited $rc: $(tail -1 "$fake/dry-on.log")"
checks=$(grep -cE '^[a-z-]+ +[0-9]+s ' "$fake/dry-on.log")
wrapped=$(grep -cE "^[a-z-]+ +[0-9]+s  $fake/bin/compute-sanitizer --tool memcheck --target-processes all --error-exitcode 86 " "$fake/dry-on.log")
[[ $checks -gt 0 && $wrapped == "$checks" ]] || bad "dry run with --memcheck: $wrapped of $checks checks wrapped"
grep -qE '^probe +90s ' "$fake/dry-on.log" || bad "dry run with --memcheck: probe's timeout is not tripled to 90s"

COMPUTE_SANITIZER="$fake/none" go missing --memcheck --only probe
[[ $rc == 2 ]] || bad "a missing compute-sanitizer: exit $rc, not 2"
grep -q "no compute-sanitizer at '$fake/none'" "$fake/missing.log" || bad "a missing compute-sanitizer is not named"
[[ -e $fake/out-missing/summary.md || -e $fake/probe-ran ]] && bad "a missing compute-sanitizer still ran checks"

PATH="$fake/bin:$PATH" go on --memcheck --only probe
[[ $rc == 0 ]] || bad "run with --memcheck exited $rc: $(tail -5 "$fake/on.log")"
[[ -e $fake/probe-ran ]] || bad "run with --memcheck: the probe did not run"
grep -qF -- "--tool memcheck --target-processes all --error-exitcode 86 bash -o pipefail -c ctest --test-dir $fake/build" \
  "$fake/san-args" 2>/dev/null || bad "compute-sanitizer not run on the probe: $(cat "$fake/san-args" 2>/dev/null)"
grep -qF '| probe | pass |' "$fake/out-on/summary.md" || bad "run with --memcheck: probe did not pass"
grep -qF -- "- memcheck: $fake/bin/compute-sanitizer --tool memcheck" "$fake/out-on/summary.md" ||
  bad "summary.md does not say memcheck was on"

rm -f "$fake/san-args"
PATH="$fake/bin:$PATH" FAKE_SAN_ERRORS=1 go errors --memcheck --only probe
[[ $rc == 1 ]] || bad "memcheck errors: run.sh exited $rc, not 1"
grep -qF '| probe | memcheck errors |' "$fake/out-errors/summary.md" || bad "memcheck errors not reported in summary.md"

rm -f "$fake/san-args" "$fake/probe-ran"
PATH="$fake/bin:$PATH" go off --only probe
[[ $rc == 0 && -e $fake/probe-ran ]] || bad "run without --memcheck: exit $rc or probe not run"
[[ -e $fake/san-args ]] && bad "run without --memcheck ran compute-sanitizer"
grep -qF -- '- memcheck: off' "$fake/out-off/summary.md" || bad "summary.md does not say memcheck was off"

"$run" --help >"$fake/help.log" 2>&1
grep -q -- '--memcheck' "$fake/help.log" || bad "--help does not document --memcheck"
grep -q 'set -euo' "$fake/help.log" && bad "--help prints the script's code"

if [[ $fail != 0 ]]; then
  for f in "$fake"/*.log; do echo "== $f"; tail -8 "$f"; done
  exit 1
fi
echo "ok: run.sh --memcheck parsed, listed, refused without compute-sanitizer, run and reported"
