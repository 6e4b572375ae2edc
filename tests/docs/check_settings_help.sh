#!/usr/bin/env bash
# Keeps `gmux --help-settings` to one rule for its section headers: every
# setting's description begins with a header in lowercase words and a colon
# naming the part or topic it belongs to ("shim: ", "gmuxd: ", "net: ",
# "recording: "), as src/common/settings_list.h says.
#   check_settings_help.sh GMUX
set -u
gmux=${1:?usage: check_settings_help.sh GMUX}
help=$("$gmux" --help-settings) || { echo "check_settings_help: $gmux --help-settings failed" >&2; exit 1; }

fail=0
n=0
# A row: VARIABLE TYPE DEFAULT DESCRIPTION... (no default holds a blank).
while read -r name _ _ desc; do
    n=$((n + 1))
    [[ $desc =~ ^[a-z][a-z\ ]*:\  ]] || {
        echo "check_settings_help: $name: '${desc:0:40}...' does not begin with a lowercase header ('part: ')" >&2
        fail=1
    }
done < <(grep -E '^GMUX_[A-Z0-9_]+ ' <<<"$help")
[ $n -gt 0 ] || { echo "check_settings_help: no setting in $gmux --help-settings" >&2; exit 1; }
[ $fail = 0 ] && echo "check_settings_help: the $n settings' descriptions begin with a lowercase header"
exit $fail
