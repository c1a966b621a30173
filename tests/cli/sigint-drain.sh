#!/bin/sh
# Ctrl-C prints what the probes sent before it, as bpftrace's last drain
# of its buffers does: ubt is stopped (SIGSTOP) while a process makes 12
# calls that its probes print, then gets SIGINT and SIGCONT, so that it
# reads nothing before the SIGINT.  All 12 lines print, then END's.  Both
# with the probes in the kernel and with user-mode probes system-wide
# (the process stays in the kernel: ubt cannot take it while stopped;
# events go through the time-ordered merge).  Before, a kernel event
# read after the SIGINT was dropped: the case syswide.
# printf_of_two_processes lost its lines when they were still in the ring
# as its SIGINT came.  system() calls waiting then are still dropped
# (tests/cli/sigint-load.sh).

. "$top_srcdir/tests/cli/tap.sh"

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root"; exit 77; }
spawn="$tap_tmp/ubt-spawn"
cp "$top_builddir/tests/targets/ubt-spawn" "$spawn" || bail "cp ubt-spawn"
prog="uprobe:$spawn:ubt_tick { printf(\"tick %d\\n\", arg0); } END { printf(\"END ran\\n\"); }"

for mode in kernel auto; do
	out="$tap_tmp/out-$mode"
	err="$tap_tmp/err-$mode"
	__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 "$UBT" --mode "$mode" -e "$prog" \
		>"$out" 2>"$err" </dev/null &
	pid=$!
	i=0
	while ! grep -q NOTIFY_PROBES_ATTACHED "$err" && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -STOP "$pid"
	"$spawn" 12 0
	rc_spawn=$?
	kill -INT "$pid"
	kill -CONT "$pid"
	wait "$pid"
	rc=$?
	ticks=$(grep -c '^tick ' "$out")
	if [ "$rc" = 0 ] && [ "$rc_spawn" = 0 ] && [ "$ticks" = 12 ] &&
		[ "$(sed -n 13p "$out")" = "tick 11" ] &&
		grep -qx 'END ran' "$out"; then
		ok "--mode $mode: the 12 lines sent before SIGINT print, then END's"
	else
		not_ok "--mode $mode: the 12 lines sent before SIGINT print, then END's" \
			"ubt status $rc, target $rc_spawn, $ticks tick line(s)" \
			"$(cat "$out")" "$(cat "$err")"
	fi
done
tap_done
