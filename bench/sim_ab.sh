#!/usr/bin/env bash
# Proactive scheduling, two gmux binaries side by side in one run:
#   bench/sim_ab.sh OLD NEW
# Per row, `gmux sim --workload W --oversub P --json --quiet --policy proactive`
# (defaults: learned prediction, seed 1) with OLD then NEW, every bundled
# workload at 200, 250 and 300% (SIM_AB_WORKLOADS, SIM_AB_OVERSUB override).
# The markdown table on stdout: makespans, share of the transfer bound, GiB
# moved each way, and NEW's makespan over OLD's. The simulated figures are
# deterministic: the machine's load does not change them.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_GMUX NEW_GMUX" >&2
  exit 2
fi
exec python3 - "$1" "$2" "${SIM_AB_WORKLOADS:-llm-decode dl-train sci-stencil sci-sparse}" \
  "${SIM_AB_OVERSUB:-200 250 300}" <<'PY'
import json, subprocess, sys
bins, workloads, ratios = sys.argv[1:3], sys.argv[3].split(), sys.argv[4].split()
G = 2**30
print("| workload | oversub | bound s | old s | old, of bound | old GiB H2D / D2H "
      "| new s | new, of bound | new GiB H2D / D2H | new / old |")
print("| --- " * 10 + "|")
for w in workloads:
    for p in ratios:
        runs = [json.loads(subprocess.run(
            [b, "sim", "--workload", w, "--oversub", p, "--json", "--quiet",
             "--policy", "proactive"], check=True, capture_output=True, text=True).stdout)
            for b in bins]
        bound = runs[1]["transfer_bound_s"]
        assert bound == runs[0]["transfer_bound_s"]  # the workload's, not the policy's
        row, ms = [w, f"{p}%", f"{bound:.2f}"], []
        for r in (x["policies"]["proactive"] for x in runs):
            ms.append(r["makespan_s"])
            row += [f'{r["makespan_s"]:.2f}', f'{100 * bound / r["makespan_s"]:.1f}%',
                    f'{r["bytes_h2d"] / G:.0f} / {r["bytes_d2h"] / G:.0f}']
        row.append(f"{ms[1] / ms[0]:.4f}")
        print("| " + " | ".join(row) + " |", flush=True)
PY
