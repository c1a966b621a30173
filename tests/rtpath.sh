#!/bin/sh
# Where ubt loads its runtime from (shim/user/rtpath.c), end to end: an unsafe
# $UBT_RUNTIME is refused with the reason and the target is left alone; a
# safe one is used; a copy of the build tree (ubt, libubt-rt.so,
# config.status) is used when safe, refused in a world-writable directory;
# an installed ubt (make install DESTDIR=...) loads the installed runtime
# and never the build tree's.

. "$top_srcdir/tests/cli/tap.sh"

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root"; exit 77; }
umask 022
loop="$top_builddir/tests/targets/ubt-loop"
wait_t="$top_builddir/tests/targets/ubt-wait"
[ -x "$loop" ] && [ -x "$wait_t" ] || bail "the targets are not built"
# a safe place (root's, not writable by others): the build tree's tests/
d=$(mktemp -d "$top_builddir/tests/rtpath-sh.XXXXXX") || bail "mktemp"
d=$(cd "$d" && pwd -P)
trap 'rm -rf "$tap_tmp" "$d"' EXIT
rt="$top_builddir/libubt-rt.so"
prog="uprobe:$loop:ubt_step { @n = count(); }"

# run NAME UBT [ENV...]: ubt --mode user -c "ubt-loop 5"; 0 when it
# counted the 5 calls; output in $tap_tmp/NAME
run()
{
	name=$1 ubt=$2
	shift 2
	env "$@" "$ubt" --mode user -c "$loop 5" -e "$prog" \
		>"$tap_tmp/$name" 2>&1 </dev/null &&
		grep -qx '@n: 5' "$tap_tmp/$name"
}

# refused NAME WANT UBT [ENV...]: ubt fails with exactly the message WANT
refused()
{
	name=$1 want=$2 ubt=$3
	shift 3
	if env "$@" "$ubt" --mode user -c "$loop 5" -e "$prog" \
		>"$tap_tmp/$name" 2>&1 </dev/null; then
		not_ok "$name: ubt ran" "$(cat "$tap_tmp/$name")"
	elif grep -qxF "ubt: $want" "$tap_tmp/$name"; then
		ok "$name: ubt: $want"
	else
		not_ok "$name: refused with the reason" "want: ubt: $want" \
			"$(cat "$tap_tmp/$name")"
	fi
}

mkdir "$d/ok" "$d/ww" "$d/gw" "$d/bin" "$d/tree" "$d/wwtree"
chmod 0777 "$d/ww" "$d/wwtree"
cp "$rt" "$d/ok/"
cp "$rt" "$d/ww/"
cp "$rt" "$d/gw/"
chmod 0775 "$d/gw/libubt-rt.so"

# 1. -p: an unsafe UBT_RUNTIME is refused before the target is touched
"$wait_t" 3 >"$tap_tmp/wait.out" 2>&1 &
pid=$!
for i in $(seq 100); do
	grep -q ready "$tap_tmp/wait.out" && break
	sleep 0.05
done
UBT_RUNTIME="$d/ww/libubt-rt.so" "$UBT" --mode user -p $pid \
	-e "uprobe:$wait_t:ubt_wait_work { @ = count(); }" \
	>"$tap_tmp/p" 2>&1 </dev/null
rc=$?
want="ubt: cannot attach to pid $pid: the runtime $d/ww/libubt-rt.so is not safe to load: $d/ww is writable by others (mode 0777)"
if [ $rc = 1 ] && grep -qxF "$want" "$tap_tmp/p"; then
	ok "-p, UBT_RUNTIME in a world-writable directory: refused"
else
	not_ok "-p, UBT_RUNTIME in a world-writable directory: refused" \
		"exit $rc, want: $want" "$(cat "$tap_tmp/p")"
fi
if grep -q 'libubt-rt\|memfd:ubt' /proc/$pid/maps; then
	not_ok "-p, refused: nothing placed in the target" \
		"$(grep 'libubt-rt\|memfd:ubt' /proc/$pid/maps)"
else
	ok "-p, refused: nothing placed in the target"
fi
kill -USR1 $pid
wait $pid
rc=$?
[ $rc = 0 ] && ok "-p, refused: the target runs on and exits 0" ||
	not_ok "-p, refused: the target runs on and exits 0" "exit $rc"

# 2. UBT_RUNTIME under the same checks
refused "UBT_RUNTIME group-writable" \
	"the runtime $d/gw/libubt-rt.so is not safe to load: $d/gw/libubt-rt.so is writable by its group (mode 0775)" \
	"$UBT" UBT_RUNTIME="$d/gw/libubt-rt.so"
refused "UBT_RUNTIME missing" \
	"cannot load the runtime $d/ok/none.so: No such file or directory" \
	"$UBT" UBT_RUNTIME="$d/ok/none.so"
# a ubt outside any build tree, without an installed runtime: only the
# override can make it run
cp "$UBT" "$d/bin/ubt"
if run override "$d/bin/ubt" UBT_RUNTIME="$d/ok/libubt-rt.so"; then
	ok "UBT_RUNTIME safe: used"
else
	not_ok "UBT_RUNTIME safe: used" "$(cat "$tap_tmp/override")"
fi

