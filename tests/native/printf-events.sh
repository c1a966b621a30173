#!/bin/sh
# printf events of user-mode probes (shim/run/run.c, runtime/rt.c): every
# event is printed, in order, or counted in a "Lost N events" line when a
# thread's ring was full (the target never waits for ubt), as bpftrace
# reports its lost events; -f json gives lost_events records; integers
# formatted by ubt's own fast path print as bpftrace prints them.

. "$top_srcdir/tests/cli/tap.sh"

loop="$top_builddir/tests/targets/ubt-loop"
[ -x "$loop" ] || bail "$loop is not built"
prog="uprobe:$loop:ubt_step { printf(\"%d %d\\n\", arg0, arg0 & 7); }"

# run NAME N ARGS...: ubt --mode user on ubt-loop N; output in $tap_tmp/NAME
run()
{
	name=$1 n=$2
	shift 2
	"$UBT" --mode user "$@" -c "$loop $n" -e "$prog" \
		>"$tap_tmp/$name" 2>"$tap_tmp/$name.err" </dev/null
}

# check FILE N: lines "i i&7" with i increasing, then "Lost" lines; prints
# "printed lost bad"
count()
{
	awk -v n="$2" '
		/^Attaching 1 probe\.\.\.$/ || /^$/ { next }
		/^Lost [0-9]+ events$/ { lost += $2; next }
		/^[0-9]+ [0-9]+$/ {
			if ($1 <= last && printed || $1 >= n || $2 != $1 % 8)
				bad++
			last = $1; printed++; next
		}
		{ bad++ }
		END { printf "%d %d %d\n", printed, lost, bad }' "$1"
}

# 1. a burst that fits in the ring: every event, in order, no loss
if run fit 20000; then
	set -- $(count "$tap_tmp/fit" 20000)
	if [ "$1" = 20000 ] && [ "$2" = 0 ] && [ "$3" = 0 ]; then
		ok "20000 events that fit in the ring: all printed in order"
	else
		not_ok "20000 events that fit in the ring: all printed in order" \
			"printed $1, lost $2, bad lines $3" \
			"$(head -5 "$tap_tmp/fit")" "$(cat "$tap_tmp/fit.err")"
	fi
else
	not_ok "20000 events that fit in the ring: ubt failed" \
		"$(cat "$tap_tmp/fit.err")"
fi

# 2. millions of events in a fraction of a second: the rings overflow;
# every call is printed or counted as lost, the target is not slowed into
# waiting and exits normally
n=3000000
if run flood $n; then
	set -- $(count "$tap_tmp/flood" $n)
	if [ $(($1 + $2)) = $n ] && [ "$2" -gt 0 ] && [ "$3" = 0 ]; then
		ok "overflow: printed + lost = calls ($1 + $2 = $n)"
	else
		not_ok "overflow: printed + lost = calls" \
			"printed $1, lost $2, bad lines $3, calls $n" \
			"$(grep -v '^[0-9]' "$tap_tmp/flood" | head -5)" \
			"$(cat "$tap_tmp/flood.err")"
	fi
	if grep -q '^Lost [0-9]* events$' "$tap_tmp/flood" &&
	   ! grep -q . "$tap_tmp/flood.err"; then
		ok "overflow: Lost N events on stdout, nothing on stderr"
	else
		not_ok "overflow: Lost N events on stdout, nothing on stderr" \
			"$(cat "$tap_tmp/flood.err")"
	fi
else
	not_ok "overflow: ubt or the target failed" \
		"$(cat "$tap_tmp/flood.err")"
fi

# 3. the same in -f json: printf records and lost_events records
if run json $n -f json; then
	p=$(grep -c '^{"type": "printf", "data": "[0-9]* [0-7]\\n"}$' \
		"$tap_tmp/json")
	l=$(sed -n 's/^{"type": "lost_events", "data": {"events": \([0-9]*\)}}$/\1/p' \
		"$tap_tmp/json" | awk '{ s += $1 } END { print s + 0 }')
	if [ $((p + l)) = $n ] && [ "$l" -gt 0 ]; then
		ok "-f json: printf + lost_events = calls ($p + $l = $n)"
	else
		not_ok "-f json: printf + lost_events = calls" \
			"printf $p, lost $l, calls $n" \
			"$(grep -v printf "$tap_tmp/json" | head -5)"
	fi
else
	not_ok "-f json: ubt or the target failed" "$(cat "$tap_tmp/json.err")"
fi

# 4. the integer conversions formatted without printf(3) (shim/output/output.c)
# print as bpftrace 0.17 prints them (its output, copied)
p='BEGIN { $m = -9223372036854775807 - 1;
printf("%d %ld %lld %u %lu %x %lx %d %u %x %ld|%5d|%-3d|%03x|%zd %jx\n",
$m, $m, $m, -1, -1, 0, $m, 4294967296 + 7, -2, 255, 0, -7, 7, 7, -3, 4096);
exit(); }'
want='0 -9223372036854775808 -9223372036854775808 4294967295 18446744073709551615 0 8000000000000000 7 4294967294 ff 0|   -7|7  |007|-3 1000'
got=$("$UBT" -e "$p" 2>&1 </dev/null | sed -n 2p)
if [ "$got" = "$want" ]; then
	ok "integer conversions as bpftrace prints them"
else
	not_ok "integer conversions as bpftrace prints them" "want: $want" \
		"got:  $got"
fi

tap_done
