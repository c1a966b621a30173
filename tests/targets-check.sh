#!/bin/sh
# The bundled target programs (tests/targets/) run and check their own
# results: each must exit 0 untraced, or the corpus expectations built on
# them mean nothing.
t=${top_builddir:-.}/tests/targets
n=0
fail=0

check() {
	n=$((n + 1))
	if "$@" >/dev/null 2>&1; then
		echo "ok $n - $*"
	else
		echo "not ok $n - $* # exit code $?"
		fail=1
	fi
}

# ubt-wait, ubt-libuser ... wait, ubt-exc ... detach: print "ready" first,
# then run on SIGUSR1
signalled() {
	n=$((n + 1))
	out=$(mktemp)
	"$@" >"$out" 2>&1 &
	pid=$!
	i=0
	while [ "$(head -n 1 "$out")" != ready ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -USR1 $pid
	if wait $pid && [ "$(head -n 1 "$out")" = ready ]; then
		echo "ok $n - $* (signalled)"
	else
		echo "not ok $n - $* (signalled) # exit code $?"
		fail=1
	fi
	rm -f "$out"
}

echo 1..34
check "$t/ubt-alt"
check "$t/ubt-alt" 30 3
check "$t/ubt-calls"
check "$t/ubt-calls" 20
check "$t/ubt-churn" 100 4
check "$t/ubt-classes"
check "$t/ubt-dwtypes"
check "$t/ubt-exc"
check "$t/ubt-loop" 100
check "$t/ubt-nofp" 3
check "$t/ubt-threads" 10
check "$t/ubt-libuser"
check "$t/ubt-nosys" comm 10
check "$t/ubt-nosys" fork 10
check "$t/ubt-nosys" seccomp 10
check "$t/ubt-nosys" setuid 10
check "$t/ubt-patch" 10
check "$t/ubt-sites" 10
check "$t/ubt-spawn" 10
check "$t/ubt-spawn" 10 0 fork
check "$t/ubt-spawn" 10 0 exec
check "$t/ubt-spawn" 10 0 reexec
check "$t/ubt-strs"
check "$t/ubt-watch"
check "$t/ubt-watch" many
check "$t/ubt-watch" wild
check "$t/ubt-types"
if [ -x "$t/ubt-usdt" ]; then
	check "$t/ubt-usdt"
else
	n=$((n + 1))
	echo "not ok $n - $t/ubt-usdt # not built (no sys/sdt.h)"
	fail=1
fi
signalled "$t/ubt-wait" 3
signalled "$t/ubt-dwtypes" 2 wait
signalled "$t/ubt-usdt" 2 wait
signalled "$t/ubt-libuser" 2 wait
signalled "$t/ubt-exc" 3 detach
n=$((n + 1))
if "$t/ubt-calls" x >/dev/null 2>&1; then
	echo "not ok $n - ubt-calls rejects a bad count"
	fail=1
else
	echo "ok $n - ubt-calls rejects a bad count"
fi
exit 0
