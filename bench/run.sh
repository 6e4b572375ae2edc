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
[[ -x "$build/bench/bench_shim" ]] && run "$build/bench/bench_shim"
[[ -x "$build/bench/bench_gate_ranges" ]] && run "$build/bench/bench_gate_ranges" # needs cuda.h (gmux_shim_core)
run "$build/bench/bench_daemon"
run "$build/tests/daemon/daemon_soak" --clients 8 --seconds 300 # gmuxd churn soak (docs/daemon.md, "Soak")
# mem simulator: speed on a streamed 10-million-launch trace (docs/bench/sim.md)
run "$build/bench/bench_sim" 10000000
# mem simulator: proactive vs the transfer bound and vs demand paging, every bundled workload
for wl in llm-decode dl-train sci-stencil sci-sparse; do
  for pct in 200 250 300; do
    run "$build/tools/gmux/gmux" sim --workload "$wl" --oversub "$pct" --json --quiet
  done
done
# mem simulator: write-back-aware eviction vs plain OPT, every bundled workload (docs/bench/sim.md)
run bench/wb_sim.sh
run "$build/bench/bench_predict"
run bench/predict_quality.sh
run bench/predict_sim.sh
# mem simulator: demand paging with 64 KiB fault blocks vs whole 2 MiB chunks (docs/bench/sim.md)
run bench/fault_sim.sh
PREDICT_SIM_PARAMS="--param fault_block=2MiB" run bench/predict_sim.sh
# net: gmux next to raw libfabric (shm and tcp), then the long ordering stress
# (millions of signal rounds; `make check` runs a bounded version of it).
run "$build/tools/gmux/gmux" bench net --json
# net device API: its software path on CPU threads beside the host API (docs/bench/net-device.md)
if [[ -x "$build/bench/bench_netdev" ]]; then
  for prov in shm tcp; do
    GMUX_NET_PROVIDER=$prov run "$build/tools/gmux/gmux" launch -n 2 --timeout 300 -- \
      "$build/bench/bench_netdev"
  done
fi
for prov in shm tcp; do
  echo "== net ordering stress over $prov: 2 ranks, 4 producer threads, 1,000,000 rounds each" >&2
  GMUX_NET_PROVIDER=$prov "$build/tools/gmux/gmux" launch -n 2 --timeout 1800 -- \
    "$build/tests/net/net_rank" order 1000000 4 >&2
done
echo "results: $out/results.jsonl" >&2
echo "== bench/shmem/run.sh $build" >&2
"$(dirname "$0")/shmem/run.sh" "$build" | tee -a "$out/results.jsonl"
