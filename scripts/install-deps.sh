#!/usr/bin/env bash
# Installs the Debian packages gmux needs, only those missing. Idempotent.
#   scripts/install-deps.sh          what building and testing need
#   scripts/install-deps.sh --dev    also clang, its sanitizer/fuzzer runtime, clang-format and
#                                    llvm (llvm-cov, llvm-profdata: make coverage)
# As root it runs apt-get (one apt-get update, only when something is missing);
# otherwise it prints the exact command to run and exits 1.
set -euo pipefail

packages=(build-essential cmake pkg-config libfabric-dev libcmocka-dev gnuplot-nox)
if [[ "${1:-}" == "--dev" ]]; then
  packages+=(clang libclang-rt-14-dev clang-format llvm)
elif [[ $# -gt 0 ]]; then
  echo "install-deps.sh: unknown option '$1' (use --dev or nothing)" >&2
  exit 2
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps.sh: not a Debian system; make sure these are installed: ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
  echo "install-deps.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps.sh: missing packages: ${missing[*]}" >&2
  echo "run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
