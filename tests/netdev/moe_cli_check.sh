#!/usr/bin/env bash
# The command line and limits of the MoE example (examples/moe/moe_main.h,
# shared by moe_cpu and moe_cuda), run on moe_cpu:
#   - --help exits 0 and states every option and every limit the program
#     enforces (the rank count, --topk against the number of experts, memory);
#   - each bad value (junk, out of range, missing) exits 2 with a `moe:` line
#     on stderr naming the option, and prints nothing on stdout;
#   - limits that need the rank count or the machine (ranks > 8, --topk above
#     the experts, more memory per rank than the machine has) exit 1 with a
#     `moe:` line saying which, on every rank, and print nothing on stdout.
#
#   moe_cli_check.sh GMUX MOE_CPU
set -u
gmux=$1
moe=$2
bad=0
out=$(mktemp "${TMPDIR:-/tmp}/moe_cli.XXXXXX") || exit 2
err=$(mktemp "${TMPDIR:-/tmp}/moe_cli.XXXXXX") || exit 2
trap 'rm -f "$out" "$err"' EXIT

fail() {
    echo "moe_cli_check: FAIL: $*"
    bad=1
}

# expect STATUS STDERR_ERE STDOUT_ERE -- CMD...: '^$' for nothing on that stream
expect() {
    local status=$1 eerr=$2 eout=$3
    shift 4
    timeout 60 "$@" >"$out" 2>"$err"
    local rc=$?
    local what="'$*'"
    [ "$rc" -eq "$status" ] || fail "$what exited $rc, not $status; stderr: $(head -c 300 "$err")"
    matches stderr "$err" "$eerr" || fail "$what: stderr '$(head -c 300 "$err")' does not match '$eerr'"
    matches stdout "$out" "$eout" || fail "$what: stdout '$(head -c 300 "$out")' does not match '$eout'"
}

# matches NAME FILE ERE (NAME for the reader): the whole file matches ERE; '^$' means an empty file
matches() {
    if [ "$3" = '^$' ]; then
        [ ! -s "$2" ]
    else
        grep -qzE -- "$3" "$2"
    fi
}

# --help: every option, and the limits enforced after the options are read
expect 0 '^$' '--tokens T.*--hidden H.*--experts-per-rank E.*--topk K.*--iters N.*--json' -- "$moe" --help
expect 0 '^$' 'RANKS[^.]*1\.\.8' -- "$moe" --help
expect 0 '^$' '--topk K[^-]*at most RANKS x E' -- "$moe" --help
expect 0 '^$' 'memory' -- "$moe" --help

# bad values: exit 2, the option named, nothing on stdout
for case in "--tokens:0" "--tokens:-1" "--tokens:65537" "--tokens:1x" "--tokens:" \
    "--tokens: 5" "--tokens:5 " "--tokens:0x10" "--tokens:1e3" "--tokens:99999999999999999999" \
    "--hidden:0" "--hidden:16385" "--experts-per-rank:0" "--experts-per-rank:65" \
    "--topk:0" "--topk:9" "--iters:0" "--iters:-3" "--iters:junk"; do
    opt=${case%%:*}
    val=${case#*:}
    expect 2 "moe: bad value for $opt" '^$' -- "$moe" "$opt" "$val"
done
expect 2 "moe: bad value for --tokens" '^$' -- "$moe" --tokens
expect 2 "moe: unknown option '--bogus'" '^$' -- "$moe" --bogus
expect 2 "moe: unknown option '3'" '^$' -- "$moe" --json 3

# limits that need the ranks or the machine: exit 1, said by the rank(s)
expect 1 "moe: --topk 3 is more than the 2 experts" '^$' -- \
    "$moe" --experts-per-rank 2 --topk 3 --iters 1
expect 1 '(moe: 9 ranks; 1\.\.8 supported.*){9}' '^$' -- \
    "$gmux" launch -n 9 --timeout 30 -- "$moe" --tokens 2 --iters 1
expect 1 "moe: [0-9.]+ GiB of memory per rank needed, more than the [0-9.]+ GiB of this machine" \
    '^$' -- "$moe" --tokens 65536 --hidden 16384 --experts-per-rank 64 --iters 1

[ "$bad" -eq 0 ] && echo "moe_cli_check: ok"
exit "$bad"
