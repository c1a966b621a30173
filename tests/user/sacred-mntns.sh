#!/bin/sh
# The traced process is sacred (issue 24, item 6): a process in another
# mount namespace (a container, unshare -m) never loads the runtime by its
# path in its own namespace, where another file may sit.  ubt hands it its
# runtime's descriptor and the process loads /proc/self/fd/N: user mode,
# with the runtime mapped the file of ubt's namespace (another file at
# the path untouched), also in another network namespace (the descriptor
# goes over a socket pair), also a second session (the loader gives back
# the object loaded, checked against the file), also system-wide.
# Without a /proc of its own its probes run in the kernel (-v says why;
# --mode user refuses), also in a chroot of ubt's mount namespace.  Every
# case: the target's exit status, its code bytes, and nothing of ubt's
# left in it but the runtime (no memfd mapped, no descriptor, no other
# libubt-rt.so mapped).

. "$top_srcdir/tests/user/sacred-lib.sh"

[ -x "$t/ubt-sacred" ] || bail "ubt-sacred is not built"
rt=$(realpath "$top_builddir/libubt-rt.so") || bail "no libubt-rt.so"
unshare -m true 2>/dev/null ||
	{ echo "1..0 # SKIP unshare -m does not work here"; exit 77; }
sacred_copy ubt-sacred
# another file, to sit at the runtime's path in the namespace
cp "$t/ubt-sacred" "$tap_tmp/other" || bail "cp"
rt_ino=$(stat -c %i "$rt")
other_ino=$(stat -c %i "$tap_tmp/other")
prog="uprobe:$bin:ubt_sacred_tick { @ = count(); }"

# pre SETUP: the commands run in the namespace before the target: bind
# another file at the runtime's path (other), that and a tmpfs over /proc
# (noproc), nothing (same)
pre()
{
	case $1 in
	other) echo "mount --bind '$tap_tmp/other' '$rt' &&" ;;
	noproc) echo "mount --bind '$tap_tmp/other' '$rt' &&
		      mount -t tmpfs none /proc &&" ;;
	*) ;;
	esac
}

# start SETUP [UNSHARE-FLAGS]: the target ("ppid-wait 100") in a new mount
# namespace set up as pre() says; $tp its pid, waited for until "ready"
start()
{
	: >"$tout"
	unshare ${2:--m} sh -c "$(pre "$1") exec '$bin' ppid-wait 100" \
		>"$tout" 2>&1 </dev/null &
	tp=$!
	wait_for 100 "" '^ready' "$tout"
}

# run_p SETUP ARGS...: start SETUP, then ubt ARGS -p; $rc, $trc the exit
# statuses, $before, $during, $after its code, $left what of ubt's is
# left in it after the detach (memfd mappings, descriptors, another
# libubt-rt.so mapped), $rtmap the inodes mapped at the runtime's path
run_p()
{
	start "$1"
	shift
	sacred_run_leave $tp "$@" -p $tp -e "$prog"
}

# sacred_run_leave WAITPID ARGS...: sacred_run_p, $left and $rtmap read
# before the target goes on to its exit
sacred_run_leave()
{
	rl_w=$1
	shift
	before=$(code "$tp")
	ubt_bg 60 "$@"
	during=$(code "$tp")
	kill -USR1 "$tp"
	wait_for 300 "$tp" '^done' "$tout"
	kill -INT $up 2>/dev/null
	wait $up
	rc=$?
	after=$(code "$tp")
	leftover
	kill -USR1 "$tp"
	wait $rl_w
	trc=$?
}

# leftover: $left, $rtmap for $tp now
leftover()
{
	left=$( (grep 'memfd:ubt' /proc/$tp/maps
		 awk -v p="$rt" '$6 ~ /libubt-rt\.so$/ && $6 != p' \
			/proc/$tp/maps
		 ls -l /proc/$tp/fd | grep -e 'memfd:ubt' -e "$rt" \
			-e "$tap_tmp/other") 2>/dev/null)
	rtmap=$(awk -v p="$rt" '$6 == p { print $5 }' /proc/$tp/maps |
		sort -u | tr '\n' ' ')
}

# report NAME CONDITION...: ok when the condition holds and the target
# ran correctly with its code the file's after the run, nothing of ubt's
# left in it
report()
{
	name=$1
	shift
	if "$@" && [ $trc -eq 0 ] && grep -qx "done 100" "$tout" &&
	   [ -n "$before" ] && [ "$before" = "$after" ] && [ -z "$left" ] &&
	   ! grep -q "dlopen" "$err"; then
		ok "$name"
	else
		not_ok "$name" "exit $rc, target $trc, before $before after $after" \
			"left: $left" "runtime inodes: $rtmap (ubt's $rt_ino)" \
			"$(cat "$out" "$err" "$tout")"
	fi
}

