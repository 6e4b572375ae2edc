#!/usr/bin/env bash
# Builds a libfabric that reaches CUDA memory (FI_HMEM_CUDA, CUDA loaded with
# dlopen at run time) for the GPU lease, into .gpu-libs/fabric-cuda/. Debian's
# libfabric has no CUDA support, so on it device-memory windows are staged;
# with this one on LD_LIBRARY_PATH (tests/gpu/netdev_checks.sh does that when
# the folder is there) they can go direct. Only the providers gmux uses (shm,
# tcp, ofi_rxm) are built; the soname is the same (libfabric.so.1).
#
#   scripts/gpu-fabric-cuda.sh SRC
#
# SRC: a libfabric source tree of the version Debian ships (1.17), for
# instance `git -C CLONE archive v1.17.1 | tar x -C SRC` of
# https://github.com/ofiwg/libfabric (autotools are installed if missing). The
# source is not part of gmux and is not kept. scripts/gpu-carry.sh runs this
# when GMUX_LIBFABRIC_SRC names such a tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: scripts/gpu-fabric-cuda.sh LIBFABRIC_SOURCE_TREE}
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -f "$src/configure.ac" ] || { echo "gpu-fabric-cuda: $src is not a libfabric source tree" >&2; exit 2; }
[ -f "$cuda/include/cuda_runtime.h" ] || { echo "gpu-fabric-cuda: no CUDA headers under $cuda" >&2; exit 2; }
if ! command -v autoreconf >/dev/null || ! command -v libtoolize >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y autoconf automake libtool >/dev/null
    else
        echo "gpu-fabric-cuda: needs autoconf automake libtool (sudo apt-get install ...)" >&2
        exit 2
    fi
fi
work=$(mktemp -d /tmp/gmux-fabric.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -a "$src/." "$work/src"
cd "$work/src"
echo "gpu-fabric-cuda: configuring (log: $work/build.log)"
{
    [ -x configure ] || ./autogen.sh
    ./configure --prefix="$work/inst" --disable-static --enable-only --enable-shm --enable-tcp \
        --enable-rxm --with-cuda="$cuda" --enable-cuda-dlopen
    make -j"$(nproc)"
    make install
} >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
grep -q '^#define HAVE_CUDA 1' config.h || { echo "gpu-fabric-cuda: built without CUDA" >&2; exit 1; }
dest="$root/.gpu-libs/fabric-cuda"
rm -rf "$dest"
mkdir -p "$dest"
cp -L "$work/inst/lib/libfabric.so.1" "$dest/"
"$work/inst/bin/fi_info" --version | head -1 | sed "s/^[^:]*: //" >"$dest/VERSION"
echo "gpu-fabric-cuda: $(cat "$dest/VERSION") with CUDA (dlopen) in $dest"
