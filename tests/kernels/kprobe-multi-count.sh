#!/bin/sh
# make check-kernels (tests/kernels/cases runs it in each guest, with sh):
# a kprobe wildcard and BPFTRACE_MAX_PROBES, counted as bpftrace 0.17
# counts it.  Where the kernel has kprobe_multi links (`ubt --info`:
# "kprobe_multi: yes", which ubt asks of the kernel) the wildcard is one
# link and one probe; where it has none, or UBT_KERNEL_LACKS=kprobe_multi
# hides them, it is one probe per function.  BEGIN and kprobe:vfs_rea*
# (3 functions or more) under a limit of 2: one link runs, one per
# function is refused with bpftrace's words.  Where bpftrace 0.17 is
# installed, its first line is compared too.  TAP; skipped without
# kprobes.
UBT=${UBT:-./ubt}
prog='BEGIN { exit(); } kprobe:vfs_rea* { @ = count(); }'
tmp=$(mktemp -d /tmp/ubt-kmulti.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT

info=$("$UBT" --info 2>&1)
if ! printf '%s\n' "$info" | grep -q '^  kprobe: yes$'; then
	echo "1..0 # SKIP this kernel has no kprobes"
	exit 0
fi
nfuncs=$("$UBT" -l 'kprobe:vfs_rea*' 2>/dev/null | wc -l)
refused="ERROR: Can't attach to $((nfuncs + 1)) probes because it exceeds the current limit of 2 probes."
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok()
{
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	sed 's/^/# /' "$tmp/out"
}
# run NAME EXPECTED-RC EXPECTED-FIRST-LINE [ENV=V...]: ubt under the limit
run()
{
	name=$1 rc=$2 first=$3
	shift 3
	env BPFTRACE_MAX_PROBES=2 "$@" timeout 300 "$UBT" -e "$prog" \
		</dev/null >"$tmp/out" 2>&1
	got=$?
	if [ "$got" -eq "$rc" ] && [ "$(head -n 1 "$tmp/out")" = "$first" ]
	then
		ok "$name"
	else
		echo "exit $got, expected $rc and first line: $first" >>"$tmp/out"
		not_ok "$name"
	fi
}

if [ "$nfuncs" -lt 2 ]; then
	echo "Bail out! kprobe:vfs_rea* matches $nfuncs function(s)"
	exit 99
fi
if printf '%s\n' "$info" | grep -q '^  kprobe_multi: yes$'; then
	multi=yes
	run "kprobe_multi links: the wildcard is one probe (2 under a limit of 2)" \
		0 "Attaching 2 probes..."
else
	multi=no
	run "no kprobe_multi links: one probe per function ($nfuncs + BEGIN over a limit of 2)" \
		1 "$refused"
fi
run "UBT_KERNEL_LACKS=kprobe_multi: one probe per function ($nfuncs + BEGIN over a limit of 2)" \
	1 "$refused" UBT_KERNEL_LACKS=kprobe_multi
if command -v bpftrace >/dev/null; then
	bpftrace --info 2>&1 | grep -q '^  kprobe_multi: yes$' && bt=yes ||
		bt=no
	BPFTRACE_MAX_PROBES=2 timeout 300 bpftrace -e "$prog" </dev/null \
		2>&1 | grep -v RLIMIT_MEMLOCK | head -n 1 >"$tmp/bt"
	env BPFTRACE_MAX_PROBES=2 timeout 300 "$UBT" -e "$prog" </dev/null \
		2>&1 | head -n 1 >"$tmp/ubt"
	if [ "$bt" = "$multi" ] && cmp -s "$tmp/bt" "$tmp/ubt"; then
		ok "bpftrace 0.17 (kprobe_multi: $bt) counts as ubt: $(cat "$tmp/ubt")"
	else
		{ echo "bpftrace (kprobe_multi: $bt):"; cat "$tmp/bt"
		  echo "ubt (kprobe_multi: $multi):"; cat "$tmp/ubt"; } >"$tmp/out"
		not_ok "bpftrace 0.17 counts as ubt"
	fi
fi
echo "1..$n"
[ "$failed" -eq 0 ]
