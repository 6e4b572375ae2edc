#!/usr/bin/env bash
# oshcc and oshrun: compiles an OpenSHMEM program with the build tree's
# oshcc and runs it with oshrun (-n and -np); then installs into a temporary
# prefix and does the same with the installed scripts.
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GMUX_NET_PROVIDER=shm
"$build/bin/oshcc" -std=c11 -O1 -Wall -Werror -I"$src" "$src/shmem_globals.c" -o "$tmp/g"
"$build/bin/oshrun" -n 2 --timeout 100 "$tmp/g" | grep -q "globals: ok on 2 PEs"
"$build/bin/oshrun" -np 3 --timeout 100 -- "$tmp/g" | grep -q "globals: ok on 3 PEs"
if "$build/bin/oshrun" -x 2 "$tmp/g" 2>/dev/null; then
    echo "oshrun accepted an unknown option" >&2
    exit 1
fi
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
"$tmp/prefix/bin/oshcc" -std=c11 -O1 -I"$src" "$src/shmem_rma.c" -o "$tmp/r"
"$tmp/prefix/bin/oshrun" -n 2 --timeout 100 "$tmp/r" | grep -q "rma: ok on 2 PEs"
echo "oshcc/oshrun: build tree and install prefix both work"
