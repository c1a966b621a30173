#!/bin/sh
# Ctrl-C while probes print as fast as they can (a kernel or user-mode
# uprobe on every call of a hot loop, the output going to a file), or
# ask for a system() each: ubt stops within a second, END still prints
# and so do the maps. Without the probes stopped at the first SIGINT, the
# ring buffer refilled as fast as ubt read it and the run went on for 3
# to 20 seconds; without what waits in the rings dropped then (as
# bpftrace drops it), a ring of system() calls took minutes.

. "$top_srcdir/tests/cli/tap.sh"

loop="$tap_tmp/ubt-loop"
cp "$top_builddir/tests/targets/ubt-loop" "$loop" || bail "cp ubt-loop"
printf_prog="uprobe:$loop:ubt_step { @n = count(); printf(\"%d\\n\", arg0); } END { printf(\"END ran\\n\"); }"
system_prog="uprobe:$loop:ubt_step { @n = count(); system(\"echo %d\", arg0); } END { printf(\"END ran\\n\"); }"

# now_ms: CLOCK_MONOTONIC-ish milliseconds (uptime, 10 ms resolution)
now_ms()
{
	awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime
}

for run in kernel:printf user:printf kernel:system user:system; do
	mode=${run%:*}
	what=${run#*:}
	eval prog=\$${what}_prog
	out="$tap_tmp/out-$mode-$what"
	"$UBT" --unsafe --mode "$mode" -o "$out" -c "$loop 100000000" \
		-e "$prog" </dev/null 2>"$tap_tmp/err" &
	pid=$!
	# attached and printing: the file grows past the attach message
	i=0
	while [ "$(wc -l 2>/dev/null <"$out" || echo 0)" -lt 100 ] &&
		[ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 0.5
	t0=$(now_ms)
	kill -INT "$pid"
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	t1=$(now_ms)
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid"
		not_ok "$mode mode, $what: stops after SIGINT under load" \
			"still running 10 s after SIGINT"
		continue
	fi
	wait "$pid"
	rc=$?
	ms=$((t1 - t0))
	echo "# $mode mode, $what: stopped $ms ms after SIGINT, $(wc -l <"$out") lines"
	if [ "$rc" = 0 ] && [ "$ms" -le 1000 ]; then
		ok "$mode mode, $what: stops within a second of SIGINT under load"
	else
		not_ok "$mode mode, $what: stops within a second of SIGINT under load" \
			"exit status $rc after $ms ms" "$(cat "$tap_tmp/err")"
	fi
	if grep -qx 'END ran' "$out" && tail -n 1 "$out" | grep -q '^@n: [1-9]'; then
		ok "$mode mode, $what: END and the maps printed"
	else
		not_ok "$mode mode, $what: END and the maps printed" \
			"$(tail -n 3 "$out")"
	fi
done
tap_done
