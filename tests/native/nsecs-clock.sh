#!/bin/sh
# nsecs in user-mode probes is the kernel's clock (CLOCK_MONOTONIC, as
# bpf_ktime_get_ns()): ubt-alt alternates a user-mode-probed call and a
# write(2) seen by a kernel tracepoint; both print nsecs, and the values,
# in the order the events happened, only grow: each user-mode value lies
# between the kernel's before and after it (a few hundred ns apart).  Both
# user-side clocks: the time-stamp counter through the segment ubt keeps
# in the control block (shim/user/user_clock.c) where it is a clock, and the
# vDSO (UBT_NO_TSC=1, every machine).

. "$top_srcdir/tests/cli/tap.sh"

alt="$top_builddir/tests/targets/ubt-alt"
[ -x "$alt" ] || bail "$alt is not built"
cp "$alt" "$tap_tmp/ubt-alt" || bail "cp ubt-alt"
alt="$tap_tmp/ubt-alt"
prog="uprobe:$alt:ubt_alt { printf(\"u %d %llu\\n\", arg1, nsecs); }
tracepoint:syscalls:sys_enter_write /pid == cpid/ { printf(\"k %d %llu\\n\", args->count, nsecs); }"

for clock in tsc vdso; do
	notsc=
	[ $clock = vdso ] && notsc=1
	UBT_NO_TSC=$notsc "$UBT" --mode auto -v -c "$alt 3000" -e "$prog" \
		>"$tap_tmp/out" 2>"$tap_tmp/err" </dev/null
	rc=$?
	grep -q "ubt_alt: user mode" "$tap_tmp/err"
	placed=$?
	# lines "u N NS" / "k N NS", merged: the N-th call before the N-th
	# write; every value above the one before it
	awk '
		$1 != "u" && $1 != "k" { next }
		{ n++ }
		prev != "" && $3 <= prev { back++; if (!first) first = NR }
		{ prev = $3 }
		END {
			printf "%d %d %d\n", n, back, first
		}' "$tap_tmp/out" >"$tap_tmp/res"
	read -r n back first <"$tap_tmp/res"
	# -v names the clock: the vDSO when forced, else either
	want="nsecs in user-mode probes: (the time-stamp counter|clock_gettime)"
	[ $clock = vdso ] &&
		want="nsecs in user-mode probes: clock_gettime\(\) through the vDSO"
	if grep -Eq "$want" "$tap_tmp/err"; then
		ok "$clock: -v names the clock"
	else
		not_ok "$clock: -v names the clock" "$(grep nsecs "$tap_tmp/err")"
	fi
	if [ $rc -eq 0 ] && [ $placed -eq 0 ] && [ "$n" -eq 6000 ] &&
	   [ "$back" -eq 0 ]; then
		ok "$clock: 3000 user-mode nsecs each between the kernel's around it"
	else
		not_ok "$clock: 3000 user-mode nsecs each between the kernel's around it" \
			"exit $rc, user mode $placed, $n lines, $back out of order (first at line $first)" \
			"$(head -20 "$tap_tmp/err")"
	fi
done
tap_done
