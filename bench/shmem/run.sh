#!/usr/bin/env bash
# OpenSHMEM side by side: bench/shmem/shmem_bench.c compiled with gmux's
# oshcc (run on 2 PEs over shm and tcp) and, when Debian's Open MPI is
# installed, with its oshcc (oshmem over UCX: default transports, and UCX
# tcp on loopback). Prints a markdown table on stderr and one JSON record
# per figure on stdout.
#   bench/shmem/run.sh [BUILD]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
impls=()
"$build/bin/oshcc" -std=c11 -O2 "$src/shmem_bench.c" -o "$tmp/gmux_bench"
for prov in shm tcp; do
    if GMUX_NET_PROVIDER=$prov "$build/bin/oshrun" -n 2 --timeout 300 "$tmp/gmux_bench" \
        > "$tmp/gmux-$prov.txt"; then
        impls+=("gmux-$prov")
    fi
done
if [ -x /usr/bin/oshcc ] && [ -x /usr/bin/oshrun ]; then
    /usr/bin/oshcc -std=c11 -O2 "$src/shmem_bench.c" -o "$tmp/ompi_bench"
    osh=(timeout 300 /usr/bin/oshrun --allow-run-as-root --oversubscribe -np 2)
    # Open MPI 4.1.4's oshmem may crash in shmem_finalize after printing
    # everything; the figures count when the last line is there.
    "${osh[@]}" "$tmp/ompi_bench" > "$tmp/ompi-ucx.txt" 2>/dev/null || true
    grep -q amo_cswap_lat "$tmp/ompi-ucx.txt" && impls+=("ompi-ucx")
    UCX_TLS=tcp,self UCX_NET_DEVICES=lo "${osh[@]}" -x UCX_TLS -x UCX_NET_DEVICES \
        "$tmp/ompi_bench" > "$tmp/ompi-ucx-tcp.txt" 2>/dev/null || true
    grep -q amo_cswap_lat "$tmp/ompi-ucx-tcp.txt" && impls+=("ompi-ucx-tcp")
else
    echo "Open MPI's oshcc/oshrun not installed: gmux only" >&2
fi
python3 - "$tmp" "${impls[@]}" <<'PY'
import json, sys
tmp, impls = sys.argv[1], sys.argv[2:]
rows, data = [], {}
for impl in impls:
    for line in open(f"{tmp}/{impl}.txt"):
        f = line.split()
        if len(f) != 4:
            continue
        key = (f[0], int(f[1]), f[3])
        if key not in rows:
            rows.append(key)
        data[(impl,) + key] = float(f[2])
        print(json.dumps({"bench": "shmem", "impl": impl, "metric": f[0], "bytes": int(f[1]),
                          "value": float(f[2]), "unit": f[3]}))
err = sys.stderr
err.write("| metric | bytes | " + " | ".join(impls) + " |\n")
err.write("| --- | ---: |" + " ---: |" * len(impls) + "\n")
for m, b, u in rows:
    cells = [("%g" % data[(i, m, b, u)]) if (i, m, b, u) in data else "-" for i in impls]
    err.write(f"| {m} ({u}) | {b} | " + " | ".join(cells) + " |\n")
PY
