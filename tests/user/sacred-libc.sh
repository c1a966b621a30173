#!/bin/sh
# The traced process is sacred (issue 24, item 6): every function of libc
# (uprobe:libc.so.6:*, thousands of sites, aliases of one function
# included) needs more than one code slice, and a second probe on a site
# whose slice is full goes to another: the run succeeds ("code area full"
# before), the calls are counted exactly, the target exits 0.  (-c: with
# -p the attach of 7000 sites outlasts the test targets' 30 s wait on a
# loaded machine; both take the same install path.)

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-sacred
libc=$(ldd "$bin" | sed -n 's|.*=> \(/[^ ]*libc\.so\.6\) .*|\1|p')
[ -n "$libc" ] || bail "no libc for $bin"
prog="uprobe:$libc:* { @ = count(); } uprobe:$libc:syscall { @s = count(); }"

# over bpftrace's 512 attach points: the limit raised, as bpftrace's
BPFTRACE_MAX_PROBES=100000 timeout 240 "$UBT" -v -c "$bin ppid 100" -e "$prog" >"$out" 2>"$err" \
	</dev/null
rc=$?
if [ $rc -eq 0 ] && grep -qx "done 100" "$out" && grep -qx "@s: 100" "$out" &&
   grep -q "^@: [0-9]" "$out" &&
   grep -q "^ubt: the command (pid [0-9]*) exited with status 0$" "$err" &&
   ! grep -q "code area full" "$err"; then
	ok "uprobe:libc.so.6:* and a second probe on syscall (-c): attached, syscall() counted 100 times, exit 0"
else
	not_ok "uprobe:libc.so.6:* and a second probe on syscall (-c): attached, syscall() counted 100 times, exit 0" \
		"exit $rc" "$(grep -v '^  uprobe' "$err" | tail -20)" \
		"$(cat "$out")"
fi

tap_done
