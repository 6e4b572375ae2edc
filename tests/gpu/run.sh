#!/usr/bin/env bash
# Every GPU check of gmux in one prepared run, for short GPU leases.
#
#   tests/gpu/run.sh [--dry-run] [--build-dir DIR] [--only NAME]
#
# Builds the project for sm_90 with nvcc (GMUX_CUDA=ON), then runs each check
# with its own timeout so one hang cannot take the rest, and writes under
# $GMUX_GPU_OUT (default ./gpu-out):
#   summary.md      a markdown table: check, result, seconds, headline figure
#   results.jsonl   one JSON record per check, plus whatever records checks add
#   NAME.log        each check's output
# --dry-run builds and lists the checks (name, timeout, command) and runs none;
# CI runs it. The whole run must stay under 8 minutes: the timeouts below add
# up to less than that.
#
# Libraries the device machine lacks (libfabric, cmocka) come as .deb files in
# $GMUX_GPU_DEBS (default .gpu-debs/, filled by scripts/fetch-gpu-debs.sh); they
# are unpacked with dpkg -x into a private sysroot put on the search paths.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${GMUX_GPU_OUT:-$root/gpu-out}
build=""
dry=0
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --build-dir) build=$2; shift ;;
    --only) only=$2; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
build=${build:-$root/build-gpu}
mkdir -p "$out"

# --- libraries carried as .deb files -------------------------------------------
debs=${GMUX_GPU_DEBS:-$root/.gpu-debs}
if compgen -G "$debs/*.deb" >/dev/null; then
  sysroot="$root/.gpu-sysroot"
  mkdir -p "$sysroot"
  for d in "$debs"/*.deb; do dpkg -x "$d" "$sysroot"; done
  export LD_LIBRARY_PATH="$sysroot/usr/lib/x86_64-linux-gnu:$sysroot/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  export PKG_CONFIG_PATH="$sysroot/usr/lib/x86_64-linux-gnu/pkgconfig:${PKG_CONFIG_PATH:-}"
  export CMAKE_PREFIX_PATH="$sysroot/usr:${CMAKE_PREFIX_PATH:-}"
  export CPATH="$sysroot/usr/include:${CPATH:-}"
  export LIBRARY_PATH="$sysroot/usr/lib/x86_64-linux-gnu:${LIBRARY_PATH:-}"
  # pkg-config files name /usr as prefix; point them at the sysroot.
  export PKG_CONFIG_SYSROOT_DIR="$sysroot"
fi

# --- build ---------------------------------------------------------------------
echo "== build ($build, sm_90)" >&2
t0=$(date +%s)
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  # A fresh tree for the GPU; an existing one (--build-dir) keeps its configuration.
  cmake -S "$root" -B "$build" -DGMUX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; exit 1; }
fi
cmake --build "$build" -j"$(nproc)" >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; exit 1; }
echo "   built in $(( $(date +%s) - t0 )) s" >&2
export GMUX_BUILD="$build" GMUX_GPU_OUT="$out" GMUX_ROOT="$root"

# --- the checks: NAME TIMEOUT_S COMMAND ------------------------------------------
# Fragments get the build folder as their argument.
# Each check exits 0 (pass), 77 (skipped: needs something absent) or other (fail).
# A check may append its own JSON records to $GMUX_GPU_OUT/results.jsonl.
checks=(
  "probe|30|ctest --test-dir $build -R '^test_gpu_(probe|vector_add)$' --output-on-failure"
  "calibrate|60|$build/tools/calibrate/gmux-calibrate | tee $out/calibration.json"
)
for frag in "$root"/tests/gpu/*_checks.sh; do
  [[ -e "$frag" ]] || continue
  name=$(basename "$frag" _checks.sh)
  checks+=("$name|150|bash $frag $build")
done

if [[ $dry -eq 1 ]]; then
  total=0
  printf '%-12s %8s  %s\n' CHECK TIMEOUT COMMAND
  for c in "${checks[@]}"; do
    IFS='|' read -r name tmo cmd <<<"$c"
    printf '%-12s %7ss  %s\n' "$name" "$tmo" "$cmd"
    total=$((total + tmo))
  done
  echo "dry run: ${#checks[@]} checks, at most ${total} s of timeouts"
  (( total <= 420 )) || { echo "run.sh: timeouts add up to ${total} s, over the 7-minute budget" >&2; exit 1; }
  exit 0
fi

: >"$out/results.jsonl"
{
  echo "# gmux GPU checks"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo none)"
  echo "- CUDA: $(nvcc --version 2>/dev/null | tail -1)"
  echo "- command: GMUX_GPU_OUT=... tests/gpu/run.sh"
  echo
  echo "| check | result | seconds |"
  echo "| --- | --- | --- |"
} >"$out/summary.md"

failed=0
for c in "${checks[@]}"; do
  IFS='|' read -r name tmo cmd <<<"$c"
  [[ -n "$only" && "$name" != "$only" ]] && continue
  echo "== $name (timeout ${tmo}s)" >&2
  s=$(date +%s)
  set +e
  timeout -k 5 "$tmo" bash -o pipefail -c "$cmd" >"$out/$name.log" 2>&1
  rc=$?
  set -e
  dt=$(( $(date +%s) - s ))
  case $rc in
    0) res=pass ;;
    77) res=skipped ;;
    124|137) res="timeout"; failed=1 ;;
    *) res="fail ($rc)"; failed=1 ;;
  esac
  echo "   $res in ${dt}s" >&2
  echo "| $name | $res | $dt |" >>"$out/summary.md"
  printf '{"check":"%s","result":"%s","rc":%d,"seconds":%d}\n' "$name" "$res" "$rc" "$dt" >>"$out/results.jsonl"
done
echo "results: $out/summary.md" >&2
exit $failed
