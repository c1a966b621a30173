#!/bin/sh
# usdt-pid.sh TARGETS TRACER...: trace a running `ubt-usdt 3 wait` with
# -p until ubt_usdt_done (exit()); then the target, untraced, waits for
# its semaphores to be 0 again (the tracer gave them back) and exits 0,
# else says which are not. Prints the tracer's output (its stderr on
# stderr) and both exit codes.
t=$1
shift
tmp=$(mktemp -d) || exit 99
"$t/ubt-usdt" 3 wait >"$tmp/target" 2>&1 &
tp=$!
i=0
while [ "$(head -n 1 "$tmp/target")" != ready ] && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
: >"$tmp/tracer"
: >"$tmp/tracer.err"
"$@" -p $tp -e "usdt:$t/ubt-usdt:ubt:guarded { @g = sum(arg0); }
usdt:$t/ubt-usdt:ubt:tick { @t = sum(arg1); }
uprobe:$t/ubt-usdt:ubt_usdt_done { exit(); }" >"$tmp/tracer" \
	2>"$tmp/tracer.err" &
up=$!
i=0
while ! cat "$tmp/tracer" "$tmp/tracer.err" |
	grep -q __BPFTRACE_NOTIFY_PROBES_ATTACHED &&
	[ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -USR1 $tp
wait $up
echo "tracer exit $?"
cat "$tmp/tracer"
cat "$tmp/tracer.err" >&2
wait $tp
echo "target exit $?"
tail -n +2 "$tmp/target"
rm -rf "$tmp"
