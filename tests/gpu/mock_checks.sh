#!/usr/bin/env bash
# The GPU check scripts' own logic, without a GPU: a fake build folder whose
# GPU programs are stubs (they print what the real ones print, in the same
# formats) and whose gmux is the real one runs tests/gpu/shim_checks.sh
# (progs, rate) and tests/gpu/netdev_checks.sh, then tests/gpu/run.sh cut
# to those checks, and their records and summary are checked. GPU leases are short and rare: a shell mistake in a check must
# show here, not there. CTest: test_gpu_scripts (no GPU needed).
#   tests/gpu/mock_checks.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: mock_checks.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
fake=$(mktemp -d /tmp/gmux-mock-gpu.XXXXXX)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake"/{bin,tests/gpu,tests/netdev,examples/moe,bench,tools/gmux,out}
ln -s "$build/tools/gmux/gmux" "$fake/tools/gmux/gmux" # finds libgmux.so beside its target
stub() { # stub PATH BODY: a shell script
  printf '#!/usr/bin/env bash\n%s\n' "$2" >"$fake/$1"
  chmod +x "$fake/$1"
}
stub bin/nvidia-smi 'echo "GPU 0: mock"'
stub tests/gpu/test_gpu_probe 'exit 0'
# shim_prog: RESULT lines that do not depend on gmux, except ipc, which is
# refused where libgmux.so redirects to managed memory, as on the driver
stub tests/gpu/shim_prog '
case "$1" in
  launch-rate|launch-rate-managed) echo "RATE 250000" ;;
  ipc)
    if [[ ${LD_PRELOAD:-} == *libgmux* && ${GMUX_POLICY:-proactive} != off &&
          ${GMUX_SHIM_MANAGED:-1} != 0 ]]; then
      echo "gmux: ... run this program with gmux run --no-managed" >&2
      echo "RESULT ipc refused"
    else
      echo "RESULT ipc shared"
    fi ;;
  *) echo "RESULT $1 0123456789abcdef" ;;
esac'
stub tests/netdev/test_netdev_kernel 'exit 0'
stub tests/netdev/netdev_pingpong '
[[ $GMUX_RANK == 0 ]] || exit 0
for p in cpu kernel kernel_cpu; do
  echo "{\"path\":\"$p\",\"bytes\":8,\"rtt_us\":6.0,\"ok\":true}"
done
# device memory goes direct only through the CUDA libfabric (FI_HMEM, rma)
direct=false
[[ ${GMUX_NET_HMEM:-} == rma && $LD_LIBRARY_PATH == *fabric-cuda* ]] && direct=true
[[ " $* " == *" --staged "* ]] &&
  echo "{\"path\":\"kernel_staged\",\"direct\":$direct,\"bytes\":8,\"rtt_us\":9.0,\"ok\":true}"'
stub examples/moe/moe_cuda '
[[ $GMUX_RANK == 0 ]] || exit 0
echo "{\"check\":\"moe_cuda\",\"claim\":\"$GMUX_NET_DEV_CLAIM\",\"backoff_ns\":$GMUX_NET_DEV_BACKOFF_NS,\"exact\":true}"'
stub examples/moe/moe_cpu '
[[ $GMUX_RANK == 0 ]] || exit 0
echo "{\"check\":\"moe_cpu\",\"exact\":true}"'
stub bench/bench_netdev '
[[ $GMUX_RANK == 0 ]] || exit 0
for p in host device device_host device_cpu; do
  echo "{\"bench\":\"netdev_cpu\",\"path\":\"$p\",\"rtt_us\":3.0}"
done'

# a "CUDA libfabric" for step 4 of netdev_checks.sh: this machine's own (the
# real gmux loads it), under the folder name the check puts on the path
mkdir -p "$fake/fabric-cuda"
ln -s "$(ldconfig -p | awk '$1 == "libfabric.so.1" {print $NF; exit}')" "$fake/fabric-cuda/libfabric.so.1"
echo 1.17.1 >"$fake/fabric-cuda/VERSION"

