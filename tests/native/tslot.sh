#!/bin/sh
# Which maps user mode keeps in a per-thread slot (shim/place/place_slot.c):
# only ever @m[tid], an integer value, every probe using it in user mode.
# -v (here with --dry-run) names them; anything else keeps the table.
# What they print is checked against --mode kernel by tests/native/tslot.test
# (tests/native/user-mode-diff.py).

. "$top_srcdir/tests/cli/tap.sh"

calls="$top_builddir/tests/targets/ubt-calls"
[ -x "$calls" ] || bail "$calls is not built"
cp "$calls" "$tap_tmp/ubt-calls" || bail "cp ubt-calls"
t="$tap_tmp/ubt-calls"
idiom="uprobe:$t:ubt_fact { @s[tid] = nsecs; }
uretprobe:$t:ubt_fact /@s[tid]/ { @ns = hist(nsecs - @s[tid]); delete(@s[tid]); }"
note="ubt: map @s: per-thread slot"

# check NAME WANT(1: the note, 0: none) MODE PROG
check() {
	"$UBT" --mode "$3" --dry-run -v -c "$t 1" -e "$4" \
		>"$tap_tmp/out" 2>"$tap_tmp/err" </dev/null
	rc=$?
	n=$(grep -c "^$note" "$tap_tmp/err")
	if [ $rc -eq 0 ] && [ "$n" -eq "$2" ]; then
		ok "$1"
	else
		not_ok "$1" "exit $rc, $n notes, want $2" \
			"$(head -20 "$tap_tmp/err")"
	fi
}

check "the latency idiom: @s in a slot" 1 user "$idiom"
check "auto mode, both probes in user mode: @s in a slot" 1 auto "$idiom"
check "++ and -- of @s[tid]: in a slot" 1 user \
	"uprobe:$t:ubt_fact { @s[tid]++; } uretprobe:$t:ubt_fact { @s[tid]--; }"
check "--mode kernel: no slot" 0 kernel "$idiom"
check "print(@s) at END: the table" 0 user "$idiom END { print(@s); }"
check "clear(@s): the table" 0 user "$idiom uprobe:$t:ubt_void { clear(@s); }"
check "has_key(@s, tid): the table" 0 user \
	"$idiom uprobe:$t:ubt_void /has_key(@s, tid)/ { @h = count(); }"
check "@s[pid]: the table" 0 user \
	"uprobe:$t:ubt_fact { @s[pid] = nsecs; } uretprobe:$t:ubt_fact { delete(@s[pid]); }"
check "@s[tid, 1]: the table" 0 user \
	"uprobe:$t:ubt_fact { @s[tid, 1] = nsecs; } uretprobe:$t:ubt_fact { delete(@s[tid, 1]); }"
check "a string value: the table" 0 user \
	"uprobe:$t:ubt_fact { @s[tid] = \"x\"; } uretprobe:$t:ubt_fact { delete(@s[tid]); }"
check "a kernel probe reads @s[tid] too: no slot" 0 auto \
	"$idiom tracepoint:syscalls:sys_enter_getppid /@s[tid]/ { @k = count(); }"

# Calls that never return (pthread_exit() inside ubt_churn_quit, every
# tenth of 4500 threads, 4 at a time): 450 entries left, each printed
# under its thread's id at exit; every thread's calls of ubt_churn_work
# store and delete theirs first (a block's next thread writes its slot at
# once).  The printf makes each block's ring
# 1 MiB, so there are fewer blocks than threads: blocks of gone threads
# are taken again (-v counts them), and the entries they held, moved into
# the map's table (runtime/rt_tslot.c), print too.
churn="$top_builddir/tests/targets/ubt-churn"
[ -x "$churn" ] || bail "$churn is not built"
cp "$churn" "$tap_tmp/ubt-churn" || bail "cp ubt-churn"
c="$tap_tmp/ubt-churn"
"$UBT" --mode user -v -c "$c 4500 4" -e "
uprobe:$c:ubt_churn_quit { @s[tid] = 7; }
uretprobe:$c:ubt_churn_quit /@s[tid]/ { delete(@s[tid]); @never = count(); }
uprobe:$c:ubt_churn_work { @s[tid] = 8; @calls = count(); }
uretprobe:$c:ubt_churn_work /@s[tid] == 8/ { delete(@s[tid]); @rets = count(); }
uprobe:$c:ubt_churn_done { printf(\"done %d\\n\", arg0); }" \
	>"$tap_tmp/out" 2>"$tap_tmp/err" </dev/null
rc=$?
left=$(grep -Ec '^@s\[[0-9]+\]: 7$' "$tap_tmp/out")
keys=$(grep '^@s\[' "$tap_tmp/out" | sort -u | wc -l)
other=$(grep -c '^@s\[' "$tap_tmp/out")
reused=$(sed -n 's/^ubt: \([0-9]*\) per-thread block(s) taken again.*/\1/p' \
	"$tap_tmp/err")
if [ $rc -eq 0 ] && grep -qx "done 4500" "$tap_tmp/out" &&
   grep -qx "@calls: 13500" "$tap_tmp/out" &&
   grep -qx "@rets: 13500" "$tap_tmp/out" &&
   [ "$left" -eq 450 ] && [ "$keys" -eq 450 ] && [ "$other" -eq 450 ] &&
   [ "${reused:-0}" -gt 0 ] && grep -q "^$note" "$tap_tmp/err" &&
   ! grep -q "^WARNING" "$tap_tmp/err"; then
	ok "450 calls that never returned, blocks taken again: 450 entries"
else
	not_ok "450 calls that never returned, blocks taken again: 450 entries" \
		"exit $rc, $left entries of 7 ($keys keys, $other lines), ${reused:-0} blocks taken again" \
		"$(grep -v '^@s\[' "$tap_tmp/out" | head -10)" "$(head -10 "$tap_tmp/err")"
fi
tap_done
