#!/bin/sh
# make check entry for the runtime corpus: runs the cases that
# tests/runtime/enabled names (the cases ubt is expected to pass today)
# through $UBT, plus the corpus consistency checks. See tests/README.md.
srcdir=${top_srcdir:-$(dirname "$0")/..}
if ! command -v python3 >/dev/null 2>&1; then
	echo "Bail out! python3 is needed for tests/runtime-runner"
	exit 99
fi
exec python3 "$srcdir/tests/runtime-runner" \
	--enabled "$srcdir/tests/runtime/enabled" "$@"
