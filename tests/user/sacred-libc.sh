#!/bin/sh
# The traced process is sacred (issue 24, item 6): every function of libc
# (uprobe:libc.so.6:*, thousands of sites, aliases of one function
# included) needs more than one code slice, and a second probe on a site
# whose slice is full goes to another: the run succeeds ("code area full"
# before), the calls are counted exactly, the target exits 0.  (-c: with
# -p the attach of 7000 sites outlasted the test targets' 30 s wait on a
# loaded machine; both take the same install path.)  -p, into a process
# whose threads wait (issue 27 item 4): the first record of a site whose
# probe went to another slice is marked done in its own slice (ubt's
# worker was killed by SIGSEGV there, or wrote into another slice), the
# run succeeds, the target runs on right and exits 0, its code the file's.

. "$top_srcdir/tests/user/sacred-lib.sh"

sacred_copy ubt-sacred
libc=$(ldd "$bin" | sed -n 's|.*=> \(/[^ ]*libc\.so\.6\) .*|\1|p')
[ -n "$libc" ] || bail "no libc for $bin"
prog="uprobe:$libc:* { @ = count(); } uprobe:$libc:syscall { @s = count(); }"

# over bpftrace's 512 attach points: the limit raised, as bpftrace's
BPFTRACE_MAX_PROBES=100000 timeout 240 "$UBT" -v -c "$bin ppid 100" -e "$prog" >"$out" 2>"$err" \
	</dev/null
rc=$?
if [ $rc -eq 0 ] && grep -qx "done 100" "$out" && grep -qx "@s: 100" "$out" &&
   grep -q "^@: [0-9]" "$out" &&
   grep -q "^ubt: the command (pid [0-9]*) exited with status 0$" "$err" &&
   ! grep -q "code area full" "$err"; then
	ok "uprobe:libc.so.6:* and a second probe on syscall (-c): attached, syscall() counted 100 times, exit 0"
else
	not_ok "uprobe:libc.so.6:* and a second probe on syscall (-c): attached, syscall() counted 100 times, exit 0" \
		"exit $rc" "$(grep -v '^  uprobe' "$err" | tail -20)" \
		"$(cat "$out")"
fi

# 2. -p; while it runs, the records in the target's code areas: at most
# one live record per patched address (a site's earlier trampoline,
# replaced, is marked done: it was not when the site's probe had gone to
# another slice, and that byte went elsewhere)
export BPFTRACE_MAX_PROBES=100000
start_wait threads-wait 100 2
before=$(code "$tp")
ubt_bg 240 -p $tp -e "uprobe:$libc:* { @ = count(); }"
recs=$(python3 - $tp <<'EOF'
import struct, sys
pid, magic = int(sys.argv[1]), 0x3145544953746275    # RT_SITE_MAGIC
live, n = {}, 0
with open("/proc/%d/mem" % pid, "rb", 0) as mem:
    for line in open("/proc/%d/maps" % pid):
        f = line.split()
        if len(f) < 6 or "memfd:ubt." not in f[5] or f[1][2] != "x":
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        mem.seek(lo)
        b = mem.read(hi - lo)
        for off in range(0, len(b) - 24, 16):    # records 16-aligned
            if struct.unpack_from("<Q", b, off)[0] != magic:
                continue
            n += 1
            state, addr = struct.unpack_from("<IQ", b, off + 12)
            if state == 1:    # RT_SITE_LIVE
                live[addr] = live.get(addr, 0) + 1
print(n, len(live), sum(1 for v in live.values() if v > 1))
EOF
)
kill -USR1 "$tp"
wait_for 1200 "$tp" '^done' "$tout"
kill -INT $up 2>/dev/null
wait $up
rc=$?
after=$(code "$tp")
kill -USR1 "$tp"
wait $tp
trc=$?
set -- $recs
if [ "$#" -eq 3 ] && [ "$2" -gt 1000 ] && [ "$3" -eq 0 ]; then
	ok "uprobe:libc.so.6:* (-p): one live record per patched address ($2 addresses, $1 records)"
else
	not_ok "uprobe:libc.so.6:* (-p): one live record per patched address" \
		"records, live addresses, addresses live twice: $recs"
fi
if [ "$rc" -eq 0 ] && grep -q "^@: [0-9]" "$out" && [ "$trc" -eq 0 ] &&
   grep -q "^done 200\$" "$tout" && [ -n "$before" ] &&
   [ "$before" = "$after" ] && ! grep -q "killed by signal" "$err"; then
	ok "uprobe:libc.so.6:* (-p): attached and counted, the target ran on right, its code the file's"
else
	not_ok "uprobe:libc.so.6:* (-p): attached and counted, the target ran on right, its code the file's" \
		"exit $rc/$trc before $before after $after" \
		"$(grep -v '^  uprobe' "$err" | tail -10)" "$(cat "$out" "$tout" | tail -10)"
fi

tap_done
