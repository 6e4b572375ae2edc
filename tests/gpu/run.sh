#!/usr/bin/env bash
# Every GPU check of gmux in one prepared run, for short GPU leases.
#
#   tests/gpu/run.sh [--dry-run] [--build-dir DIR] [--no-build] [--only A,B]
#                    [--deadline SECONDS] [--memcheck]
#
# Builds the project for sm_90 with nvcc (GMUX_CUDA=ON), then runs each check
# with its own timeout so one hang cannot take the rest, and writes under
# $GMUX_GPU_OUT (default ./gpu-out):
#   summary.md      a markdown table: check, result, seconds; then every record
#   results.jsonl   one JSON record per check, plus whatever records checks add
#   NAME.log        each check's output
# --dry-run    builds and lists the checks (name, timeout, command), runs none;
#              CI runs it.
# --no-build   uses DIR as it is (built elsewhere for sm_90 and carried, see
#              scripts/gpu-carry.sh); nothing is compiled on the GPU machine.
# --only A,B   runs only the named checks.
# --deadline S the whole run stops starting checks after S seconds (default
#              420, or $GMUX_GPU_DEADLINE) and cuts the running one's timeout
#              to what is left, so the run fits its lease; checks are listed
#              in priority order.
# --memcheck   runs each check under compute-sanitizer --tool memcheck
#              (--target-processes all, so the programs a check script starts
#              are checked; $COMPUTE_SANITIZER, else the one on PATH, else
#              /usr/local/cuda/bin's), each timeout tripled (the deadline
#              still holds); a check with memcheck errors is "memcheck errors"
#              (compute-sanitizer's exit 86). Off by default; pair it with
#              --only, as memcheck slows kernels and launches many times.
#
# Libraries the device machine lacks (libfabric, cmocka, CUPTI) come either as
# .deb files in $GMUX_GPU_DEBS (default .gpu-debs/, scripts/fetch-gpu-debs.sh),
# unpacked with dpkg -x into a private sysroot, or as the library files
# themselves in .gpu-libs/ (scripts/gpu-carry.sh); both go on the search paths.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
args="$*"
out=${GMUX_GPU_OUT:-$root/gpu-out}
build=""
dry=0
nobuild=0
only=""
deadline=${GMUX_GPU_DEADLINE:-420}
memcheck=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --build-dir) build=$2; shift ;;
    --no-build) nobuild=1 ;;
    --only) only=$2; shift ;;
    --deadline) deadline=$2; shift ;;
    --memcheck) memcheck=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$deadline" =~ ^[0-9]+$ ]] || { echo "run.sh: --deadline wants whole seconds, not '$deadline'" >&2; exit 2; }
build=${build:-$root/build-gpu}
# compute-sanitizer's exit status when memcheck found errors (--error-exitcode)
memcheck_rc=86
san=()
if [[ $memcheck -eq 1 ]]; then
  sanbin=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
  if [[ $dry -eq 0 && ! -x $sanbin ]]; then
    echo "run.sh: --memcheck but no compute-sanitizer at '$sanbin' (set COMPUTE_SANITIZER)" >&2
    exit 2
  fi
  san=("$sanbin" --tool memcheck --target-processes all --error-exitcode "$memcheck_rc")
fi
mkdir -p "$out"
start=$(date +%s)

# --- libraries carried as .deb files or as library files ------------------------
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
if [[ -d "$root/.gpu-libs" ]]; then
  export LD_LIBRARY_PATH="$root/.gpu-libs:${LD_LIBRARY_PATH:-}"
fi

# --- build ---------------------------------------------------------------------
if [[ $nobuild -eq 1 ]]; then
  [[ -x "$build/tools/gmux/gmux" ]] || { echo "run.sh: --no-build but $build/tools/gmux/gmux is missing" >&2; exit 1; }
  echo "== using the build in $build as it is" >&2
else
  echo "== build ($build, sm_90)" >&2
  t0=$(date +%s)
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    # A fresh tree for the GPU; an existing one (--build-dir) keeps its configuration.
    cmake -S "$root" -B "$build" -DGMUX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
          -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; exit 1; }
  fi
  cmake --build "$build" -j"$(nproc)" >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log" >&2; exit 1; }
  echo "   built in $(( $(date +%s) - t0 )) s" >&2
fi
export GMUX_BUILD="$build" GMUX_GPU_OUT="$out" GMUX_ROOT="$root"

