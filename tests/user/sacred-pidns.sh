#!/bin/sh
# The traced process is sacred (issue 24, item 5): a target in another
# PID namespace (unshare -p -f --mount-proc).  pid and tid are the host's
# in every mode, as the kernel's helpers give them: a latency idiom split
# between a uprobe's @s[tid] and a tracepoint matches every call, and
# @t[pid, tid] of the main thread is [P, P] with P its host pid.  Probes
# that read them run in the kernel there (-v says why; --mode user
# refuses before anything is written into the process); the target's
# exit status and its code bytes are checked.

. "$top_srcdir/tests/user/sacred-lib.sh"

[ -x "$t/ubt-sacred" ] || bail "ubt-sacred is not built"
command -v unshare >/dev/null || { echo "1..0 # SKIP no unshare"; exit 77; }
unshare -p -f --mount-proc true 2>/dev/null ||
	{ echo "1..0 # SKIP unshare -p does not work here"; exit 77; }
sacred_copy ubt-sacred
idiom="uprobe:$bin:ubt_sacred_tick { @s[tid] = 1; @t[pid, tid] = count(); }
tracepoint:syscalls:sys_enter_getppid /@s[tid]/ { @n = count(); delete(@s[tid]); }"

# run_p ARGS...: ubt ARGS -p (the target "ppid-wait 100" in a new PID
# namespace) -e "$idiom"; $rc ubt's exit status, $trc the target's (its
# unshare's), $tp its host pid, $before/$after its code around the run
run_p()
{
	: >"$tout"
	unshare -p -f --mount-proc "$bin" ppid-wait 100 >"$tout" 2>&1 \
		</dev/null &
	us=$!
	wait_for 100 "" '^ready' "$tout"
	tp=$(pgrep -P $us | head -1)
	# $after: ubt is gone, the target waits: its code as the run left it
	sacred_run_p 60 $us "$@" -p "$tp" -e "$idiom"
}

# idiom_ok NAME: every call matched, under the host's pid and tid
idiom_ok()
{
	if [ "$rc" -eq 0 ] && [ "$trc" -eq 0 ] &&
	   grep -qx "done 100" "$tout" && grep -qx "@n: 100" "$out" &&
	   grep -qx "@t\[$tp, $tp\]: 100" "$out" &&
	   [ "$(grep -c '^@t\[' "$out")" -eq 1 ]; then
		ok "$1"
	else
		not_ok "$1" "exit $rc, target $trc (host pid $tp)" \
			"$(cat "$out" "$err" "$tout")"
	fi
}

for mode in kernel auto; do
	run_p -v --mode $mode
	idiom_ok "PID namespace: the latency idiom matches every call, host ids ($mode)"
	if [ -n "$before" ] && [ "$before" = "$after" ]; then
		ok "PID namespace: the code is the file's after the run ($mode)"
	else
		not_ok "PID namespace: the code is the file's after the run ($mode)" \
			"before $before after $after"
	fi
done
if grep -qF "uprobe:$bin:ubt_sacred_tick: kernel (tid in pid $tp (another PID namespace:" "$err"
then
	ok "PID namespace: -v says why the probe runs in the kernel"
else
	not_ok "PID namespace: -v says why the probe runs in the kernel" \
		"$(cat "$err")"
fi

# --mode user: a clear error, nothing placed, the target runs on
run_p --mode user
if [ "$rc" -eq 1 ] && grep -q "^ubt: cannot run uprobe:$bin:ubt_sacred_tick in user mode: tid in pid $tp (another PID namespace" "$err" &&
   [ "$trc" -eq 0 ] && grep -qx "done 100" "$tout" &&
   [ -n "$before" ] && [ "$before" = "$after" ]; then
	ok "PID namespace: --mode user refused with the reason"
else
	not_ok "PID namespace: --mode user refused with the reason" \
		"exit $rc, target $trc" "$(cat "$out" "$err" "$tout")"
fi

# a probe that reads no id stays in user mode: the code is patched during
# the run and the file's again after it
: >"$tout"
unshare -p -f --mount-proc "$bin" threads-wait 10 2 >"$tout" 2>&1 </dev/null &
us=$!
wait_for 100 "" '^ready' "$tout"
tp=$(pgrep -P $us | head -1)
sacred_run_p 60 $us -v --mode user -p "$tp" \
	-e "uprobe:$bin:ubt_sacred_tick { @ = count(); } END { }"
if [ "$rc" -eq 0 ] && [ "$trc" -eq 0 ] && grep -qx "@: 20" "$out" &&
   grep -qx "done 20" "$tout" && [ -n "$before" ] &&
   [ "$before" = "$after" ] && [ "$before" != "$during" ]; then
	ok "PID namespace: a probe without ids runs in user mode, restored after"
else
	not_ok "PID namespace: a probe without ids runs in user mode, restored after" \
		"exit $rc, target $trc, before $before during $during after $after" \
		"$(cat "$out" "$err" "$tout")"
fi

# system-wide: a process of another PID namespace is not taken when the
# user-mode probes read ids (its probes stay in the kernel)
ubt_bg 60 -v -e "uprobe:$bin:ubt_sacred_tick { @t[pid, tid] = count(); }"
unshare -p -f --mount-proc "$bin" ppid 100000 >"$tout" 2>&1 </dev/null
trc=$?
kill -INT $up
wait $up
rc=$?
if [ "$rc" -eq 0 ] && [ "$trc" -eq 0 ] &&
   grep -qx "done 100000" "$tout" &&
   [ "$(grep -c '^@t\[' "$out")" -eq 1 ] &&
   grep -q '^@t\[\([0-9]*\), \1\]: 100000$' "$out" &&
   ! grep -q '^@t\[[0-9]*, 1\]' "$out"; then
	ok "PID namespace (system-wide): every call counted under the host's ids"
else
	not_ok "PID namespace (system-wide): every call counted under the host's ids" \
		"exit $rc, target $trc" "$(cat "$out" "$err" "$tout")"
fi

tap_done
