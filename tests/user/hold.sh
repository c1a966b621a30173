#!/bin/sh
# A -c command waits at its entry point at nice -20 on ubt's CPU
# (shim/user/user_stop.c user_hold()): it runs its first instruction with its
# own nice value and CPU set back, the ones it has without ubt.  TAP.
srcdir=${top_srcdir:-$(dirname "$0")/../..}
ubt=${UBT:-./ubt}
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP not root"
	exit 0
fi
cmd='sed -n "s/^Cpus_allowed_list:[[:space:]]*/cpus /p" /proc/self/status; echo "nice $(cut -d" " -f19 /proc/self/stat)"'
# -c splits its command at spaces only, as bpftrace does: the shell code
# goes in a script of its own
tmp=$(mktemp -d /tmp/ubt-hold.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$cmd" >"$tmp/show.sh"
echo "1..2"
n=0
for nice in 0 7; do
	n=$((n + 1))
	want=$(nice -n "$nice" /bin/sh -c "$cmd")
	got=$(nice -n "$nice" timeout 30 "$ubt" --mode user -c "/bin/sh $tmp/show.sh" \
		-e 'uprobe:libc:malloc { @n = count(); }' </dev/null 2>&1 |
		grep -E '^(cpus|nice) ')
	if [ "$got" = "$want" ] && [ -n "$want" ]; then
		echo "ok $n - nice $nice: the command runs with its own nice value and CPUs"
	else
		echo "not ok $n - nice $nice: want '$want', got '$got'"
	fi
done
