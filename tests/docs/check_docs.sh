#!/usr/bin/env bash
# Keeps the documentation true to the tree: every source file under src/,
# tools/ and include/ is named in docs/architecture.md (by its file name, its
# name without the extension, or a pattern such as `cmd_*.c`), and every
# relative link in README.md and docs/ leads to a file that exists.
#   check_docs.sh SOURCE_DIR
set -u
root=${1:?usage: check_docs.sh SOURCE_DIR}
arch=$root/docs/architecture.md
[ -r "$arch" ] || { echo "check_docs: cannot read $arch" >&2; exit 1; }
fail=0

# Patterns written in the document, e.g. `cmd_*.c`.
mapfile -t pats < <(grep -o '`[A-Za-z0-9_./-]*\*[A-Za-z0-9_.*/-]*`' "$arch" | tr -d '`' | sort -u)

while IFS= read -r f; do
    base=${f##*/}
    stem=${base%.*}
    if grep -qE "(^|[^A-Za-z0-9_])${stem}([.]|[^A-Za-z0-9_]|$)" "$arch"; then
        continue
    fi
    hit=0
    for p in "${pats[@]}"; do
        # shellcheck disable=SC2053 # a pattern on purpose
        if [[ $base == ${p##*/} ]]; then hit=1; break; fi
    done
    if [ $hit = 0 ]; then
        echo "check_docs: $f is not named in docs/architecture.md" >&2
        fail=1
    fi
done < <(cd "$root" && find src tools include -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)

while IFS= read -r md; do
    dir=$(dirname "$md")
    # [text](target) links; skip URLs, anchors and mail addresses.
    while IFS= read -r target; do
        target=${target%%#*}
        case $target in '' | *:*) continue ;; esac
        if [ ! -e "$dir/$target" ]; then
            echo "check_docs: ${md#"$root"/} links to $target, which does not exist" >&2
            fail=1
        fi
    done < <(grep -oE '\]\([^) ]+\)' "$md" | sed -E 's/^\]\((.*)\)$/\1/')
done < <(find "$root/docs" -name '*.md'; echo "$root/README.md")

[ $fail = 0 ] && echo "check_docs: every source file named, every link resolves"
exit $fail
