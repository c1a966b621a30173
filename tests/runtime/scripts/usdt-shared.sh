#!/bin/sh
# usdt-shared.sh TARGETS TRACER...: a running `ubt-usdt 3 wait` whose
# USDT sites another tracer already probes in the kernel ($UBT, else the
# ubt of this tree, with --mode kernel -p: breakpoints on the sites' nops, the semaphores counted
# up by the kernel) is traced with -p by TRACER until ubt_usdt_done
# (exit()); then the other tracer stops. Both must count every hit, and
# the target, once both left, finds its semaphores at 0 and exits 0.
# Prints both tracers' maps and the exit codes.
t=$1
shift
ubt=${UBT:-$(dirname "$0")/../../../ubt}
tmp=$(mktemp -d) || exit 99
"$t/ubt-usdt" 3 wait >"$tmp/target" 2>&1 &
tp=$!
i=0
while [ "$(head -n 1 "$tmp/target")" != ready ] && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
attached() {
	i=0
	while ! cat "$1" "$1.err" | grep -q __BPFTRACE_NOTIFY_PROBES_ATTACHED &&
		[ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
: >"$tmp/other"
: >"$tmp/other.err"
"$ubt" --mode kernel -p $tp -e "usdt:$t/ubt-usdt:ubt:tick { @other_tick = count(); }
usdt:$t/ubt-usdt:ubt:guarded { @other_guarded = sum(arg0); }" \
	>"$tmp/other" 2>"$tmp/other.err" &
op=$!
attached "$tmp/other"
: >"$tmp/tracer"
: >"$tmp/tracer.err"
"$@" -p $tp -e "usdt:$t/ubt-usdt:ubt:tick { @tick = count(); }
usdt:$t/ubt-usdt:ubt:guarded { @guarded = sum(arg0); }
uprobe:$t/ubt-usdt:ubt_usdt_done { exit(); }" >"$tmp/tracer" \
	2>"$tmp/tracer.err" &
up=$!
attached "$tmp/tracer"
kill -USR1 $tp
wait $up
echo "tracer exit $?"
cat "$tmp/tracer"
cat "$tmp/tracer.err" >&2
kill -INT $op
wait $op
echo "other tracer exit $?"
grep '^@' "$tmp/other"
wait $tp
echo "target exit $?"
tail -n +2 "$tmp/target"
rm -rf "$tmp"
