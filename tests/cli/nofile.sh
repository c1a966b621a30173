#!/bin/sh
# BPFTRACE_MAX_PROBES raised over the ~700 syscall tracepoints under
# Debian's soft RLIMIT_NOFILE of 1024: ubt allows itself the descriptors
# the attach needs (3 a probe, as newer bpftrace) and runs; before, the
# attach failed with "Too many open files".

. "$top_srcdir/tests/cli/tap.sh"

hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 4096 ]; then
	echo "1..0 # SKIP the hard RLIMIT_NOFILE ($hard) is below what the test needs"
	exit 77
fi
calls="$top_builddir/tests/targets/ubt-calls"
out=$(ulimit -Sn 1024 &&
	BPFTRACE_MAX_PROBES=100000 timeout 120 "$UBT" -c "$calls 1" \
		-e 'tracepoint:syscalls:* /pid == cpid/ { @ = count(); }' \
		</dev/null 2>"$tap_tmp/err")
rc=$?
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -q '^@: [1-9]'; then
	ok "tracepoint:syscalls:* under ulimit -Sn 1024: attached, counted, exit 0"
else
	not_ok "tracepoint:syscalls:* under ulimit -Sn 1024: attached, counted, exit 0" \
		"exit $rc" "$(head -n 3 "$tap_tmp/err")" "$(printf '%s\n' "$out" | tail -n 2)"
fi
tap_done
