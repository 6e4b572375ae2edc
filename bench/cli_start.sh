#!/usr/bin/env bash
# Wall time of short gmux commands, two builds side by side: OLD and NEW gmux
# binaries run alternately (OLD first in even rounds, NEW first in odd ones),
# N rounds per command (default 15); prints each build's mean and median in
# ms. Each binary finds its own gmux-net-rank (or, before 2026-12-01, ran its
# ranks as itself). docs/bench/tools.md, "CLI start-up".
#   bench/cli_start.sh OLD NEW [N]
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_GMUX NEW_GMUX [N]" >&2; exit 2; }
python3 - "$1" "$2" "${3:-15}" <<'PY'
import statistics, subprocess, sys, time
old, new, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmds = [["--help"], ["--version"], ["launch", "-n", "2", "--", "true"],
        ["bench", "net", "--provider", "shm", "--quick", "--reps", "1"]]
for c in cmds:
    t = {old: [], new: []}
    for i in range(n):
        for exe in (old, new) if i % 2 == 0 else (new, old):
            t0 = time.perf_counter()
            subprocess.run([exe] + c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            t[exe].append((time.perf_counter() - t0) * 1e3)
    print("gmux %-46s OLD mean %7.1f ms (median %7.1f)  NEW mean %7.1f ms (median %7.1f)" % (
        " ".join(c), statistics.mean(t[old]), statistics.median(t[old]),
        statistics.mean(t[new]), statistics.median(t[new])), flush=True)
PY
