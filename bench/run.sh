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
# net: gmux next to raw libfabric (shm and tcp), then the long ordering stress
# (millions of signal rounds; `make check` runs a bounded version of it).
run "$build/tools/gmux/gmux" bench net --json
for prov in shm tcp; do
  echo "== net ordering stress over $prov: 2 ranks, 4 producer threads, 1,000,000 rounds each" >&2
  GMUX_NET_PROVIDER=$prov "$build/tools/gmux/gmux" launch -n 2 --timeout 1800 -- \
    "$build/tests/net/net_rank" order 1000000 4 >&2
done
echo "results: $out/results.jsonl" >&2
