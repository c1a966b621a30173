#!/bin/sh
# The traced process is sacred (issue 24, item 6): io_uring workers
# (iou-sqp-*, iou-wrk-*: threads of the process that run kernel code
# only) are never stopped nor used: an attach to a process that has them
# succeeds in user mode, every call counted, the target unharmed and its
# code the file's after the run.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-sacred
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); }"

for mode in user auto; do
	: >"$tout"
	"$bin" uring-wait 100 >"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 100 $tp '^ready' "$tout"
	if grep -q "no io_uring" "$tout"; then
		wait $tp
		echo "1..0 # SKIP no io_uring here"
		exit 77
	fi
	sacred_run_p 60 $tp -v --mode $mode -p $tp -e "$prog"
	if [ $rc -eq 0 ] && grep -qx "@: 100" "$out" &&
	   grep -qxF "uprobe:$bin:ubt_sacred_tick: user mode (every site can be patched)" "$err" &&
	   [ $trc -eq 0 ] && grep -qx "done 100" "$tout" &&
	   [ -n "$before" ] && [ "$before" != "$during" ] &&
	   [ "$before" = "$after" ]; then
		ok "io_uring workers ($mode): user mode, every call counted, the code the file's after"
	else
		not_ok "io_uring workers ($mode): user mode, every call counted, the code the file's after" \
			"exit $rc, target $trc, before $before during $during after $after" \
			"$(cat "$out" "$err" "$tout")"
	fi
done

tap_done
