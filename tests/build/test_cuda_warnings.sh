#!/usr/bin/env bash
# The CUDA sources get the warnings the C ones get: nvcc is given the host
# compiler's -Wall -Wextra (-Xcompiler) and, with GMUX_WERROR, makes every
# warning an error (-Werror=all-warnings), its own device-side ones included.
# Until 2026-12-03 CMake added the warning flags to C only: an unused
# parameter in a .cu file's host code was never reported, and a device-side
# warning never stopped a -Werror build. nvcc's optional -Wdefault-stream-launch
# is on too (until 2026-12-04 it was not): a kernel launched without naming its
# stream goes to the legacy default stream, which waits for, and is waited for
# by, every blocking stream. Compiles one probe per warning with the
# CUDA_FLAGS CMake wrote for a project CUDA target (gmux_net_cuda). In a
# Debug build (make check-debug) the device code is compiled for debugging
# too (-G: unoptimised, as the host code is at -O0); until 2026-12-04 a Debug
# build's kernels were optimised and no build ever compiled them with -G.
# Usage: test_cuda_warnings.sh BUILD_DIR NVCC WERROR(ON|OFF)
set -euo pipefail
build=$1
nvcc=$2
werror=$3
flagsfile="$build/src/net/CMakeFiles/gmux_net_cuda.dir/flags.make"
[[ -f $flagsfile ]] || { echo "SKIP: no $flagsfile"; exit 77; }
flags=$(sed -n 's/^CUDA_FLAGS = //p' "$flagsfile")
fail=0
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
if [[ $btype == Debug ]]; then
    if [[ " $flags " == *" -G "* ]]; then
        echo "ok: Debug build compiles device code with -G"
    else
        echo "FAIL: Debug build without -G (device code optimised): CUDA_FLAGS = $flags"
        fail=1
    fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/host.cu" <<'CU'
int probe_host(int unused_param);
int probe_host(int unused_param) { return 0; }
CU
cat >"$tmp/device.cu" <<'CU'
__global__ void probe_device(int *p) { int unused_var; p[0] = 1; }
CU
cat >"$tmp/stream.cu" <<'CU'
__global__ void probe_kernel(int *p) { p[0] = 1; }
void probe_launch(int *p);
void probe_launch(int *p) { probe_kernel<<<1, 1>>>(p); }
CU
# probe|what its warning says (an extended regex)
probes=(
    "host|unused_param"
    "device|unused_var"
    "stream|explicit stream argument not provided"
)
for p in "${probes[@]}"; do
    probe=${p%%|*}
    want=${p#*|}
    rc=0
    # shellcheck disable=SC2086 # CUDA_FLAGS is a list of words
    "$nvcc" $flags -c "$tmp/$probe.cu" -o "$tmp/$probe.o" >"$tmp/$probe.log" 2>&1 || rc=$?
    if ! grep -qE "$want" "$tmp/$probe.log"; then
        echo "FAIL: $probe probe: no warning matching '$want' with CUDA_FLAGS = $flags"
        fail=1
    elif [[ $werror == ON && $rc -eq 0 ]]; then
        echo "FAIL: $probe probe: warned but compiled under GMUX_WERROR (CUDA_FLAGS = $flags)"
        fail=1
    else
        echo "ok: $probe probe reported (rc=$rc)"
    fi
done
exit $fail
