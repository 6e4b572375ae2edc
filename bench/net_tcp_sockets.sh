#!/usr/bin/env bash
# `gmux bench net --provider tcp --json --reps 3` of BUILD, N commands one
# after the other; while each runs, every 2 s, the TCP sockets of its ranks
# as `ss -tnpim` shows them (buffers, windows, mss, bytes), then each
# command's 32 KiB put_bw and the four busiest sockets at its last snapshot.
# Read-only: it sets nothing. docs/bench/net.md, "tcp 32 KiB puts, bimodal".
#   bench/net_tcp_sockets.sh BUILD [N=6] [OUT=/tmp/net_tcp_sockets]
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 BUILD [N] [OUT]" >&2; exit 2; }
build=$(cd "$1" && pwd) n=${2:-6} out=${3:-/tmp/net_tcp_sockets}
for i in $(seq "$n"); do
    "$build/tools/gmux/gmux" bench net --provider tcp --json --reps 3 >"$out$i.json" 2>/dev/null &
    bp=$!
    : >"$out$i.ss"
    while kill -0 "$bp" 2>/dev/null; do
        sleep 2
        kids=$(ps -e -o pid=,ppid= | awk -v p="$bp" '{par[$1] = $2} END {
            for (x in par) for (y = x; y in par && y != 1; y = par[y]) if (par[y] == p) { print x; break } }')
        echo "== $(date +%s)" >>"$out$i.ss"
        for k in $kids; do ss -tnpim state established 2>/dev/null | grep -A1 "pid=$k," || true; done >>"$out$i.ss"
    done
    wait "$bp" || true
done
python3 - "$n" "$out" <<'PY'
import json, re, sys
n, out = int(sys.argv[1]), sys.argv[2]
for i in range(1, n + 1):
    recs = [json.loads(l) for l in open("%s%d.json" % (out, i)) if l.startswith("{")]
    bw = {r["bytes"]: r for r in recs if r["op"] == "put_bw"}
    if 32768 not in bw:
        print("command %d: no 32 KiB figure" % i)
        continue
    r = bw[32768]
    print("command %d: 32 KiB gmux %.0f raw %.0f MiB/s, gmux/raw %.2f [%.2f..%.2f]" % (
        i, r["gmux"], r["raw"], r["ratio"], r["ratio_min"], r["ratio_max"]))
    snaps = [s for s in open("%s%d.ss" % (out, i)).read().split("== ") if "skmem" in s]
    if not snaps:
        continue
    conns = re.findall(r"(127\.0\.0\.1:\d+)\s+(127\.0\.0\.1:\d+).*?\n\s*skmem:\(([^)]*)\).*?"
                       r"rcvmss:(\d+).*?bytes_sent:(\d+).*?rcv_ssthresh:(\d+).*?snd_wnd:(\d+)",
                       snaps[-1], re.S)
    for c in sorted(conns, key=lambda c: -int(c[4]))[:4]:
        print("   %s->%s skmem(%s) rcvmss %s sent %s rcv_ssthresh %s snd_wnd %s" % (
            c[0], c[1], c[2], c[3], c[4], c[5], c[6]))
PY
