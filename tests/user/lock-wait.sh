#!/bin/sh
# A map's insert lock held by a thread that does not run (tests/user/
# lockhold.c holds it while its probe adds new keys): each insert waits
# the runtime's bounded wait, then is dropped; ubt says so at exit in its
# own words, apart from bpftrace's "Map full" (the map holds 3 keys of
# 4096); the inserts after the lock is given back go in, and the target
# exits 0.

. "$top_srcdir/tests/cli/tap.sh"

lh="$top_builddir/tests/user/lockhold"
[ -x "$lh" ] || bail "$lh is not built"

"$UBT" --mode user -c "$lh 3" -e "uprobe:$lh:lh_add { @m[arg0] = 1; }" \
	>"$tap_tmp/out" 2>"$tap_tmp/err" </dev/null
rc=$?
if [ $rc = 0 ] && grep -q '^lockhold: held$' "$tap_tmp/err"; then
	ok "ubt and the target exit 0, the lock was held"
else
	not_ok "ubt and the target exit 0, the lock was held" "exit $rc" \
		"$(cat "$tap_tmp/err")"
fi
keys=$(grep '^@m\[' "$tap_tmp/out" | tr '\n' ' ')
if [ "$keys" = "@m[3]: 1 @m[4]: 1 @m[5]: 1 " ]; then
	ok "the inserts after the lock came back went in: $keys"
else
	not_ok "the inserts after the lock came back went in" "$keys"
fi
w="^WARNING: 3 insert(s) of a new key into @m dropped: another thread of the target held the map's insert lock through the whole bounded wait (at least 20 ms: preempted, or gone)\$"
if grep -q "$w" "$tap_tmp/err" && ! grep -q 'Map full' "$tap_tmp/err"; then
	ok "the 3 dropped inserts said in their own words, not as a full map"
else
	not_ok "the 3 dropped inserts said in their own words, not as a full map" \
		"$(grep WARNING "$tap_tmp/err")"
fi
tap_done
