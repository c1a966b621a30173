#!/bin/sh
# The traced process is sacred (issue 24, item 4): children made with
# CLONE_VM | CLONE_VFORK (glibc's posix_spawn, clone used so) run in
# their parent's memory with its thread pointer.  In user mode they take
# blocks of their own: their hits carry their own pid and tid, the
# parent's shadow stack is left alone (a uretprobe in both), and every
# count is what --mode kernel gives; the target exits 0; with -p its code
# (the probed function, libc's hooked functions) is as before after ubt.
# vfork() children too (the hook after glibc's "pop %rdi").  A process
# with a CLONE_VM child that does not make it wait keeps its probes in the
# kernel; one made after the attach hands its probes over to the kernel
# (issue 24): counts as the kernel's, the run goes on to its end.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-vfork
# a name of its own: the dup2 probe counts this command's processes only
name=vfk$$
cp "$bin" "$tap_tmp/$name" || bail "cp"
bin="$tap_tmp/$name"
libc=$(ldd "$bin" | sed -n 's|.*=> \(/[^ ]*libc\.so\.6\) .*|\1|p')
[ -n "$libc" ] || bail "no libc for $bin"
rounds=20
prog="uprobe:$bin:ubt_vf_tick { @t[pid == tid] = count(); @p[pid] = count(); }
uretprobe:$bin:ubt_vf_tick { @r[pid] = count(); }
uprobe:$libc:dup2 /comm == \"$name\"/ { @d[pid] = count(); }"

# norm OUT: the map lines of ubt's output OUT, the target's pid as P, a
# child's (a pid the target printed) as C, another as X, sorted and
# counted
norm()
{
	python3 - "$1" <<'EOF'
import collections, re, sys
lines = open(sys.argv[1]).read().splitlines()
me = [l.split()[1] for l in lines if l.startswith("pid ")]
kids = {l.split()[1] for l in lines
        if l.split()[:1] in (["clone"], ["spawn"], ["vfork"])}
out = collections.Counter()
for l in lines:
    m = re.match(r"(@\w+)\[(\d+)\]: (\d+)$", l)
    if not m:
        continue
    k = m.group(2)
    if m.group(1) != "@t":
        k = "P" if me and k == me[0] else "C" if k in kids else "X"
    out["%s[%s]: %s" % (m.group(1), k, m.group(3))] += 1
for k in sorted(out):
    print("%s x%d" % (k, out[k]))
EOF
}

# end_run [wait]: end ubt ($up; with SIGINT unless "wait": it ends by
# itself), read the probed code back ($after), let the target ($tp) end;
# sets rc (ubt's status), after and trc (the target's status)
end_run()
{
	[ "$1" = wait ] || kill -INT $up 2>/dev/null
	wait $up
	rc=$?
	after=$(code $tp ubt_vf_tick)
	kill -USR1 $tp
	wait $tp
	trc=$?
}

expect="@d[C]: 2 x$rounds
@p[C]: 5 x$rounds
@p[P]: $((rounds * 3)) x1
@r[C]: 5 x$rounds
@r[P]: $((rounds * 3)) x1
@t[1]: $((rounds * 8)) x1"

# with vfork: glibc's vfork() too (its hook after its "pop %rdi")
vexpect="@d[C]: 2 x$rounds
@p[C]: 5 x$((rounds * 2))
@p[P]: $((rounds * 3)) x1
@r[C]: 5 x$((rounds * 2))
@r[P]: $((rounds * 3)) x1
@t[1]: $((rounds * 13)) x1"

for how in "" vfork; do
for mode in kernel auto; do
	timeout 120 "$UBT" -v --mode $mode -c "$bin $rounds $how" -e "$prog" \
		>"$out" 2>"$err" </dev/null
	rc=$?
	got=$(norm "$out")
	want=$expect
	[ -z "$how" ] || want=$vexpect
	what="posix_spawn and clone(CLONE_VM|CLONE_VFORK) children${how:+ and vfork() children}, uprobe and uretprobe (-c, $mode): own pid and tid, counts as the kernel's, exit 0"
	if [ $rc -eq 0 ] && [ "$got" = "$want" ] &&
	   ! grep -q "wrong result" "$err" &&
	   grep -q "^ubt: the command (pid [0-9]*) exited with status 0$" "$err" &&
	   ! grep -q "no vfork guard" "$err"
	then
		ok "$what"
	else
		not_ok "$what" "exit $rc" "got:" "$got" "expected:" "$want" \
			"$(cat "$err")"
	fi
