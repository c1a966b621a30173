#!/bin/sh
# Kernel and user-mode events in one stream (shim/base/merge.h): ubt merges by
# time whenever a user-mode probe sends events (its threads' rings, and
# the kernel's events; -v says so); with a user ring overflowing, what
# is printed stays in order and printed + lost still counts every call;
# with both user-side clocks on every machine (UBT_NO_TSC forces the
# fallback, CLOCK_MONOTONIC through the vDSO, where the time-stamp
# counter is a clock).  The order itself is checked by
# tests/runtime/merge.test.

. "$top_srcdir/tests/cli/tap.sh"

# private copies: the --mode kernel run's uprobes would reach every
# process of a shared binary, such as other tests' user-mode targets
for t in ubt-loop ubt-alt; do
	[ -x "$top_builddir/tests/targets/$t" ] ||
		bail "$top_builddir/tests/targets/$t is not built"
	cp "$top_builddir/tests/targets/$t" "$tap_tmp/$t" || bail "cp $t"
done
loop="$tap_tmp/ubt-loop"
up="uprobe:$loop:ubt_step { printf(\"%d %d\\n\", arg0, arg0 & 7); }"
merged_msg='events merged in time order'

# merged NAME WANT PROG: does ubt -v say it merges (WANT yes/no)?
merged()
{
	"$UBT" -v -c "$loop 3" -e "$3" >"$tap_tmp/v.out" 2>"$tap_tmp/v.err" \
		</dev/null
	rc=$?
	if grep -q "$merged_msg" "$tap_tmp/v.err"; then got=yes; else got=no; fi
	if [ $rc = 0 ] && [ $got = "$2" ]; then
		ok "$1: merged $2"
	else
		not_ok "$1: merged $2" "exit $rc, merged $got" \
			"$(cat "$tap_tmp/v.err")"
	fi
}

tp='tracepoint:syscalls:sys_enter_exit_group /pid == cpid/'
merged "uprobe and tracepoint printing" yes "$up $tp { printf(\"x\\n\"); }"
merged "uprobe and tracepoint calling exit()" yes "$up $tp { exit(); }"
merged "uprobe printing, tracepoint counting" yes \
	"$up $tp { @x = count(); }"
merged "uprobe printing, BEGIN and END printing" yes \
	"BEGIN { printf(\"b\\n\"); } $up END { printf(\"e\\n\"); }"
merged "tracepoint printing, uprobe counting" no \
	"uprobe:$loop:ubt_step { @n = count(); } $tp { printf(\"x\\n\"); }"

# Both user-side clocks on every machine: the time-stamp counter where it
# is a clock (else the fallback again), and the fallback forced with
# UBT_NO_TSC, CLOCK_MONOTONIC through the vDSO: same order as the kernel's
alt="$tap_tmp/ubt-alt"
prog="uprobe:$alt:ubt_alt { printf(\"c %d\\n\", 100 * arg0 + arg1); }
tracepoint:syscalls:sys_enter_write /pid == cpid/ { printf(\"w %d\\n\", args->count); }"
"$UBT" --mode kernel -c "$alt 50 2" -e "$prog" >"$tap_tmp/alt.k" \
	2>"$tap_tmp/alt.k.err" </dev/null || bail "ubt --mode kernel failed"
for clock in default UBT_NO_TSC; do
	if [ $clock = default ]; then
		set -- env
		want='user-side clock: \(time-stamp counter\|clock_gettime\)'
	else
		set -- env UBT_NO_TSC=1
		want='user-side clock: clock_gettime'
	fi
	"$@" "$UBT" -v -c "$alt 50 2" -e "$prog" >"$tap_tmp/alt" \
		2>"$tap_tmp/alt.err" </dev/null
	rc=$?
	used=$(sed -n 's/.*user-side clock: \(.*\))$/\1/p' "$tap_tmp/alt.err")
	if [ $rc = 0 ] && grep -q "$want" "$tap_tmp/alt.err" &&
	   cmp -s "$tap_tmp/alt" "$tap_tmp/alt.k" &&
	   [ "$(grep -c "^[cw] " "$tap_tmp/alt")" = 200 ]
	then
		ok "$clock ($used): output as --mode kernel's"
	else
		not_ok "$clock ($used): output as --mode kernel's" \
			"exit $rc" "$(cat "$tap_tmp/alt.err")" \
			"$(diff "$tap_tmp/alt.k" "$tap_tmp/alt" | head -10)"
	fi
done

# A flood of user-mode events with a kernel event after the last call:
# rings overflow; the printed lines are in order, the kernel's last; with
# each user-side clock.
n=3000000
prog="$up $tp { printf(\"exit\\n\"); }"
for clock in default UBT_NO_TSC; do
if [ $clock = default ]; then set -- env; else set -- env UBT_NO_TSC=1; fi
if "$@" "$UBT" -c "$loop $n" -e "$prog" >"$tap_tmp/flood" \
	2>"$tap_tmp/flood.err" </dev/null; then
	set -- $(awk -v n="$n" '
		/^Attaching 2 probes\.\.\.$/ || /^$/ { next }
		/^Lost [0-9]+ events$/ { lost += $2; next }
		/^exit$/ { ex++; after = 0; next }
		/^[0-9]+ [0-9]+$/ {
			if ($1 <= last && printed || $1 >= n || $2 != $1 % 8 ||
			    ex)
				bad++
			last = $1; printed++; next
		}
		{ bad++ }
		END { printf "%d %d %d %d\n", printed, lost, bad, ex }' \
		"$tap_tmp/flood")
	if [ $(($1 + $2)) = $n ] && [ "$2" -gt 0 ] && [ "$3" = 0 ] &&
	   [ "$4" = 1 ]; then
		ok "overflow, merged ($clock): printed + lost = calls ($1 + $2 = $n), in order, the kernel's event last"
	else
		not_ok "overflow, merged ($clock): printed + lost = calls, in order" \
			"printed $1, lost $2, bad lines $3, exit lines $4" \
			"$(grep -v '^[0-9]' "$tap_tmp/flood" | head -5)" \
			"$(cat "$tap_tmp/flood.err")"
	fi
else
	not_ok "overflow, merged ($clock): ubt or the target failed" \
		"$(cat "$tap_tmp/flood.err")"
fi
done

# The same in -f json: printf records and lost_events records
if "$UBT" -f json -c "$loop $n" -e "$prog" >"$tap_tmp/json" \
	2>"$tap_tmp/json.err" </dev/null; then
	p=$(grep -c '^{"type": "printf", "data": "[0-9]* [0-7]\\n"}$' \
		"$tap_tmp/json")
	l=$(sed -n 's/^{"type": "lost_events", "data": {"events": \([0-9]*\)}}$/\1/p' \
		"$tap_tmp/json" | awk '{ s += $1 } END { print s + 0 }')
	last=$(grep '"type": "printf"' "$tap_tmp/json" | tail -1)
	if [ $((p + l)) = $n ] && [ "$l" -gt 0 ] &&
	   [ "$last" = '{"type": "printf", "data": "exit\n"}' ]; then
		ok "-f json, merged: printf + lost_events = calls ($p + $l = $n), the kernel's event last"
	else
		not_ok "-f json, merged: printf + lost_events = calls" \
			"printf $p, lost $l, calls $n, last: $last" \
			"$(grep -v printf "$tap_tmp/json" | head -5)"
	fi
else
	not_ok "-f json, merged: ubt or the target failed" \
		"$(cat "$tap_tmp/json.err")"
fi

tap_done