# 3. a copy of the build tree: found from /proc/self/exe, when safe
for f in "$UBT" "$rt" "$top_builddir/config.status"; do
	cp "$f" "$d/tree/"
	cp "$f" "$d/wwtree/"
done
if run tree "$d/tree/ubt"; then
	ok "a build tree's ubt loads the runtime beside it"
else
	not_ok "a build tree's ubt loads the runtime beside it" \
		"$(cat "$tap_tmp/tree")"
fi
refused "build tree in a world-writable directory" \
	"the runtime $d/wwtree/libubt-rt.so is not safe to load: $d/wwtree is writable by others (mode 0777)" \
	"$d/wwtree/ubt"

# 5. another build at the path an earlier session loaded the runtime
# from: the target's loader gives back the object it has under that name
# without opening the file, so it is not this file: refused, never a call
# at this file's offsets into it; the target runs on, nothing of ubt's
# left in it but the runtime loaded first
mkdir "$d/re"
cp "$rt" "$d/re/libubt-rt.so"
"$wait_t" 3 >"$tap_tmp/wait2.out" 2>&1 &
pid=$!
for i in $(seq 100); do
	grep -q ready "$tap_tmp/wait2.out" && break
	sleep 0.05
done
re_prog="uprobe:$wait_t:ubt_wait_work { @ = count(); } interval:ms:100 { exit(); }"
UBT_RUNTIME="$d/re/libubt-rt.so" "$UBT" --mode user -p $pid -e "$re_prog" \
	>"$tap_tmp/re1" 2>&1 </dev/null
rc1=$?
# the same file but for its build id (in the first page)
python3 - "$rt" "$d/re/new" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
phoff, = struct.unpack_from("<Q", b, 32)
phentsize, phnum = struct.unpack_from("<HH", b, 54)
for i in range(phnum):
    t, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", b,
                                                 phoff + i * phentsize)
    at = off
    while t == 4 and at < off + filesz:
        namesz, descsz, typ = struct.unpack_from("<III", b, at)
        name = at + 12
        desc = name + (namesz + 3) // 4 * 4
        if typ == 3 and b[name:name + 4] == b"GNU\0":
            b[desc] ^= 0xff
        at = desc + (descsz + 3) // 4 * 4
open(sys.argv[2], "wb").write(b)
EOF
chmod 0755 "$d/re/new"
mv "$d/re/new" "$d/re/libubt-rt.so"
UBT_RUNTIME="$d/re/libubt-rt.so" "$UBT" --mode user -p $pid -e "$re_prog" \
	>"$tap_tmp/re2" 2>&1 </dev/null
rc2=$?
left=$( (grep 'memfd:ubt' /proc/$pid/maps; ls -l /proc/$pid/fd |
	 grep 'memfd:ubt\|libubt-rt') 2>/dev/null)
want="ubt: cannot attach to pid $pid: the runtime the loader of pid $pid gave back is not $d/re/libubt-rt.so (another build, loaded by an earlier ubt under the same name)"
kill -USR1 $pid
wait $pid
trc=$?
if [ $rc1 = 0 ] && [ $rc2 = 1 ] && [ $trc = 0 ] && [ -z "$left" ] &&
   ! cmp -s "$rt" "$d/re/libubt-rt.so" && grep -qxF "$want" "$tap_tmp/re2"; then
	ok "another build at the path of the runtime loaded: refused, the target runs on"
else
	not_ok "another build at the path of the runtime loaded: refused, the target runs on" \
		"exit $rc1 then $rc2, target $trc, want: $want" "left: $left" \
		"$(cat "$tap_tmp/re1" "$tap_tmp/re2" "$tap_tmp/wait2.out")"
fi

# 4. installed: the installed runtime, never the build tree's
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$top_builddir" \
	DESTDIR="$d/inst" install-binPROGRAMS install-pkglibexecPROGRAMS \
	>"$tap_tmp/install" 2>&1; then
	ok "make install DESTDIR=..."
else
	not_ok "make install DESTDIR=..." "$(cat "$tap_tmp/install")"
fi
iubt=$(find "$d/inst" -path '*/bin/ubt' -type f | head -1)
irt=$(find "$d/inst" -name libubt-rt.so -type f | head -1)
if [ -n "$iubt" ] && [ -n "$irt" ] && run installed "$iubt"; then
	ok "an installed ubt loads the installed runtime"
else
	not_ok "an installed ubt loads the installed runtime" \
		"ubt: $iubt runtime: $irt" "$(cat "$tap_tmp/installed" 2>&1)"
fi
if [ -n "$irt" ]; then
	rm -f "$irt"
	run noinst "$iubt"
	if grep -q "^ubt: cannot find libubt-rt.so (looked in " \
		"$tap_tmp/noinst" &&
		! grep -qF "$top_builddir/libubt-rt.so " "$tap_tmp/noinst" &&
		! grep -qF "$top_builddir/libubt-rt.so)" "$tap_tmp/noinst"; then
		ok "an installed ubt without its runtime never takes the build tree's: $(cat "$tap_tmp/noinst")"
	else
		not_ok "an installed ubt without its runtime never takes the build tree's" \
			"$(cat "$tap_tmp/noinst")"
	fi
fi
tap_done
