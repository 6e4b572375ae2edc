#!/bin/sh
# Compares `gmux sim --json --quiet` of two binaries byte for byte: every
# built-in workload at --oversub 150, 200 and 300, at 250 with seed 2, at 200
# with the recorded ranges (--predict recorded), and on a --sweep.
# Usage: bench/sim_json_same.sh OLD_GMUX NEW_GMUX [WORKLOAD ...] (a WORKLOAD
# may join several with '+', as gmux sim's --workload does)
# SIM_SAME_SWEEP=0 leaves the sweeps out.
# Exit 0 when every output (and exit status) matches; prints one line a case.
set -u
old=$1 new=$2
shift 2
workloads=${*:-"llm-decode dl-train sci-stencil sci-sparse"}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
rc=0
for w in $workloads; do
    for mode in "--oversub 150" "--oversub 200" "--oversub 300" "--oversub 250 --seed 2" \
        "--oversub 200 --predict recorded" "--sweep"; do
        [ "$mode" = "--sweep" ] && [ "${SIM_SAME_SWEEP:-1}" = 0 ] && continue
        plot=""
        [ "$mode" = "--sweep" ] && plot="--plot $tmp/plot"
        # shellcheck disable=SC2086 # mode and plot are lists of words
        "$old" sim --workload "$w" $mode $plot --json --quiet >"$tmp/old" 2>/dev/null
        o=$?
        # shellcheck disable=SC2086
        "$new" sim --workload "$w" $mode $plot --json --quiet >"$tmp/new" 2>/dev/null
        n=$?
        if [ "$o" = "$n" ] && cmp -s "$tmp/old" "$tmp/new"; then
            echo "same     $w $mode ($(wc -c <"$tmp/new") bytes, exit $n)"
        else
            echo "DIFFERS  $w $mode (exit $o vs $n)"
            rc=1
        fi
    done
done
exit $rc
