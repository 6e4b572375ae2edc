#!/usr/bin/env bash
# Keeps docs/sim.md's list of the `gmux sim --json` keys whole: runs gmux sim
# --json on a small bundled workload (every policy, learned prediction; a
# device too small for a launch, so that policies fail; a sweep) and checks
# that every key the reports emit, the policies' names included, is named in
# a code span of the `--json` item of docs/sim.md (the bullet that begins
# "- `--json`").
#   check_sim_json.sh SOURCE_DIR GMUX
set -u
root=${1:?usage: check_sim_json.sh SOURCE_DIR GMUX}
gmux=${2:?usage: check_sim_json.sh SOURCE_DIR GMUX}
doc=$root/docs/sim.md
[ -r "$doc" ] || { echo "check_sim_json: cannot read $doc" >&2; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
small=(--workload llm-decode --set instances=2 --set layers=1 --set tokens=1 --quiet --json)
reports=""
for extra in "--oversub 150" "--oversub 100000" "--sweep --plot $tmp/sweep"; do
    # shellcheck disable=SC2086 # the words of extra on purpose
    out=$("$gmux" sim "${small[@]}" $extra) ||
        { echo "check_sim_json: gmux sim ${small[*]} $extra failed" >&2; exit 1; }
    reports+=$out$'\n'
done
# A key is a JSON string followed by a colon; the values here hold no such text.
mapfile -t keys < <(grep -oE '"[A-Za-z0-9_-]+":' <<<"$reports" | tr -d '":' | sort -u)
[ ${#keys[@]} -gt 10 ] || { echo "check_sim_json: found no keys in the reports" >&2; exit 1; }

# The words of the code spans of the `--json` item, one a line.
words=$(perl -0777 -ne '
    /^- `--json`(.*?)(?=^- |^\s*$|^#)/ms or exit 1;
    (my $item = $1) =~ s/\s*\n\s*/ /g;
    while ($item =~ /`([^`]+)`/g) { print "$_\n" for split /[^A-Za-z0-9_-]+/, $1; }
' "$doc") || { echo "check_sim_json: docs/sim.md has no item beginning '- \`--json\`'" >&2; exit 1; }

fail=0
for k in "${keys[@]}"; do
    grep -qxF -- "$k" <<<"$words" || {
        echo "check_sim_json: docs/sim.md's --json item does not name the key $k" >&2
        fail=1
    }
done
[ $fail = 0 ] && echo "check_sim_json: the ${#keys[@]} keys of gmux sim --json are in docs/sim.md"
exit $fail
