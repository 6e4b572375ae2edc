#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a consumer program
# against it twice: through pkg-config and through find_package(gmux).
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/gmux"
"$tmp/prefix/bin/gmux" --version
# the installed gmux runs the ranks of its net commands from libexec/gmux
test -x "$tmp/prefix/libexec/gmux/gmux-net-rank"
"$tmp/prefix/bin/gmux" bench net --provider shm --quick --reps 1 --json > "$tmp/bench.json"
grep -q '"op":"put_signal_rtt"' "$tmp/bench.json"
cat > "$tmp/use.c" <<'C'
#include <gmux/status.h>
#include <gmux/version.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    printf("gmux %s: %s\n", GMUX_VERSION_STRING, gmux_status_str(GMUX_ERR_TIMEOUT));
    return strcmp(gmux_status_str(GMUX_ERR_TIMEOUT), "timed out") != 0;
}
C
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc "$tmp/use.c" $(pkg-config --cflags --libs gmux) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/use-pc"
"$tmp/use-pc"
# The net library through pkg-config: a program that sets up net parameters.
cat > "$tmp/net.c" <<'C'
#include <gmux/net.h>
#include <stdio.h>
int main(void)
{
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    printf("net params: %u contexts\n", p.num_contexts);
    return p.num_contexts == 0;
}
C
cc "$tmp/net.c" $(pkg-config --cflags --libs gmux) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/use-net"
"$tmp/use-net"
mkdir -p "$tmp/consumer"
cp "$tmp/use.c" "$tmp/consumer/"
cat > "$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(gmux REQUIRED)
add_executable(use use.c)
target_link_libraries(use PRIVATE gmux::gmux_common)
CM
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer/build" >/dev/null
"$tmp/consumer/build/use"
echo "install: pkg-config and CMake package both work"
