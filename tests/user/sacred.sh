#!/bin/sh
# The traced process is sacred (issue 24): processes ubt did not expect,
# each run by tests/targets/ubt-sacred, which checks its own results and
# exits 0.  Every case checks the target's exit status and the counts
# against --mode kernel, or that ubt refuses before anything is placed.

. "$top_srcdir/tests/user/sacred-lib.sh"

[ -x "$t/ubt-sacred" ] || bail "ubt-sacred is not built"
# uprobes belong to a file: a private copy, out of other tests' way
[ -x "$t/ubt-cold" ] || bail "ubt-cold is not built"
cp "$t/ubt-sacred" "$t/ubt-cold" "$tap_tmp/" || bail "cp"
bin="$tap_tmp/ubt-sacred"
cold="$tap_tmp/ubt-cold"
out="$tap_tmp/out"
err="$tap_tmp/err"

# ubt ARGS...: run ubt (timeout 60), $rc its exit status
ubt()
{
	timeout 60 "$UBT" "$@" >"$out" 2>"$err" </dev/null
	rc=$?
}

# expect NAME RC LINE: ubt exited RC and printed LINE (a whole line, or
# the end of one after ": ", as in "stdin:1:1-9: ERROR: LINE")
expect()
{
	if [ "$rc" -eq "$2" ] && { grep -qxF -- "$3" "$out" "$err" ||
		grep -hF -- ": $3" "$out" "$err" |
			awk -v w=": $3" 'substr($0, length($0) - length(w) + 1) == w { f = 1 } END { exit !f }'
	}; then
		ok "$1"
	else
		not_ok "$1" "exit $rc, want $2 and: $3" "$(cat "$out" "$err")"
	fi
}

# untouched NAME: the -c command reported no signal and no wrong result
untouched()
{
	if grep -q 'killed by signal\|wrong result\|exited with status [1-9]' "$out" "$err"
	then
		not_ok "$1: the target is unharmed" "$(cat "$out" "$err")"
	else
		ok "$1: the target is unharmed"
	fi
}

for m in insn lock tsc; do
	if "$bin" "$m" 10 >/dev/null 2>&1; then
		ok "ubt-sacred $m runs untraced"
	else
		not_ok "ubt-sacred $m runs untraced" "exit $?"
	fi
done

# 1. An offset inside an instruction: refused as bpftrace refuses it, in
# every mode, before the command starts; an address inside one too.
insn_base=$(nm "$bin" | awk '$3 == "ubt_sacred_insn" { print $1 }')
[ -n "$insn_base" ] || bail "nm: no ubt_sacred_insn"
for mode in auto kernel user; do
	for off in 2 5; do
		ubt --mode $mode -c "$bin insn 10" \
			-e "uprobe:$bin:ubt_sacred_insn+$off { @ = count(); }"
		expect "offset +$off inside an instruction refused ($mode)" 1 \
			"Could not add uprobe into middle of instruction: $bin:ubt_sacred_insn+$off"
		if grep -q 'Attaching' "$out" "$err"; then
			not_ok "+$off ($mode): nothing attached" "$(cat "$out")"
		else
			ok "+$off ($mode): nothing attached"
		fi
	done
done
addr=$(printf '0x%x' $((0x$insn_base + 2)))
ubt -c "$bin insn 10" -e "uprobe:$bin:$addr { @ = count(); }"
expect "an address inside an instruction refused" 1 \
	"Could not add uprobe into middle of instruction: $bin:ubt_sacred_insn+2"
# --unsafe: bpftrace's warning, and only the kernel can place it
ubt --unsafe --dry-run -c "$bin insn 10" \
	-e "uprobe:$bin:ubt_sacred_insn+2 { @ = count(); }"
if [ $rc -eq 0 ] &&
   grep -qF "WARNING: Unsafe uprobe in the middle of the instruction: $bin:ubt_sacred_insn+2" "$err" &&
   grep -q "ubt_sacred_insn+2: kernel" "$out" "$err"; then
	ok "--unsafe: warned, placed in the kernel"
else
	not_ok "--unsafe: warned, placed in the kernel" "exit $rc" \
		"$(cat "$out" "$err")"
fi
# at a boundary: counted, in both domains
for mode in kernel user; do
	ubt --mode $mode -c "$bin insn 10" \
		-e "uprobe:$bin:ubt_sacred_insn+4 { @ = count(); }"
	expect "offset +4 at an instruction counted ($mode)" 0 "@: 10"
	untouched "offset +4 ($mode)"
