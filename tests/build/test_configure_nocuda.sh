#!/usr/bin/env bash
# The project configures on a machine without the CUDA toolkit: no nvcc on
# PATH, no cuda.h where CMake looks. The CUDA parts and libgmux.so are then
# skipped, and every other target must stand without them: until 2026-12-03
# bench_gate_ranges linked gmux_shim_core unguarded, so such a build (make
# coverage's included) failed on "common/clock.h not found". The configure
# now refuses a gmux_* library that is not built (cmake/GmuxLinkCheck.cmake).
# GMUX_CUDA=OFF as make coverage has it: no nvcc is looked for.
# Usage: test_configure_nocuda.sh SOURCE_DIR C_COMPILER
set -euo pipefail
src=$1
cc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# PATH without the toolkit, and the folders where cuda.h lives ignored
path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v cuda | paste -sd:)
ignore=""
for d in /usr/local/cuda /usr/local/cuda-* /usr/local/include /usr/include; do
    for inc in "$d" "$d/include" "$d"/targets/*/include; do
        [[ -e $inc/cuda.h ]] && ignore="$ignore;$inc"
    done
done
ignore=${ignore#;}
if ! PATH=$path cmake -S "$src" -B "$tmp/b" -DCMAKE_C_COMPILER="$cc" -DGMUX_CUDA=OFF \
    -DCMAKE_IGNORE_PATH="$ignore" >"$tmp/log" 2>&1; then
    cat "$tmp/log"
    echo "test_configure_nocuda: the configure without CUDA failed" >&2
    exit 1
fi
grep -q "shim: cuda.h not found, libgmux.so not built" "$tmp/log" || {
    cat "$tmp/log"
    echo "test_configure_nocuda: cuda.h was still found (ignored: $ignore)" >&2
    exit 1
}
grep -q "CUDA parts skipped" "$tmp/log" || {
    cat "$tmp/log"
    echo "test_configure_nocuda: the CUDA parts were not skipped" >&2
    exit 1
}
echo "configured without CUDA (cuda.h ignored in: $ignore)"
