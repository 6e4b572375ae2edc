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
# docs/gpu-results.md gives the whole command).
#   scripts/gpu-carry.sh [JOBS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-$(nproc)}
cd "$root"
cmake -S . -B build-gpu -DGMUX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-gpu -j"$jobs"
tests/gpu/run.sh --dry-run --build-dir "$root/build-gpu" >/dev/null
rm -rf .gpu-libs
mkdir -p .gpu-libs
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
du -sh build-gpu .gpu-libs
ls .gpu-libs
