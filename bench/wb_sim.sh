#!/usr/bin/env bash
# Write-back-aware eviction against plain OPT (the engine before it), side by
# side in one run: every bundled workload at 200, 250 and 300% oversubscription
# with the device defaults (H200: prefetch 44.6 GB/s host to device, 12.1 GB/s
# device to host). Per case: `gmux sim` with every policy at the defaults
# (proactive is write-back aware, wb_aware=1), then proactive again with
# --param wb_aware=0. One JSON record per case on stdout; the markdown table
# of docs/bench/sim.md on stderr. Both with the recorded ranges (--predict
# recorded), so that eviction alone differs.
set -euo pipefail
build=${BUILD:-build}
gmux="$build/tools/gmux/gmux"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| workload | oversub | bound s (its GiB H2D / D2H) | OPT s | OPT, of bound | OPT GiB H2D / D2H | write-back aware s | aware, of bound | aware GiB H2D / D2H | aware vs OPT | demand s | aware vs demand |" >&2
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |" >&2
for w in llm-decode dl-train sci-stencil sci-sparse; do
  for p in 200 250 300; do
    "$gmux" sim --workload "$w" --oversub "$p" --json --quiet --predict recorded > "$tmp/new.json"
    "$gmux" sim --workload "$w" --oversub "$p" --json --quiet --predict recorded --policy proactive \
      --param wb_aware=0 > "$tmp/old.json"
    python3 - "$w" "$p" "$tmp" <<'PY'
import json, sys
w, p, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
new = json.load(open(f"{tmp}/new.json"))
old = json.load(open(f"{tmp}/old.json"))
b = new["transfer_bound_s"]
assert b == old["transfer_bound_s"]  # the bound depends on the run, not the policy
a, o, d = new["policies"]["proactive"], old["policies"]["proactive"], new["policies"]["demand"]
G = 2**30
rec = {"bench": "wb_sim", "workload": w, "oversub_pct": p, "bound_s": b,
       "bound_exact": new["bound_exact"],
       "bound_fetch_bytes": new["bound_fetch_bytes"],
       "bound_writeback_bytes": new["bound_writeback_bytes"],
       "opt": {k: o[k] for k in ("makespan_s", "bytes_h2d", "bytes_d2h")},
       "aware": {k: a[k] for k in ("makespan_s", "bytes_h2d", "bytes_d2h")},
       "demand_s": d["makespan_s"]}
print(json.dumps(rec), flush=True)
terms = f'{new["bound_fetch_bytes"] / G:.0f} / {new["bound_writeback_bytes"] / G:.0f}'
print(f'| {w} | {p}% | {b:.2f} ({terms}) | {o["makespan_s"]:.2f} | {100 * b / o["makespan_s"]:.1f}% '
      f'| {o["bytes_h2d"] / G:.0f} / {o["bytes_d2h"] / G:.0f} | {a["makespan_s"]:.2f} '
      f'| {100 * b / a["makespan_s"]:.1f}% | {a["bytes_h2d"] / G:.0f} / {a["bytes_d2h"] / G:.0f} '
      f'| {o["makespan_s"] / a["makespan_s"]:.2f}x | {d["makespan_s"]:.1f} '
      f'| {d["makespan_s"] / a["makespan_s"]:.1f}x |', file=sys.stderr)
PY
  done
done