user_line()
{
	grep -qxF "uprobe:$bin:ubt_sacred_tick: user mode (every site can be patched)" "$err"
}

# another file at the path: user mode, ubt's runtime mapped
run_p other -v
report "another file at the runtime's path: user mode, ubt's runtime loaded by descriptor" \
	eval '[ $rc -eq 0 ] && grep -qx "@: 100" "$out" && user_line &&
	      [ "$before" != "$during" ] && [ "$rtmap" = "$rt_ino " ]'

# a session that counts nothing, then one that counts: the second
# dlopen() of "/proc/self/fd/N" gives back the object loaded, checked
start other
before=$(code "$tp")
ubt_bg 60 -v --mode user -p $tp -e "$prog"
kill -INT $up 2>/dev/null
wait $up
rc1=$?
sacred_run_leave $tp -v --mode user -p $tp -e "$prog"
report "another file at the runtime's path, a second session: --mode user, every call counted" \
	eval '[ $rc1 -eq 0 ] && [ $rc -eq 0 ] && grep -qx "@: 100" "$out" &&
	      user_line && [ "$rtmap" = "$rt_ino " ]'

why_of()
{
	echo "pid $1 has another root (mount namespace or chroot) without a /proc of its own: the runtime is loaded there as /proc/self/fd/N, never by its path"
}

# no /proc there: kernel probes
run_p noproc -v
report "no /proc in its namespace: kernel probes, -v says why" \
	eval '[ $rc -eq 0 ] && grep -qx "@: 100" "$out" && [ -z "$rtmap" ] &&
	      grep -qxF "uprobe:$bin:ubt_sacred_tick: kernel ($(why_of $tp))" "$err"'

run_p noproc --mode user
report "no /proc in its namespace: --mode user refuses" \
	eval '[ $rc -eq 1 ] && [ -z "$rtmap" ] &&
	      grep -qxF "ubt: cannot run uprobe:$bin:ubt_sacred_tick in user mode: $(why_of $tp)" "$err"'

# a chroot in ubt's own mount namespace, another file at the runtime's
# path there, no /proc: kernel probes, that file never loaded
root="$tap_tmp/root"
mkdir -p "$root$(dirname "$rt")" || bail "mkdir"
for l in $(ldd "$t/ubt-sacred" | grep -o '/[^ ]*'); do
	mkdir -p "$root$(dirname "$l")" && cp -L "$l" "$root$l" ||
		bail "cp $l"
done
cp "$t/ubt-sacred" "$root/ubt-sacred" && cp "$tap_tmp/other" "$root$rt" ||
	bail "cp"
keep=$bin
bin="$root/ubt-sacred"
: >"$tout"
chroot "$root" /ubt-sacred ppid-wait 100 >"$tout" 2>&1 </dev/null &
tp=$!
wait_for 100 "" '^ready' "$tout"
sacred_run_leave $tp -v -p $tp -e "uprobe:$bin:ubt_sacred_tick { @ = count(); }"
report "a chroot without /proc, another file at the runtime's path: kernel probes, -v says why" \
	eval '[ $rc -eq 0 ] && grep -qx "@: 100" "$out" && [ -z "$rtmap" ] &&
	      grep -qxF "uprobe:$bin:ubt_sacred_tick: kernel ($(why_of $tp))" "$err"'
bin=$keep

# another network namespace too, comm read: the comm table and the
# runtime both go over the socket pair
if unshare -m -n true 2>/dev/null; then
	start same "-m -n"
	sacred_run_leave $tp -v -p $tp \
		-e "uprobe:$bin:ubt_sacred_tick { @[comm] = count(); }"
	report "another network namespace too: user mode, comm from the table" \
		eval '[ $rc -eq 0 ] && grep -qx "@\[ubt-sacred\]: 100" "$out" &&
		      user_line && [ "$rtmap" = "$rt_ino " ] &&
		      ! grep -q "comm in user-mode probes reads prctl" "$err"'
else
	ok "another network namespace too # SKIP unshare -n does not work here"
fi

# system-wide: the process is taken, every call counted
ubt_bg 60 -v -e "$prog"
unshare -m sh -c "$(pre other) exec '$bin' ppid 100000" \
	>"$tout" 2>&1 </dev/null
trc=$?
kill -INT $up
wait $up
rc=$?
if [ $rc -eq 0 ] && [ $trc -eq 0 ] && grep -qx "done 100000" "$tout" &&
   grep -qx "@: 100000" "$out" &&
   grep -q "^ubt: pid [0-9]* (ubt-sacred) taken: 1 probe(s) in user mode" "$err" &&
   ! grep -q "dlopen" "$err"; then
	ok "another file at the runtime's path (system-wide): taken, every call counted"
else
	not_ok "another file at the runtime's path (system-wide): taken, every call counted" \
		"exit $rc, target $trc" "$(cat "$out" "$err" "$tout")"
fi

tap_done
