#!/bin/sh
# `ubt -l` listing (probes/probes_list.c probes_list()) compared with the
# installed bpftrace's `-l` on the same patterns: stdout and exit status,
# and stderr for errors.
#
# Known, intended differences with bpftrace 0.17, tested on their own:
#   - bpftrace 0.17 lists software and hardware events as "software:*:"
#     (a bug); ubt lists each event (hardware ones from bpftrace's fixed
#     list, also without a PMU, as bpftrace does);
#   - bpftrace 0.17 does not resolve "libc.so.6" as a library name; ubt
#     does (as later bpftrace releases do);
#   - bpftrace 0.17 finds no iterators here (its check wants
#     available_filter_functions readable): ubt lists them from BTF for
#     'iter:*' (as bpftrace 0.26 does), not in the whole list;
#   - bpftrace 0.17 matches "a*lock" against "a_clocklock" wrongly (it
#     anchors the last part at its first occurrence); ubt uses fnmatch().

: "${top_builddir:=.}"
: "${UBT:=$top_builddir/ubt}"
TARGET="$top_builddir/tests/probes/probes-target"
BPFTRACE=${BPFTRACE:-/usr/bin/bpftrace}

if ! test -x "$UBT" || ! test -x "$TARGET"; then
	echo "Bail out! $UBT or $TARGET not built"
	exit 99
fi
list() { "$UBT" -l "$@"; }
if ! test -x "$BPFTRACE"; then
	echo "Bail out! $BPFTRACE (the reference) is not installed"
	exit 99
fi
TARGET=$(cd "$(dirname "$TARGET")" && pwd)/$(basename "$TARGET")
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

# ubt -l mounts tracefs when needed; do it before bpftrace looks
list 'tracepoint:sched:sched_switch' >/dev/null 2>&1 </dev/null

n=0
fail=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=1
	fi
}

# same PATTERN [-v]: identical stdout and exit status
same() {
	pat=$1
	shift
	"$BPFTRACE" -l $* "$pat" >"$tmp/bt.out" 2>"$tmp/bt.err" </dev/null
	btrc=$?
	list $* "$pat" >"$tmp/ubt.out" 2>"$tmp/ubt.err" </dev/null
	ubtrc=$?
	if [ $btrc = $ubtrc ] && cmp -s "$tmp/bt.out" "$tmp/ubt.out"; then
		ok 0 "-l $* '$pat' ($(wc -l <"$tmp/ubt.out") lines)"
	else
		ok 1 "-l $* '$pat' (exit $ubtrc, bpftrace $btrc)"
		diff "$tmp/bt.out" "$tmp/ubt.out" | head -10 | sed 's/^/# /'
		sed 's/^/# ubt stderr: /' "$tmp/ubt.err" | head -5
	fi
}

# same_err PATTERN: identical stderr (diagnostic) and exit status
same_err() {
	"$BPFTRACE" -l "$1" >"$tmp/bt.out" 2>"$tmp/bt.err" </dev/null
	btrc=$?
	list "$1" >"$tmp/ubt.out" 2>"$tmp/ubt.err" </dev/null
	ubtrc=$?
	if [ $btrc = $ubtrc ] && [ $ubtrc != 0 ] &&
	   cmp -s "$tmp/bt.err" "$tmp/ubt.err" && ! test -s "$tmp/ubt.out"; then
		ok 0 "-l '$1' fails as bpftrace does"
	else
		ok 1 "-l '$1' fails as bpftrace does (exit $ubtrc, bpftrace $btrc)"
		diff "$tmp/bt.err" "$tmp/ubt.err" | head -10 | sed 's/^/# /'
	fi
}

