#!/bin/sh
# Runs a libFuzzer binary once over its seed corpus (no mutations) and fails
# unless the coverage it reports reaches MIN: a harness whose parser is not
# compiled with the fuzzer's instrumentation reports a handful of edges (its
# own) and fuzzes blind.
# Usage: coverage_check.sh FUZZER MIN CORPUS_DIR...
set -u
fuzzer=$1
min=$2
shift 2
corpus="$*"
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
for dir in "$@"; do
    cp "$dir"/* "$work"/ 2>/dev/null
done
out=$("$fuzzer" -runs=0 "$work" 2>&1)
rc=$?
cov=$(printf '%s\n' "$out" | sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' | head -n 1)
if [ "$rc" -ne 0 ] || [ -z "$cov" ]; then
    printf '%s\n' "$out" | tail -n 20
    echo "coverage_check: $fuzzer did not report its coverage (exit $rc)"
    exit 1
fi
echo "coverage_check: $fuzzer covers $cov edges over $corpus (at least $min wanted)"
[ "$cov" -ge "$min" ]
