#!/usr/bin/env bash
# Runs every benchmark of the project and collects the JSON records under
# $BUILD/bench/results.jsonl. Long sweeps live here, never in `make check`.
set -euo pipefail
build=${BUILD:-build}
out="$build/bench"
mkdir -p "$out"
: > "$out/results.jsonl"
run() {
  echo "== $*" >&2
  "$@" | tee -a "$out/results.jsonl"
}
run "$build/bench/bench_log"
run "$build/bench/bench_trace"
run "$build/bench/bench_predict"
run bench/predict_quality.sh
run bench/predict_sim.sh
echo "results: $out/results.jsonl" >&2