same 'tracepoint:sched:*'
same 'tracepoint:syscalls:sys_enter_open*'
same 't:sched:sched_sw*'
same 'tracepoint:*:sched_switch'
same 'tracepoint:sched*'
same 'tracepoint:sched:sched_switch'
same 'tracepoint:syscalls:sys_enter_openat' -v
same 'tracepoint:sched:sched_switch' -v
same 'tracepoint:sched:sched_process_exec' -v
same 'tracepoint:syscalls:sys_*_read*' -v
same "uprobe:$TARGET:*"
same "uprobe:$TARGET:ubt_probe_alpha*"
same "uprobe:$TARGET:*" -v
same "uretprobe:$TARGET:ubt_probe_types" -v
same "u:$TARGET:ubt_probe_beta"
same "uprobe:$TARGET:ubt_cpp"
same "uprobe:$TARGET:\"ubt_cpp(int)\""
same "uprobe:$TARGET:ubt_c*"
same "uprobe:$TARGET:\"ubt::probe\""
same "uprobe:$TARGET:\"ubt::probe(long)\""
same "uprobe:$TARGET:nosuchfunction*"
same "uretprobe:libc:mall*"
same "uprobe:libc:pthread_mutex_clock*"
same "uprobe:libc:*"
same 'uprobe:/bin/bash:*'
same 'uprobe:bash:readline'
same "usdt:$TARGET:*"
same "usdt:$TARGET:ubt_test:s*"
same "usdt:$TARGET:start"
same "usdt:$TARGET:*:done"
same "*:$TARGET:*"
same "u*:$TARGET:ubt_probe_alpha*"
same "*sdt:$TARGET:*"
same_err 'x*:foo'
# kernel types from BTF, -v with their definitions (issue 28)
same 'struct path'
same 'struct task_s*'
same 'enum bpf_*'
same 'struct task_struct' -v
same 'struct path*' -v
same 'union *' -v
same_err "*:$TARGET"
same_err 'uprobe:/nonexistent/binary:*'
same_err 'uprobe:libnosuchlibrary:foo'
same_err 'tracepoint:sched'
same_err 'uprobe:/bin/bash'
same_err 'usdt:*'
same_err 'tracepoint'
same_err 'uprobe'
same_err 'usdt'

# The whole list: every tracepoint bpftrace lists, sorted.
"$BPFTRACE" -l 2>/dev/null </dev/null >"$tmp/bt.all"
grep '^tracepoint:' "$tmp/bt.all" >"$tmp/bt.out"
list >"$tmp/ubt.out" 2>"$tmp/ubt.err" </dev/null
ubtrc=$?
grep '^tracepoint:' "$tmp/ubt.out" >"$tmp/ubt.tp"
cmp -s "$tmp/bt.out" "$tmp/ubt.tp" && [ $ubtrc = 0 ]
ok $? "-l: the same tracepoints ($(wc -l <"$tmp/ubt.tp"))"
LC_ALL=C sort -c "$tmp/ubt.out" 2>/dev/null
ok $? "-l: sorted"
grep -qx 'software:cpu-clock:' "$tmp/ubt.out" &&
	grep -qx 'software:page-faults:' "$tmp/ubt.out" &&
	grep -qx 'software:cs:' "$tmp/ubt.out"
ok $? "-l: software events listed one by one"
grep -qx 'hardware:cpu-cycles:' "$tmp/ubt.out" &&
	grep -qx 'hardware:cache-misses:' "$tmp/ubt.out"
ok $? "-l: hardware events from the fixed list"
# kprobes: the kernel's traceable functions where it lists them (none on
# a kernel whose available_filter_functions ubt cannot read), as bpftrace
grep '^kprobe:' "$tmp/bt.all" >"$tmp/bt.kp"
grep '^kprobe:' "$tmp/ubt.out" >"$tmp/ubt.kp"
cmp -s "$tmp/bt.kp" "$tmp/ubt.kp" && ! grep -q '^iter:' "$tmp/ubt.out"
ok $? "-l: the same kprobes ($(wc -l <"$tmp/ubt.kp")), no iterators"

# iterators: the kernel's, from its BTF (bpf_iter__NAME)
list 'iter:*' >"$tmp/ubt.out" 2>&1
grep -qx 'iter:task' "$tmp/ubt.out" && grep -qx 'iter:task_file' "$tmp/ubt.out" &&
	! grep -q '__safe_trusted\|^[^i]' "$tmp/ubt.out"
