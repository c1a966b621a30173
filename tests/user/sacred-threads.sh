#!/bin/sh
# The traced process is sacred (issue 24, item 8): more than 1024 threads
# alive at once.  ubt-sacred threads runs 1500 threads that all live until
# every one has made its 20 calls: each must be counted in user mode as
# the kernel counts it (no thread left without a block), under its own
# tid, the target unharmed, and with -p its code the file's again after.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-sacred
nt=1500
calls=20
total=$((nt * calls))
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); @t[tid] = count(); }"

if "$bin" threads $calls $nt >/dev/null 2>&1; then
	ok "ubt-sacred threads runs untraced"
else
	rc=$?
	[ $rc -eq 3 ] && bail "cannot make $nt threads here"
	not_ok "ubt-sacred threads runs untraced" "exit $rc"
fi

# check NAME: ubt exited 0, @ is every call, @t one line of $calls per
# thread, the target reported nothing wrong
check()
{
	n=$(grep -c "^@t\[[0-9]*\]: $calls\$" "$out")
	if [ "$rc" -eq 0 ] && grep -qx "@: $total" "$out" &&
	   [ "$n" -eq $nt ] &&
	   ! grep -q 'killed by signal\|wrong result\|exited with status [1-9]\|without a block\|not recorded' "$out" "$err"
	then
		ok "$1"
	else
		not_ok "$1" "exit $rc, $n threads of $calls calls" \
			"$(grep -v '^@t\[' "$out" "$err" | head -20)"
	fi
}

for mode in kernel user; do
	timeout 120 "$UBT" -v --mode $mode -c "$bin threads $calls $nt" \
		-e "$prog" >"$out" 2>"$err" </dev/null
	rc=$?
	check "$nt live threads: every call counted, by its own tid ($mode)"
done
if grep -qF "uprobe:$bin:ubt_sacred_tick: user mode" "$err"; then
	ok "$nt live threads: the probe ran in user mode"
else
	not_ok "$nt live threads: the probe ran in user mode" "$(cat "$err")"
fi

# -p: the threads exist before the attach; the code restored after
start_wait threads-wait $calls $nt
sacred_run_p 120 $tp --mode user -p $tp -e "$prog END { }"
check "$nt live threads (-p): every call counted, by its own tid"
if [ $trc -eq 0 ] && grep -q "^done $total\$" "$tout"; then
	ok "$nt live threads (-p): the target ran on correctly"
else
	not_ok "$nt live threads (-p): the target ran on correctly" \
		"exit $trc" "$(cat "$tout")"
fi
if [ -n "$before" ] && [ "$before" = "$after" ] && [ "$before" != "$during" ]
then
	ok "$nt live threads (-p): patched, then the code is the file's again"
else
	not_ok "$nt live threads (-p): patched, then the code is the file's again" \
		"before $before during $during after $after"
fi

tap_done
