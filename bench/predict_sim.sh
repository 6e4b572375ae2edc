#!/usr/bin/env bash
# The proactive policy with learned working-set prediction against the same
# policy with the recorded ranges (a perfect predictor), on every bundled
# workload at 200% oversubscription: with a template database learnt from
# another seed (gmux profile --seed 1; runs use --seed 2) and with online
# learning only. One JSON record per workload.
set -euo pipefail
build=${BUILD:-build}
gmux="$build/tools/gmux/gmux"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for w in llm-decode dl-train sci-stencil sci-sparse; do
  "$gmux" profile --workload "$w" --seed 1 -o "$tmp/$w.tpl" >/dev/null
  base=(sim --workload "$w" --seed 2 --policy proactive --oversub 200 --quiet --json)
  "$gmux" "${base[@]}" --predict recorded > "$tmp/rec.json"
  "$gmux" "${base[@]}" --templates "$tmp/$w.tpl" > "$tmp/db.json"
  "$gmux" "${base[@]}" > "$tmp/online.json"
  python3 - "$w" "$tmp" <<'PY'
import json, sys
w, tmp = sys.argv[1], sys.argv[2]
def load(name):
    with open(f"{tmp}/{name}.json") as f:
        return json.load(f)["policies"]["proactive"]
rec, db, on = load("rec"), load("db"), load("online")
def prec(r):
    return round(r["predicted_recorded_bytes"] / r["predicted_bytes"], 4) if r["predicted_bytes"] else 1.0
def recall(r):
    return round(r["predicted_recorded_bytes"] / r["recorded_bytes"], 4) if r["recorded_bytes"] else 1.0
print(json.dumps({"bench": "predict_sim", "workload": w, "oversub_pct": 200,
    "recorded_s": round(rec["makespan_s"], 3),
    "templates_s": round(db["makespan_s"], 3),
    "templates_vs_recorded": round(db["makespan_s"] / rec["makespan_s"], 4),
    "templates_precision": prec(db), "templates_recall": recall(db), "templates_faults": db["faults"],
    "online_s": round(on["makespan_s"], 3),
    "online_vs_recorded": round(on["makespan_s"] / rec["makespan_s"], 4),
    "online_precision": prec(on), "online_recall": recall(on), "online_faults": on["faults"]}))
PY
done
