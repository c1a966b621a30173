#!/bin/sh
# Where the runtime goes (shim/user/user_inject.c runtime_near()): within rel32
# reach of the first return probe's module, so that its trampolines jump
# to a stub of their own in the runtime (call rel32; jmp rel32), or to
# rt_wrap_call directly when UBT_NO_WRAP_STUBS is set (shim/patch/tramp.c); a
# return probe in a module far from it (a library, with the runtime below
# the executable) jumps through an address, and UBT_RUNTIME_FAR=1 leaves
# the runtime where dlopen() puts it.  Every return probe counts every
# call either way.
# With -p the sites are built while the process runs: its stub slot is
# written through /proc/PID/mem all the same.
# (Unwinding through both: tests/user/unwind.sh, unwind-far.sh.)

. "$top_srcdir/tests/user/sacred-lib.sh"

t="$top_builddir/tests/targets"
[ -x "$t/ubt-libuser" ] && [ -f "$t/libubt-target.so" ] ||
	bail "ubt-libuser is not built"
cp "$t/ubt-libuser" "$t/libubt-target.so" "$tap_tmp/" || bail "cp"
bin="$tap_tmp/ubt-libuser"
lib="$tap_tmp/libubt-target.so"

# check NAME WANT_NEAR WANT_FAR PROG [ENV]: -v's count of each kind, and
# the counts the program prints (@m main once, @a ubt_lib_add 4 times)
check()
{
	name=$1 near=$2 far=$3 prog=$4 stub=0
	# UBT_NO_WRAP_STUBS: the near ones jump to rt_wrap_call instead
	case "$5" in UBT_NO_WRAP_STUBS=*) stub=$near near=0 ;; esac
	env ${5:-UBT_UNSET=} "$UBT" -v --mode user -c "$bin 4" -e "$prog" \
		>"$tap_tmp/out" 2>"$tap_tmp/err" </dev/null
	rc=$?
	want="return probes: $near site(s) jump to their own stub in the runtime, $stub to its wrapped call directly, $far through an address"
	if [ $rc -eq 0 ] && grep -qF "$want" "$tap_tmp/err"; then
		ok "$name: $near to a stub, $stub direct, $far through an address"
	else
		not_ok "$name: $near to a stub, $stub direct, $far through an address" \
			"exit $rc" "$(grep -E 'return probes|ubt:' "$tap_tmp/err")"
	fi
	if grep -q '^@a: 4$' "$tap_tmp/out" &&
	   { ! grep -q '^@m' "$tap_tmp/out" || grep -q '^@m: 1$' "$tap_tmp/out"; }
	then
		ok "$name: every call counted"
	else
		not_ok "$name: every call counted" "$(cat "$tap_tmp/out")"
	fi
}

check "library" 1 0 "uretprobe:$lib:ubt_lib_add { @a = count(); }"
check "executable first, then a library" 1 1 \
	"uretprobe:$bin:main { @m = count(); } uretprobe:$lib:ubt_lib_add { @a = count(); }"
# dlopen() puts it among the libraries: the executable's is the far one
check "UBT_RUNTIME_FAR=1" 1 1 \
	"uretprobe:$bin:main { @m = count(); } uretprobe:$lib:ubt_lib_add { @a = count(); }" \
	UBT_RUNTIME_FAR=1
check "UBT_NO_WRAP_STUBS=1" 1 1 \
	"uretprobe:$bin:main { @m = count(); } uretprobe:$lib:ubt_lib_add { @a = count(); }" \
	UBT_NO_WRAP_STUBS=1

# -p: the library's return probe reaches its own stub too
out="$tap_tmp/out" err="$tap_tmp/err" tout="$tap_tmp/tout"
start_wait 4 wait
ubt_bg 60 -v --mode user -p $tp -e "uretprobe:$lib:ubt_lib_add { @a = count(); }"
kill -USR1 $tp
wait $tp
trc=$?
wait $up
rc=$?
want="return probes: 1 site(s) jump to their own stub in the runtime, 0 to its wrapped call directly, 0 through an address"
if [ $rc -eq 0 ] && grep -qF "$want" "$err"; then
	ok "-p: 1 to a stub, 0 direct, 0 through an address"
else
	not_ok "-p: 1 to a stub, 0 direct, 0 through an address" \
		"exit $rc" "$(grep -E 'return probes|ubt:' "$err")"
fi
if [ $trc -eq 0 ] && grep -q '^@a: 4$' "$out"; then
	ok "-p: every call counted, the target exits 0"
else
	not_ok "-p: every call counted, the target exits 0" "target $trc" \
		"$(cat "$out" "$tout")"
fi
tap_done
