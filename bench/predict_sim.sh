#!/usr/bin/env bash
# The proactive policy with learned working-set prediction (--predict learned)
# against the same policy with the recorded ranges (--predict recorded: an
# ablation, a perfect predictor no real program has), on every bundled
# workload at 200%, 250% and 300% oversubscription: with online learning
# only, and with a template database learnt from another seed (gmux profile
# --seed 1; runs use --seed 2). One JSON record per workload and level, with
# the wall-clock seconds of the recorded and online runs (what re-planning
# after misses costs the simulator), the bytes each moved host to device, and
# how the online run's streams (src/engine/stream.h) did.
set -euo pipefail
build=${BUILD:-build}
gmux="$build/tools/gmux/gmux"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for w in llm-decode dl-train sci-stencil sci-sparse; do
  "$gmux" profile --workload "$w" --seed 1 -o "$tmp/$w.tpl" >/dev/null
  for o in 200 250 300; do
    # PREDICT_SIM_PARAMS: extra gmux sim options, e.g. "--param fault_block=2MiB"
    # (the whole-chunk fault model) to compare device models in one run
    # shellcheck disable=SC2206
    base=(sim --workload "$w" --seed 2 --policy proactive --oversub "$o" --quiet --json
          ${PREDICT_SIM_PARAMS:-})
    t0=$(date +%s.%N)
    "$gmux" "${base[@]}" --predict recorded > "$tmp/rec.json"
    t1=$(date +%s.%N)
    # bounded all the same (a run that does not end is reported as "no result")
    lim=${PREDICT_SIM_TIMEOUT:-300}
    timeout "$lim" "$gmux" "${base[@]}" --templates "$tmp/$w.tpl" > "$tmp/db.json" 2>/dev/null || true
    t2=$(date +%s.%N)
    timeout "$lim" "$gmux" "${base[@]}" --predict learned > "$tmp/online.json" 2>/dev/null || true
    t3=$(date +%s.%N)
    python3 - "$w" "$o" "$tmp" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, os, sys
w, o, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0, t1, t2, t3 = (float(x) for x in sys.argv[4:8])
def load(name):
    try:
        with open(f"{tmp}/{name}.json") as f:
            return json.load(f)["policies"]["proactive"]
    except (OSError, ValueError, KeyError):
        return {"error": "no result"}
rec, db, on = load("rec"), load("db"), load("online")
def prec(r):
    if "error" in r:
        return None
    return round(r["predicted_recorded_bytes"] / r["predicted_bytes"], 4) if r["predicted_bytes"] else 1.0
def recall(r):
    if "error" in r:
        return None
    return round(r["predicted_recorded_bytes"] / r["recorded_bytes"], 4) if r["recorded_bytes"] else 1.0
def span(r):
    return round(r["makespan_s"], 3) if "makespan_s" in r else None
def ratio(r):
    return round(r["makespan_s"] / rec["makespan_s"], 4) if "makespan_s" in r else None
print(json.dumps({"bench": "predict_sim", "workload": w, "oversub_pct": o,
    "params": os.environ.get("PREDICT_SIM_PARAMS", ""),
    "recorded_s": span(rec),
    "templates_s": span(db), "templates_error": db.get("error"),
    "templates_vs_recorded": ratio(db),
    "templates_precision": prec(db), "templates_recall": recall(db), "templates_faults": db.get("faults"),
    "online_s": span(on), "online_error": on.get("error"),
    "online_vs_recorded": ratio(on),
    "online_precision": prec(on), "online_recall": recall(on), "online_faults": on.get("faults"),
    "online_replans": on.get("replans"),
    "online_h2d_gib": round(on["bytes_h2d"] / 2**30, 1) if "bytes_h2d" in on else None,
    "recorded_h2d_gib": round(rec["bytes_h2d"] / 2**30, 1) if "bytes_h2d" in rec else None,
    "online_stream_hits": on.get("stream_hits"), "online_stream_misses": on.get("stream_misses"),
    "online_stream_precision": round(on["stream_hit_bytes"] / on["stream_predicted_bytes"], 4)
        if on.get("stream_predicted_bytes") else None,
    "online_stream_recall": round(on["stream_hit_bytes"] / on["stream_slice_bytes"], 4)
        if on.get("stream_slice_bytes") else None,
    "recorded_wall_s": round(t1 - t0, 2), "online_wall_s": round(t3 - t2, 2)}))
PY
  done
done
