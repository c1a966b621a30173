#!/bin/sh
# The traced process is sacred (issue 24, items 2 and 6), system-wide
# (no -p, no -c: processes are taken at their first hit): a static
# executable and a process under a seccomp filter are never taken: their
# probes stay in the kernel, decided from /proc (PT_INTERP of
# /proc/PID/exe; "Seccomp:" in /proc/PID/status) without ptrace, once
# (a static process was seized and given up four times before), and
# every call is counted; the process exits 0.  Own copies of the targets.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-static
static=$bin
sacred_copy ubt-sacred

# static: many calls, so that its first hits are reported while it runs
ubt_bg 60 -v -e "uprobe:$static:ubt_sacred_tick { @ = count(); }"
"$static" ppid 200000 >"$tout" 2>&1 </dev/null
trc=$?
sleep 0.5
kill -INT $up 2>/dev/null
wait $up
rc=$?
stays=$(grep -c "its probes stay in the kernel" "$err")
if [ $rc -eq 0 ] && [ $trc -eq 0 ] && grep -qx "@: 200000" "$out" &&
   grep -qx "done 200000" "$tout" && [ "$stays" -le 1 ] &&
   { [ "$stays" -eq 0 ] ||
     grep -q "its probes stay in the kernel: pid [0-9]* runs a static executable" "$err"; } &&
   ! grep -q "until its next hit\|cannot attach" "$err"; then
	ok "static executable (system-wide): not taken, once, without ptrace; every call counted in the kernel, exit 0"
else
	not_ok "static executable (system-wide): not taken, once, without ptrace; every call counted in the kernel, exit 0" \
		"exit $rc, target $trc, $stays decision(s)" \
		"$(cat "$out" "$err" "$tout")"
fi

# seccomp: a filter that kills (or traps) what the take and the runtime
# would call
for m in kill trap; do
	ubt_bg 60 -v -e "uprobe:$bin:ubt_sacred_tick { @ = count(); }"
	: >"$tout"
	"$bin" seccomp-$m 200000 >"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 100 $tp '^ready' "$tout"
	kill -USR1 $tp
	wait $tp
	trc=$?
	sleep 0.5
	kill -INT $up 2>/dev/null
	wait $up
	rc=$?
	# (a process gone before ubt reads its first hit is not looked at)
	if [ $rc -eq 0 ] && [ $trc -eq 0 ] && grep -qx "@: 200000" "$out" &&
	   ! grep -q "cannot attach\|) taken:" "$err" &&
	   { ! grep -q "its probes stay in the kernel" "$err" ||
	     grep -q "its probes stay in the kernel: pid [0-9]* runs under seccomp" "$err"; }
	then
		ok "seccomp-$m (system-wide): not taken, every call counted in the kernel, exit 0"
	else
		not_ok "seccomp-$m (system-wide): not taken, every call counted in the kernel, exit 0" \
			"exit $rc, target $trc" "$(cat "$out" "$err" "$tout")"
	fi
done

tap_done
