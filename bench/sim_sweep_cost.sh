#!/bin/sh
# CPU seconds and peak RSS of `gmux sim --sweep --json --quiet` for two
# binaries, alternated, RUNS times each per workload; checks that their JSON
# is byte-identical. Usage: bench/sim_sweep_cost.sh OLD_GMUX NEW_GMUX [RUNS]
# SIM_WORKLOADS: the workloads (default: the four built-in ones);
# SIM_POLICY: a --policy list (e.g. oracle: the profile and the bounds only).
# Prints: workload run binary user_s sys_s maxrss_kb same|DIFFERS
set -u
old=$1 new=$2 runs=${3:-3}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
rc=0
for r in $(seq 1 "$runs"); do
    for w in ${SIM_WORKLOADS:-llm-decode dl-train sci-stencil sci-sparse}; do
        for b in old new; do
            eval "bin=\$$b"
            # shellcheck disable=SC2046 # no policy option, or two words
            /usr/bin/time -v "$bin" sim --workload "$w" --sweep --plot "$tmp/plot" --json \
                --quiet $([ -n "${SIM_POLICY:-}" ] && echo "--policy $SIM_POLICY") \
                >"$tmp/$b.json" 2>"$tmp/$b.time"
            u=$(sed -n 's/.*User time (seconds): //p' "$tmp/$b.time")
            s=$(sed -n 's/.*System time (seconds): //p' "$tmp/$b.time")
            m=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/$b.time")
            same=""
            if [ "$b" = new ]; then
                if cmp -s "$tmp/old.json" "$tmp/new.json"; then same=same; else same=DIFFERS rc=1; fi
            fi
            echo "$w $r $b $u $s $m $same"
        done
    done
done
exit $rc
