#!/usr/bin/env bash
# Keeps the commands README.md and docs/*.md show true to the product:
# - every `make X` in a code span or block is a target of the Makefile;
# - every option of a `gmux CMD ...` in a code span or block (before its `--`
#   and any `#` comment) is named by `gmux CMD --help` (`gmux bench net
#   --help` for bench), but for the words shown as wrong on purpose (--frob);
# - every GMUX_* name in them is a setting of `gmux --help-settings` or a
#   word of the tree (a status code, a CMake option, a test's variable, the
#   launcher's GMUX_RANK...); `GMUX_X_*` stands for the names that begin so.
#   check_doc_cmds.sh SOURCE_DIR GMUX
set -u
root=${1:?usage: check_doc_cmds.sh SOURCE_DIR GMUX}
gmux=${2:?usage: check_doc_cmds.sh SOURCE_DIR GMUX}
wrong_on_purpose=" --frob "
fail=0
bad() {
    echo "check_doc_cmds: $*" >&2
    fail=1
}

docs=("$root/README.md" "$root"/docs/*.md)
# One line per code span, FILE<tab>TEXT: a fenced block's lines, an inline
# span joined onto one line.
spans=$(perl -0777 -ne '
    my $f = $ARGV; $f =~ s{^.*?((?:docs/)?[^/]+)$}{$1};
    my $t = $_;
    while ($t =~ /^[ \t]*```[^\n]*\n(.*?)^[ \t]*```/msg) { print "$f\t$_\n" for split /\n/, $1; }
    $t =~ s/^[ \t]*```.*?^[ \t]*```[^\n]*$//msg;
    while ($t =~ /`([^`]+)`/g) { (my $s = $1) =~ s/\s*\n\s*/ /g; print "$f\t$s\n"; }
' "${docs[@]}") || { echo "check_doc_cmds: cannot read the documents" >&2; exit 1; }

targets=" $(grep -oE '^[A-Za-z][A-Za-z0-9_-]*:' "$root/Makefile" | tr -d : | tr '\n' ' ') "
while IFS=$'\t' read -r f t; do
    [[ $targets == *" $t "* ]] || bad "$f: 'make $t': no such target in the Makefile"
done < <(printf '%s\n' "$spans" | perl -ne '
    my ($f, $s) = split /\t/, $_, 2;
    print "$f\t$1\n" while $s =~ /(?:^|[\s(])make\s+([a-z][a-z0-9-]*)(?![\w=-])/g;')

cmds=" $("$gmux" --help | sed -nE 's/^  ([a-z][a-z-]*) .*/\1/p' | tr '\n' ' ') "
[ "$cmds" != "  " ] || { echo "check_doc_cmds: no command list in $gmux --help" >&2; exit 1; }
declare -A help
while IFS=$'\t' read -r f c o; do
    [[ $cmds == *" $c "* ]] || continue
    [[ $wrong_on_purpose == *" $o "* ]] && continue
    if [ -z "${help[$c]+set}" ]; then
        if [ "$c" = bench ]; then help[$c]=$("$gmux" bench net --help); else help[$c]=$("$gmux" "$c" --help); fi
    fi
    grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" <<<"${help[$c]}" ||
        bad "$f: 'gmux $c $o': gmux $c --help names no $o"
done < <(printf '%s\n' "$spans" | perl -ne '
    my ($f, $s) = split /\t/, $_, 2; chomp $s;
    my @parts = split /\bgmux\s+/, $s; shift @parts;
    for (@parts) {
        next unless /^([a-z][a-z-]*)(.*)$/;
        my ($c, $rest) = ($1, $2);
        $rest =~ s/\s#\s.*//; $rest =~ s/\s--(\s.*)?$//;
        print "$f\t$c\t$1\n" while $rest =~ /(?<![\w-])(--[a-z][a-z0-9-]*)/g;
    }')

settings=" $("$gmux" --help-settings | grep -oE '^GMUX_[A-Z0-9_]+' | tr '\n' ' ') "
[ "$settings" != "  " ] || { echo "check_doc_cmds: no setting in $gmux --help-settings" >&2; exit 1; }
words=" $(cd "$root" && grep -rhoE 'GMUX_[A-Z0-9_]+' src include tools cmake tests scripts bench \
              CMakeLists.txt Makefile 2>/dev/null | sort -u | tr '\n' ' ') "
while IFS=: read -r f n; do
    f=${f#"$root"/}
    case $n in
    *_) [[ $settings$words == *" $n"* ]] || bad "$f: no setting or name begins with $n" ;;
    *) [[ $settings$words == *" $n "* ]] || bad "$f: $n is no setting of gmux --help-settings nor a name in the tree" ;;
    esac
done < <(grep -oE 'GMUX_[A-Z0-9_]+' "${docs[@]}" | sort -u)

[ $fail = 0 ] && echo "check_doc_cmds: every make target, gmux option and GMUX_* name exists"
exit $fail
