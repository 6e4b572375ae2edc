#!/usr/bin/env bash
# Downloads (does not install) the Debian packages that tests/gpu/run.sh needs
# on a GPU machine without a package registry: libfabric and cmocka with the
# libraries they link. They land in .gpu-debs/ (ignored by git) and travel to
# the device with the working tree ("carry"), where run.sh unpacks them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/.gpu-debs}
mkdir -p "$dest"
cd "$dest"
# The -dev packages for headers, and every package whose library the runtime
# libraries link (read from ldd here, so the list follows the installed build).
pkgs=(libfabric1 libfabric-dev libcmocka0 libcmocka-dev)
for lib in /usr/lib/x86_64-linux-gnu/libfabric.so.1 /usr/lib/x86_64-linux-gnu/libcmocka.so.0; do
  [[ -e "$lib" ]] || { echo "fetch-gpu-debs: $lib missing; run scripts/install-deps.sh" >&2; exit 1; }
  while read -r dep; do
    pkg=$( (dpkg -S "$(readlink -f "$dep")" || dpkg -S "$dep") 2>/dev/null | cut -d: -f1 | head -1 || true)
    case "$pkg" in ""|libc6|libgcc-s1|libstdc++6) ;; *) pkgs+=("$pkg") ;; esac
  done < <(ldd "$lib" | awk '$3 ~ /^\// {print $3}')
done
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
for p in "${pkgs[@]}"; do
  apt-get download "$p" >/dev/null 2>&1 || echo "fetch-gpu-debs: no package $p here (skipped)" >&2
done
ls -1 "$dest"/*.deb | wc -l | xargs echo "fetch-gpu-debs: debs in $dest:"
