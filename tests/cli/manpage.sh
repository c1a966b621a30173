#!/bin/sh
# man/ubt.8 renders without warnings and documents every option that
# "ubt --help" lists; every option the man page documents is in --help.

. "${top_srcdir:?}/tests/cli/tap.sh"

page="$top_srcdir/man/ubt.8"
[ -r "$page" ] || bail "cannot read $page"
command -v man >/dev/null || bail "man is not installed (apt-get install man-db)"

warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
rc=$?
if [ "$rc" = 0 ] && [ -z "$warnings" ]; then
	ok "man -l renders without warnings"
else
	not_ok "man -l renders without warnings" "exit status $rc" "$warnings"
fi

# The page as plain ASCII text, without overstrike.
LC_ALL=C MANWIDTH=80 man -l "$page" 2>/dev/null |
	sed 's/.\x08//g' >"$tap_tmp/page" || bail "man -l failed"
"$UBT" --help >"$tap_tmp/help" || bail "ubt --help failed"

# Options as listed: "    -h, --help     ..." -> "-h" "--help"
options()
{
	sed -n 's/^ \{4,7\}\(-[-a-zA-Z][-a-zA-Z]*\)\(, \(--[-a-z]*\)\)\{0,1\}\( .*\)\{0,1\}$/\1 \3/p' "$1" |
		tr ' ' '\n' | grep . | sort -u
}

# "in FILE OPTION": OPTION occurs as a whole word.
has_word()
{
	grep -qE -- "(^|[^-[:alnum:]])$2([^-[:alnum:]]|\$)" "$1"
}

options "$tap_tmp/help" >"$tap_tmp/help-opts"
[ "$(wc -l <"$tap_tmp/help-opts")" -ge 15 ] ||
	bail "found only $(wc -l <"$tap_tmp/help-opts") options in ubt --help"
while read -r opt; do
	if has_word "$tap_tmp/page" "$opt"; then
		ok "--help option $opt is in the man page"
	else
		not_ok "--help option $opt is in the man page"
	fi
done <"$tap_tmp/help-opts"

# The OPTIONS section of the page, up to the next section.
sed -n '/^OPTIONS$/,/^[A-Z][A-Z ]*$/p' "$tap_tmp/page" |
	sed '1d;$d' >"$tap_tmp/page-options"
options "$tap_tmp/page-options" >"$tap_tmp/page-opts"
if cmp -s "$tap_tmp/page-opts" "$tap_tmp/help-opts"; then
	ok "the man page's OPTIONS are those of --help"
else
	not_ok "the man page's OPTIONS are those of --help" \
		"$(diff "$tap_tmp/help-opts" "$tap_tmp/page-opts")"
fi

for section in NAME SYNOPSIS DESCRIPTION OPTIONS 'PROBE TYPES' \
	'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
	if grep -qx "$section" "$tap_tmp/page"; then
		ok "section $section"
	else
		not_ok "section $section"
	fi
done

# Every probe type the man page should describe.
for type in BEGIN END uprobe uretprobe usdt tracepoint rawtracepoint \
	profile interval software hardware kprobe kretprobe kfunc kretfunc \
	watchpoint asyncwatchpoint iter; do
	if grep -qE "^       ${type}([:,]|\$)|, ${type}[:,]" "$tap_tmp/page"; then
		ok "probe type $type"
	else
		not_ok "probe type $type"
	fi
done

# The version in the page's footer is the program's.
version=$("$UBT" --version | sed -n 's/^ubt v//p')
if tail -n 1 "$tap_tmp/page" | grep -q "^ubt $version  "; then
	ok "the man page is of ubt $version"
else
	not_ok "the man page is of ubt $version" "$(tail -n 1 "$tap_tmp/page")"
fi

# The exit codes.
sed -n '/^EXIT STATUS$/,/^[A-Z][A-Z ]*$/p' "$tap_tmp/page" >"$tap_tmp/exit"
for code in 0 1 2; do
	if grep -q "^       $code  *[A-Z]" "$tap_tmp/exit"; then
		ok "exit status $code"
	else
		not_ok "exit status $code"
	fi
done

tap_done
