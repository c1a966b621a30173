#!/bin/sh
# The traced process is sacred (issue 24, item 6): io_uring workers
# (iou-sqp-*, iou-wrk-*: threads of the process that run kernel code
# only) are never stopped nor used: an attach to a process that has them
# succeeds in user mode, every call counted, the target unharmed and its
# code the file's after the run.

. "$top_srcdir/tests/cli/tap.sh"

t="$top_builddir/tests/targets"
[ -x "$t/ubt-sacred" ] || bail "ubt-sacred is not built"
# uprobes belong to a file: a private copy, out of other tests' way
cp "$t/ubt-sacred" "$tap_tmp/" || bail "cp"
bin="$tap_tmp/ubt-sacred"
out="$tap_tmp/out"
err="$tap_tmp/err"
tout="$tap_tmp/tout"
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); }"

# code PID: 16 bytes of ubt_sacred_tick in PID's memory, in hex
code()
{
	python3 "$top_srcdir/tests/user/codebytes.py" "$1" "$bin" \
		ubt_sacred_tick 2>/dev/null
}

for mode in user auto; do
	: >"$tout"
	"$bin" uring-wait 100 >"$tout" 2>&1 </dev/null &
	tp=$!
	i=0
	while ! grep -q '^ready' "$tout" && [ $i -lt 100 ] &&
	      kill -0 $tp 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	if grep -q "no io_uring" "$tout"; then
		wait $tp
		echo "1..0 # SKIP no io_uring here"
		exit 77
	fi
	before=$(code $tp)
	__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 timeout --foreground 60 "$UBT" -v --mode $mode \
		-p $tp -e "$prog" >"$out" 2>"$err" </dev/null &
	up=$!
	i=0
	while ! grep -q 'ATTACHED' "$out" "$err" && [ $i -lt 300 ] &&
	      kill -0 $up 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	during=$(code $tp)
	kill -USR1 $tp
	i=0
	while ! grep -q '^done' "$tout" && [ $i -lt 300 ] &&
	      kill -0 $tp 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -INT $up 2>/dev/null
	wait $up
	rc=$?
	after=$(code $tp)
	kill -USR1 $tp
	wait $tp
	trc=$?
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
