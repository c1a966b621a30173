#!/bin/sh
# ubt run by a user who is not root (issue 25, item 12): one line saying
# that ubt needs root and exit 1, for a run and for --dry-run alike (it
# goes as far as loading), instead of libbpf's complaints about
# RLIMIT_MEMLOCK and a trivial program it could not load; --parse-only,
# which loads nothing, still works.

. "$top_srcdir/tests/cli/tap.sh"

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root (runs ubt as another user)"; exit 77; }
command -v setpriv >/dev/null || bail "setpriv (util-linux) not found"
prog='BEGIN { printf("hi\n"); exit(); }'
want='ubt: cannot run the program: ubt needs to run as root'

# as_nobody ARGS...: ubt as uid/gid 65534, output in $tap_tmp/out, err
as_nobody()
{
	(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$UBT" "$@" >"$tap_tmp/out" 2>"$tap_tmp/err" </dev/null)
}

for args in "" "--dry-run"; do
	name="not root${args:+, $args}"
	# shellcheck disable=SC2086 # args: zero or one word
	as_nobody $args -e "$prog"
	rc=$?
	if [ "$rc" = 1 ] && [ "$(cat "$tap_tmp/err")" = "$want" ] &&
		[ ! -s "$tap_tmp/out" ]; then
		ok "$name: one line says ubt needs root, exit 1"
	else
		not_ok "$name: one line says ubt needs root, exit 1" \
			"exit $rc" "$(cat "$tap_tmp/err")"
	fi
done
if as_nobody --parse-only -e "$prog" && [ ! -s "$tap_tmp/err" ]; then
	ok "not root, --parse-only: parses"
else
	not_ok "not root, --parse-only: parses" "$(cat "$tap_tmp/err")"
fi
tap_done
