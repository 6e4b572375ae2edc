#!/usr/bin/env bash
# Wall time of a one-rank program of the static kind (gmux_net_static): the
# tests' net_rank in its `semantics` mode with no launcher (one rank, no
# fabric), from OLD's and NEW's build trees alternately (OLD first in even
# rounds, NEW first in odd ones), N rounds (default 15); prints each one's
# mean and median in ms. docs/bench/net.md, "net: libfabric start-up".
#   bench/net_static_start.sh OLD_BUILD NEW_BUILD [N]
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_BUILD NEW_BUILD [N]" >&2; exit 2; }
python3 - "$1" "$2" "${3:-15}" <<'PY'
import os, statistics, subprocess, sys, time
old, new, n = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), int(sys.argv[3])
env = dict(os.environ)
for k in ("GMUX_RANK", "GMUX_SIZE", "GMUX_BOOTSTRAP"):
    env.pop(k, None)
t = ([], [])
for i in range(n):
    for k in (0, 1) if i % 2 == 0 else (1, 0):
        cmd = [(old, new)[k] + "/tests/net/net_rank", "semantics"]
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        t[k].append((time.perf_counter() - t0) * 1e3)
print("net_rank semantics, 1 rank  OLD mean %7.1f ms (median %7.1f)  NEW mean %7.1f ms (median %7.1f)"
      % (statistics.mean(t[0]), statistics.median(t[0]), statistics.mean(t[1]),
         statistics.median(t[1])))
PY
