#!/bin/sh
# The traced process is sacred (issue 24, item 6): a process that runs
# execve() every 20 ms (an exec storm) is attached to with -p again and
# again; an attach that the exec overtakes (the runtime placed in an
# image that is gone) attaches to the new image instead of failing the
# run.  Every run exits 0 and counts; the target runs to its end, exit 0.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-sacred
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); } interval:ms:100 { exit(); }"

"$bin" storm 10 400 >"$tout" 2>&1 </dev/null &
tp=$!
fails=0
runs=0
log=
while [ $runs -lt 8 ] && kill -0 $tp 2>/dev/null; do
	timeout 60 "$UBT" -v -p $tp -e "$prog" >"$out" 2>"$err" </dev/null
	rc=$?
	runs=$((runs + 1))
	# the target may have ended meanwhile: then any exit is its end
	if [ $rc -ne 0 ] || ! grep -q "^@: [0-9]" "$out"; then
		kill -0 $tp 2>/dev/null || break
		fails=$((fails + 1))
		log="$log
run $runs: exit $rc: $(cat "$out" "$err")"
	fi
done
wait $tp
trc=$?
if [ $runs -ge 4 ] && [ $fails -eq 0 ] && [ $trc -eq 0 ] &&
   grep -qx "done 10" "$tout"; then
	ok "exec storm: $runs attaches (-p), each exits 0 and counts, the target ends with exit 0"
else
	not_ok "exec storm: $runs attaches (-p), each exits 0 and counts, the target ends with exit 0" \
		"$fails failed, target $trc" "$log" "$(cat "$tout")"
fi

tap_done
