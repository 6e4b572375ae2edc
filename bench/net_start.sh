#!/usr/bin/env bash
# Wall time of starting net programs, two build trees side by side: the same
# command from OLD's and NEW's build run alternately (OLD first in even
# rounds, NEW first in odd ones), N rounds (default 15); prints each one's
# mean and median in ms. Commands: examples/moe/moe_cpu as a one-rank job
# (no launcher: no fabric), and as a two-rank job under `gmux launch` on shm
# and on tcp. Then, NEW alone, the two-rank shm job with FI_PROVIDER=shm
# against without, alternated the same way. docs/bench/net.md, "net:
# libfabric start-up".
#   bench/net_start.sh OLD_BUILD NEW_BUILD [N]
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_BUILD NEW_BUILD [N]" >&2; exit 2; }
python3 - "$1" "$2" "${3:-15}" <<'PY'
import os, statistics, subprocess, sys, time
old, new, n = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), int(sys.argv[3])

def job(build, ranks, provider=None, extra=None):
    moe = [build + "/examples/moe/moe_cpu", "--iters", "3"]
    cmd = moe if ranks == 1 else [build + "/tools/gmux/gmux", "launch", "-n", str(ranks), "--"] + moe
    env = dict(os.environ)
    env.pop("FI_PROVIDER", None)
    env["LD_LIBRARY_PATH"] = build + "/src/net"  # each build's own libgmux-net.so
    if provider:
        env["GMUX_NET_PROVIDER"] = provider
    env.update(extra or {})
    return cmd, env

def ab(label, a, b, names=("OLD", "NEW")):
    t = ([], [])
    for i in range(n):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            cmd, env = (a, b)[k]
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            t[k].append((time.perf_counter() - t0) * 1e3)
    print("%-34s %s mean %7.1f ms (median %7.1f)  %s mean %7.1f ms (median %7.1f)" % (
        label, names[0], statistics.mean(t[0]), statistics.median(t[0]),
        names[1], statistics.mean(t[1]), statistics.median(t[1])), flush=True)

ab("moe_cpu, 1 rank", job(old, 1), job(new, 1))
ab("gmux launch -n 2 moe_cpu, shm", job(old, 2, "shm"), job(new, 2, "shm"))
ab("gmux launch -n 2 moe_cpu, tcp", job(old, 2, "tcp"), job(new, 2, "tcp"))
ab("NEW, -n 2, shm: FI_PROVIDER", job(new, 2, "shm"), job(new, 2, "shm", {"FI_PROVIDER": "shm"}),
   ("unset", "=shm"))
PY