done
done

# -p: the same calls while ubt is attached, its code as before after
: >"$tout"
"$bin" $rounds wait >"$tout" 2>&1 </dev/null &
tp=$!
wait_for 100 "" '^ready' "$tout"
lbefore=$(libcode $tp posix_spawn posix_spawnp clone vfork execve)
before=$(code $tp ubt_vf_tick)
ubt_bg 60 -p $tp -e "$prog"
kill -USR1 $tp
wait_for 300 $tp '^done' "$tout"
kill -INT $up 2>/dev/null
wait $up
rc=$?
after=$(code $tp ubt_vf_tick)
lafter=$(libcode $tp posix_spawn posix_spawnp clone vfork execve)
kill -USR1 $tp
wait $tp
trc=$?
cat "$tout" >>"$out"
got=$(norm "$out")
if [ $rc -eq 0 ] && [ $trc -eq 0 ] && [ "$got" = "$expect" ] &&
   [ -n "$before" ] && [ "$before" = "$after" ] &&
   [ -n "$lbefore" ] && [ "$lbefore" = "$lafter" ]; then
	ok "CLONE_VM children (-p): own pid and tid, counts as the kernel's, exit 0, code as before"
else
	not_ok "CLONE_VM children (-p): own pid and tid, counts as the kernel's, exit 0, code as before" \
		"exit $rc, target $trc, before $before after $after" \
		"$lbefore" "$lafter" "got:" "$got" "expected:" "$expect" \
		"$(cat "$err")"
fi