export PATH="$fake/bin:$PATH" GMUX_GPU_OUT="$fake/out" GMUX_SHIM_LAUNCHES=1000
export GMUX_FABRIC_CUDA="$fake/fabric-cuda"
fail=0
bash "$root/tests/gpu/shim_checks.sh" "$fake" progs >"$fake/progs.log" 2>&1 || fail=1
bash "$root/tests/gpu/shim_checks.sh" "$fake" rate >"$fake/rate.log" 2>&1 || fail=1
bash "$root/tests/gpu/netdev_checks.sh" "$fake" >"$fake/netdev.log" 2>&1 || fail=1
res="$fake/out/results.jsonl"
expect() { # expect COUNT PATTERN: lines of results.jsonl matching PATTERN
  local n
  n=$(grep -c -- "$2" "$res" || true)
  if [[ $n != "$1" ]]; then
    echo "mock_checks: $n records match '$2', expected $1" >&2
    fail=1
  fi
}
expect 21 '"check":"shim_[a-z-]*","policy":"[a-z]*","native":"0123456789abcdef".*"identical":true'
expect 1 '"check":"shim_graph_walk","graph_children":[0-9null]*,"graph_conditionals"'
expect 4 '"check":"shim_ipc".*"ok":true'
expect 2 '"check":"shim_ipc".*"gmux":"refused","warned":true'
expect 4 '"check":"shim_launch_rate".*"ratio":1.000'
expect 1 '"check":"shim_launch_rate_native_managed".*"ratio":1.000'
expect 2 '"check":"shim_launch_rate".*"target":0.95,"met":true'
expect 3 '"check":"netdev_kernel_forms[a-z_]*","mps":false,"ok":true'
expect 1 '"check":"netdev_kernel_forms_fabric_cuda","mps":false,"ok":true'
expect 1 '^{"mps":false,"path":"kernel_staged","direct":false'
expect 1 '^{"mps":false,"fabric":"1.17.1 cuda","path":"kernel_staged","direct":true'
expect 0 '"fabric":"1.17.1 cuda","path":"kernel"[,_]'
expect 2 '"check":"netdev_rtt8_ratio".*"ratio":1.000,"target":2.0,"met":true'
expect 4 '"bench":"netdev_cpu"'
expect 2 '"check":"moe_cuda","claim":"cas","backoff_ns":0'
expect 2 '"check":"moe_cuda","claim":"cas","backoff_ns":[1-9]'
expect 2 '"check":"moe_cuda","claim":"faa"'
expect 1 '"check":"moe_cpu"'
expect 2 '"check":"shim_launch_rate","policy":"[a-z]*","managed_redirect":true'

# the prepared script itself, cut to those two checks: its order, summary and records
GMUX_GPU_OUT="$fake/out-run" bash "$root/tests/gpu/run.sh" --no-build --build-dir "$fake" \
  --only shim-rate,netdev --deadline 120 >"$fake/run.log" 2>&1 || fail=1
for row in '| shim-rate | pass |' '| netdev | pass |'; do
  grep -qF -- "$row" "$fake/out-run/summary.md" || { echo "mock_checks: no '$row' in summary.md" >&2; fail=1; }
done
first=$(grep -o '^{"check":"[a-z-]*","result"' "$fake/out-run/results.jsonl" | head -1)
[[ $first == '{"check":"shim-rate","result"' ]] ||
  { echo "mock_checks: run.sh ran '$first' first, not shim-rate" >&2; fail=1; }

if [[ $fail != 0 ]]; then
  for f in progs rate netdev run; do echo "== $f.log" >&2; tail -20 "$fake/$f.log" >&2; done
  echo "== results.jsonl" >&2
  cat "$res" >&2
  exit 1
fi
echo "mock_checks: shim_checks (progs, rate), netdev_checks and run.sh ran, $(wc -l <"$res") records as expected"
