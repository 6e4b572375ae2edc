#!/usr/bin/env bash
# Working-set prediction quality over the bundled workloads: for each, learns
# a template database (gmux profile), then reports precision and recall of
# predicted bytes with that database and with online learning only, the
# whole-allocation baseline beside them. The database is learnt from seed 1 and
# scored on seed 2. One JSON record per workload and mode.
set -euo pipefail
build=${BUILD:-build}
gmux="$build/tools/gmux/gmux"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for w in llm-decode dl-train sci-stencil sci-sparse; do
  "$gmux" profile --workload "$w" --seed 1 -o "$tmp/$w.tpl" >/dev/null
  for mode in profiled online; do
    args=(--workload "$w" --seed 2 --json)
    [ "$mode" = profiled ] && args+=(--templates "$tmp/$w.tpl")
    "$gmux" predict-report "${args[@]}" | python3 -c '
import json, sys
d = json.load(sys.stdin)
o, t = d["overall"], d["templated"]
ks = d["kernels"]
print(json.dumps({"bench": "predict_quality", "workload": sys.argv[1], "mode": sys.argv[2],
    "kernels": len(ks), "kernels_templated": sum(k["has_template"] for k in ks),
    "max_samples_to_trust": max(k["samples_to_trust"] for k in ks),
    "recall": round(o["predicted"]["recall"], 4),
    "precision": round(o["predicted"]["precision"], 4),
    "precision_templated": round(t["predicted"]["precision"], 4),
    "recall_templated": round(t["predicted"]["recall"], 4),
    "precision_trusted_launches": round(t["trusted_launches"]["precision"], 4),
    "recall_trusted_launches": round(t["trusted_launches"]["recall"], 4),
    "whole_precision": round(o["whole"]["precision"], 4),
    "whole_recall": round(o["whole"]["recall"], 4)}))' "$w" "$mode"
  done
done
