#!/bin/sh
# make check entry for tests/native/user-mode-diff.py: the uprobe part of
# the runtime corpus run with --mode kernel and --mode user, compared.
srcdir=${top_srcdir:-$(dirname "$0")/../..}
exec python3 "$srcdir/tests/native/user-mode-diff.py" "$@"
