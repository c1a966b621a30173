#!/bin/sh
# The programs in the EXAMPLES of man/ubt.8 and of "ubt --help" are
# well-formed: each example "ubt ... -e 'program' ..." runs through
# "ubt --parse-only" with exit status 0 and no output. (Examples without
# -e, such as -l listings and script files, have nothing to parse.)

. "${top_srcdir:?}/tests/cli/tap.sh"

page="$top_srcdir/man/ubt.8"
command -v man >/dev/null || bail "man is not installed (apt-get install man-db)"

LC_ALL=C MANWIDTH=1000 man -l "$page" 2>/dev/null |
	sed 's/.\x08//g' |
	sed -n '/^EXAMPLES$/,/^[A-Z][A-Z ]*$/p' |
	sed -n 's/^ *\(ubt .*\)$/\1/p' >"$tap_tmp/examples" ||
	bail "man -l failed"
total=$(wc -l <"$tap_tmp/examples")
[ "$total" -ge 5 ] || bail "found only $total examples in $page"
"$UBT" --help | sed -n '/^EXAMPLES:$/,$s/^\(ubt .*\)$/\1/p' >"$tap_tmp/help-examples"
help_total=$(wc -l <"$tap_tmp/help-examples")
[ "$help_total" -ge 3 ] || bail "found only $help_total examples in ubt --help"
cat "$tap_tmp/help-examples" >>"$tap_tmp/examples"

n=0
while IFS= read -r line; do
	case " $line " in
	*" -e "*) ;;
	*) continue ;;
	esac
	# The example is shell text from our own man page: let the shell
	# split it into arguments, then drop the leading "ubt".
	eval "set -- $line" || bail "cannot split: $line"
	shift
	n=$((n + 1))
	"$UBT" --parse-only "$@" </dev/null >"$tap_tmp/out" 2>"$tap_tmp/err"
	rc=$?
	case " $line " in
	*" -d ast "*) want_out=yes ;;	# prints the tree on stdout
	*) want_out=no ;;
	esac
	if [ -s "$tap_tmp/out" ]; then has_out=yes; else has_out=no; fi
	if [ "$rc" = 0 ] && ! [ -s "$tap_tmp/err" ] &&
	   [ "$has_out" = "$want_out" ]; then
		ok "example parses: $line"
	else
		not_ok "example parses: $line" "exit status $rc," \
			"stdout: $has_out, expected $want_out" \
			"$(cat "$tap_tmp/err")"
	fi
done <"$tap_tmp/examples"
[ "$n" -ge 4 ] || bail "only $n examples with -e in $page"

tap_done
