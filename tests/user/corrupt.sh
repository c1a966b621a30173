#!/bin/sh
# A target that writes garbage over ubt's shared memory while traced in
# user mode (tests/user/scribble.c): ubt says once that the process
# corrupted it, prints no implausible number (no "Lost 9223372034707292160
# events", no huge "WARNING: N ..." counts), prints every event the probe
# sent before the garbage (the target waits until ubt has read them) and
# nothing after it, and exits 0 with the target (which exits 0).

. "$top_srcdir/tests/cli/tap.sh"

scr="$top_builddir/tests/user/scribble"
[ -x "$scr" ] || bail "$scr is not built"
n=400
prog="uprobe:$scr:scr_step { printf(\"%d\\n\", arg0); }"
warning="the process corrupted ubt's shared memory"

# check NAME ARGS...: run ubt on scribble ARGS, check its output
check()
{
	name=$1
	shift
	"$UBT" --mode user -c "$scr $n $*" -e "$prog" >"$tap_tmp/$name" \
		2>"$tap_tmp/$name.err" </dev/null
	rc=$?
	out="$tap_tmp/$name"
	err="$tap_tmp/$name.err"
	if [ $rc = 0 ]; then
		ok "$name: ubt exits 0"
	else
		not_ok "$name: ubt exits 0" "exit $rc" "$(cat "$err")"
	fi
	if grep -q '^scribble: corrupted [1-9][0-9]* blocks$' "$err" &&
		! grep -q 'wrong result' "$err"; then
		ok "$name: the target corrupted the memfd and ran on"
	else
		not_ok "$name: the target corrupted the memfd and ran on" \
			"$(cat "$err")"
	fi
	w=$(grep -c "^ubt: warning: pid [0-9]*: $warning (.*); ubt ignores the corrupted data\$" "$err")
	if [ "$w" = 1 ] && [ "$(grep -c "$warning" "$err")" = 1 ]; then
		ok "$name: said once: $(grep "$warning" "$err")"
	else
		not_ok "$name: the corruption said once" "$(cat "$err")"
	fi
	# events: 0 .. n/2-1 (sent before the garbage, all fit in the
	# ring), in order, then nothing: no other line, no "Lost" line
	bad=$(awk -v half=$((n / 2)) '
		/^Attaching 1 probe\.\.\.$/ || /^$/ { next }
		/^[0-9]+$/ && $1 + 0 == next_ev && next_ev < half {
			next_ev++; next }
		{ print; exit }
		END { if (next_ev != half) print next_ev " events" }' "$out")
	if [ -z "$bad" ]; then
		ok "$name: the $((n / 2)) events sent before, in order, nothing after"
	else
		not_ok "$name: the $((n / 2)) events sent before, in order, nothing after" \
			"wrong: $bad" "$(head -5 "$out")"
	fi
	# the warnings ubt prints at exit carry no garbage either
	if grep -E '^WARNING: [0-9]{7,} ' "$err" >/dev/null; then
		not_ok "$name: no implausible count at exit" \
			"$(grep '^WARNING' "$err")"
	else
		ok "$name: no implausible count at exit"
	fi
}

check extreme extreme
check random-1 random 1
check random-2 random 12345
tap_done