done
ubt -c "$bin insn 10" -e "uprobe:$bin:ubt_sacred_insn+8 { @ = count(); }"
expect "offset +8 at an instruction counted (auto)" 0 "@: 10"
untouched "offset +8 (auto)"

# 2. The time-stamp counter off (PR_TSC_SIGSEGV, main thread and a thread
# it starts): no rdtsc/rdtscp in the process; clock, cpu, rand and event
# stamps from elsewhere.  (Where the CPU does not fault, as in some
# virtual machines, -v's count of such threads is what tells.)
tscprog="uprobe:$bin:ubt_sacred_tick { @ = count(); @n = sum(nsecs > 0);
	@c = max(cpu >= 0); @r = count(); \$x = rand; printf(\"t\\n\"); }"
for mode in kernel user; do
	ubt -v --mode $mode -c "$bin tsc 50" -e "$tscprog"
	expect "counter off: every call counted ($mode)" 0 "@: 100"
	expect "counter off: nsecs read ($mode)" 0 "@n: 100"
	if [ "$(grep -c '^t$' "$out")" = 100 ]; then
		ok "counter off: every event printed ($mode)"
	else
		not_ok "counter off: every event printed ($mode)" \
			"$(grep -c '^t$' "$out") events"
	fi
	untouched "counter off ($mode)"
	if ! grep -q 'exited with status 0' "$err"; then
		not_ok "counter off: the command exited 0 ($mode)" "$(cat "$err")"
	else
		ok "counter off: the command exited 0 ($mode)"
	fi
done
expect "counter off: -v names both threads" 0 \
	"ubt: 2 thread(s) ran with the time-stamp counter disabled (PR_TSC_SIGSEGV): their clock, stamps and rand seed came from clock_gettime(2), never rdtsc"

# ptrace_case MODE TMODE PROG: ubt-sacred TMODE 50 (prints "ready", runs on
# SIGUSR1) under ubt --mode MODE -p; $rc ubt's status, $trc the target's
ptrace_case()
{
	rm -f "$tap_tmp/tout" "$out" "$err"
	: >"$tap_tmp/tout"
	"$bin" "$2" 50 >"$tap_tmp/tout" 2>&1 </dev/null &
	tp=$!
	i=0
	while ! grep -q '^ready' "$tap_tmp/tout" && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	: >"$out"
	: >"$err"
	__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 timeout 60 "$UBT" -v --mode "$1" \
		-p $tp -e "$3" >"$out" 2>"$err" </dev/null &
	up=$!
	i=0
	while ! grep -q 'ATTACHED\|^ubt: cannot\|ERROR' "$out" "$err" &&
	      [ $i -lt 300 ] && kill -0 $up 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -USR1 $tp
	wait $tp
	trc=$?
	wait $up
	rc=$?
}

# 3. seccomp: a process whose threads run under a filter or strict mode
# gets kernel probes, decided before anything is written into it (-v says
# why); --mode user refuses it.  Its exit status and counts as the
# kernel's.
for sc in kill trap strict; do
	for mode in kernel auto; do
		ptrace_case $mode seccomp-$sc \
			"uprobe:$bin:ubt_sacred_tick { @ = count(); }"
		if [ $trc -eq 0 ] && [ $rc -eq 0 ] && grep -qx '@: 50' "$out"
		then
			ok "seccomp $sc ($mode): exit 0, every call counted"
		else
			not_ok "seccomp $sc ($mode): exit 0, every call counted" \
				"target exit $trc, ubt exit $rc" \
				"$(cat "$out" "$err" "$tap_tmp/tout")"
		fi
	done
	if grep -q "ubt_sacred_tick: kernel (pid $tp runs under seccomp" "$err"
	then
		ok "seccomp $sc: -v says why the kernel"
	else
		not_ok "seccomp $sc: -v says why the kernel" "$(cat "$err")"
	fi
	ptrace_case user seccomp-$sc \
		"uprobe:$bin:ubt_sacred_tick { @ = count(); }"
	if [ $trc -eq 0 ] && [ $rc -eq 1 ] &&
	   grep -q "in user mode: pid $tp runs under seccomp" "$err"; then
		ok "seccomp $sc (--mode user): refused, the target unharmed"
	else
		not_ok "seccomp $sc (--mode user): refused, the target unharmed" \
			"target exit $trc, ubt exit $rc" "$(cat "$err")"
	fi
done

# 4. A lock-prefixed entry instruction (lock addq $1, lock_hits(%rip)):
# the kernel places no uprobe there (it counted 0, silently); user mode
# leaves it in place and probes after it, keeping the flags; the
# target's own atomic count and results hold, its code is the file's
# again after the run (checked by the target's exit and by a second,
# untraced run of the same process image being unnecessary: ubt-sacred
# lock compares lock_hits with its calls).
ubt --mode kernel -c "$bin lock 100" \
	-e "uprobe:$bin:ubt_sacred_lock { @ = count(); }"
expect "lock prefix: --mode kernel refuses it, not a silent 0" 1 \
	"ubt: cannot attach uprobe:$bin:ubt_sacred_lock: the kernel places no uprobe on a lock-prefixed instruction (user mode can: -p or -c)"
for mode in auto user; do
	ubt -v --mode $mode -c "$bin lock 100" \
		-e "uprobe:$bin:ubt_sacred_lock { @ = count(); @a = sum(arg0); }"
	expect "lock prefix: every call counted ($mode)" 0 "@: 100"
	expect "lock prefix: arguments read ($mode)" 0 "@a: 4950"
	expect "lock prefix: in user mode ($mode)" 0 \
		"uprobe:$bin:ubt_sacred_lock: user mode (every site can be patched)"
	untouched "lock prefix ($mode)"
done
ubt -v -c "$bin lock 100" -e "uretprobe:$bin:ubt_sacred_lock { @ = count(); }"
expect "lock prefix: a return probe refused in user mode, with the reason" 1 \
	"uretprobe:$bin:ubt_sacred_lock: kernel ($bin:ubt_sacred_lock: the entry instruction sets flags and cannot run twice: a return probe cannot follow it)"
# -p: the code restored byte for byte after the run
"$bin" lock-wait 100 >"$tap_tmp/tout" 2>&1 </dev/null &
tp=$!
wait_for 100 "" '^ready' "$tap_tmp/tout"
before=$(code $tp ubt_sacred_lock)
: >"$out"
: >"$err"
__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 timeout 60 "$UBT" --mode user -p $tp \
	-e "uprobe:$bin:ubt_sacred_lock { @ = count(); } END { }" \
	>"$out" 2>"$err" </dev/null &
up=$!
wait_for 300 $up 'ATTACHED' "$out" "$err"
during=$(code $tp ubt_sacred_lock)
kill -INT $up
wait $up
rc=$?
after=$(code $tp ubt_sacred_lock)
kill -USR1 $tp
wait $tp
trc=$?
if [ -n "$before" ] && [ "$before" = "$after" ] && [ "$before" != "$during" ]
then
	ok "lock prefix (-p): patched, then the code is the file's again"
else
	not_ok "lock prefix (-p): patched, then the code is the file's again" \
		"before $before during $during after $after" "$(cat "$err")"
fi
if [ $trc -eq 0 ] && grep -q '^done 100$' "$tap_tmp/tout"; then
	ok "lock prefix (-p): the target runs on correctly after the detach"
else
	not_ok "lock prefix (-p): the target runs on correctly after the detach" \
		"exit $trc" "$(cat "$tap_tmp/tout")"
fi

# 5. C++ .cold parts: thrower's throw split out as _Z7throweri.cold is not
# a function of its own: not picked by the name, nor by a wildcard; by
# its exact symbol only.
nm "$cold" | grep -q ' _Z7throweri\.cold$' || bail "ubt-cold has no .cold part"
for mode in kernel user; do
	ubt --mode $mode -c "$cold 20" \
		-e "uprobe:$cold:thrower { @[probe] = count(); }"
	if [ $rc -eq 0 ] && [ "$(grep -c '^@\[' "$out")" = 1 ] &&
	   grep -qxF "@[uprobe:$cold:_Z7throweri]: 20" "$out"; then
		ok ".cold: thrower alone, every call ($mode)"
	else
		not_ok ".cold: thrower alone, every call ($mode)" "$(cat "$out" "$err")"
	fi
	untouched ".cold ($mode)"
done
ubt -c "$cold 20" -e "uprobe:$cold:thr* { @[probe] = count(); }
	uretprobe:$cold:thrower { @r = count(); }"
if [ $rc -eq 0 ] && [ "$(grep -c '^@\[' "$out")" = 1 ] &&
   grep -qx '@r: 16' "$out" && grep -qx 'calls 20 caught 4 sum 288' "$out"
then
	ok ".cold: a wildcard skips it; returns counted, exceptions caught"
else
	not_ok ".cold: a wildcard skips it; returns counted, exceptions caught" \
		"$(cat "$out" "$err")"
fi
ubt -c "$cold 20" -e "uprobe:$cold:_Z7throweri.cold { @ = count(); }"
expect ".cold: its exact symbol still names it" 0 "@: 4"

tap_done
