#!/bin/sh
# clear() of keyless aggregations while the owning thread hammers them
# (shim/run/run.c struct run_agg): the probe increments its thread's value
# with a plain read-modify-write (incq %fs:...), so a clear() that stored
# zeros could land between its load and its store and be undone, and the
# next interval would print the old count again. ubt clears by baselines
# instead: the counts printed by `print(@c); clear(@c);` every 2 ms add up
# to at most the number of calls (hits between a print and its clear are
# not printed; none is printed twice).

. "$top_srcdir/tests/cli/tap.sh"

loop="$top_builddir/tests/targets/ubt-loop"
[ -x "$loop" ] || bail "$loop is not built"
n=${AGG_RACE_CALLS:-100000000}
prog="uprobe:$loop:ubt_step { @c = count(); @s = sum(3); @h = hist(1); }
interval:ms:2 { print(@c); print(@s); print(@h); clear(@c); clear(@s);
clear(@h); }"

if "$UBT" --mode user -c "$loop $n" -e "$prog" >"$tap_tmp/out" \
	2>"$tap_tmp/err" </dev/null; then
	# printed counts, sums and hist buckets: totals, lines, the largest
	set -- $(awk '
		/^@c: [0-9]+$/ { c += $2; nc++; if ($2 > mc) mc = $2 }
		/^@s: [0-9]+$/ { s += $2 }
		/^\[1\] +[0-9]+ / { h += $2 }
		END { printf "%d %d %d %d %d\n", c, s, h, nc, mc }' \
		"$tap_tmp/out")
	c=$1 s=$2 h=$3 nc=$4 mc=$5
	if [ "$nc" -ge 20 ] && [ "$c" -gt 0 ] && [ "$c" -le "$n" ]; then
		ok "count: $nc clears, printed counts add up to $c <= $n calls"
	else
		not_ok "count: printed counts add up to at most the calls" \
			"$nc prints, total $c, largest $mc, calls $n" \
			"$(head -20 "$tap_tmp/out")" "$(cat "$tap_tmp/err")"
	fi
	if [ "$s" -gt 0 ] && [ "$s" -le $((3 * n)) ]; then
		ok "sum: printed sums add up to $s <= 3 x $n"
	else
		not_ok "sum: printed sums add up to at most 3 x calls" \
			"total $s, calls $n"
	fi
	if [ "$h" -gt 0 ] && [ "$h" -le "$n" ]; then
		ok "hist: printed buckets add up to $h <= $n"
	else
		not_ok "hist: printed buckets add up to at most the calls" \
			"total $h, calls $n"
	fi
else
	not_ok "ubt or the target failed" "$(cat "$tap_tmp/err")"
fi
tap_done
