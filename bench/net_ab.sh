#!/usr/bin/env bash
# `gmux bench net` of several build trees side by side (a build tree: any
# folder with tools/gmux/gmux and gmux-net-rank next to it): each one's
# `gmux bench net --provider P --json --reps R` run in turn, the order
# rotated every round, N rounds. For each op of interest it prints, per
# build, the median over the rounds of gmux's figure and of gmux/raw (raw
# libfabric, run in the same process pairs, is the machine's own yardstick:
# on a shared host it moves by several times between runs), and the median
# [range] of the per-round ratios of each build's gmux/raw to the first
# build's (paired: builds of one round saw about the same load). The load
# average is printed before and after. docs/bench/net.md, "net: the cost
# of the shm guard's brackets". A side may be BUILD:NAME=VALUE[,NAME=VALUE]:
# that build run with those settings in its environment (one build with
# a setting on and off: "net: put_signal_rtt and the guard").
#   N=8 PROVIDER=shm REPS=5 bench/net_ab.sh BUILD_A BUILD_B [BUILD_C...]
#   N=12 bench/net_ab.sh build:GMUX_NET_SHM_GUARD=0 build:GMUX_NET_SHM_GUARD=1
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: [N=8 PROVIDER=shm REPS=5] $0 BUILD_A[:NAME=VALUE,...] BUILD_B[:...] [...]" >&2; exit 2; }
python3 - "${N:-8}" "${PROVIDER:-shm}" "${REPS:-5}" "$@" <<'PY'
import json, os, statistics, subprocess, sys
n, prov, reps = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def side(spec):
    path, _, sets = spec.partition(":")
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in sets.split(",") if kv)
    return spec, os.path.abspath(path), env

sides = [side(a) for a in sys.argv[4:]]
builds = [s[0] for s in sides]
m = len(builds)
ops = [("put_signal_rtt", 8), ("put_rate", 8), ("put_rate_proxy", 8), ("put_run_proxy", 8),
       ("put_bw", 8), ("put_bw", 4096)]

def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])

def run(k):
    _, build, env = sides[k]
    cmd = [build + "/tools/gmux/gmux", "bench", "net", "--provider", prov, "--json",
           "--reps", reps]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True,
                         text=True, env=env).stdout
    recs = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            recs[(r["op"], r["bytes"])] = r
    return recs

print("load before: %s" % load(), flush=True)
for k, b in enumerate(builds):
    print("build %d: %s" % (k, b))
res = [[] for _ in builds]
for i in range(n):
    for j in range(m):
        k = (i + j) % m
        res[k].append(run(k))
print("load after:  %s" % load())
for op in ops:
    if op not in res[0][0]:
        continue
    print("%s %d B (%s): gmux, gmux/raw median per build; gmux/raw vs build 0 paired" % (
        op[0], op[1], res[0][0][op]["unit"]))
    q0 = [r[op]["ratio"] for r in res[0]]
    for k in range(m):
        g = [r[op]["gmux"] for r in res[k]]
        q = [r[op]["ratio"] for r in res[k]]
        paired = sorted(b / a for a, b in zip(q0, q) if a > 0)
        print("  build %d  gmux %-10.4g gmux/raw %-7.3f  vs build 0: %.3f [%.3f..%.3f]" % (
            k, statistics.median(g), statistics.median(q), statistics.median(paired),
            paired[0], paired[-1]))
PY
