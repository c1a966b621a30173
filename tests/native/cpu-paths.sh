#!/bin/sh
# cpu and numaid in user-mode probes: read with rdpid, else rdtscp (the
# kernel's TSC_AUX) where the CPU has them, else with lsl of the kernel's
# per-CPU segment (as the vDSO's getcpu() does on such a CPU); never a
# system call (UBT_NO_RDPID=1 skips rdpid, UBT_NO_RDTSCP=1 forces lsl, so
# every path is tested on every machine that has the instructions).
# Pinned to one CPU, the target's probes see that CPU.

. "$top_srcdir/tests/cli/tap.sh"

loop="$top_builddir/tests/targets/ubt-loop"
[ -x "$loop" ] || bail "$loop is not built"
prog="uprobe:$loop:ubt_step { @c[cpu] = count(); @n[numaid] = count(); }"
# the first CPU this test may run on, and its NUMA node
cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' \
	/proc/self/status)
[ -n "$cpu" ] || bail "no Cpus_allowed_list in /proc/self/status"
node=0
for n in /sys/devices/system/cpu/cpu"$cpu"/node*; do
	[ -e "$n" ] && node=${n##*/node}
done

# check STATUS NAME: ok, or not ok with ubt's output
check()
{
	if [ "$1" -eq 0 ]; then
		ok "$2"
	else
		not_ok "$2" "$(cat "$tap_tmp/out")"
	fi
}

for path in rdpid rdtscp lsl; do
	case $path in
	rdpid) what="rdpid (or what the CPU has)"; env= ;;
	rdtscp) what="rdtscp (or what the CPU has)"; env=UBT_NO_RDPID=1 ;;
	lsl) what="lsl of the per-CPU segment"; env=UBT_NO_RDTSCP=1 ;;
	esac
	env $env taskset -c "$cpu" "$UBT" --mode user \
		-c "$loop 300" -e "$prog" >"$tap_tmp/out" 2>&1 </dev/null
	grep -qx "@c\[$cpu\]: 300" "$tap_tmp/out"
	check $? "$what: every hit on CPU $cpu"
	grep -qx "@n\[$node\]: 300" "$tap_tmp/out"
	check $? "$what: numaid $node, CPU $cpu's node"
done
tap_done
