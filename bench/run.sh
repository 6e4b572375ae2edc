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
echo "results: $out/results.jsonl" >&2
echo "== bench/shmem/run.sh $build" >&2
"$(dirname "$0")/shmem/run.sh" "$build" | tee -a "$out/results.jsonl"
