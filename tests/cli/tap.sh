# TAP helpers for the CLI tests (sourced, not run).
# Tests get top_srcdir, top_builddir and UBT from the environment.

: "${UBT:?UBT must name the ubt binary}"
: "${top_srcdir:?top_srcdir must be set}"

tap_n=0
tap_failed=0

ok()
{
	tap_n=$((tap_n + 1))
	printf 'ok %d - %s\n' "$tap_n" "$1"
}

not_ok()
{
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	printf 'not ok %d - %s\n' "$tap_n" "$1"
	shift
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/# /'
	done
}

tap_done()
{
	printf '1..%d\n' "$tap_n"
	[ "$tap_n" -gt 0 ] || exit 99
	exit 0
}

# Harness failure: not a failing test, a broken test.
bail()
{
	printf 'Bail out! %s\n' "$*"
	exit 99
}

tap_tmp=$(mktemp -d "${TMPDIR:-/tmp}/ubt-cli.XXXXXX") || bail "mktemp failed"
trap 'rm -rf "$tap_tmp"' EXIT