# a CLONE_VM child without CLONE_VFORK (it runs beside its parent, on the
# parent thread's block): the process's probes stay in the kernel, -v
# says why; the counts are --mode kernel's (the child is another process:
# -p counts the target's own calls), the target exits 0, its code as before
vm_out=
for mode in kernel auto; do
	: >"$tout"
	"$bin" 1000 vm >"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 100 "" '^ready' "$tout"
	before=$(code $tp ubt_vf_tick)
	ubt_bg 60 -v --mode $mode -p $tp -e \
		"uprobe:$bin:ubt_vf_tick { @p[pid] = count(); @t[pid == tid] = count(); }"
	kill -USR1 $tp
	wait_for 300 $tp '^done' "$tout"
	end_run
	me=$(sed -n 's/^pid //p' "$tout")
	got=$(grep '^@' "$out" | sed "s/\[$me\]/[P]/" | sort)
	[ $mode = kernel ] && vm_out=$got
	what="a clone(CLONE_VM) child beside its parent (-p, $mode): counts as the kernel's, exit 0, code as before"
	if [ $rc -eq 0 ] && [ $trc -eq 0 ] && [ "$got" = "$vm_out" ] &&
	   [ "$got" = "@p[P]: 1000
@t[1]: 1000" ] && [ -n "$before" ] && [ "$before" = "$after" ] &&
	   { [ $mode = kernel ] ||
	     grep -q "ubt_vf_tick: kernel (pid [0-9]* shares the memory of pid $me (clone(CLONE_VM) without CLONE_VFORK)" "$err"; }
	then
		ok "$what"
	else
		not_ok "$what" "exit $rc, target $trc, before $before after $after" \
			"got:" "$got" "kernel's:" "$vm_out" "$(cat "$err")"
	fi
done

# a CLONE_VM child made after ubt attached, by libc's clone() (vmlate) or
# by the system call itself (vmraw).  vmlate: the runtime's hook on clone
# announces it and the thread waits until ubt has handed the probes over
# to the kernel, before the child exists: the counts are the kernel's,
# with a warning.  vmraw: ubt sees it (task_newtask) and hands
# the probes over to the kernel, with a warning: the child's calls before
# that (they start at once) counted in user mode, the parent's and the
# child's under either one's pid (between 1000 and 2000 in all where the
# kernel says 1000; under load all 2000 can come before the hand-over,
# every one under the child's pid), said so;
# --mode user ends the run with the reason, no map printed; the target
# exits 0, its code as before.  --mode kernel counts the target's own
# calls.
for how in vmlate vmraw; do
	for mode in kernel auto user; do
		: >"$tout"
		"$bin" 1000 $how >"$tout" 2>&1 </dev/null &
		tp=$!
		wait_for 100 "" '^ready' "$tout"
		before=$(code $tp ubt_vf_tick)
		ubt_bg 60 --mode $mode -p $tp -e \
			"uprobe:$bin:ubt_vf_tick { @p[pid] = count(); @t[pid == tid] = count(); }"
		kill -USR1 $tp
		[ $mode = auto ] && wait_for 300 $up '^WARNING: pid' "$err"
		wait_for 300 $tp '^done' "$tout"
		if [ $mode = user ]; then end_run wait; else end_run; fi
		me=$(sed -n 's/^pid //p' "$tout")
		kid=$(sed -n 's/^vm //p' "$tout")
		got=$(grep '^@' "$out" | sed "s/\[$me\]/[P]/" | sort)
		what="a CLONE_VM child made after the attach ($how, -p, $mode): the target's code as before, exit 0"
		if [ $mode = kernel ]; then
			what="$what, its own calls counted"
			[ $rc -eq 0 ] && [ "$got" = "@p[P]: 1000
@t[1]: 1000" ]
		elif [ $mode = auto ] && [ $how = vmlate ]; then
			what="$what; the probes handed over to the kernel before the child starts, said, the run goes on, its own calls counted"
			[ $rc -eq 0 ] && [ "$got" = "@p[P]: 1000
@t[1]: 1000" ] && [ -n "$kid" ] &&
			grep -q "^WARNING: pid $me is making a child with clone(CLONE_VM) without CLONE_VFORK after ubt attached: its user-mode probes run in the kernel from now on, before the child starts" "$err"
		elif [ $mode = auto ]; then
			what="$what; the probes handed over to the kernel, said, the run goes on"
			np=$(grep "^@p\[$me\]: " "$out" | sed 's/.*: //')
			nk=$(grep "^@p\[$kid\]: " "$out" | sed 's/.*: //')
			nt=$(grep '^@t\[1\]: ' "$out" | sed 's/.*: //')
			tot=$((${np:-0} + ${nk:-0}))
			[ $rc -eq 0 ] && [ $tot -ge 1000 ] &&
			[ $tot -le 2000 ] && [ -n "$nt" ] &&
			[ "$nt" -ge 1000 ] && [ "$nt" -le 2000 ] &&
			[ -z "$(grep '^@' "$out" | grep -v "^@p\[$me\]: \|^@p\[$kid\]: \|^@t\[1\]: ")" ] &&
			[ -n "$kid" ] &&
			grep -q "^WARNING: pid $me made 1 child(ren) with clone(CLONE_VM) without CLONE_VFORK (the first: pid $kid) after ubt attached: its user-mode probes run in the kernel from now on" "$err"
		elif [ $how = vmlate ]; then
			what="$what; the run ends with the reason before the child starts, no count printed"
			[ $rc -eq 1 ] && [ -z "$got" ] && [ -n "$kid" ] &&
			grep -q "^ubt: pid $me (thread $me) is making a child with clone(CLONE_VM) without CLONE_VFORK: .* the run ends, its maps unprinted" "$err"
		else
			what="$what; the run ends with the reason, no count printed"
			[ $rc -eq 1 ] && [ -z "$got" ] && [ -n "$kid" ] &&
			grep -q "^ubt: pid $me made 1 child(ren) with clone(CLONE_VM) without CLONE_VFORK (the first: pid $kid) after ubt attached" "$err"
		fi
		res=$?
		if [ $res -eq 0 ] && [ $trc -eq 0 ] && [ -n "$before" ] &&
		   [ "$before" = "$after" ]; then
			ok "$what"
		else
			not_ok "$what" "exit $rc, target $trc, before $before after $after" \
				"got:" "$got" "$(cat "$err")"
		fi
	done
done

# the hand-over, counted exactly (a uprobe and a uretprobe): the
# target's 1000 calls in user mode,
# then the CLONE_VM child (vmhand); ubt hands the probes over to the
# kernel (the function's first byte its int3 then) before the child and
# the parent make 1000 calls each: every count is --mode kernel's (the
# parent's 2000: the kernel's uprobes on pid P count the thread group,
# not the child), nothing lost or counted twice; the run goes on to its
# end, exit 0, the child and the target exit 0, the code the file's after
for mode in kernel auto; do
	: >"$tout"
	"$bin" 1000 vmhand >"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 100 "" '^ready' "$tout"
	before=$(code $tp ubt_vf_tick)
	ubt_bg 60 -v --mode $mode -p $tp -e \
		"uprobe:$bin:ubt_vf_tick { @p[pid] = count(); @t[pid == tid] = count(); }
		 uretprobe:$bin:ubt_vf_tick { @r[pid] = count(); }"
	kill -USR1 $tp
	wait_for 300 $tp '^vm ' "$tout"
	[ $mode = auto ] && wait_for 300 $up '^WARNING: pid' "$err"
	during=$(code $tp ubt_vf_tick)
	kill -USR1 $tp
	wait_for 300 $tp '^done' "$tout"
	end_run
	me=$(sed -n 's/^pid //p' "$tout")
	kid=$(sed -n 's/^vm //p' "$tout")
	got=$(grep '^@' "$out" | sed "s/\[$me\]/[P]/" | sort)
	what="a CLONE_VM child after the attach, the hand-over (-p, $mode): counts as the kernel's, exit 0, the child's too, the kernel's int3 then the file's code"
	[ $rc -eq 0 ] && [ "$got" = "@p[P]: 2000
@r[P]: 2000
@t[1]: 2000" ] && grep -q "^vmdone $kid\$" "$tout" &&
	if [ $mode = auto ]; then
		grep -q "^ubt: pid $me: user-mode probes handed over to kernel uprobes on pid $me in one stop (.*; 2 program(s)): uprobe:.* uretprobe:" "$err" &&
		grep -q "^WARNING: pid $me made 1 child(ren) with clone(CLONE_VM) without CLONE_VFORK (the first: pid $kid) after ubt attached: its user-mode probes run in the kernel from now on" "$err"
	fi
	res=$?
	if [ $res -eq 0 ] && [ $trc -eq 0 ] && [ -n "$before" ] &&
	   [ "$during" = "cc${before#??}" ] && [ "$before" = "$after" ]; then
		ok "$what"
	else
		not_ok "$what" "exit $rc, target $trc, before $before during $during after $after" \
			"got:" "$got" "$(cat "$err")"
	fi
done

# -c: the hand-over when the command makes the child (vmhandc: no
# signals, the target waits for the kernel's int3 on its function before
# it and the child make their calls): counts as --mode kernel's (with -c
# the child's calls count too), exit 0 for both
c_out=
for mode in kernel auto; do
	timeout 120 "$UBT" -v --mode $mode -c "$bin 1000 vmhandc" -e \
		"uprobe:$bin:ubt_vf_tick { @p[pid] = count(); @t[pid == tid] = count(); }
		 uretprobe:$bin:ubt_vf_tick { @r[pid] = count(); }" \
		>"$out" 2>"$err" </dev/null
	rc=$?
	me=$(sed -n 's/^pid //p' "$out")
	kid=$(sed -n 's/^vm //p' "$out")
	got=$(grep '^@' "$out" | sed "s/\[$me\]/[P]/; s/\[$kid\]/[C]/" |
	      sort)
	[ $mode = kernel ] && c_out=$got
	what="a CLONE_VM child made by the -c command, the hand-over ($mode): counts as the kernel's, exit 0, the child's too"
	if [ $rc -eq 0 ] && [ -n "$me" ] && [ "$got" = "$c_out" ] &&
	   [ "$got" = "@p[C]: 1000
@p[P]: 2000
@r[C]: 1000
@r[P]: 2000
@t[1]: 3000" ] && grep -q "^vmdone $kid\$" "$out" &&
	   grep -q "^ubt: the command (pid $me) exited with status 0\$" "$err" &&
	   { [ $mode = kernel ] ||
	     { grep -q "^ubt: pid $me: user-mode probes handed over to kernel uprobes on pid $me in one stop" "$err" &&
	       grep -q "^WARNING: pid $me made 1 child(ren) with clone(CLONE_VM) without CLONE_VFORK (the first: pid $kid) after ubt attached: its user-mode probes run in the kernel from now on" "$err"; }; }
	then
		ok "$what"
	else
		not_ok "$what" "exit $rc" "got:" "$got" "kernel's:" "$c_out" \
			"$(cat "$out")" "$(cat "$err")"
	fi
done

# the CLONE_VM window (libc's clone(), vmsync/vmsyncc): the child looks at
# the function's first byte before its 1000 calls, while the parent makes
# its own, and exits 5 unless it is the kernel's int3 (it ran before the
# hand-over; a pipe tells the parent when its calls are done); per-pid
# counts exactly --mode kernel's, the child and the target exit 0, libc's
# clone and the function the file's code after the run.  -c counts the
# child's calls; -p the target's own (the kernel's uprobes on pid P).
for how in vmsyncc vmsync; do
	s_out=
	for mode in kernel auto; do
		: >"$tout"
		if [ $how = vmsyncc ]; then
			timeout 120 "$UBT" -v --mode $mode -c "$bin 1000 $how" -e \
				"uprobe:$bin:ubt_vf_tick { @p[pid] = count(); @t[pid == tid] = count(); }
				 uretprobe:$bin:ubt_vf_tick { @r[pid] = count(); }" \
				>"$out" 2>"$err" </dev/null
			rc=$?
			tr=$out
			me=$(sed -n 's/^pid //p' "$out")
			trc=$(sed -n 's/^ubt: the command (pid [0-9]*) exited with status //p' "$err")
			before=x after=x cbefore=x cafter=x
			want="@p[C]: 1000
@p[P]: 2000
@r[C]: 1000
@r[P]: 2000
@t[1]: 3000"
		else
			"$bin" 1000 $how >"$tout" 2>&1 </dev/null &
			tp=$!
			wait_for 100 "" '^ready' "$tout"
			before=$(code $tp ubt_vf_tick)
			cbefore=$(libcode $tp clone)
			ubt_bg 60 -v --mode $mode -p $tp -e \
				"uprobe:$bin:ubt_vf_tick { @p[pid] = count(); @t[pid == tid] = count(); }
				 uretprobe:$bin:ubt_vf_tick { @r[pid] = count(); }"
			kill -USR1 $tp
			wait_for 300 $tp '^done' "$tout"
			cafter=$(libcode $tp clone)
			end_run
			tr=$tout
			me=$(sed -n 's/^pid //p' "$tout")
			want="@p[P]: 2000
@r[P]: 2000
@t[1]: 2000"
		fi
		kid=$(sed -n 's/^vm //p' "$tr")
		got=$(grep '^@' "$out" | sed "s/\[$me\]/[P]/; s/\[$kid\]/[C]/" |
		      sort)
		[ $mode = kernel ] && s_out=$got
		what="a libc clone(CLONE_VM) child beside its parent ($how, $mode): per-pid counts as the kernel's, the child starts on the kernel's probes, exit 0, code as before"
		if [ $rc -eq 0 ] && [ "$trc" = 0 ] && [ -n "$me" ] &&
		   [ -n "$kid" ] && [ "$got" = "$s_out" ] &&
		   [ "$got" = "$want" ] && grep -q "^vmdone $kid\$" "$tr" &&
		   [ -n "$before" ] && [ "$before" = "$after" ] &&
		   [ -n "$cbefore" ] && [ "$cbefore" = "$cafter" ] &&
		   { [ $mode = kernel ] ||
		     { grep -q "^ubt: pid $me: user-mode probes handed over to kernel uprobes on pid $me in one stop" "$err" &&
		       grep -q "^WARNING: pid $me is making a child with clone(CLONE_VM) without CLONE_VFORK after ubt attached: its user-mode probes run in the kernel from now on, before the child starts" "$err"; }; }
		then
			ok "$what"
		else
			not_ok "$what" "exit $rc, target $trc, before $before after $after, clone $cbefore / $cafter" \
				"got:" "$got" "kernel's:" "$s_out" \
				"$(cat "$tr")" "$(cat "$err")"
		fi
	done
done

# no hand-over where a user-mode probe writes a map that is not an
# aggregation (what user mode wrote there would not be where the kernel's
# programs look): the run ends with the reason, as before, code restored
: >"$tout"
"$bin" 1000 vmhand >"$tout" 2>&1 </dev/null &
tp=$!
wait_for 100 "" '^ready' "$tout"
before=$(code $tp ubt_vf_tick)
ubt_bg 60 -p $tp -e \
	"uprobe:$bin:ubt_vf_tick { @p[pid] = count(); @l[tid] = arg0; }"
kill -USR1 $tp
wait_for 300 $tp '^vm ' "$tout"
wait_for 300 $up '^ubt: pid' "$err"
kill -USR1 $tp
wait_for 300 $tp '^done' "$tout"
end_run wait
me=$(sed -n 's/^pid //p' "$tout")
what="a CLONE_VM child after the attach, a map that is not an aggregation (-p, auto): no hand-over, the run ends with the reason, exit 0, code as before"
if [ $rc -eq 1 ] && [ -z "$(grep '^@' "$out")" ] && [ $trc -eq 0 ] &&
   grep -q "^ubt: pid $me made 1 child(ren) with clone(CLONE_VM) .*cannot move to the kernel in this run (map @l would not keep what user mode wrote in it)" "$err" &&
   [ -n "$before" ] && [ "$before" = "$after" ]; then
	ok "$what"
else
	not_ok "$what" "exit $rc, target $trc, before $before after $after" \
		"$(cat "$out" "$err")"
fi

# system-wide: a process taken (its first calls) then makes a CLONE_VM
# child by the system call: ubt sees it, gives the process back to the
# kernel (code restored, int3s back, both out of the taken table) and
# says so; the child's calls, made after that, count under its own pid;
# every count is --mode kernel's, the target exits 0, its code as
# before.  (Before, the child's calls counted under the parent's pid.)
sysw_out=
sysw_code=
for mode in kernel auto; do
	: >"$tout"
	: >"$out"
	: >"$err"
	__BPFTRACE_NOTIFY_PROBES_ATTACHED=1 timeout --foreground 120 "$UBT" -v \
		--mode $mode -e "uprobe:$bin:ubt_vf_tick { @p[pid] = count(); }" \
		>"$out" 2>"$err" </dev/null &
	up=$!
	wait_for 300 $up 'ATTACHED' "$out" "$err"
	"$bin" 1000 vmtaken >"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 300 $tp '^ready' "$tout"
	me=$(sed -n 's/^pid //p' "$tout")
	[ $mode = auto ] &&
		wait_for 300 $tp "^ubt: pid $me (.*) taken" "$err"
	before=$(code $tp ubt_vf_tick)
	kill -USR1 $tp
	wait_for 300 $tp '^vm ' "$tout"
	kid=$(sed -n 's/^vm //p' "$tout")
	[ $mode = auto ] &&
		wait_for 300 $tp "^ubt: warning: pid $me made 1 child" "$err"
	kill -USR1 $tp
	wait_for 300 $tp '^done' "$tout"
	after=$(code $tp ubt_vf_tick)
	kill -INT $up 2>/dev/null
	wait $up
	rc=$?
	kill -USR1 $tp
	wait $tp
	trc=$?
	got=$(grep '^@' "$out" | sed "s/\[$me\]/[P]/; s/\[$kid\]/[C]/" | sort)
	# the code as in --mode kernel's process (its int3 there too)
	[ $mode = kernel ] && sysw_out=$got && sysw_code=$before
	what="system-wide, a CLONE_VM child made after the take ($mode): counts as the kernel's, exit 0, code as the kernel's"
	if [ $rc -eq 0 ] && [ $trc -eq 0 ] && [ "$got" = "$sysw_out" ] &&
	   [ "$got" = "@p[C]: 1000
@p[P]: 2000" ] && [ -n "$after" ] && [ "$sysw_code" = "$after" ] &&
	   { [ $mode = kernel ] ||
	     grep -q "^ubt: warning: pid $me made 1 child(ren) with clone(CLONE_VM) without CLONE_VFORK (the first: pid $kid) after it was taken" "$err"; }
	then
		ok "$what"
	else
		not_ok "$what" "exit $rc, target $trc, before $before after $after" \
			"got:" "$got" "kernel's:" "$sysw_out" "$(cat "$err")"
	fi
done

tap_done
