#!/usr/bin/env bash
# Prepares what a GPU lease needs so that nothing is compiled or installed on
# the GPU machine: builds build-gpu/ for sm_90 (GMUX_CUDA=ON, Release) and copies
# into .gpu-libs/ every shared library its programs link that a bare CUDA
# machine may lack (libfabric and what it links, cmocka, the CUDA runtime and
# CUPTI), resolved by ldd here. Both folders are ignored by git; name them in
# the device call's carry list and run
#   tests/gpu/run.sh --no-build --build-dir "$PWD/build-gpu"
# there. The build tree keeps absolute paths (RPATH, CTest files) of this
# checkout, so the GPU machine must see it at the same path (a symbolic link;
# docs/gpu-results.md gives the whole command). With GMUX_LIBFABRIC_SRC naming
# a libfabric 1.17 source tree it also builds one with CUDA support into
# .gpu-libs/fabric-cuda (scripts/gpu-fabric-cuda.sh), kept across runs.
#   scripts/gpu-carry.sh [JOBS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-$(nproc)}
cd "$root"
cmake -S . -B build-gpu -DGMUX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-gpu -j"$jobs"
tests/gpu/run.sh --dry-run --build-dir "$root/build-gpu" >/dev/null
# a CUDA libfabric built earlier (scripts/gpu-fabric-cuda.sh) is kept
mkdir -p .gpu-libs
find .gpu-libs -mindepth 1 -maxdepth 1 ! -name fabric-cuda -exec rm -rf {} +
# glibc, the C++ runtime and the driver come from the GPU machine itself.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libstdc\+\+|libgcc_s|libcuda)\.so'
find build-gpu -type f \( -perm -u+x -o -name '*.so*' \) ! -path '*/CMakeFiles/*' -print0 |
  while IFS= read -r -d '' f; do
    file -b "$f" | grep -q '^ELF' || continue
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    case "$path" in "$root"/*) continue ;; esac   # our own libraries
    cp -L "$path" ".gpu-libs/$name"
  done
if [[ -n "${GMUX_LIBFABRIC_SRC:-}" ]]; then
  scripts/gpu-fabric-cuda.sh "$GMUX_LIBFABRIC_SRC"
fi
[[ -f .gpu-libs/fabric-cuda/libfabric.so.1 ]] ||
  echo "gpu-carry: no CUDA libfabric (GMUX_LIBFABRIC_SRC=TREE builds one): device memory will be staged"
# Only what the checks run travels: objects, archives and CMake's compiler-id
# scratch go, symbols are stripped, and so are the CPU-only test programs and
# fuzz targets (tests/gpu/*.sh run tools/, tests/gpu, tests/netdev, bench/ and
# examples/ programs and libraries; CI runs the rest). The next run of this
# script rebuilds them (a few minutes more).
find build-gpu \( -name '*.o' -o -name '*.a' \) -delete
rm -rf build-gpu/CMakeFiles/CheckCUDA build-gpu/CMakeFiles/[0-9]*/CompilerId*/tmp
for d in daemon tools sim engine common shmem; do
  if [[ -d build-gpu/tests/$d ]]; then find "build-gpu/tests/$d" -type f -perm -u+x -delete; fi
done
find build-gpu -type f -name 'fuzz_*' -perm -u+x -delete
find build-gpu -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
  while IFS= read -r -d '' f; do
    if file -b "$f" | grep -q '^ELF'; then strip --strip-unneeded "$f"; fi
  done
tests/gpu/run.sh --dry-run --no-build --build-dir "$root/build-gpu" >/dev/null
du -sh build-gpu .gpu-libs
ls .gpu-libs
# the device call carries at most 64 MiB in all
kib=$(du -sk build-gpu .gpu-libs | awk '{s += $1} END {print s}')
if (( kib > 64 * 1024 )); then
  echo "gpu-carry: build-gpu and .gpu-libs take $((kib / 1024)) MiB, over the 64 MiB a device call carries" >&2
  exit 1
fi
