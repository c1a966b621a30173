#!/bin/sh
# make check entry for tests/user/unwind.test: unwinding (C++ exceptions,
# pthread_exit, backtrace) through user-mode return probes, run with
# --mode user by the runtime corpus runner (format: tests/README.md).
srcdir=${top_srcdir:-$(dirname "$0")/../..}
if ! command -v python3 >/dev/null 2>&1; then
	echo "Bail out! python3 is needed for tests/runtime-runner"
	exit 99
fi
exec python3 "$srcdir/tests/runtime-runner" --rtdir "$srcdir/tests/user" \
	--flags '--mode user' "$@"
