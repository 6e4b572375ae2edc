#!/usr/bin/env bash
# Line and branch coverage of the test suite (clang source-based coverage):
# builds into BUILD (default build-cov) with -fprofile-instr-generate
# -fcoverage-mapping, runs ctest there (CTEST_ARGS picks a subset, as in
# `make check`), merges the profiles and writes, under BUILD:
#   coverage.txt          llvm-cov's summary, one line per source file of src/, tools/, include/
#   coverage-modules.txt  the same summed per folder (src/engine, tools/gmux, ...)
#   html/index.html       the annotated sources, branch counts included
# A failing test does not stop the report (its coverage still counts); the
# script's exit status is ctest's. The CUDA parts are not built (GMUX_CUDA=OFF).
# Usage: BUILD=build-cov JOBS=2 CTEST_ARGS="-R engine" scripts/coverage.sh
set -uo pipefail

build=${BUILD:-build-cov}
jobs=${JOBS:-2}
src=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$src/$build ;; esac
cov=$(command -v llvm-cov || command -v llvm-cov-14)
profdata=$(command -v llvm-profdata || command -v llvm-profdata-14)
if [[ -z $cov || -z $profdata ]]; then
    echo "coverage.sh: llvm-cov and llvm-profdata are needed (Debian: package llvm)" >&2
    exit 2
fi

# Without the CUDA parts: nvcc links with the host's g++, which has no clang
# profile runtime, and llvm-cov cannot read device code anyway.
CC=clang cmake -S "$src" -B "$build" -DGMUX_COVERAGE=ON -DGMUX_CUDA=OFF -DGMUX_WERROR=ON \
    ${CMAKE_ARGS:-} \
    >/dev/null || exit 2
cmake --build "$build" -j"$jobs" || exit 2

# Every instrumented process writes its profile where the build put it
# (GMUX_COVERAGE compiles in BUILD/prof/%4m.profraw), also one that a test
# starts with an environment of its own; a stale LLVM_PROFILE_FILE must not
# send them elsewhere.
unset LLVM_PROFILE_FILE
rm -rf "$build/prof" "$build/html"
mkdir -p "$build/prof"
args=()
set -f
for w in ${CTEST_ARGS:-}; do
    case $w in \'*\' | \"*\") w=${w#?} w=${w%?} ;; esac
    args+=("$w")
done
set +f
(cd "$build" && ctest --output-on-failure -j"$jobs" "${args[@]}")
rc=$?

shopt -s nullglob
raws=("$build"/prof/*.profraw)
if [[ ${#raws[@]} -eq 0 ]]; then
    echo "coverage.sh: no profile was written under $build/prof" >&2
    exit 2
fi
"$profdata" merge -sparse "${raws[@]}" -o "$build/gmux.profdata" || exit 2

# The objects to read the mapping from: every executable and shared library of
# the build that carries one.
objs=()
while IFS= read -r f; do
    if readelf -S "$f" 2>/dev/null | grep -q __llvm_covmap; then
        objs+=(-object "$f")
    fi
done < <(find "$build" -type f \( -perm -u+x -o -name '*.so*' \) ! -path "$build/prof/*" \
    ! -path '*/CMakeFiles/*' | sort)
if [[ ${#objs[@]} -eq 0 ]]; then
    echo "coverage.sh: no instrumented program under $build" >&2
    exit 2
fi
# Only the project's sources: not the tests, not generated files.
ignore="^($src/tests/|$build/|/usr/)"
"$cov" report -instr-profile="$build/gmux.profdata" -ignore-filename-regex="$ignore" \
    "${objs[@]}" >"$build/coverage.txt" || exit 2
"$cov" show -format=html -show-branches=count -instr-profile="$build/gmux.profdata" \
    -ignore-filename-regex="$ignore" -output-dir="$build/html" "${objs[@]}" || exit 2

# Per folder. The report's columns: file, regions, missed, cover, functions,
# missed, executed, lines, missed, cover, branches, missed, cover.
awk -v root="$src/" '
    $1 ~ /\.(c|h|cu|cuh)$/ && NF >= 13 {
        f = $1
        if (index(f, root) == 1) f = substr(f, length(root) + 1)
        m = f
        sub("/[^/]*$", "", m)
        if ($8 == 0) next # declarations only: headers without code
        if (!(m in lines)) order[++n] = m
        lines[m] += $8; lmiss[m] += $9; br[m] += $11; bmiss[m] += $12
    }
    function pct(t, miss) { return t ? sprintf("%.1f", 100 * (t - miss) / t) : "-" }
    END {
        fmt = "%-16s %8s %8s %7s %9s %8s %7s\n"
        printf fmt, "module", "lines", "missed", "line%", "branches", "missed", "branch%"
        for (i = 1; i <= n; i++) {
            m = order[i]
            printf fmt, m, lines[m], lmiss[m], pct(lines[m], lmiss[m]), br[m], bmiss[m],
                   pct(br[m], bmiss[m]) | "sort"
            tl += lines[m]; tlm += lmiss[m]; tb += br[m]; tbm += bmiss[m]
        }
        close("sort")
        printf fmt, "total", tl, tlm, pct(tl, tlm), tb, tbm, pct(tb, tbm)
    }' "$build/coverage.txt" >"$build/coverage-modules.txt"
cat "$build/coverage-modules.txt"
echo "coverage.sh: per file in $build/coverage.txt, annotated sources in $build/html/index.html"
exit "$rc"
