#!/bin/sh
# The remote calls of a -p attach made once the memfd is mapped (its
# mprotect(), the runtime's dlopen() and rt_init(), the code areas'
# mmap()s) run without a system call stop each (issue 27 item 3,
# shim/process/ptrace_done.c; the system calls made by the helper's own
# code): -v counts the system call stops of the thread held, 46-61 at
# first, 18 with the runtime's calls alone through the helper, 9 now.
# The worker killed while such a call waits in its helper for ubt to stop
# it (UBT_TEST_DIE_IN_DONE: the mprotect(), a system call, then the
# dlopen(), a call): the helper's wait ends by itself and the stub puts
# the thread back; the target runs on, every call right, its code the
# file's, and a later session attaches and counts every call.  TAP.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-sacred
nt=4
calls=1000
total=$((nt * calls))
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); } END { }"

# 1. the stops of the thread held, counted by -v
start_wait threads-wait $calls $nt
sacred_run_p 60 $tp -v --mode user -p $tp -e "$prog"
stops=$(sed -n 's/.* remote call(s) with \([0-9]*\) system call stop(s).*/\1/p' "$err" |
	head -1)
if [ "$rc" -eq 0 ] && grep -qx "@: $total" "$out" && [ $trc -eq 0 ] &&
   grep -q "^done $total\$" "$tout"; then
	ok "-p: every call counted, the target ran on correctly"
else
	not_ok "-p: every call counted, the target ran on correctly" \
		"exit $rc/$trc" "$(cat "$out" "$err" "$tout" | head -20)"
fi
# the memfd's create and map (3 stops each: entry, exit, the stub's end),
# the stub's page in a fresh process (3 more), an older kernel's second
# memfd_create() (3): the rest made by the helper, 18 when only the
# runtime's calls were
if [ -n "$stops" ] && [ "$stops" -le 13 ]; then
	ok "-p: the calls once the memfd is mapped without a system call stop each ($stops stops)"
else
	not_ok "-p: the calls once the memfd is mapped without a system call stop each" \
		"$(grep 'remote call' "$err")"
fi

# 2.-5. the worker killed while the thread waits in the helper: after the
# mprotect() (a system call the helper makes), after the dlopen() (a call)
for n in 1 2; do
	what=$([ $n = 1 ] && echo "mprotect()" || echo "dlopen()")
	start_wait threads-wait $calls $nt
	before=$(code "$tp")
	UBT_TEST_DIE_IN_DONE=$n timeout 60 "$UBT" --mode user -p $tp \
		-e "$prog" >"$out" 2>"$err" </dev/null
	rc=$?
	after=$(code "$tp")
	traced=$(grep -h '^TracerPid:' /proc/$tp/task/*/status 2>/dev/null |
		 grep -vc '[[:space:]]0$')
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && kill -0 $tp 2>/dev/null &&
	   [ "$traced" = 0 ] && [ -n "$before" ] && [ "$before" = "$after" ]; then
		ok "killed in the helper's wait after its $what: the target lives, untraced, its code the file's"
	else
		not_ok "killed in the helper's wait after its $what: the target lives, untraced, its code the file's" \
			"exit $rc traced $traced before $before after $after" \
			"$(head -5 "$err")"
	fi
	# a later session on the same target: every call counted
	sacred_run_p 60 $tp -v --mode user -p $tp -e "$prog"
	if [ "$rc" -eq 0 ] && grep -qx "@: $total" "$out" && [ $trc -eq 0 ] &&
	   grep -q "^done $total\$" "$tout"; then
		ok "killed in the helper's wait after its $what: a later session counts every call, the target runs right"
	else
		not_ok "killed in the helper's wait after its $what: a later session counts every call, the target runs right" \
			"exit $rc/$trc" "$(cat "$out" "$err" "$tout" | head -20)"
	fi
done
tap_done
