#!/usr/bin/env bash
# Cleaning, two gmux runs side by side in one run:
#   bench/clean_sim.sh OLD_GMUX NEW_GMUX [ARG ...]
# (the ARGs go to NEW's runs only, e.g. --param KEY=VALUE: the same binary
# twice compares a setting). Per row, `gmux sim --workload W --oversub P
# --json --quiet --policy proactive` (learned prediction, seed 1, defaults),
# every bundled workload at 200, 250 and 300% (SIM_AB_WORKLOADS,
# SIM_AB_OVERSUB override). The markdown table on stdout: makespans, NEW's
# over OLD's, GiB written back, and of them cleaned, cleaned but wasted
# (written again or freed before an eviction: clean_wasted_bytes) and
# dropped at an eviction (a write-back saved: clean_dropped_bytes). The
# simulated figures are deterministic: the machine's load does not change
# them.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_GMUX NEW_GMUX [ARG ...]" >&2
  exit 2
fi
exec python3 - "${SIM_AB_WORKLOADS:-llm-decode dl-train sci-stencil sci-sparse}" \
  "${SIM_AB_OVERSUB:-200 250 300}" "$@" <<'PY'
import json, subprocess, sys
workloads, ratios, old, new = sys.argv[1].split(), sys.argv[2].split(), sys.argv[3], sys.argv[4]
extra = sys.argv[5:]
G = 2**30
print("| workload | oversub | old s | new s | new / old | old GiB D2H: cleaned, wasted, dropped "
      "| new GiB D2H: cleaned, wasted, dropped |")
print("| --- " * 7 + "|")
for w in workloads:
    for p in ratios:
        runs = []
        for b, more in ((old, []), (new, extra)):
            out = subprocess.run([b, "sim", "--workload", w, "--oversub", p, "--json", "--quiet",
                                  "--policy", "proactive", *more],
                                 check=True, capture_output=True, text=True).stdout
            runs.append(json.loads(out)["policies"]["proactive"])
        row = [w, f"{p}%"] + [f'{r["makespan_s"]:.2f}' for r in runs]
        row.append(f'{runs[1]["makespan_s"] / runs[0]["makespan_s"]:.4f}')
        for r in runs:
            row.append(f'{r["bytes_d2h"] / G:.0f}: {r["clean_bytes"] / G:.1f}, '
                       f'{r["clean_wasted_bytes"] / G:.1f}, {r["clean_dropped_bytes"] / G:.1f}')
        print("| " + " | ".join(row) + " |", flush=True)
PY
