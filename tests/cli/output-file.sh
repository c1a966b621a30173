#!/bin/sh
# -o FILE in a directory anyone can create files in (sticky and
# world-writable, as /tmp): ubt, often run as root, follows no symbolic
# link and writes no file another user put there (what the kernel's
# fs.protected_symlinks and fs.protected_regular do, when set), and
# neither empties nor changes them; its own and the directory owner's
# files and links are used as anywhere else, and elsewhere links are
# followed as always.

. "$top_srcdir/tests/cli/tap.sh"

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP not root (files of another user)"; exit 77; }
other=65534
prog='BEGIN { printf("out\n"); exit(); }'
d="$tap_tmp/d"
mkdir "$d" "$d/sticky" "$d/plain" || bail "mkdir"
chmod 0755 "$d/plain"
chmod 1777 "$d/sticky"
echo precious >"$d/victim"

# refused NAME FILE WHY: ubt -o FILE fails, saying WHY
refused()
{
	if "$UBT" -o "$2" -e "$prog" >"$tap_tmp/out" 2>"$tap_tmp/err" \
		</dev/null; then
		not_ok "$1: refused" "ubt wrote $2"
	elif grep -qxF "ubt: cannot open output file $2: $3" "$tap_tmp/err"; then
		ok "$1: refused ($3)"
	else
		not_ok "$1: refused" "$(cat "$tap_tmp/err")"
	fi
}

# written NAME FILE WHERE: ubt -o FILE succeeds, WHERE holds the output
# (and nothing that was there before)
written()
{
	if "$UBT" -o "$2" -e "$prog" >"$tap_tmp/out" 2>"$tap_tmp/err" \
		</dev/null && grep -qx out "$3" && ! grep -q precious "$3"; then
		ok "$1: written"
	else
		not_ok "$1: written" "$(cat "$tap_tmp/err")" "$(cat "$3")"
	fi
}

intact()
{
	if [ "$(cat "$2")" = precious ]; then
		ok "$1: untouched"
	else
		not_ok "$1: untouched" "now: $(cat "$2")"
	fi
}

ln -s "$d/victim" "$d/sticky/theirs-link"
chown -h $other "$d/sticky/theirs-link"
refused "another user's link in a sticky directory" "$d/sticky/theirs-link" \
	"a symbolic link of another user in a directory anyone can write to"
intact "the link's target" "$d/victim"

echo precious >"$d/sticky/theirs"
chown $other "$d/sticky/theirs"
refused "another user's file in a sticky directory" "$d/sticky/theirs" \
	"a file of another user in a directory anyone can write to"
intact "their file" "$d/sticky/theirs"

mkfifo "$d/sticky/fifo"
chown $other "$d/sticky/fifo"
if timeout 20 "$UBT" -o "$d/sticky/fifo" -e "$prog" >/dev/null \
	2>"$tap_tmp/err" </dev/null; then
	not_ok "another user's FIFO in a sticky directory: refused" "written"
elif [ $? = 124 ]; then
	not_ok "another user's FIFO in a sticky directory: refused" \
		"ubt waited on the FIFO"
else
	ok "another user's FIFO in a sticky directory: refused at once"
fi

written "a new file in a sticky directory" "$d/sticky/new" "$d/sticky/new"
if [ "$(stat -c %u "$d/sticky/new")" = 0 ]; then
	ok "the new file is root's"
else
	not_ok "the new file is root's" "$(stat -c %u "$d/sticky/new")"
fi
echo precious >"$d/sticky/mine"
written "its own file in a sticky directory, emptied first" \
	"$d/sticky/mine" "$d/sticky/mine"
echo precious >"$d/mine-target"
ln -s "$d/mine-target" "$d/sticky/mine-link"
written "its own link in a sticky directory" "$d/sticky/mine-link" \
	"$d/mine-target"
echo precious >"$d/plain-target"
ln -s "$d/plain-target" "$d/plain/link"
chown -h $other "$d/plain/link"
written "a link in a directory only root writes to" "$d/plain/link" \
	"$d/plain-target"

# every component, as fs.protected_symlinks checks each link it follows
mkdir "$d/realdir" "$d/sticky2" || bail "mkdir"
chown $other "$d/sticky2"
chmod 1777 "$d/sticky2"
ln -s "$d/realdir" "$d/sticky/their-dir"
chown -h $other "$d/sticky/their-dir"
refused "another user's directory link in a sticky directory" \
	"$d/sticky/their-dir/file" \
	"a symbolic link of another user in a directory anyone can write to"
ln -s sticky/their-dir "$d/via"
refused "another user's directory link reached through a link" \
	"$d/via/file" \
	"a symbolic link of another user in a directory anyone can write to"
if [ -e "$d/realdir/file" ]; then
	not_ok "nothing written through the directory links" "realdir/file"
else
	ok "nothing written through the directory links"
fi
ln -s "$d/realdir" "$d/sticky2/owners-dir"
chown -h $other "$d/sticky2/owners-dir"
written "the sticky directory's owner's directory link" \
	"$d/sticky2/owners-dir/a" "$d/realdir/a"
ln -s "$d/realdir" "$d/sticky/my-dir"
written "its own directory link in a sticky directory" \
	"$d/sticky/my-dir/b" "$d/realdir/b"
ln -s ../sticky/my-dir "$d/plain/rel"
written "a relative link to its own directory link" \
	"$d/plain/rel/c" "$d/realdir/c"
tap_done
