#!/usr/bin/env bash
# Runs a job (`gmux launch ...`) and checks how every rank ended as well as
# what it printed, for the tests whose output must match a pattern: CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status, so a survivor that
# crashed, failed a check or had a sanitizer report after printing the
# expected line would pass.
#
#   launch_check.sh [--status N] [--victim R:SIG] [--must-fail TEXT] --expect ERE -- CMD [ARGS...]
#
# Passes (exit 0) when all of these hold, else says each that failed and
# exits 1:
#   - CMD exits with N (default 0; 128+SIG with --victim: the launcher's
#     status is its first failure's, the victim's death);
#   - with --victim, the launcher said that rank R was killed by signal SIG,
#     and it said no other rank ended badly (an exit with a non-zero status, a
#     signal, a stop by gmux after the failure or the timeout, an exit 0
#     without gmux_comm_finalize): the survivors exited 0 on their own;
#   - no sanitizer report (AddressSanitizer, LeakSanitizer, ThreadSanitizer,
#     UBSan "runtime error") appears in the output;
#   - the output (stdout and stderr) matches ERE (grep -zE: the whole output
#     at once, . matching line ends too, as in CTest's patterns).
# The output is passed through, stdout and stderr merged. --must-fail TEXT
# turns the answer round, for the negative tests of this script: it passes
# only when the checks failed and one failure said TEXT.
set -u
status=0
victim=""
expect=""
must_fail=""
while [ $# -gt 0 ]; do
    case $1 in
    --status) status=$2; shift 2 ;;
    --victim) victim=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --must-fail) must_fail=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "launch_check: unknown option '$1'" >&2; exit 2 ;;
    esac
done
if [ -z "$expect" ] || [ $# -eq 0 ]; then
    echo "usage: launch_check.sh [--status N] [--victim R:SIG] [--must-fail TEXT] --expect ERE" \
        "-- CMD [ARGS...]" >&2
    exit 2
fi
vrank=""
if [ -n "$victim" ]; then
    vrank=${victim%%:*}
    vsig=${victim#*:}
    status=$((128 + vsig))
fi

log=$(mktemp "${TMPDIR:-/tmp}/launch_check.XXXXXX") || exit 2
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"

bad=0
said=""
fail() {
    echo "launch_check: $*"
    said+="$*"$'\n'
    bad=1
}
[ "$rc" -eq "$status" ] || fail "the job exited with status $rc, not $status"
# the launcher's word on each rank that did not end with exit 0 after finalize
ends=$(grep -E '^gmux launch: (rank [0-9]+ (exited with status|killed by signal|stopped by gmux)|timed out)' "$log")
if [ -n "$vrank" ]; then
    want="gmux launch: rank $vrank killed by signal $vsig"
    [ "$(grep -cxF "$want" <<<"$ends")" -eq 1 ] || fail "no line '$want'"
    ends=$(grep -vxF "$want" <<<"$ends")
fi
while IFS= read -r line; do
    [ -n "$line" ] && fail "a rank ended badly: '${line#gmux launch: }'"
done <<<"$ends"
if grep -qE 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$log"; then
    fail "a sanitizer report"
fi
grep -qzE -- "$expect" "$log" || fail "no output matches '$expect'"
if [ -n "$must_fail" ]; then
    if [ "$bad" -eq 1 ] && grep -qF -- "$must_fail" <<<"$said"; then
        echo "launch_check: failed as it must ('$must_fail')"
        exit 0
    fi
    echo "launch_check: did not fail with '$must_fail'"
    exit 1
fi
[ "$bad" -eq 0 ] && echo "launch_check: ok"
exit "$bad"
