#!/bin/sh
# The traced process is sacred (issue 24, item 6): a static executable
# (no libc in the process, as every Go program) cannot load the runtime:
# its probes run in the kernel, decided before anything is written into
# it (-v and --dry-run say why), --mode user refuses with the reason; the
# target's exit status and its code bytes are checked.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-static
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); }"
why="$bin is a static executable (no program interpreter): no libc in the process to load the runtime"

timeout 60 "$UBT" -v -c "$bin ppid 100" -e "$prog" >"$out" 2>"$err" </dev/null
rc=$?
if [ $rc -eq 0 ] && grep -qx "@: 100" "$out" &&
   grep -qx "done 100" "$out" &&
   grep -qxF "uprobe:$bin:ubt_sacred_tick: kernel ($why)" "$err" &&
   grep -q "^ubt: the command (pid [0-9]*) exited with status 0$" "$err"
then
	ok "static executable (-c): every call counted in the kernel, -v says why"
else
	not_ok "static executable (-c): every call counted in the kernel, -v says why" \
		"exit $rc" "$(cat "$out" "$err")"
fi

timeout 60 "$UBT" --dry-run -c "$bin ppid 100" -e "$prog" >"$out" 2>"$err" \
	</dev/null
rc=$?
if [ $rc -eq 0 ] && grep -qxF "uprobe:$bin:ubt_sacred_tick: kernel ($why)" "$out" "$err"
then
	ok "static executable: --dry-run says kernel, and why"
else
	not_ok "static executable: --dry-run says kernel, and why" \
		"exit $rc" "$(cat "$out" "$err")"
fi

timeout 60 "$UBT" --mode user -c "$bin ppid 100" -e "$prog" >"$out" \
	2>"$err" </dev/null
rc=$?
if [ $rc -eq 1 ] && grep -qxF "ubt: cannot run uprobe:$bin:ubt_sacred_tick in user mode: $why" "$err" &&
   ! grep -q "done" "$out"; then
	ok "static executable: --mode user refused before the command ran"
else
	not_ok "static executable: --mode user refused before the command ran" \
		"exit $rc" "$(cat "$out" "$err")"
fi

# -p: kernel probes, the process unharmed, its code the file's after
for mode in auto user; do
	: >"$tout"
	"$bin" ppid-wait 100 >"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 100 "" '^ready' "$tout"
	sacred_run_p 60 $tp -v --mode $mode -p $tp -e "$prog"
	pwhy="pid $tp runs a static executable (no program interpreter): no libc in the process to load the runtime"
	if [ $mode = auto ]; then
		[ $rc -eq 0 ] && grep -qx "@: 100" "$out" &&
			grep -qxF "uprobe:$bin:ubt_sacred_tick: kernel ($pwhy)" "$err"
	else
		[ $rc -eq 1 ] && grep -qxF "ubt: cannot run uprobe:$bin:ubt_sacred_tick in user mode: $pwhy" "$err"
	fi
	res=$?
	if [ $res -eq 0 ] && [ $trc -eq 0 ] && grep -qx "done 100" "$tout" &&
	   [ -n "$before" ] && [ "$before" = "$after" ]; then
		ok "static executable (-p, $mode): kernel or refused, the process unharmed, its code the file's"
	else
		not_ok "static executable (-p, $mode): kernel or refused, the process unharmed, its code the file's" \
			"exit $rc, target $trc, before $before after $after" \
			"$(cat "$out" "$err" "$tout")"
	fi
done

tap_done