ok $? "-l 'iter:*'"
list 'it:task_f*' >"$tmp/ubt.out" 2>&1
printf 'iter:task_file\n' | cmp -s - "$tmp/ubt.out"
ok $? "-l 'it:task_f*'"

# -l -e PROGRAM: only what the program's attach points name (as bpftrace
# 0.26; 0.17 listed every probe)
"$UBT" -l -e 'tracepoint:sched:sched_switch { } t:sched:sched_process_e*, BEGIN { }' >"$tmp/ubt.out" 2>&1
printf 'tracepoint:sched:sched_switch\ntracepoint:sched:sched_process_exec\ntracepoint:sched:sched_process_exit\n' |
	cmp -s - "$tmp/ubt.out"
ok $? "-l -e PROGRAM: the program's probes"

# A bare search matches whole names.
list '*sched_switch*' >"$tmp/ubt.out" 2>&1
printf 'tracepoint:sched:sched_switch\n' | cmp -s - "$tmp/ubt.out"
ok $? "-l '*sched_switch*'"
list 'software:*fault*' >"$tmp/ubt.out" 2>&1
printf 'software:alignment-faults:\nsoftware:emulation-faults:\nsoftware:faults:\nsoftware:major-faults:\nsoftware:minor-faults:\nsoftware:page-faults:\n' |
	cmp -s - "$tmp/ubt.out"
ok $? "-l 'software:*fault*'"
list '*ware:*cycles' >"$tmp/ubt.out" 2>&1
printf 'hardware:bus-cycles:\nhardware:cpu-cycles:\nhardware:cycles:\nhardware:ref-cycles:\n' |
	cmp -s - "$tmp/ubt.out"
ok $? "-l '*ware:*cycles': the probe types a wildcard matches"
list 'h*:*' >"$tmp/ubt.out" 2>&1
list 'hardware:*' | cmp -s - "$tmp/ubt.out" && test -s "$tmp/ubt.out"
ok $? "-l 'h*:*' as 'hardware:*'"

# libc.so.6 resolves like libc (bpftrace 0.17 does not resolve it).
list 'uprobe:libc.so.6:malloc' >"$tmp/a" 2>&1
list 'uprobe:libc:malloc' >"$tmp/b" 2>&1
test -s "$tmp/a" && cmp -s "$tmp/a" "$tmp/b" &&
	grep -q '^uprobe:/.*/libc\.so\.6:malloc$' "$tmp/a"
ok $? "-l 'uprobe:libc.so.6:malloc' as 'uprobe:libc:malloc'"

# -p: libraries from the process's maps, uprobe:* over its files.
"$TARGET" 20 &
child=$!
sleep 0.3
list -p $child "uprobe:*:ubt_probe_alpha" >"$tmp/ubt.out" 2>&1
printf 'uprobe:%s:ubt_probe_alpha\n' "$TARGET" | cmp -s - "$tmp/ubt.out"
ok $? "-p: uprobe:*:ubt_probe_alpha"
list -p $child "uprobe:libc:malloc" >"$tmp/ubt.out" 2>&1
lib=$(sed -n 's/^uprobe:\(.*libc\.so\.6\):malloc$/\1/p' "$tmp/ubt.out")
test -n "$lib" && grep -q " $lib\$" /proc/$child/maps
ok $? "-p: uprobe:libc:malloc"
list -p $child "usdt:*:ubt_test:start" >"$tmp/ubt.out" 2>&1
printf 'usdt:%s:ubt_test:start\n' "$TARGET" | cmp -s - "$tmp/ubt.out"
ok $? "-p: usdt:*:ubt_test:start"
"$BPFTRACE" -l -p $child >"$tmp/bt.out" 2>/dev/null </dev/null
list -p $child >"$tmp/ubt.out" 2>&1
cmp -s "$tmp/bt.out" "$tmp/ubt.out" && test -s "$tmp/ubt.out"
ok $? "-l -p PID: the process's uprobes and usdt probes"
kill $child 2>/dev/null
wait $child 2>/dev/null

echo "1..$n"
exit $fail
