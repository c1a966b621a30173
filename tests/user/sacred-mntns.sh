#!/bin/sh
# The traced process is sacred (issue 24, item 6): a process in another
# mount namespace (a container, unshare -m) loads the runtime by its path
# in its own namespace.  Where another file sits at that path there, its
# probes run in the kernel (-v says why; --mode user refuses; system-wide
# mode does not take it), never a dlopen() of that file; where the same
# file is seen there, user mode as usual.  The target's exit status and
# its code bytes are checked.

. "$top_srcdir/tests/user/sacred-lib.sh"

[ -x "$t/ubt-sacred" ] || bail "ubt-sacred is not built"
rt=$(realpath "$top_builddir/libubt-rt.so") || bail "no libubt-rt.so"
unshare -m true 2>/dev/null ||
	{ echo "1..0 # SKIP unshare -m does not work here"; exit 77; }
sacred_copy ubt-sacred
# another file, to sit at the runtime's path in the namespace
cp "$t/ubt-sacred" "$tap_tmp/other" || bail "cp"
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); }"

# run_p BIND ARGS...: the target ("ppid-wait 100") in a new mount
# namespace (BIND 1: another file bound at the runtime's path there), ubt
# ARGS -p; $rc, $trc the exit statuses, $tp the target, $before, $during,
# $after its code
run_p()
{
	if [ "$1" = 1 ]; then
		pre="mount --bind '$tap_tmp/other' '$rt' &&"
	else
		pre=
	fi
	shift
	: >"$tout"
	unshare -m sh -c "$pre exec '$bin' ppid-wait 100" >"$tout" 2>&1 \
		</dev/null &
	tp=$!
	wait_for 100 "" '^ready' "$tout"
	sacred_run_p 60 $tp "$@" -p $tp -e "$prog"
}

# report NAME CONDITION...: ok when the condition holds and the target
# ran correctly with its code the file's after the run
report()
{
	name=$1
	shift
	if "$@" && [ $trc -eq 0 ] && grep -qx "done 100" "$tout" &&
	   [ -n "$before" ] && [ "$before" = "$after" ] &&
	   ! grep -q "dlopen" "$err"; then
		ok "$name"
	else
		not_ok "$name" "exit $rc, target $trc, before $before after $after" \
			"$(cat "$out" "$err" "$tout")"
	fi
}

why_of()
{
	echo "pid $1 is in another mount namespace, where $rt is not ubt's runtime (another file, or none): user mode loads the runtime by that path there"
}

run_p 1 -v
report "another file at the runtime's path: kernel probes, -v says why" \
	eval '[ $rc -eq 0 ] && grep -qx "@: 100" "$out" &&
	      grep -qxF "uprobe:$bin:ubt_sacred_tick: kernel ($(why_of $tp))" "$err"'

run_p 1 --mode user
report "another file at the runtime's path: --mode user refuses" \
	eval '[ $rc -eq 1 ] &&
	      grep -qxF "ubt: cannot run uprobe:$bin:ubt_sacred_tick in user mode: $(why_of $tp)" "$err"'

run_p 0 -v --mode user
report "the same runtime seen there: user mode, patched during the run" \
	eval '[ $rc -eq 0 ] && grep -qx "@: 100" "$out" &&
	      [ "$before" != "$during" ]'

# system-wide: the process is not taken, no dlopen of the other file
ubt_bg 60 -v -e "$prog"
unshare -m sh -c "mount --bind '$tap_tmp/other' '$rt' && exec '$bin' ppid 100000" \
	>"$tout" 2>&1 </dev/null
trc=$?
kill -INT $up
wait $up
rc=$?
if [ $rc -eq 0 ] && [ $trc -eq 0 ] && grep -qx "done 100000" "$tout" &&
   grep -qx "@: 100000" "$out" &&
   grep -q "its probes stay in the kernel: pid [0-9]* is in another mount namespace, where $rt is not ubt's runtime" "$err" &&
   ! grep -q "dlopen" "$err"; then
	ok "another file at the runtime's path (system-wide): not taken, every call counted"
else
	not_ok "another file at the runtime's path (system-wide): not taken, every call counted" \
		"exit $rc, target $trc" "$(cat "$out" "$err" "$tout")"
fi

tap_done
