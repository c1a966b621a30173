#!/bin/sh
# SIGINT or SIGTERM while a large script is still being built (thousands
# of tracepoint programs, the limits raised): ubt ends at once, killed by
# the signal as bpftrace is while it compiles, with nothing done: no BPF
# dump (-d bpf prints one after the build), no -c command started, a -p
# process neither traced nor given ubt's runtime.  Before, the signal was
# honoured only once the build was over.  The build is far longer than
# the bound: the bound only catches a hang.

. "$top_srcdir/tests/cli/tap.sh"

loop="$tap_tmp/ubt-loop"
cp "$top_builddir/tests/targets/ubt-loop" "$loop" || bail "cp ubt-loop"
one='tracepoint:syscalls:* { @[probe] = count(); }'
big="$one $one $one $one $one $one"
BPFTRACE_MAX_PROBES=1000000 BPFTRACE_MAX_BPF_PROGS=1000000
export BPFTRACE_MAX_PROBES BPFTRACE_MAX_BPF_PROGS

# run_case NAME SIGNAL STATUS ARGS...: ubt -v -d bpf ARGS in the
# background; once -v has told where the probes run (before the build),
# SIGNAL; ubt must be gone within 60 s with STATUS and print nothing
interrupt()
{
	name=$1 sig=$2 want=$3
	shift 3
	"$UBT" -v -d bpf "$@" >"$tap_tmp/out" 2>"$tap_tmp/err" </dev/null &
	pid=$!
	i=0
	while ! grep -q 'kernel (tracepoint probes run in the kernel)' \
		"$tap_tmp/err" && kill -0 "$pid" 2>/dev/null &&
		[ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -"$sig" "$pid"
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid"
		not_ok "$name" "still running 60 s after SIG$sig"
		return 1
	fi
	wait "$pid"
	rc=$?
	if [ "$rc" = "$want" ] && [ ! -s "$tap_tmp/out" ]; then
		ok "$name"
		return 0
	fi
	not_ok "$name" "exit status $rc (want $want), $(wc -c <"$tap_tmp/out") bytes of output" \
		"$(tail -n 3 "$tap_tmp/err" | cut -c1-200)"
	return 1
}

# -c: the command never starts
interrupt "SIGINT during the build: killed by it, nothing built, the -c command not started" \
	INT 130 -c "touch $tap_tmp/started" -e "$big"
if [ -e "$tap_tmp/started" ]; then
	not_ok "SIGINT during the build: -c command not run" "it ran"
else
	ok "SIGINT during the build: -c command not run"
fi

# -p: a process with a user-mode probe besides, left untouched
"$loop" 1000000 1000 >/dev/null </dev/null &
target=$!
interrupt "SIGTERM during the build (-p, a user-mode probe too): killed by it, nothing built" \
	TERM 143 -p "$target" -e "uprobe:$loop:ubt_step { @n = count(); } $big"
tracer=$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$target/status")
if kill -0 "$target" 2>/dev/null && [ "$tracer" = 0 ] &&
   ! grep -Eq 'libubt-rt|memfd:ubt' "/proc/$target/maps"; then
	ok "SIGTERM during the build: the -p process runs, not traced, no ubt mapping"
else
	not_ok "SIGTERM during the build: the -p process runs, not traced, no ubt mapping" \
		"TracerPid $tracer" "$(grep -E 'libubt-rt|memfd:ubt' "/proc/$target/maps")"
fi
kill "$target"
wait "$target" 2>/dev/null
tap_done