# --- the checks, in priority order: NAME TIMEOUT_S COMMAND ------------------------
# Each check exits 0 (pass), 77 (skipped: needs something absent) or other (fail),
# and may append its own JSON records to $GMUX_GPU_OUT/results.jsonl.
# Order: the probe, then the checks whose figures open issues still wait for
# (shim-rate: issue 5's launch rate; netdev: issue 8's round trip and MoE), so
# a lease cut short still yields them; then the rest, which have run before.
g="$root/tests/gpu"
checks=(
  "probe|30|ctest --test-dir $build -R '^test_gpu_(probe|vector_add)\$' --output-on-failure"
  "shim-rate|100|bash $g/shim_checks.sh $build rate"
  "netdev|120|bash $g/netdev_checks.sh $build"
  "pcie-floor|30|$build/tests/gpu/pcie_floor | tee -a $out/results.jsonl"
  "shim-progs|90|bash $g/shim_checks.sh $build progs"
  "calibrate|60|bash $g/calibrate_checks.sh $build"
  "shim-record|60|bash $g/shim_checks.sh $build record"
  "shim-torch|100|bash $g/shim_checks.sh $build torch"
  "daemon|150|bash $g/daemon_checks.sh $build"
  "shim-predict|150|bash $g/shim_checks.sh $build predict"
)

if [[ $dry -eq 1 ]]; then
  total=0
  printf '%-12s %8s  %s\n' CHECK TIMEOUT COMMAND
  for c in "${checks[@]}"; do
    IFS='|' read -r name tmo cmd <<<"$c"
    [[ $memcheck -eq 1 ]] && tmo=$((tmo * 3))
    printf '%-12s %7ss  %s\n' "$name" "$tmo" "${san[*]}${san[*]:+ }$cmd"
    total=$((total + tmo))
    # every script a check names must exist
    for w in $cmd; do
      case "$w" in "$g"/*.sh) [[ -f "$w" ]] || { echo "run.sh: $name names $w, which is missing" >&2; exit 1; } ;; esac
    done
  done
  echo "dry run: ${#checks[@]} checks, ${total} s of timeouts, cut to a ${deadline} s deadline"
  if [[ $memcheck -eq 1 ]]; then
    [[ -x ${san[0]} ]] && echo "memcheck: ${san[0]}" || echo "memcheck: ${san[0]} is missing here"
  fi
  (( deadline <= 450 )) || { echo "run.sh: a ${deadline} s deadline is over the 8-minute budget" >&2; exit 1; }
  exit 0
fi

: >"$out/results.jsonl"
{
  echo "# gmux GPU checks"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo none)"
  echo "- CUDA: $(nvcc --version 2>/dev/null | tail -1)"
  echo "- command: tests/gpu/run.sh $args"
  echo "- memcheck: $([[ $memcheck -eq 1 ]] && echo "${san[*]}" || echo off)"
  echo
  echo "| check | result | seconds |"
  echo "| --- | --- | --- |"
} >"$out/summary.md"

failed=0
for c in "${checks[@]}"; do
  IFS='|' read -r name tmo cmd <<<"$c"
  [[ -n "$only" && ",$only," != *",$name,"* ]] && continue
  [[ $memcheck -eq 1 ]] && tmo=$((tmo * 3))
  left=$(( deadline - ($(date +%s) - start) ))
  if (( left < 10 )); then
    echo "== $name: not run (deadline)" >&2
    echo "| $name | not run (deadline) | 0 |" >>"$out/summary.md"
    printf '{"check":"%s","result":"not run","rc":-1,"seconds":0}\n' "$name" >>"$out/results.jsonl"
    continue
  fi
  (( tmo > left )) && tmo=$left
  echo "== $name (timeout ${tmo}s)" >&2
  s=$(date +%s)
  set +e
  # timeout leads its own process group and signals all of it: children too
  timeout -k 5 "$tmo" "${san[@]}" bash -o pipefail -c "$cmd" >"$out/$name.log" 2>&1
  rc=$?
  set -e
  dt=$(( $(date +%s) - s ))
  case $rc in
    0) res=pass ;;
    77) res=skipped ;;
    124|137) res="timeout"; failed=1 ;;
    "$memcheck_rc") if [[ $memcheck -eq 1 ]]; then res="memcheck errors"; else res="fail ($rc)"; fi; failed=1 ;;
    *) res="fail ($rc)"; failed=1 ;;
  esac
  echo "   $res in ${dt}s" >&2
  if [[ $res != pass && $res != skipped ]]; then
    tail -25 "$out/$name.log" | sed 's/^/   | /' >&2
  fi
  echo "| $name | $res | $dt |" >>"$out/summary.md"
  printf '{"check":"%s","result":"%s","rc":%d,"seconds":%d}\n' "$name" "$res" "$rc" "$dt" >>"$out/results.jsonl"
done
{
  echo
  echo "## Records"
  echo
  echo '```'
  cat "$out/results.jsonl"
  echo '```'
} >>"$out/summary.md"
echo "results: $out/summary.md (whole run $(( $(date +%s) - start )) s)" >&2
exit $failed
