#!/bin/sh
# The attach's stop of every thread never waits for a late thread with
# the others held (issue 27 item 3, shim/process/ptrace_stop.c).
# UBT_TEST_STOP_LATE=N makes a thread late N times: when every thread has
# stopped, one runs on for 8 ms before it is interrupted again, as a thread
# descheduled under load would.  The others are let go meanwhile and the
# stop is tried again: the attach goes through, every call counted, the
# code restored after.  Late every time: the attach gives up after its
# bound and says why, nothing written, every thread let go, the target
# runs on unharmed.  In the default mode (issue 27) the probes go to the
# kernel instead: a warning says why, every call is counted there, the
# run ends as any other.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-sacred
nt=4
calls=1000
total=$((nt * calls))
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); } END { }"

# inside: how many of the target's ($tp) threads a tracer holds ($traced)
# and how many of its mappings are ubt's memfd ($ours)
inside()
{
	traced=$(grep -h '^TracerPid:' /proc/$tp/task/*/status 2>/dev/null |
		 grep -vc '[[:space:]]0$')
	ours=$(grep -c 'memfd:ubt' /proc/$tp/maps 2>/dev/null)
}

# 1. late three times: let go, tried again, the attach goes through
start_wait threads-wait $calls $nt
export UBT_TEST_STOP_LATE=3
sacred_run_p 60 $tp -v --mode user -p $tp -e "$prog"
if [ "$rc" -eq 0 ] && grep -qx "@: $total" "$out"; then
	ok "a late thread: every call counted"
else
	not_ok "a late thread: every call counted" "exit $rc" \
		"$(cat "$out" "$err" | head -20)"
fi
if grep -Eq '^ubt: attach pause .* [1-9][0-9]* retried stop' "$err"; then
	ok "a late thread: the others let go, the stop tried again"
else
	not_ok "a late thread: the others let go, the stop tried again" \
		"$(grep 'attach pause' "$err")"
fi
if [ $trc -eq 0 ] && grep -q "^done $total\$" "$tout"; then
	ok "a late thread: the target ran on correctly"
else
	not_ok "a late thread: the target ran on correctly" "exit $trc" \
		"$(cat "$tout")"
fi
if [ -n "$before" ] && [ "$before" = "$after" ] && [ "$before" != "$during" ]
then
	ok "a late thread: patched, then the code is the file's again"
else
	not_ok "a late thread: patched, then the code is the file's again" \
		"before $before during $during after $after"
fi

# 2. late every time, --mode user: the attach gives up, the target
# untouched
start_wait threads-wait $calls $nt
before=$(code "$tp")
UBT_TEST_STOP_LATE=1000000 timeout 20 "$UBT" --mode user -p $tp -e "$prog" \
	>"$out" 2>"$err" </dev/null
rc=$?
after=$(code "$tp")
inside
kill -USR1 $tp
wait_for 300 $tp '^done' "$tout"
kill -USR1 $tp
wait $tp
trc=$?
if [ "$rc" -ne 0 ] &&
   grep -q "^ubt: cannot resume the target: .* did not stop within [0-9]* ms of the others (.*every thread let go" "$err"
then
	ok "late every time: the attach gives up and says why"
else
	not_ok "late every time: the attach gives up and says why" \
		"exit $rc" "$(cat "$err")"
fi
if [ -n "$before" ] && [ "$before" = "$after" ] && [ "$traced" = 0 ] &&
   [ "$ours" = 0 ]; then
	ok "late every time: nothing written, no thread traced, no memfd left"
else
	not_ok "late every time: nothing written, no thread traced, no memfd left" \
		"before $before after $after traced $traced memfd $ours"
fi
if [ $trc -eq 0 ] && grep -q "^done $total\$" "$tout"; then
	ok "late every time: the target ran on correctly"
else
	not_ok "late every time: the target ran on correctly" "exit $trc" \
		"$(cat "$tout")"
fi

# 3. late every time, the default mode: nothing written in user mode, the
# probe runs in the kernel (its int3 on the function's first byte while it
# runs), every call counted there, the code the file's afterwards
start_wait threads-wait $calls $nt
before=$(code "$tp")
export UBT_TEST_STOP_LATE=1000000
ubt_bg 60 -v -p $tp -e "$prog"
during=$(code "$tp")
inside
kill -USR1 $tp
wait_for 300 $tp '^done' "$tout"
kill -INT $up 2>/dev/null
wait $up
rc=$?
after=$(code "$tp")
kill -USR1 $tp
wait $tp
trc=$?
if [ "$rc" -eq 0 ] && grep -qx "@: $total" "$out"; then
	ok "late every time, default mode: every call counted in the kernel"
else
	not_ok "late every time, default mode: every call counted in the kernel" \
		"exit $rc" "$(cat "$out" "$err" | head -20)"
fi
if grep -q "^WARNING: pid $tp: the attach's final stop gave up (.* did not stop within [0-9]* ms of the others .*): its user-mode probes run in the kernel instead\$" "$err" &&
   grep -q "^ubt: pid $tp: the attach's final stop gave up, nothing written: kernel uprobes on pid $tp instead (1 program(s)): uprobe:" "$err"
then
	ok "late every time, default mode: a warning, and -v, say why"
else
	not_ok "late every time, default mode: a warning, and -v, say why" \
		"$(cat "$err")"
fi
if [ -n "$before" ] && [ "$during" = "cc${before#??}" ] &&
   [ "$before" = "$after" ] && [ "$traced" = 0 ] && [ "$ours" = 0 ]; then
	ok "late every time, default mode: the kernel's int3, no jump, no memfd, not traced"
else
	not_ok "late every time, default mode: the kernel's int3, no jump, no memfd, not traced" \
		"before $before during $during after $after traced $traced" \
		"memfd $ours"
fi
if [ $trc -eq 0 ] && grep -q "^done $total\$" "$tout"; then
	ok "late every time, default mode: the target ran on correctly"
else
	not_ok "late every time, default mode: the target ran on correctly" \
		"exit $trc" "$(cat "$tout")"
fi

tap_done
