#!/bin/sh
# The traced process is sacred (issue 24, item 6): a static executable
# (no libc in the process, as every Go program) cannot load the runtime:
# its probes run in the kernel, decided before anything is written into
# it (-v and --dry-run say why), --mode user refuses with the reason; the
# target's exit status and its code bytes are checked.

. "$top_srcdir/tests/cli/tap.sh"

t="$top_builddir/tests/targets"
[ -x "$t/ubt-static" ] || bail "ubt-static is not built"
# uprobes belong to a file: a private copy, out of other tests' way
cp "$t/ubt-static" "$tap_tmp/" || bail "cp"
bin="$tap_tmp/ubt-static"
out="$tap_tmp/out"
err="$tap_tmp/err"
tout="$tap_tmp/tout"
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); }"
why="$bin is a static executable (no program interpreter): no libc in the process to load the runtime"

# code PID: 16 bytes of ubt_sacred_tick in PID's memory, in hex
code()
{
	python3 "$top_srcdir/tests/user/codebytes.py" "$1" "$bin" \
		ubt_sacred_tick 2>/dev/null
}

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
	i=0
	while ! grep -q '^ready' "$tout" && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
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
