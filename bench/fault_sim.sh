#!/usr/bin/env bash
# Demand paging under the fault-granularity model (a fault moves the 64 KiB
# blocks a launch touches, grown by UVM's density rule: --param
# fault_block=64KiB, the default) against the former whole-chunk model
# (--param fault_block=2MiB), side by side in one run, with proactive
# (recorded ranges, which never faults, so the model does not change it)
# beside them: every bundled workload at 200, 250 and 300% oversubscription,
# default settings, seed 1. One JSON record per case on stdout; the markdown
# table of docs/bench/sim.md on stderr.
set -euo pipefail
build=${BUILD:-build}
gmux="$build/tools/gmux/gmux"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| workload | oversub | proactive s | demand s, 64 KiB blocks | demand s, 2 MiB chunks | new / old | demand GiB H2D new / old | faults new / old | proactive vs demand, new / old |" >&2
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |" >&2
for w in llm-decode dl-train sci-stencil sci-sparse; do
  for p in 200 250 300; do
    base=(sim --workload "$w" --oversub "$p" --json --quiet --predict recorded)
    "$gmux" "${base[@]}" --policy demand,proactive > "$tmp/new.json"
    "$gmux" "${base[@]}" --policy demand --param fault_block=2MiB > "$tmp/old.json"
    python3 - "$w" "$p" "$tmp" <<'PY'
import json, sys
w, p, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
new = json.load(open(f"{tmp}/new.json"))["policies"]
old = json.load(open(f"{tmp}/old.json"))["policies"]
pro, dn, do = new["proactive"], new["demand"], old["demand"]
G = 2**30
keys = ("makespan_s", "bytes_h2d", "bytes_d2h", "faults")
print(json.dumps({"bench": "fault_sim", "workload": w, "oversub_pct": p,
                  "proactive": {k: pro[k] for k in keys},
                  "demand_64k": {k: dn[k] for k in keys},
                  "demand_2m": {k: do[k] for k in keys}}), flush=True)
print(f'| {w} | {p}% | {pro["makespan_s"]:.2f} | {dn["makespan_s"]:.1f} | {do["makespan_s"]:.1f} '
      f'| {dn["makespan_s"] / do["makespan_s"]:.3f} '
      f'| {dn["bytes_h2d"] / G:.0f} / {do["bytes_h2d"] / G:.0f} | {dn["faults"]} / {do["faults"]} '
      f'| {dn["makespan_s"] / pro["makespan_s"]:.1f}x / {do["makespan_s"] / pro["makespan_s"]:.1f}x |',
      file=sys.stderr)
PY
  done
done
