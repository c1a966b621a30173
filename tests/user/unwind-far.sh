#!/bin/sh
# tests/user/unwind.test with the runtime where dlopen() puts it
# (UBT_RUNTIME_FAR=1): the return probes' trampolines reach rt_wrap_call
# through an address instead of a rel32 jump (tests/user/wrap-near.sh).
UBT_RUNTIME_FAR=1
export UBT_RUNTIME_FAR
exec sh "${top_srcdir:-$(dirname "$0")/../..}/tests/user/unwind.sh" "$@"
