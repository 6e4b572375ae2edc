#!/usr/bin/env bash
# Plots the put+signal ping-pong of a GPU run (tests/gpu/run.sh's results.jsonl,
# records "netdev_pingpong") as round trip against size, one line per path.
#   scripts/plot-pingpong.sh RESULTS.jsonl OUT.png [TITLE]
# Needs python3 and gnuplot (pngcairo).
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: scripts/plot-pingpong.sh RESULTS.jsonl OUT.png [TITLE]" >&2; exit 2; }
in=$1 out=$2 title=${3:-put+signal round trip}
[[ -r "$in" ]] || { echo "plot-pingpong: cannot read $in" >&2; exit 1; }
dat=$(mktemp)
trap 'rm -f "$dat"' EXIT
python3 - "$in" "$dat" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"netdev_pingpong"' in l]
if not rows:
    sys.exit("plot-pingpong: no netdev_pingpong records in " + sys.argv[1])
paths = ["cpu", "kernel", "kernel_cpu", "kernel_staged"]
with open(sys.argv[2], "w") as f:
    for b in sorted({r["bytes"] for r in rows}):
        v = [next((str(r["rtt_us"]) for r in rows if r["path"] == p and r["bytes"] == b), "NaN")
             for p in paths]
        f.write(f"{b} {' '.join(v)}\n")
PY
gnuplot <<GP
set terminal pngcairo size 900,540 font "sans,11"
set output '$out'
set title "$title"
set logscale xy
set xlabel "message size (bytes)"
set ylabel "round trip (us)"
set key top left
set grid
plot '$dat' u 1:2 w lp lw 2 t 'CPU threads', \
     '' u 1:3 w lp lw 2 t 'kernel on both sides', \
     '' u 1:4 w lp lw 2 t 'kernel, CPU thread answering', \
     '' u 1:5 w lp lw 2 t 'kernel, device-memory window (staged)'
GP
echo "plot-pingpong: $out"
