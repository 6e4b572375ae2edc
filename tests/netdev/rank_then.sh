#!/usr/bin/env bash
# A rank that goes wrong after its work, for the negative tests of
# launch_check.sh: runs CMD; a rank it killed by signal S (status 128+S) is
# killed by S in turn, so that the launcher sees the same death; any other
# then does what RANK_THEN says: "exit N" (exits N, whatever CMD's status)
# or "say TEXT" (prints TEXT on stderr, keeps CMD's status).
#
#   rank_then.sh CMD [ARGS...]
"$@"
rc=$?
if [ "$rc" -gt 128 ]; then
    kill -s "$((rc - 128))" $$
fi
case ${RANK_THEN:-} in
"exit "*) exit "${RANK_THEN#exit }" ;;
"say "*) echo "${RANK_THEN#say }" >&2 ;;
esac
exit "$rc"
